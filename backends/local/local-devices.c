/* local-devices.c - the device allow-list of a local sandbox.
 *
 * A process in a sandbox may open (read, write) or create (mknod) only
 * these character devices:
 *
 *   1:3 null  1:5 zero  1:7 full  1:8 random  1:9 urandom
 *   5:0 tty   5:2 ptmx  136:* the pts of its own devpts
 *
 * and no block device at all.  The check is on the device number, not on
 * the path, so a node that reaches the sandbox in any way (a layer, a
 * snapshot, an import, a mount made from outside) opens only if its number
 * is on the list; everything else fails with EPERM.
 *
 * The kernel enforces it in two places, and both are set:
 *  - cgroup v1: the `devices` controller (devices.deny "a", then one
 *    devices.allow line per entry), on hybrid hosts;
 *  - cgroup v2: a BPF_PROG_TYPE_CGROUP_DEVICE program attached to the
 *    sandbox's <cg>/work, which holds every exec'd process, and covers
 *    every x-* below it (<cg> itself holds the init, our own code, and
 *    slirp4netns, which needs /dev/net/tun).  It is attached without BPF_F_ALLOW_OVERRIDE or MULTI, so no
 *    cgroup below may attach a program of its own (and nothing inside can
 *    attach anything: no CAP_SYS_ADMIN, and bpf(2) is refused by the
 *    seccomp filter).  The cgroup holds the program; it lives as long as
 *    the cgroup and needs no pinning.
 * On a hybrid kernel each alone refuses a device off the list: a device
 * access is checked by the v1 controller and by the v2 programs in turn
 * (tests/boundary-devices.bats shows each alone). */
#include "local-devices.h"
#include "local-cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

struct dev_rule {
	unsigned major;
	int minor;               /* -1 = any */
};

static const struct dev_rule allowed[] = {
	{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 2}, {136, -1},
};

/* ---- cgroup v1 ---- */

/* "deny a" empties the list (it needs a cgroup without children: ours
 * is brand new), then the allow lines add the entries back. */
static int limit_v1(const char *cg, struct sbx_err *err)
{
	if (local_cg_write(cg, "devices.deny", "a") < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "%s/devices.deny", cg);
	for (size_t i = 0; i < SBX_ARRAY_LEN(allowed); i++) {
		char line[64];
		if (allowed[i].minor < 0)
			snprintf(line, sizeof(line), "c %u:* rwm", allowed[i].major);
		else
			snprintf(line, sizeof(line), "c %u:%d rwm", allowed[i].major, allowed[i].minor);
		if (local_cg_write(cg, "devices.allow", line) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "%s/devices.allow %s", cg,
					      line);
	}
	return 0;
}

/* ---- cgroup v2: the device program ---- */

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), \
					      .off = (o), .imm = (i)})
#define LDX_W(d, s, o)   INSN(BPF_LDX | BPF_W | BPF_MEM, d, s, o, 0)
#define AND32_K(d, i)    INSN(BPF_ALU | BPF_AND | BPF_K, d, 0, 0, i)
#define JNE_K(d, i, o)   INSN(BPF_JMP | BPF_JNE | BPF_K, d, 0, o, i)
#define MOV64_K(d, i)    INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define EXIT()           INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* The program, over struct bpf_cgroup_dev_ctx in r1:
 *     r2 = access_type & 0xffff (device type); r4 = major; r5 = minor
 *     if r2 != CHAR goto deny
 *     per entry: if r4 == major [&& r5 == minor] return 1
 *   deny: return 0
 * Every entry allows every access (mknod, read, write), so the access
 * half of access_type is not looked at.  Returns the instruction count. */
static size_t build_prog(struct bpf_insn *p, size_t cap)
{
	size_t n = 0;
	size_t need = 6 + 4 * SBX_ARRAY_LEN(allowed) + 2;
	if (cap < need)
		return 0;
	p[n++] = LDX_W(BPF_REG_2, BPF_REG_1, offsetof(struct bpf_cgroup_dev_ctx, access_type));
	p[n++] = AND32_K(BPF_REG_2, 0xffff);
	p[n++] = LDX_W(BPF_REG_4, BPF_REG_1, offsetof(struct bpf_cgroup_dev_ctx, major));
	p[n++] = LDX_W(BPF_REG_5, BPF_REG_1, offsetof(struct bpf_cgroup_dev_ctx, minor));
	size_t to_deny = n++;                      /* patched below */
	for (size_t i = 0; i < SBX_ARRAY_LEN(allowed); i++) {
		int any = allowed[i].minor < 0;
		p[n++] = JNE_K(BPF_REG_4, (int)allowed[i].major, any ? 2 : 3);
		if (!any)
			p[n++] = JNE_K(BPF_REG_5, allowed[i].minor, 2);
		p[n++] = MOV64_K(BPF_REG_0, 1);
		p[n++] = EXIT();
	}
	p[to_deny] = JNE_K(BPF_REG_2, BPF_DEVCG_DEV_CHAR, (short)(n - to_deny - 1));
	p[n++] = MOV64_K(BPF_REG_0, 0);
	p[n++] = EXIT();
	return n;
}

static int limit_v2(const char *cg, struct sbx_err *err)
{
	struct bpf_insn prog[64];
	size_t n = build_prog(prog, SBX_ARRAY_LEN(prog));
	if (!n)
		return sbx_fail(err, SBX_INTERNAL, "create", "device program too long");
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	a.insns = (uintptr_t)prog;
	a.insn_cnt = (unsigned)n;
	a.license = (uintptr_t)"GPL";
	SBX_AUTOCLOSE int pfd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	if (pfd < 0)
		return sbx_fail_errno(err, errno == ENOSYS || errno == EINVAL ? SBX_UNSUPPORTED
							: SBX_INTERNAL,
				      "create", "load the device program");
	SBX_AUTOCLOSE int cfd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cfd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "open %s", cg);
	memset(&a, 0, sizeof(a));
	a.target_fd = (unsigned)cfd;
	a.attach_bpf_fd = (unsigned)pfd;
	a.attach_type = BPF_CGROUP_DEVICE;
	a.attach_flags = 0;      /* no override, no multi: final for the subtree */
	if (syscall(SYS_bpf, BPF_PROG_ATTACH, &a, sizeof(a)) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "attach the device program to %s",
				      cg);
	return 0;
}

int local_devices_limit(const char *v1, const char *v2, struct sbx_err *err)
{
	if (v1 && limit_v1(v1, err) < 0)
		return -1;
	if (!v2)
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "no cgroup2 hierarchy is mounted");
	return limit_v2(v2, err);
}
