/* sysprobe - try one syscall per refused family and print how it ended.
 *
 *   sysprobe FAMILY...     prints "FAMILY RESULT" per family, RESULT being
 *                          "ok" or the errno's name (EPERM, ENOSYS, ...)
 *   sysprobe open:PATH     open(PATH, O_RDONLY) (never writes to it)
 *   sysprobe pty           open /dev/ptmx and the pts it hands out
 *
 * Built statically by the boundary tests and run inside a sandbox as root
 * and as uid 1000.  Each call's arguments are chosen so that, without the
 * seccomp filter, the call either succeeds harmlessly or fails with an
 * errno other than EPERM (see docs: a bad flag, a bad fd, a missing path),
 * so that EPERM can only come from the filter.  Families whose kernel
 * check is a capability before anything else (kexec, modules, reboot,
 * swapon, acct, syslog) print EPERM without a filter too; test-seccomp
 * checks those with every capability.  The "i386-*" families make the
 * same call through int $0x80, the 32-bit ABI. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static long fork_like(long rc)
{
	if (rc == 0)
		_exit(0);
	if (rc > 0)
		waitpid((pid_t)rc, NULL, __WALL);
	return rc < 0 ? -1 : 0;
}

#ifdef __x86_64__
/* A 32-bit syscall from a 64-bit process: the kernel (and seccomp) see
 * AUDIT_ARCH_I386 and the i386 syscall table. */
static long int80(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory", "r8", "r9", "r10", "r11");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}
#endif

static long probe(const char *f)
{
	if (!strncmp(f, "open:", 5))
		return open(f + 5, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (!strcmp(f, "pty")) {
		int m = posix_openpt(O_RDWR | O_NOCTTY);
		if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
			return -1;
		const char *pts = ptsname(m);
		return pts ? open(pts, O_RDWR | O_NOCTTY) : -1;
	}
	if (!strcmp(f, "kexec"))
		return syscall(SYS_kexec_load, 0, 1000, NULL, 0xdead0000UL);
	if (!strcmp(f, "module"))
		return syscall(SYS_finit_module, -1, "", 0);
	if (!strcmp(f, "delete_module"))
		return syscall(SYS_delete_module, "sbx-no-such-module", O_NONBLOCK);
	if (!strcmp(f, "bpf"))
		return syscall(SYS_bpf, 9999, NULL, 0);
	if (!strcmp(f, "perf")) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof(a));
		a.size = 1;   /* too small: E2BIG before any permission check */
		return syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	}
	if (!strcmp(f, "userfaultfd"))
		return syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (!strcmp(f, "keyctl"))
		return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
	if (!strcmp(f, "add_key"))
		return syscall(SYS_add_key, "user", "sbx", "x", 1, KEY_SPEC_PROCESS_KEYRING);
	if (!strcmp(f, "open_by_handle_at"))
		return syscall(SYS_open_by_handle_at, -1, NULL, 0);
	if (!strcmp(f, "io_uring"))
		return syscall(SYS_io_uring_setup, 1, NULL);
	if (!strcmp(f, "mount"))
		return syscall(SYS_mount, "none", "/sbx-nonexistent", "tmpfs", 0, NULL);
	if (!strcmp(f, "umount"))
		return syscall(SYS_umount2, "/sbx-nonexistent", 0);
	if (!strcmp(f, "open_tree"))
		return syscall(SYS_open_tree, AT_FDCWD, "/sbx-nonexistent", 0);
	if (!strcmp(f, "pivot_root"))
		return syscall(SYS_pivot_root, "/sbx-nonexistent", "/sbx-nonexistent");
	if (!strcmp(f, "setns"))
		return syscall(SYS_setns, -1, 0);
	if (!strcmp(f, "unshare-user"))
		return syscall(SYS_unshare, CLONE_NEWUSER);
	if (!strcmp(f, "unshare-mount"))
		return syscall(SYS_unshare, CLONE_NEWNS);
	if (!strcmp(f, "clone-user"))
		return fork_like(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, NULL, NULL, 0));
	if (!strcmp(f, "clone3-user")) {
		uint64_t args[11];
		memset(args, 0, sizeof(args));
		args[0] = CLONE_NEWUSER;   /* flags */
		args[4] = SIGCHLD;         /* exit_signal */
		return fork_like(syscall(SYS_clone3, args, 64));
	}
	if (!strcmp(f, "clone3")) {
		uint64_t args[11];
		memset(args, 0, sizeof(args));
		args[4] = SIGCHLD;
		return fork_like(syscall(SYS_clone3, args, 64));
	}
	if (!strcmp(f, "fork"))
		return fork_like(fork());
	if (!strcmp(f, "personality-rix"))
		return syscall(SYS_personality, 0x0400000UL) < 0 ? -1 : 0;
	if (!strcmp(f, "personality-query"))
		return syscall(SYS_personality, 0xffffffffUL) < 0 ? -1 : 0;
	if (!strcmp(f, "personality-linux32"))
		return syscall(SYS_personality, 0x0008UL) < 0 ? -1 : 0;
	if (!strcmp(f, "settime")) {
		struct timespec ts = {0, 2000000000L};   /* invalid: EINVAL */
		return syscall(SYS_clock_settime, CLOCK_REALTIME, &ts);
	}
	if (!strcmp(f, "iopl"))
		return syscall(SYS_iopl, 4);          /* > 3: EINVAL */
	if (!strcmp(f, "ioperm"))
		return syscall(SYS_ioperm, 0xffffUL, 2, 1);   /* past the bitmap: EINVAL */
	if (!strcmp(f, "swapon"))
		return syscall(SYS_swapon, "/sbx-nonexistent", 0);
	if (!strcmp(f, "reboot"))
		return syscall(SYS_reboot, 0, 0, 0, NULL);   /* bad magic: EINVAL after the cap */
	if (!strcmp(f, "acct"))
		return syscall(SYS_acct, "/sbx-nonexistent");
	if (!strcmp(f, "syslog"))
		return syscall(SYS_syslog, 10, NULL, 0);
	if (!strcmp(f, "sysfs"))
		return syscall(SYS_sysfs, 99);
	if (!strcmp(f, "ustat"))
		return syscall(SYS_ustat, 0, NULL);
	if (!strcmp(f, "quotactl"))
		return syscall(SYS_quotactl, 0, NULL, 0, NULL);
#ifdef __x86_64__
	if (!strcmp(f, "i386-unshare-user"))
		return int80(310, CLONE_NEWUSER, 0, 0);
	if (!strcmp(f, "i386-bpf"))
		return int80(357, 9999, 0, 0);
	if (!strcmp(f, "i386-keyctl"))
		return int80(288, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
	if (!strcmp(f, "i386-getpid"))
		return int80(20, 0, 0, 0) > 0 ? 0 : -1;
#endif
	errno = EDOM;   /* unknown family */
	return -1;
}

/* Each family in a child of its own, so that one that succeeds (a new
 * user namespace) does not change what the next one sees. */
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		fflush(stdout);
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			errno = 0;
			long rc = probe(argv[i]);
			const char *name = rc >= 0 ? "ok" : strerrorname_np(errno);
			printf("%s %s\n", argv[i], name ? name : "?");
			fflush(stdout);
			_exit(0);
		}
		int st;
		waitpid(p, &st, 0);
		if (!WIFEXITED(st))
			printf("%s signal-%d\n", argv[i], WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	}
	return 0;
}
