/* local-shared.h - the mounts that every local sandbox shares, one set per
 * host (local-shared.c).
 *
 * Every superblock a sandbox holds costs twice with the number of
 * sandboxes.  Memory: each memory cgroup keeps a map over all superblocks'
 * shrinkers, so the kernel's total is cgroups x superblocks; and removing
 * a memory cgroup reparents every superblock's LRU lists, so a kill walks
 * them all.  Time: mounting a sysfs walks the list of every sysfs (one per
 * network namespace).  So what is the same in every sandbox is mounted
 * once, read-only, under /run/sbx, and each sandbox binds or stacks it;
 * what must be its own stays its own (the root overlay, /proc, /dev/pts,
 * /dev/shm: four superblocks, from nine). */
#ifndef SBX_LOCAL_SHARED_H
#define SBX_LOCAL_SHARED_H

#include <stdio.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#define LOCAL_SHARED_DIR "/run/sbx"

/* `path` is a mount point (another device than its parent's) of the
 * filesystem type `magic`.  Inline: sbx-init, which links only libc,
 * checks the same before it binds one. */
static inline int local_is_mount_of(const char *path, long magic)
{
	struct statfs s;
	struct stat a, b;
	char parent[4200];
	snprintf(parent, sizeof(parent), "%s/..", path);
	return statfs(path, &s) == 0 && s.f_type == magic && stat(path, &a) == 0 &&
	       stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/* What a sandbox's /dev holds besides the pts and shm mounts: the
 * allow-listed nodes and the links (the shared /dev and sbx-init's own). */
static const struct { const char *name; unsigned maj, min; } local_dev_nodes[] = {
	{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8},
	{"urandom", 1, 9}, {"tty", 5, 0},
};
static const char *const local_dev_links[][2] = {
	{"pts/ptmx", "ptmx"}, {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
	{"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
};
#define LOCAL_DEV_TMPFS_OPTS "mode=755,size=65536"

/* Each path, or NULL where that mount is missing and cannot be made (no
 * writable /run, no mount rights): sbx-init then makes its own, which
 * shows the same (local-init.h says which key falls back how). */
struct local_shared {
	const char *sysfs;      /* sysfs of an empty network namespace, held by
				 * <sysfs>.net: shows `lo` and no host device */
	const char *empty;      /* an empty read-only tmpfs (masks, view layer) */
	const char *host_view;  /* read-only overlay lowerdir=<empty>:/ : the
				 * host's "/" as a layer of another filesystem */
	const char *dev;        /* a read-only /dev: the allow-listed nodes, the
				 * fd links, empty pts/ and shm/ to mount on */
};

/* Mount what is missing (once per boot, under a lock) and fill `s`.
 * Never fails; sets no error. */
void local_shared_get(struct local_shared *s);

#endif
