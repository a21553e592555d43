/* The local sandbox's seccomp filter, checked two ways:
 *  - on paper: the exported BPF is run by a small classic-BPF interpreter
 *    over seccomp_data for every refused family, on the x86-64, i386
 *    (int $0x80) and x32 ABIs, with syscall numbers written out here (not
 *    taken from libseccomp), so a rule that libseccomp silently failed to
 *    place for one ABI shows.  This is the check for the 32-bit ABI: this
 *    machine's kernel refuses int $0x80 outright, so it cannot be tried
 *    live;
 *  - live: a child with every capability loads the filter and makes calls
 *    whose unfiltered result is not EPERM. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "local-seccomp.h"
#include "tap.h"

#define X32_BIT 0x40000000u
#define EPERM_RET (SECCOMP_RET_ERRNO | EPERM)
#define ENOSYS_RET (SECCOMP_RET_ERRNO | ENOSYS)

/* Classic BPF as the kernel runs it for seccomp: A, X, 16 words of
 * scratch memory, loads from struct seccomp_data. */
static uint32_t run(const struct local_filter *f, uint32_t arch, uint32_t nr, const uint64_t *args)
{
	struct seccomp_data d;
	memset(&d, 0, sizeof(d));
	d.nr = (int)nr;
	d.arch = arch;
	for (int i = 0; i < 6; i++)
		d.args[i] = args ? args[i] : 0;
	const struct sock_filter *p = f->insns;
	uint32_t A = 0, X = 0, M[16] = {0};
	for (unsigned pc = 0; pc < f->len; pc++) {
		const struct sock_filter *i = &p[pc];
		uint32_t src = BPF_SRC(i->code) == BPF_X ? X : i->k;
		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
			if (BPF_MODE(i->code) == BPF_ABS && i->k + 4 <= sizeof(d))
				memcpy(&A, (const char *)&d + i->k, 4);
			else if (BPF_MODE(i->code) == BPF_IMM)
				A = i->k;
			else if (BPF_MODE(i->code) == BPF_MEM)
				A = M[i->k & 15];
			else
				return 0xdead;
			break;
		case BPF_LDX:
			X = BPF_MODE(i->code) == BPF_MEM ? M[i->k & 15] : i->k;
			break;
		case BPF_ST: M[i->k & 15] = A; break;
		case BPF_STX: M[i->k & 15] = X; break;
		case BPF_ALU:
			switch (BPF_OP(i->code)) {
			case BPF_ADD: A += src; break;
			case BPF_SUB: A -= src; break;
			case BPF_AND: A &= src; break;
			case BPF_OR: A |= src; break;
			case BPF_LSH: A <<= src; break;
			case BPF_RSH: A >>= src; break;
			case BPF_NEG: A = -A; break;
			default: return 0xdead;
			}
			break;
		case BPF_JMP: {
			int t;
			switch (BPF_OP(i->code)) {
			case BPF_JA: pc += i->k; continue;
			case BPF_JEQ: t = A == src; break;
			case BPF_JGT: t = A > src; break;
			case BPF_JGE: t = A >= src; break;
			case BPF_JSET: t = (A & src) != 0; break;
			default: return 0xdead;
			}
			pc += t ? i->jt : i->jf;
			break;
		}
		case BPF_RET: return BPF_RVAL(i->code) == BPF_A ? A : i->k;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				X = A;
			else
				A = X;
			break;
		}
	}
	return 0xdead;   /* fell off the end */
}

struct call {
	const char *what;
	uint32_t x64, i386;      /* syscall numbers; 0 = none on that ABI */
	uint64_t a0;
	uint32_t want, want_userns;
};

