/* local-seccomp.c - the seccomp filter every exec in a local sandbox runs
 * under, root and uid 1000 alike.
 *
 * Policy: everything is allowed except the families below, which fail
 * with EPERM (clone3 with ENOSYS).  It is a deny-list where Docker's
 * default profile is an allow-list: the sandbox is a general Linux
 * userland (apt-get, dpkg, compilers, language runtimes) whose syscall
 * needs grow with every kernel, and an allow-list that misses a new
 * harmless syscall breaks installs in ways that look like bugs of the
 * installed software.  What an allow-list adds beyond the families below
 * is protection against syscalls nobody listed yet; what guards root
 * inside against the kernel is mostly the capability set (local-exec.c),
 * which the filter backs up where a capability is not the whole story.
 *
 *   kernel and modules   kexec_load, kexec_file_load, init_module,
 *                        finit_module, delete_module (+ the obsolete
 *                        create_module, get_kernel_syms, query_module)
 *   kernel surface       bpf, perf_event_open, userfaultfd,
 *                        io_uring_setup/enter/register
 *   keyrings             add_key, request_key, keyctl (not namespaced)
 *   handles              open_by_handle_at
 *   host state           acct, swapon, swapoff, reboot, quotactl(_fd),
 *                        lookup_dcookie, syslog, vhangup, nfsservctl,
 *                        settimeofday, stime, clock_settime, clock_adjtime
 *   hardware             iopl, ioperm (and on i386 vm86, vm86old)
 *   obsolete             uselib, ustat, sysfs, _sysctl
 *   personality          only 0, PER_LINUX32, UNAME26, both, and the
 *                        query 0xffffffff (Docker's set)
 *   namespaces           unshare and clone with any CLONE_NEW* flag, setns
 *   mounts               mount, umount(2), pivot_root, open_tree,
 *                        move_mount, fsopen, fsconfig, fsmount, fspick,
 *                        mount_setattr
 *   clone3               ENOSYS: its flags sit behind a pointer that a
 *                        filter cannot read; libc then falls back to
 *                        clone, whose flags the filter does check
 *
 * allow_userns (a profile switch) lifts the namespace and mount rows:
 * creating a user namespace is exactly what gives back, inside it, the
 * capabilities the sandbox withholds, so with it on the mount rows would
 * only break what the switch is for (nested containers, bwrap).
 *
 * ptrace stays allowed (strace and gdb are install-time tools): the
 * kernel's own checks keep it to processes of the same uid whose
 * capabilities are a subset of the tracer's, and the exec child is not
 * dumpable until it has dropped everything.
 *
 * On x86-64 the same rules are compiled for the i386 ABI (int $0x80) and
 * x32; any other architecture's syscalls kill the process. */
#include "local-seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Refused with EPERM whatever the profile says. */
static const char *const always[] = {
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"create_module", "get_kernel_syms", "query_module",
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
	"io_uring_register",
	"add_key", "request_key", "keyctl",
	"open_by_handle_at",
	"acct", "swapon", "swapoff", "reboot", "quotactl", "quotactl_fd", "lookup_dcookie",
	"syslog", "vhangup", "nfsservctl",
	"settimeofday", "stime", "clock_settime", "clock_settime64", "clock_adjtime",
	"clock_adjtime64",
	"iopl", "ioperm", "vm86", "vm86old",
	"uselib", "ustat", "sysfs", "_sysctl",
};

/* Refused unless allow_userns. */
static const char *const mounts[] = {
	"mount", "umount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen",
	"fsconfig", "fsmount", "fspick", "mount_setattr", "setns",
};

static const uint32_t ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
	CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME,
};

/* A name this libseccomp does not know is skipped (it cannot be called
 * through a number we could name either); one it knows but that does not
 * exist on some architecture of the filter is skipped there by libseccomp. */
static int deny(scmp_filter_ctx ctx, const char *name, uint32_t action,
		unsigned n, const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0;
	return seccomp_rule_add_array(ctx, action, nr, n, cmp);
}

