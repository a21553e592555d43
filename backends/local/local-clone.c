/* local-clone.c - fork a child straight into a cgroup2 group (contract in
 * local-clone.h). */
#include "local-clone.h"

#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

pid_t local_clone_into_cgroup(int cg_dirfd)
{
	struct clone_args a;
	memset(&a, 0, sizeof(a));
	a.flags = CLONE_INTO_CGROUP;
	a.exit_signal = SIGCHLD;
	a.cgroup = (uint64_t)cg_dirfd;
	return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
}