#define ALLOW SECCOMP_RET_ALLOW
static const struct call calls[] = {
	{"kexec_load", 246, 283, 0, EPERM_RET, EPERM_RET},
	{"kexec_file_load", 320, 0, 0, EPERM_RET, EPERM_RET},
	{"init_module", 175, 128, 0, EPERM_RET, EPERM_RET},
	{"finit_module", 313, 350, 0, EPERM_RET, EPERM_RET},
	{"delete_module", 176, 129, 0, EPERM_RET, EPERM_RET},
	{"bpf", 321, 357, 0, EPERM_RET, EPERM_RET},
	{"perf_event_open", 298, 336, 0, EPERM_RET, EPERM_RET},
	{"userfaultfd", 323, 374, 0, EPERM_RET, EPERM_RET},
	{"io_uring_setup", 425, 425, 0, EPERM_RET, EPERM_RET},
	{"add_key", 248, 286, 0, EPERM_RET, EPERM_RET},
	{"request_key", 249, 287, 0, EPERM_RET, EPERM_RET},
	{"keyctl", 250, 288, 0, EPERM_RET, EPERM_RET},
	{"open_by_handle_at", 304, 342, 0, EPERM_RET, EPERM_RET},
	{"acct", 163, 51, 0, EPERM_RET, EPERM_RET},
	{"swapon", 167, 87, 0, EPERM_RET, EPERM_RET},
	{"reboot", 169, 88, 0, EPERM_RET, EPERM_RET},
	{"syslog", 103, 103, 0, EPERM_RET, EPERM_RET},
	{"settimeofday", 164, 79, 0, EPERM_RET, EPERM_RET},
	{"clock_settime", 227, 264, 0, EPERM_RET, EPERM_RET},
	{"iopl", 172, 110, 3, EPERM_RET, EPERM_RET},
	{"ioperm", 173, 101, 0, EPERM_RET, EPERM_RET},
	{"vm86", 0, 166, 0, EPERM_RET, EPERM_RET},
	{"uselib", 134, 86, 0, EPERM_RET, EPERM_RET},
	{"mount", 165, 21, 0, EPERM_RET, ALLOW},
	{"umount2", 166, 52, 0, EPERM_RET, ALLOW},
	{"pivot_root", 155, 217, 0, EPERM_RET, ALLOW},
	{"open_tree", 428, 428, 0, EPERM_RET, ALLOW},
	{"move_mount", 429, 429, 0, EPERM_RET, ALLOW},
	{"fsopen", 430, 430, 0, EPERM_RET, ALLOW},
	{"fsmount", 432, 432, 0, EPERM_RET, ALLOW},
	{"setns", 308, 346, 0, EPERM_RET, ALLOW},
	{"unshare(CLONE_NEWUSER)", 272, 310, CLONE_NEWUSER, EPERM_RET, ALLOW},
	{"unshare(CLONE_NEWNS)", 272, 310, CLONE_NEWNS, EPERM_RET, ALLOW},
	{"unshare(CLONE_NEWNET|CLONE_FS)", 272, 310, CLONE_NEWNET | CLONE_FS, EPERM_RET, ALLOW},
	{"unshare(CLONE_NEWTIME)", 272, 310, 0x80, EPERM_RET, ALLOW},
	{"unshare(CLONE_FILES)", 272, 310, CLONE_FILES, ALLOW, ALLOW},
	{"clone(CLONE_NEWUSER|SIGCHLD)", 56, 120, CLONE_NEWUSER | 17, EPERM_RET, ALLOW},
	{"clone(CLONE_NEWPID|SIGCHLD)", 56, 120, CLONE_NEWPID | 17, EPERM_RET, ALLOW},
	{"clone(thread flags)", 56, 120, 0x3d0f00, ALLOW, ALLOW},
	{"clone(exit signal 0x80 bit)", 56, 120, 0x80 | 17, ALLOW, ALLOW},
	{"clone3", 435, 435, 0, ENOSYS_RET, ENOSYS_RET},
	{"personality(READ_IMPLIES_EXEC)", 135, 136, 0x0400000, EPERM_RET, EPERM_RET},
	{"personality(ADDR_NO_RANDOMIZE)", 135, 136, 0x0040000, EPERM_RET, EPERM_RET},
	{"personality(0x80000000)", 135, 136, 0x80000000u, EPERM_RET, EPERM_RET},
	{"personality(0xfffffffe)", 135, 136, 0xfffffffeu, EPERM_RET, EPERM_RET},
	{"personality(0)", 135, 136, 0, ALLOW, ALLOW},
	{"personality(PER_LINUX32)", 135, 136, 8, ALLOW, ALLOW},
	{"personality(UNAME26|PER_LINUX32)", 135, 136, 0x20008, ALLOW, ALLOW},
	{"personality(query)", 135, 136, 0xffffffffu, ALLOW, ALLOW},
	{"getpid", 39, 20, 0, ALLOW, ALLOW},
	{"read", 0, 3, 0, ALLOW, ALLOW},
	{"ptrace", 101, 26, 0, ALLOW, ALLOW},
	{"mknodat", 259, 297, 0, ALLOW, ALLOW},
	{"chroot", 161, 61, 0, ALLOW, ALLOW},
};