static int add_rules(scmp_filter_ctx ctx, int allow_userns)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	int rc;
	for (size_t i = 0; i < SBX_ARRAY_LEN(always); i++)
		if ((rc = deny(ctx, always[i], eperm, 0, NULL)) < 0)
			return rc;
	if ((rc = deny(ctx, "clone3", SCMP_ACT_ERRNO(ENOSYS), 0, NULL)) < 0)
		return rc;
	/* personality(x) is allowed for x in {0, 8, 0x20000, 0x20008,
	 * 0xffffffff}.  libseccomp takes one comparison per argument and
	 * rule, so the complement is spelled as single-comparison rules on
	 * the low 32 bits (what the kernel reads): with bit 31 clear, any
	 * bit but 3 and 17 set is refused; with bit 31 set, any bit clear is
	 * (no flag uses bit 31, so only the query has it). */
	for (unsigned b = 0; b < 31; b++) {
		uint32_t bit = 1u << b;
		struct scmp_arg_cmp hi = SCMP_A0_32(SCMP_CMP_MASKED_EQ, 0x80000000u | bit, 0x80000000u);
		if ((rc = deny(ctx, "personality", eperm, 1, &hi)) < 0)
			return rc;
		if (b == 3 || b == 17)
			continue;
		struct scmp_arg_cmp lo = SCMP_A0_32(SCMP_CMP_MASKED_EQ, 0x80000000u | bit, bit);
		if ((rc = deny(ctx, "personality", eperm, 1, &lo)) < 0)
			return rc;
	}
	if (allow_userns)
		return 0;
	for (size_t i = 0; i < SBX_ARRAY_LEN(mounts); i++)
		if ((rc = deny(ctx, mounts[i], eperm, 0, NULL)) < 0)
			return rc;
	for (size_t i = 0; i < SBX_ARRAY_LEN(ns_flags); i++) {
		struct scmp_arg_cmp c = SCMP_A0_32(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]);
		if ((rc = deny(ctx, "unshare", eperm, 1, &c)) < 0)
			return rc;
		/* In clone's flags the low byte is the exit signal:
		 * CLONE_NEWTIME (0x80) exists only for unshare and clone3. */
		if (ns_flags[i] != CLONE_NEWTIME && (rc = deny(ctx, "clone", eperm, 1, &c)) < 0)
			return rc;
	}
	return 0;
}

int local_seccomp_build(int allow_userns, struct local_filter *f, struct sbx_err *err)
{
	memset(f, 0, sizeof(*f));
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return sbx_fail(err, SBX_INTERNAL, "seccomp", "seccomp_init failed");
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* A binary search over syscall numbers rather than a linear chain:
	 * every allowed syscall of every process pays for the walk. */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc == 0 && seccomp_arch_native() == SCMP_ARCH_X86_64) {
		rc = seccomp_arch_add(ctx, SCMP_ARCH_X86);
		if (rc == 0)
			rc = seccomp_arch_add(ctx, SCMP_ARCH_X32);
	}
	if (rc == 0)
		rc = add_rules(ctx, allow_userns);
	/* libseccomp 2.5 exports only to an fd. */
	int fd = rc == 0 ? memfd_create("sbx-seccomp", MFD_CLOEXEC) : -1;
	if (rc == 0 && fd < 0)
		rc = -errno;
	if (rc == 0)
		rc = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		errno = -rc;
		return sbx_fail_errno(err, SBX_INTERNAL, "seccomp", "build the filter");
	}
	off_t n = lseek(fd, 0, SEEK_END);
	SBX_AUTOFREE char *buf = NULL;
	size_t len = 0;
	if (n <= 0 || lseek(fd, 0, SEEK_SET) < 0 ||
	    sbx_read_all_fd(fd, (size_t)n, &buf, &len, err) < 0 || len != (size_t)n) {
		close(fd);
		return err->kind != SBX_OK ? -1 : sbx_fail(err, SBX_INTERNAL, "seccomp", "export the filter");
	}
	close(fd);
	if (len % sizeof(struct sock_filter) || len / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return sbx_fail(err, SBX_INTERNAL, "seccomp", "filter of %zu bytes", len);
	f->insns = buf;
	f->len = (unsigned short)(len / sizeof(struct sock_filter));
	buf = NULL;
	return 0;
}

