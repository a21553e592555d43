/* local-spawn.c - put one command inside a local sandbox: environment,
 * privileges, namespaces, cgroups, seccomp (contract in local-spawn.h).
 *
 * Promises:
 *  - The child holds no fd of ours but its stdio and, until execve, the
 *    CLOEXEC report pipe; it is not dumpable until execve (it holds host
 *    fds and a copy of our memory until then).
 *  - Nothing between the fork and execve allocates: local_spawn_fork is
 *    safe in a child of a threaded program.
 *  - What the caller ignored or blocked (signals) does not reach the
 *    command. */
#include "local-spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "doc.h"
#include "fdpass.h"
#include "local-clone.h"
#include "util.h"

/* What root inside a sandbox keeps: Docker's default capability set
 * without CAP_MKNOD (a device node is the way to a host device; the
 * device allow-list backs this up) and without CAP_NET_RAW.  Installs
 * need the rest: chown/setuid/setgid for package users, DAC_OVERRIDE and
 * FOWNER for dpkg, SETFCAP for packages that ship file capabilities.
 * FIFOs and sockets need no capability to be made. */
static const int keep_caps[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID,
	CAP_SETUID, CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,
	CAP_AUDIT_WRITE, CAP_SETFCAP,
};

static int cap_kept(int c)
{
	for (size_t i = 0; i < SBX_ARRAY_LEN(keep_caps); i++)
		if (keep_caps[i] == c)
			return 1;
	return 0;
}

/* ---- environment ---- */

struct envv {
	char **v;
	size_t n, cap;
};

static void env_set(struct envv *e, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return;
	size_t kl = (size_t)(eq - kv) + 1;
	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->v[i], kv, kl) == 0) {
			free(e->v[i]);
			e->v[i] = sbx_xstrdup(kv);
			return;
		}
	if (e->n + 2 > e->cap) {
		e->cap = e->cap ? e->cap * 2 : 16;
		e->v = sbx_xrealloc(e->v, e->cap * sizeof(char *));
	}
	e->v[e->n++] = sbx_xstrdup(kv);
	e->v[e->n] = NULL;
}

/* The default environment, the sandbox's (sbx-create --env), the
 * command's, later ones winning. */
