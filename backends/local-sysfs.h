/* local-sysfs.h - one sysfs for every local sandbox (local-sysfs.c).
 *
 * A sandbox's /sys is read-only and, like any sysfs mounted in a fresh
 * network namespace, shows no network device but `lo`.  Mounting one per
 * sandbox costs twice with the number of sandboxes: the kernel finds (or
 * makes) a sysfs superblock by walking the list of all of them, one per
 * network namespace, so each create is O(N); and every superblock costs
 * memory in every memory cgroup (the shrinker maps: docs/perf-notes.md).
 * So one sysfs, mounted once from an empty network namespace of its own,
 * lives at /run/sbx/sysfs, and each sandbox binds it. */
#ifndef SBX_LOCAL_SYSFS_H
#define SBX_LOCAL_SYSFS_H

/* The path of the shared sysfs, mounted first if it is not (once per boot,
 * under a lock), or NULL when it cannot be (no writable /run, no mount
 * rights): the sandbox then mounts a sysfs of its own, which shows the
 * same.  Never fails otherwise; sets nothing. */
const char *local_shared_sysfs(void);

#endif
