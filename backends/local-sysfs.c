/* local-sysfs.c - one sysfs for every local sandbox (contract in
 * local-sysfs.h).
 *
 * The mount: a child unshares only its network namespace, pins it (a bind
 * of its nsfs file at /run/sbx/sysfs.net: a sysfs superblock alone keeps
 * only the namespace's memory, and its `lo` would go) and mounts sysfs
 * read-only, nosuid, nodev, noexec at /run/sbx/sysfs, both in the host's
 * mount namespace.  The mount shows `lo` and no host device, whatever
 * namespace looks at it.  Removing both (umount) is harmless: sandboxes
 * hold their own binds, and the next create mounts them again.
 *
 * What a sandbox sees differs from a sysfs of its own in one point only:
 * /sys/class/net/lo is the lo of that empty namespace (down, no traffic),
 * not the sandbox's (up).  A sandbox with more devices than lo (egress:
 * slirp's tap0) mounts its own. */
#include "local-sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUN_DIR    "/run/sbx"
#define SYSFS_DIR  RUN_DIR "/sysfs"
#define SYSFS_NET  RUN_DIR "/sysfs.net"
#define SYSFS_LOCK RUN_DIR "/sysfs.lock"
#ifndef SYSFS_MAGIC
#define SYSFS_MAGIC 0x62656572
#endif

static int is_sysfs(const char *path)
{
	struct statfs s;
	return statfs(path, &s) == 0 && s.f_type == SYSFS_MAGIC;
}

/* Mount it, in a child that leaves our network namespace alone. */
static void mount_shared(void)
{
	if (mkdir(SYSFS_DIR, 0555) < 0 && errno != EEXIST)
		return;
	int pin = open(SYSFS_NET, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (pin < 0)
		return;
	close(pin);
	pid_t c = fork();
	if (c < 0)
		return;
	if (c == 0) {
		umount2(SYSFS_NET, MNT_DETACH);   /* the pin of an earlier, half-done try */
		if (unshare(CLONE_NEWNET) < 0 ||
		    mount("/proc/self/ns/net", SYSFS_NET, NULL, MS_BIND, NULL) < 0 ||
		    mount("sysfs", SYSFS_DIR, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  NULL) < 0)
			_exit(1);
		_exit(0);
	}
	while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
		;
}

const char *local_shared_sysfs(void)
{
	if (is_sysfs(SYSFS_DIR))
		return SYSFS_DIR;
	if (mkdir(RUN_DIR, 0755) < 0 && errno != EEXIST)
		return NULL;
	int lock = open(SYSFS_LOCK, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0)
		return NULL;
	while (flock(lock, LOCK_EX) < 0 && errno == EINTR)
		;
	if (!is_sysfs(SYSFS_DIR))
		mount_shared();
	close(lock);
	return is_sysfs(SYSFS_DIR) ? SYSFS_DIR : NULL;
}
