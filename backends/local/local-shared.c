/* local-shared.c - the mounts every local sandbox shares (contract in
 * local-shared.h).
 *
 * All live in the host's mount namespace under /run/sbx (gone at reboot)
 * and are made by the first create that misses one, under
 * /run/sbx/shared.lock.  Each appears whole or not at all, because the
 * test for "there" is its filesystem type: sysfs and the host view are one
 * mount call each; /dev is built at dev.tmp and bound into place once it
 * is complete and read-only (a bind, not a move: /run may be a shared
 * mount, which refuses moves).  Unmounting any of them is harmless:
 * sandboxes hold their own references, the next create mounts it again;
 * only sysfs.net is held by nothing else (sbx-init does not pin it, so
 * that a sandbox can be checkpointed: sbx-init.c, setup_sys), and without
 * it running sandboxes' /sys/class/net no longer lists lo.
 *
 * sysfs: a child unshares only its network namespace, pins it (a bind of
 * its nsfs file at sysfs.net: a sysfs superblock keeps only the
 * namespace's memory, and its `lo` would go) and mounts sysfs.  What a
 * sandbox sees there differs from a sysfs of its own in one point:
 * /sys/class/net/lo is the lo of that empty namespace (down, no traffic).
 * A sandbox with more devices than lo (egress: slirp's tap0) mounts its
 * own (local.c). */
#include "local-shared.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "util.h"

#define D LOCAL_SHARED_DIR
#define RO_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

/* util.h's mkdir -p: each path here is one level below /run/sbx. */
static int mkdir_ok(const char *p, unsigned mode)
{
	struct sbx_err e = {0};
	return sbx_mkdir_p(p, mode, &e);
}

static void mount_sysfs(void)
{
	int pin = open(D "/sysfs.net", O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (pin < 0 || mkdir_ok(D "/sysfs", 0555) < 0) {
		if (pin >= 0)
			close(pin);
		return;
	}
	close(pin);
	pid_t c = fork();
	if (c < 0)
		return;
	if (c == 0) {
		umount2(D "/sysfs.net", MNT_DETACH);   /* the pin of a half-done try */
		if (unshare(CLONE_NEWNET) < 0 ||
		    mount("/proc/self/ns/net", D "/sysfs.net", NULL, MS_BIND, NULL) < 0 ||
		    mount("sysfs", D "/sysfs", "sysfs", RO_FLAGS, NULL) < 0)
			_exit(1);
		_exit(0);
	}
	while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Fill a fresh tmpfs with what local-shared.h lists for /dev. */
static int fill_dev(const char *dev)
{
	char p[256];
	for (size_t i = 0; i < sizeof(local_dev_nodes) / sizeof(local_dev_nodes[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dev, local_dev_nodes[i].name);
		if (mknod(p, S_IFCHR | 0666, makedev(local_dev_nodes[i].maj, local_dev_nodes[i].min)) < 0 ||
		    chmod(p, 0666) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(local_dev_links) / sizeof(local_dev_links[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dev, local_dev_links[i][1]);
		if (symlink(local_dev_links[i][0], p) < 0)
			return -1;
	}
	snprintf(p, sizeof(p), "%s/pts", dev);
	if (mkdir(p, 0755) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/shm", dev);
	return mkdir(p, 0755);
}

static void mount_dev(void)
{
	const char *tmp = D "/dev.tmp";
	if (mkdir_ok(tmp, 0755) < 0 || mkdir_ok(D "/dev", 0755) < 0)
		return;
	umount2(tmp, MNT_DETACH);   /* a half-built one of a try that died */
	if (mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NOEXEC, LOCAL_DEV_TMPFS_OPTS) < 0)
		return;
	if (fill_dev(tmp) == 0 &&
	    mount(NULL, tmp, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
		  LOCAL_DEV_TMPFS_OPTS) == 0)
		(void)mount(tmp, D "/dev", NULL, MS_BIND, NULL);
	umount2(tmp, MNT_DETACH);
}

static void mount_missing(void)
{
	if (!local_is_mount_of(D "/sysfs", SYSFS_MAGIC))
		mount_sysfs();
	if (!local_is_mount_of(D "/empty", TMPFS_MAGIC) && mkdir_ok(D "/empty", 0755) == 0)
		(void)mount("tmpfs", D "/empty", "tmpfs", RO_FLAGS, "size=4k,mode=755");
	if (!local_is_mount_of(D "/hostview", OVERLAYFS_SUPER_MAGIC) && local_is_mount_of(D "/empty", TMPFS_MAGIC) &&
	    mkdir_ok(D "/hostview", 0755) == 0)
		(void)mount("overlay", D "/hostview", "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV,
			    "lowerdir=" D "/empty:/");
	if (!local_is_mount_of(D "/dev", TMPFS_MAGIC))
		mount_dev();
}

/* Fill `s` from what is mounted now; 1 when everything is. */
static int look(struct local_shared *s)
{
	s->sysfs = local_is_mount_of(D "/sysfs", SYSFS_MAGIC) ? D "/sysfs" : NULL;
	s->empty = local_is_mount_of(D "/empty", TMPFS_MAGIC) ? D "/empty" : NULL;
	s->host_view = local_is_mount_of(D "/hostview", OVERLAYFS_SUPER_MAGIC) ? D "/hostview" : NULL;
	s->dev = local_is_mount_of(D "/dev", TMPFS_MAGIC) ? D "/dev" : NULL;
	return s->sysfs && s->empty && s->host_view && s->dev;
}

void local_shared_get(struct local_shared *s)
{
	/* The hot path: one look (12 system calls), no lock. */
	if (look(s) || mkdir_ok(D, 0755) < 0)
		return;
	int lock = open(D "/shared.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0)
		return;
	while (flock(lock, LOCK_EX) < 0 && errno == EINTR)
		;
	mount_missing();
	close(lock);
	look(s);
}
