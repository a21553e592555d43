/* local-clone.h - fork a child straight into a cgroup2 group
 * (local-clone.c).
 *
 * Writing a pid into cgroup.procs takes the kernel's global
 * cgroup_threadgroup_rwsem for writing, and the first writer after a
 * quiet spell waits for an RCU grace period: 10-20 ms on an idle 2-core
 * host, paid by every create and every exec that do not come back to back
 * (docs/design.md).  clone3(CLONE_INTO_CGROUP) places the child at
 * birth and takes that lock only for reading. */
#ifndef SBX_LOCAL_CLONE_H
#define SBX_LOCAL_CLONE_H

#include <sys/types.h>

/* Fork, the child born in the cgroup2 group open as `cg_dirfd` (O_PATH is
 * enough).  Returns like fork: the child's pid, 0 in the child, -1 with
 * errno and no child: ENOSYS, E2BIG or EINVAL on a kernel without it
 * (before 5.7), EPERM under a seccomp profile that hides clone3, EBUSY
 * for a group that may not hold processes.  The caller then forks and
 * moves the child itself, which fails or not on its own terms.  No glibc
 * fork handlers run in the child: it may only exec or _exit (it has its
 * own memory, unlike a vfork child).  Allocates nothing. */
pid_t local_clone_into_cgroup(int cg_dirfd);

#endif