static char **env_build(const char *id, json_object *sb_env, const struct local_cmd *cmd)
{
	struct envv e = {0};
	char buf[256];
	env_set(&e, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	env_set(&e, cmd->as_root ? "HOME=/root" : "HOME=/home/user");
	env_set(&e, cmd->as_root ? "USER=root" : "USER=user");
	env_set(&e, cmd->as_root ? "LOGNAME=root" : "LOGNAME=user");
	env_set(&e, "LANG=C.UTF-8");
	snprintf(buf, sizeof(buf), "HOSTNAME=%s", id);
	env_set(&e, buf);
	env_set(&e, "SBX_SKILL_OUTPUT_DIR=/workspace/output");
	env_set(&e, "SBX_SESSION_INPUT_DIR=/workspace/input");
	if (cmd->tty)
		env_set(&e, "TERM=xterm");   /* what docker exec -t sets */
	if (sb_env && json_object_is_type(sb_env, json_type_object)) {
		json_object_object_foreach(sb_env, k, v) {
			char *kv = sbx_xasprintf("%s=%s", k, json_object_get_string(v));
			env_set(&e, kv);
			free(kv);
		}
	}
	for (char *const *p = cmd->env; p && *p; p++)
		env_set(&e, *p);
	return e.v;
}

/* ---- the child ---- */

static __attribute__((noreturn)) void child_fail(const struct local_spawn *c, int stage)
{
	int msg[2] = {stage, errno};
	(void)!write(c->report[1], msg, sizeof(msg));
	_exit(127);
}

static void drop_privileges(const struct local_spawn *c)
{
	/* The bounding set first: it needs CAP_SETPCAP, which uid 1000
	 * will not have. */
	for (int cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0)
			break;
		if (!cap_kept(cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			child_fail(c, LOCAL_STAGE_PRIV);
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (c->as_root) {
		gid_t g = 0;
		if (setgroups(1, &g) < 0)
			child_fail(c, LOCAL_STAGE_PRIV);
		struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct d[2] = {{0}};
		for (size_t i = 0; i < SBX_ARRAY_LEN(keep_caps); i++)
			d[keep_caps[i] / 32].permitted |= 1u << (keep_caps[i] % 32);
		d[0].effective = d[0].inheritable = d[0].permitted;
		d[1].effective = d[1].inheritable = d[1].permitted;
		if (syscall(SYS_capset, &h, d) < 0)
			child_fail(c, LOCAL_STAGE_PRIV);
	} else {
		gid_t g = SANDBOX_UID;
		if (setgroups(1, &g) < 0 || setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0 ||
		    setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0)
			child_fail(c, LOCAL_STAGE_PRIV);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(c, LOCAL_STAGE_PRIV);
}

/* In the child, in the sandbox's mount namespace and a session of its
 * own, still privileged: a pty of the sandbox's own devpts instance
 * (its /dev/ptmx, read-only /dev), never the host's.  The slave is taken
 * with TIOCGPTPEER (no path lookup that the sandbox could redirect),
 * owned by the user the command runs as (programs reopen their tty by
 * name), made the controlling terminal and stdio; the master goes back
 * to the caller over tty_sock and is closed here. */
static void child_tty(const struct local_spawn *c)
{
	int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	int unlock = 0;
	struct stat st;
	if (m < 0 || fstat(m, &st) < 0 || !S_ISCHR(st.st_mode) || ioctl(m, TIOCSPTLCK, &unlock) < 0)
		child_fail(c, LOCAL_STAGE_TTY);
	int sl = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY);
	if (sl < 0)
		child_fail(c, LOCAL_STAGE_TTY);
	struct winsize ws = {.ws_col = c->cols ? c->cols : 80, .ws_row = c->rows ? c->rows : 24};
	ioctl(m, TIOCSWINSZ, &ws);
	if (!c->as_root && fchown(sl, SANDBOX_UID, (gid_t)-1) < 0)
		child_fail(c, LOCAL_STAGE_TTY);
	char one = 1;
	struct iovec iov = {.iov_base = &one, .iov_len = 1};
	if (sbx_fds_send(c->tty_sock[1], &iov, 1, &m, 1, 0) != 1)
		child_fail(c, LOCAL_STAGE_TTY);
	close(m);
	if (ioctl(sl, TIOCSCTTY, 0) < 0 || dup2(sl, 0) < 0 || dup2(sl, 1) < 0 || dup2(sl, 2) < 0)
		child_fail(c, LOCAL_STAGE_TTY);
	if (sl > 2)
		close(sl);
}

/* In the child, already in the sandbox's pid namespace. */
static __attribute__((noreturn)) void child_main(const struct local_spawn *c)
{
	/* What the caller ignored or blocked must not leak into the command. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	/* Until execve, this process holds host fds and host memory: no
	 * one in the sandbox may look into it. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (!c->tty && (dup2(c->in, 0) < 0 || dup2(c->out, 1) < 0 || dup2(c->errfd, 2) < 0))
		child_fail(c, LOCAL_STAGE_SETNS);
	for (int i = c->born_in_cg ? CG_V2 + 1 : 0; i < LOCAL_NCG; i++)
		if (c->cg_fds[i] >= 0 && write(c->cg_fds[i], "0", 1) < 0)
			child_fail(c, LOCAL_STAGE_CGROUP);
	if (setns(c->pidfd, CLONE_NEWCGROUP | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
			    CLONE_NEWNS) < 0)
		child_fail(c, LOCAL_STAGE_SETNS);
	setsid();
	if (chdir("/") < 0)
		child_fail(c, LOCAL_STAGE_CWD);
	if (c->tty)
		child_tty(c);
	/* Nothing of the host but stdio, the report pipe and (for the fork
	 * server) its own executable goes further; both are CLOEXEC. */
	int lo = c->report[1], hi = c->exe;
	if (hi >= 0 && hi < lo) {
		hi = lo;
		lo = c->exe;
	}
	if (lo > 3)
		syscall(SYS_close_range, 3, lo - 1, 0);
	if (hi > lo + 1)
		syscall(SYS_close_range, lo + 1, hi - 1, 0);
	syscall(SYS_close_range, (hi > lo ? hi : lo) + 1, ~0U, 0);
	drop_privileges(c);
	if (chdir(c->cwd) < 0)
		child_fail(c, LOCAL_STAGE_CWD);
	extern char **environ;
	environ = c->envp;
	/* Last: from here on only execve (and, on its failure, the report
	 * write and _exit) must pass the filter. */
	if (!c->no_filter && local_seccomp_install(&c->filter) < 0)
		child_fail(c, LOCAL_STAGE_PRIV);
	if (c->exe >= 0)
		fexecve(c->exe, c->argv, c->envp);
	else
		execvp(c->argv[0], c->argv);
	child_fail(c, LOCAL_STAGE_EXEC);
}

/* ---- the caller's side ---- */

void local_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int local_open_wr(const char *dir, const char *file)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return open(p, O_WRONLY | O_CLOEXEC);
}

int local_spawn_fail(int pidfd, pid_t init, const char *id, const char *op,
		     struct sbx_err *err, const char *fmt, ...)
{
	int e = errno;
	if (local_init_gone(pidfd, init))
		return sbx_fail(err, SBX_TERMINAL, op, "sandbox %s is dead (its init is gone)", id);
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	errno = e;
	return sbx_fail_errno(err, SBX_INTERNAL, op, "%s", msg);
}

int local_spawn_prepare(const char *id, const struct local_rec *r, int pidfd, pid_t init,
			const char *cg, const struct local_cmd *cmd, struct local_spawn *s,
			struct sbx_err *err)
{
	memset(s, 0, sizeof(*s));
	s->pidfd = pidfd;
	s->init = init;
	s->selfns = s->report[0] = s->report[1] = s->in = s->out = s->errfd = s->cg_dir = -1;
	s->exe = -1;
	s->tty_sock[0] = s->tty_sock[1] = -1;
	s->tty = cmd->tty;
	s->cols = cmd->cols;
	s->rows = cmd->rows;
	for (int i = 0; i < LOCAL_NCG; i++)
		s->cg_fds[i] = -1;
	s->cwd = cmd->cwd && *cmd->cwd ? cmd->cwd : "/workspace";
	s->as_root = cmd->as_root;
	s->argv = cmd->argv;
	s->selfns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (s->selfns < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "open /proc/self/ns/pid");
	s->cg_fds[CG_V2] = local_open_wr(cg, "cgroup.procs");
	s->cg_dir = open(cg, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->cg_fds[CG_V2] < 0 || s->cg_dir < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "open the cgroup of %s", id);
	for (int i = CG_MEMORY; i < LOCAL_NCG; i++)
		if (r->cg[i] && (s->cg_fds[i] = local_open_wr(r->cg[i], "cgroup.procs")) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "exec", "open %s", r->cg[i]);
	s->envp = env_build(id, sbx_json_obj(r->j, "env"), cmd);
	SBX_AUTOFREE char *filter_path = sbx_xasprintf("%s/seccomp.bpf", r->dir);
	if (local_seccomp_read(filter_path, sbx_json_bool(sbx_json_obj(r->j, "security"),
							  "allow_userns", 0),
			       &s->filter, err) < 0)
		return -1;
	if (pipe2(s->report, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "pipe");
	if (s->tty && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s->tty_sock) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "socketpair");
	return 0;
}

int local_spawn_tty_master(struct local_spawn *s)
{
	char one;
	struct iovec iov = {.iov_base = &one, .iov_len = 1};
	int fd = -1;
	size_t nfd;
	if (sbx_fds_recv(s->tty_sock[0], &iov, 1, &fd, 1, &nfd, MSG_DONTWAIT) != 1 || nfd != 1) {
		if (nfd)
			close(fd);
		errno = EPROTO;
		return -1;
	}
	return fd;
}

pid_t local_spawn_fork(struct local_spawn *s, int come_back)
{
	/* Our children go into the sandbox's pid namespace; we stay out. */
	if (setns(s->pidfd, CLONE_NEWPID) < 0)
		return -1;
	/* Born in the cgroup2 group where the kernel can (local-clone.h). */
	s->born_in_cg = 1;
	pid_t child = local_clone_into_cgroup(s->cg_dir);
	if (child < 0) {
		s->born_in_cg = 0;
		child = fork();
	}
	int fork_errno = errno;
	if (child == 0)
		child_main(s);
	/* Cannot fail for our own namespace; refuse to go on with a process
	 * whose later children would land in a sandbox. */
	if (come_back && setns(s->selfns, CLONE_NEWPID) < 0)
		abort();
	errno = fork_errno;   /* ENOMEM: the namespace's init is gone */
	return child;
}

int local_spawn_report(struct local_spawn *s, int *e)
{
	int msg[2] = {0, 0};
	ssize_t got;
	do
		got = read(s->report[0], msg, sizeof(msg));
	while (got < 0 && errno == EINTR);
	*e = msg[1];
	return got == (ssize_t)sizeof(msg) ? msg[0] : 0;
}

void local_spawn_free(struct local_spawn *s)
{
	int fds[] = {s->selfns, s->report[0], s->report[1], s->cg_dir, s->tty_sock[0],
		     s->tty_sock[1]};
	for (size_t i = 0; i < SBX_ARRAY_LEN(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (int i = 0; i < LOCAL_NCG; i++)
		if (s->cg_fds[i] >= 0)
			close(s->cg_fds[i]);
	for (char **p = s->envp; p && *p; p++)
		free(*p);
	free(s->envp);
	local_filter_free(&s->filter);
	memset(s, 0, sizeof(*s));
	s->selfns = s->report[0] = s->report[1] = s->cg_dir = s->tty_sock[0] = s->tty_sock[1] = -1;
	for (int i = 0; i < LOCAL_NCG; i++)
		s->cg_fds[i] = -1;
}