/* The name of the filter this build makes: FNV-1a over the rule tables,
 * the profile switch and libseccomp's version, so that a rule changed in
 * the source or a different libseccomp never meets a filter cached by the
 * other.  RULES_VERSION covers the rules written as code (personality,
 * clone3, the namespace flags' shape). */
#define RULES_VERSION 1
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
	return h;
}

static uint64_t filter_key(int allow_userns)
{
	uint64_t h = 14695981039346656037ull;
	const struct scmp_version *v = seccomp_version();
	unsigned w[] = {RULES_VERSION, (unsigned)allow_userns, v ? v->major : 0, v ? v->minor : 0,
			v ? v->micro : 0};
	h = fnv(h, w, sizeof(w));
	for (size_t i = 0; i < SBX_ARRAY_LEN(always); i++)
		h = fnv(h, always[i], strlen(always[i]) + 1);
	for (size_t i = 0; i < SBX_ARRAY_LEN(mounts); i++)
		h = fnv(h, mounts[i], strlen(mounts[i]) + 1);
	return fnv(h, ns_flags, sizeof(ns_flags));
}

/* tmp + rename, without fsync: the file serves execs into a live
 * sandbox, and no sandbox outlives a host crash (its init dies), so a
 * torn file after one is never loaded.  Saves a disk flush per create. */
static int write_filter(const char *path, int allow_userns, struct sbx_err *err)
{
	struct local_filter f;
	if (local_seccomp_build(allow_userns, &f, err) < 0)
		return -1;
	int rc = sbx_write_file_atomic(path, f.insns, f.len * sizeof(struct sock_filter), 0600,
				       SBX_WRITE_NOSYNC, err);
	local_filter_free(&f);
	return rc;
}

int local_seccomp_write(const char *path, const char *cache, int allow_userns,
			struct sbx_err *err)
{
	SBX_AUTOFREE char *cached = sbx_xasprintf("%s/%016llx.bpf", cache,
						  (unsigned long long)filter_key(allow_userns));
	if (access(cached, F_OK) < 0) {
		if (mkdir(cache, 0700) < 0 && errno != EEXIST)
			return sbx_fail_errno(err, SBX_INTERNAL, "seccomp", "mkdir %s", cache);
		if (write_filter(cached, allow_userns, err) < 0)
			return -1;
	}
	/* The sandbox's own name for it: a hard link (the cache and the
	 * sandbox dirs share the state dir's filesystem), else a copy. */
	if (link(cached, path) == 0)
		return 0;
	return write_filter(path, allow_userns, err);
}

int local_seccomp_read(const char *path, int allow_userns, struct local_filter *f,
		       struct sbx_err *err)
{
	memset(f, 0, sizeof(*f));
	char *buf = NULL;
	size_t len = 0;
	struct sbx_err e2 = {0};
	if (sbx_read_file(path, BPF_MAXINSNS * sizeof(struct sock_filter), &buf, &len, &e2) < 0) {
		if (e2.kind == SBX_NOT_FOUND)
			return local_seccomp_build(allow_userns, f, err);
		*err = e2;
		return -1;
	}
	if (len == 0 || len % sizeof(struct sock_filter)) {
		free(buf);
		return sbx_fail(err, SBX_INTERNAL, "seccomp", "%s: not a filter (%zu bytes)", path,
				len);
	}
	f->insns = buf;
	f->len = (unsigned short)(len / sizeof(struct sock_filter));
	return 0;
}

void local_filter_free(struct local_filter *f)
{
	free(f->insns);
	memset(f, 0, sizeof(*f));
}

int local_seccomp_install(const struct local_filter *f)
{
	struct sock_fprog prog = {.len = f->len, .filter = f->insns};
	if (!f->insns || !f->len) {
		errno = EINVAL;
		return -1;
	}
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}