static void on_paper(const struct local_filter *f, int userns)
{
	const char *tag = userns ? "allow_userns" : "default";
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		const struct call *c = &calls[i];
		uint32_t want = userns ? c->want_userns : c->want;
		uint64_t args[6] = {c->a0};
		if (c->x64) {
			is_int(run(f, AUDIT_ARCH_X86_64, c->x64, args), want, "%s x86-64: %s", tag,
			       c->what);
			/* x32 shares the numbers below 512 (with the x32 bit set);
			 * its kexec_load is 528, and it has no uselib. */
			uint32_t x32 = c->x64 == 246 ? 528 : c->x64 == 134 ? 0 : c->x64;
			if (x32)
				is_int(run(f, AUDIT_ARCH_X86_64, x32 | X32_BIT, args), want,
				       "%s x32: %s", tag, c->what);
		}
		if (c->i386)
			is_int(run(f, AUDIT_ARCH_I386, c->i386, args), want, "%s i386: %s", tag,
			       c->what);
	}
	is_int(run(f, AUDIT_ARCH_AARCH64, 39, NULL) & SECCOMP_RET_ACTION_FULL,
	       SECCOMP_RET_KILL_PROCESS, "%s: another architecture kills", tag);
}

/* In a child with every capability: what the filter refuses comes back
 * EPERM; unfiltered, each of these calls fails otherwise (or succeeds). */
static void live(const struct local_filter *f)
{
	pid_t p = fork();
	if (p == 0) {
		if (local_seccomp_install(f) < 0)
			_exit(10);
		errno = 0;
		if (syscall(SYS_kexec_load, 0, 1000, NULL, 0xdead0000UL) >= 0 || errno != EPERM)
			_exit(11);
		if (syscall(SYS_bpf, 9999, NULL, 0) >= 0 || errno != EPERM)
			_exit(12);
		if (syscall(SYS_setns, -1, 0) >= 0 || errno != EPERM)
			_exit(13);
		if (syscall(SYS_clone3, NULL, 0) >= 0 || errno != ENOSYS)
			_exit(14);
		if (syscall(SYS_mount, "none", "/sbx-nonexistent", "tmpfs", 0, NULL) >= 0 ||
		    errno != EPERM)
			_exit(15);
		if (syscall(SYS_personality, 0xffffffffUL) < 0 || getpid() <= 0)
			_exit(16);
		_exit(0);
	}
	int st = -1;
	waitpid(p, &st, 0);
	is_int(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st), 0,
	       "live: the kernel takes the filter; refused calls get EPERM/ENOSYS, others pass");
}

int main(void)
{
	struct sbx_err err = {0};
	/* libseccomp asks the kernel which actions it has (seccomp(2)) before
	 * it builds; valgrind 3.19 does not know that call, so there is
	 * nothing to check under it. */
	unsigned int action = SECCOMP_RET_ERRNO;
	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0 && errno == ENOSYS) {
		printf("1..0 # SKIP seccomp(2) is not available here (valgrind?)\n");
		return 0;
	}
	struct local_filter f, u;
	ok(local_seccomp_build(0, &f, &err) == 0, "build the default filter %s", err.msg);
	ok(local_seccomp_build(1, &u, &err) == 0, "build the allow_userns filter %s", err.msg);
	on_paper(&f, 0);
	on_paper(&u, 1);
	if (geteuid() == 0)
		live(&f);
	local_filter_free(&f);
	local_filter_free(&u);
	return tap_done();
}
