/* local-exec.c - run one command inside a local sandbox.
 *
 * The command joins the sandbox's namespaces (through a pidfd on its init,
 * so a recycled pid can never point us at another process), its cgroups,
 * and drops privileges: uid/gid 1000 by default; with as_root, root but
 * with Docker's default capability set and no_new_privs.  It gets a clean
 * environment, /workspace as its cwd, no fd of ours beyond stdio, and its
 * own session.  Its last step before execve is the sandbox's seccomp
 * filter (local-seccomp.c), read from the sandbox's directory.
 *
 * Promises:
 *  - The exec is over when its main process exits.  Whatever it started
 *    in the background keeps running (it is the sandbox's business) and is
 *    reaped by the sandbox's init.
 *  - A timeout kills the whole tree the exec started, grandchildren and
 *    setsid'd daemons included: every exec with a timeout runs in its own
 *    cgroup (<cg>/work/x-*) and the timeout is a cgroup.kill.
 *  - Output is captured up to the cap per stream (the rest is read and
 *    dropped, so the command never blocks on a full pipe) or streamed to
 *    the caller's fds.
 *  - While an exec runs, the idle timer does not fire (a shared flock on
 *    the sandbox's `busy` file that dies with us). */
#include "local-sb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doc.h"
#include "local-seccomp.h"
#include "util.h"

#define DEFAULT_CAP (1u << 20)
#define SANDBOX_UID 1000

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

static void env_free(struct envv *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
	free(e->v);
}

static void env_build(struct envv *e, const char *id, json_object *sb_env,
		      const struct sbx_exec_req *req)
{
	char buf[256];
	env_set(e, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	env_set(e, req->as_root ? "HOME=/root" : "HOME=/home/user");
	env_set(e, req->as_root ? "USER=root" : "USER=user");
	env_set(e, req->as_root ? "LOGNAME=root" : "LOGNAME=user");
	env_set(e, "LANG=C.UTF-8");
	snprintf(buf, sizeof(buf), "HOSTNAME=%s", id);
	env_set(e, buf);
	env_set(e, "SBX_SKILL_OUTPUT_DIR=/workspace/output");
	env_set(e, "SBX_SESSION_INPUT_DIR=/workspace/input");
	if (sb_env && json_object_is_type(sb_env, json_type_object)) {
		json_object_object_foreach(sb_env, k, v) {
			char *kv = sbx_xasprintf("%s=%s", k, json_object_get_string(v));
			env_set(e, kv);
			free(kv);
		}
	}
	for (char *const *p = req->env; p && *p; p++)
		env_set(e, *p);
}

/* ---- the child ---- */

enum { STAGE_CGROUP = 1, STAGE_SETNS, STAGE_CWD, STAGE_PRIV, STAGE_EXEC };

struct child_cfg {
	int pidfd;                  /* the sandbox init */
	int cg_fds[LOCAL_NCG];      /* cgroup.procs to join, -1 = skip */
	int in, out, errfd;         /* become 0, 1, 2 */
	int report;                 /* CLOEXEC pipe: {stage, errno} on failure */
	const char *cwd;
	int as_root;
	const struct local_filter *filter;
	char *const *argv;
	char **envp;
};

static __attribute__((noreturn)) void child_fail(const struct child_cfg *c, int stage)
{
	int msg[2] = {stage, errno};
	(void)!write(c->report, msg, sizeof(msg));
	_exit(127);
}

static void drop_privileges(const struct child_cfg *c)
{
	/* The bounding set first: it needs CAP_SETPCAP, which uid 1000
	 * will not have. */
	for (int cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0)
			break;
		if (!cap_kept(cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			child_fail(c, STAGE_PRIV);
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (c->as_root) {
		gid_t g = 0;
		if (setgroups(1, &g) < 0)
			child_fail(c, STAGE_PRIV);
		struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct d[2] = {{0}};
		for (size_t i = 0; i < SBX_ARRAY_LEN(keep_caps); i++)
			d[keep_caps[i] / 32].permitted |= 1u << (keep_caps[i] % 32);
		d[0].effective = d[0].inheritable = d[0].permitted;
		d[1].effective = d[1].inheritable = d[1].permitted;
		if (syscall(SYS_capset, &h, d) < 0)
			child_fail(c, STAGE_PRIV);
	} else {
		gid_t g = SANDBOX_UID;
		if (setgroups(1, &g) < 0 || setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0 ||
		    setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0)
			child_fail(c, STAGE_PRIV);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(c, STAGE_PRIV);
}

/* In the child, already in the sandbox's pid namespace. */
static __attribute__((noreturn)) void child_main(const struct child_cfg *c)
{
	/* What sbx-exec ignored or blocked must not leak into the command. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	/* Until execve, this process holds host fds and host memory: no
	 * one in the sandbox may look into it. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (dup2(c->in, 0) < 0 || dup2(c->out, 1) < 0 || dup2(c->errfd, 2) < 0)
		child_fail(c, STAGE_SETNS);
	for (int i = 0; i < LOCAL_NCG; i++)
		if (c->cg_fds[i] >= 0 && write(c->cg_fds[i], "0", 1) < 0)
			child_fail(c, STAGE_CGROUP);
	if (setns(c->pidfd, CLONE_NEWCGROUP | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
			    CLONE_NEWNS) < 0)
		child_fail(c, STAGE_SETNS);
	setsid();
	if (chdir("/") < 0)
		child_fail(c, STAGE_CWD);
	/* Nothing of the host but stdio and the report pipe goes further. */
	if (c->report > 3)
		syscall(SYS_close_range, 3, c->report - 1, 0);
	syscall(SYS_close_range, c->report + 1, ~0U, 0);
	drop_privileges(c);
	if (chdir(c->cwd) < 0)
		child_fail(c, STAGE_CWD);
	extern char **environ;
	environ = c->envp;
	/* Last: from here on only execve (and, on its failure, the report
	 * write and _exit) must pass the filter. */
	if (local_seccomp_install(c->filter) < 0)
		child_fail(c, STAGE_PRIV);
	execvp(c->argv[0], c->argv);
	child_fail(c, STAGE_EXEC);
}

/* An exec step failed with errno set: terminal when the init died under
 * us (setns and fork into its namespaces fail then; what failed is not
 * the point), else internal with the step's message. */
static void init_gone_or(int pidfd, pid_t init, const char *id, struct sbx_err *err,
			 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void init_gone_or(int pidfd, pid_t init, const char *id, struct sbx_err *err,
			 const char *fmt, ...)
{
	int e = errno;
	if (local_init_gone(pidfd, init)) {
		sbx_fail(err, SBX_TERMINAL, "exec", "sandbox %s is dead (its init is gone)", id);
		return;
	}
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	errno = e;
	sbx_fail_errno(err, SBX_INTERNAL, "exec", "%s", msg);
}

/* ---- capture ---- */

struct sink {
	int fd;
	char *buf;
	size_t len, cap;
	int truncated;
};

/* Read what is there: 1 after reading data, 2 when nothing is there now,
 * 0 at EOF (or a read error). */
static int sink_read(struct sink *s)
{
	char tmp[65536];
	ssize_t n = read(s->fd, tmp, sizeof(tmp));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 2 : 0;
	if (n == 0)
		return 0;
	size_t room = s->cap - s->len;
	size_t take = (size_t)n < room ? (size_t)n : room;
	if (take) {
		memcpy(s->buf + s->len, tmp, take);
		s->len += take;
	}
	if ((size_t)n > take)
		s->truncated = 1;
	return 1;
}

static void rm_empty_exec_cgroups(const char *work)
{
	DIR *d = opendir(work);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && strncmp(e->d_name, "x-", 2) == 0) {
			char p[4200];
			snprintf(p, sizeof(p), "%s/%s", work, e->d_name);
			rmdir(p);   /* EBUSY while background processes live */
		}
	closedir(d);
}

static int open_wr(const char *dir, const char *file)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return open(p, O_WRONLY | O_CLOEXEC);
}

int local_exec(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req,
	       struct sbx_exec_result *res, struct sbx_err *err)
{
	memset(res, 0, sizeof(*res));
	if (!req->argv || !req->argv[0] || !req->argv[0][0])
		return sbx_fail(err, SBX_INVALID_REQUEST, "exec", "no command to run");
	const char *cwd = req->cwd && *req->cwd ? req->cwd : "/workspace";
	if (cwd[0] != '/')
		return sbx_fail(err, SBX_INVALID_REQUEST, "exec", "cwd must be absolute: %s", cwd);
	/* Every namespace is joined through this pidfd (setns on a pidfd),
	 * never through /proc/<pid>: it is the init or nothing, even if the
	 * init dies and its pid is reused while we work. */
	pid_t init;
	int pidfd = local_sb_init_pidfd(b, sb->id, "exec", &init, err);
	if (pidfd < 0)
		return -1;
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0) {
		close(pidfd);
		return -1;
	}
	int64_t t0 = sbx_mono_ms();

	int rc = -1;
	int selfns = -1, busy = -1, report[2] = {-1, -1};
	int p_in[2] = {-1, -1}, p_out[2] = {-1, -1}, p_err[2] = {-1, -1}, nul = -1;
	int cg_fds[LOCAL_NCG], killfd = -1;
	char *xcg = NULL, *work = NULL;
	struct envv env = {0};
	struct local_filter filter = {0};
	struct sink so = {.fd = -1}, se = {.fd = -1};
	pid_t child = -1;
	void (*old_pipe)(int) = SIG_ERR;
	for (int i = 0; i < LOCAL_NCG; i++)
		cg_fds[i] = -1;

	SBX_AUTOFREE char *busyp = sbx_xasprintf("%s/busy", r.dir);
	busy = open(busyp, O_RDONLY | O_CLOEXEC);
	if (busy >= 0)
		flock(busy, LOCK_SH);
	local_sb_touch(b, sb->id);

	selfns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (selfns < 0) {
		sbx_fail_errno(err, SBX_INTERNAL, "exec", "open /proc/self/ns/pid");
		goto out;
	}

	/* The cgroups: <cg>/work, or a fresh <cg>/work/x-* when the exec has a
	 * timeout (its cgroup.kill is the timeout); plus the v1 limits. */
	work = sbx_xasprintf("%s/work", r.cg[CG_V2]);
	if (req->timeout_ms > 0) {
		char hex[17];
		if (sbx_random_hex(hex, 8, err) < 0)
			goto out;
		xcg = sbx_xasprintf("%s/x-%s", work, hex);
		if (mkdir(xcg, 0755) < 0) {
			sbx_fail_errno(err, SBX_INTERNAL, "exec", "mkdir %s", xcg);
			goto out;
		}
		killfd = open_wr(xcg, "cgroup.kill");
	}
	cg_fds[CG_V2] = open_wr(xcg ? xcg : work, "cgroup.procs");
	if (cg_fds[CG_V2] < 0) {
		sbx_fail_errno(err, SBX_INTERNAL, "exec", "open the cgroup of %s", sb->id);
		goto out;
	}
	for (int i = CG_MEMORY; i < LOCAL_NCG; i++)
		if (r.cg[i] && (cg_fds[i] = open_wr(r.cg[i], "cgroup.procs")) < 0) {
			sbx_fail_errno(err, SBX_INTERNAL, "exec", "open %s", r.cg[i]);
			goto out;
		}

	env_build(&env, sb->id, sbx_json_obj(r.j, "env"), req);
	SBX_AUTOFREE char *filter_path = sbx_xasprintf("%s/seccomp.bpf", r.dir);
	if (local_seccomp_read(filter_path, sbx_json_bool(sbx_json_obj(r.j, "security"),
							  "allow_userns", 0),
			       &filter, err) < 0)
		goto out;

	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (pipe2(report, O_CLOEXEC) < 0 || nul < 0) {
		sbx_fail_errno(err, SBX_INTERNAL, "exec", "pipe");
		goto out;
	}
	if (req->raw_in_fd < 0 && req->stdin_data && pipe2(p_in, O_CLOEXEC) < 0) {
		sbx_fail_errno(err, SBX_INTERNAL, "exec", "pipe");
		goto out;
	}
	if ((req->raw_out_fd < 0 && pipe2(p_out, O_CLOEXEC) < 0) ||
	    (req->raw_err_fd < 0 && pipe2(p_err, O_CLOEXEC) < 0)) {
		sbx_fail_errno(err, SBX_INTERNAL, "exec", "pipe");
		goto out;
	}
	struct child_cfg cc = {
		.pidfd = pidfd,
		.in = req->raw_in_fd >= 0 ? req->raw_in_fd : p_in[0] >= 0 ? p_in[0] : nul,
		.out = req->raw_out_fd >= 0 ? req->raw_out_fd : p_out[1],
		.errfd = req->raw_err_fd >= 0 ? req->raw_err_fd : p_err[1],
		.report = report[1],
		.cwd = cwd,
		.as_root = req->as_root,
		.filter = &filter,
		.argv = req->argv,
		.envp = env.v,
	};
	memcpy(cc.cg_fds, cg_fds, sizeof(cg_fds));

	/* Our children go into the sandbox's pid namespace; we stay out. */
	if (setns(pidfd, CLONE_NEWPID) < 0) {
		init_gone_or(pidfd, init, sb->id, err, "join the pid namespace of %s", sb->id);
		goto out;
	}
	child = fork();
	int fork_errno = errno;
	if (setns(selfns, CLONE_NEWPID) < 0 && child != 0) {
		/* Cannot happen for our own namespace; refuse to go on with
		 * a process whose later children would land in a sandbox. */
		abort();
	}
	if (child == 0)
		child_main(&cc);
	if (child < 0) {
		errno = fork_errno;   /* ENOMEM: the namespace's init is gone */
		init_gone_or(pidfd, init, sb->id, err, "fork");
		goto out;
	}
	old_pipe = signal(SIGPIPE, SIG_IGN);
	close(report[1]);
	report[1] = -1;
	if (p_in[0] >= 0) { close(p_in[0]); p_in[0] = -1; }
	if (p_out[1] >= 0) { close(p_out[1]); p_out[1] = -1; }
	if (p_err[1] >= 0) { close(p_err[1]); p_err[1] = -1; }

	int msg[2] = {0, 0};
	ssize_t got;
	do
		got = read(report[0], msg, sizeof(msg));
	while (got < 0 && errno == EINTR);
	int exec_errno = 0;
	if (got == (ssize_t)sizeof(msg)) {
		if (msg[0] != STAGE_EXEC) {
			int st;
			waitpid(child, &st, 0);
			child = -1;
			errno = msg[1];
			if (msg[0] == STAGE_CWD)
				sbx_fail_errno(err, SBX_INVALID_REQUEST, "exec", "cwd %s", cwd);
			else
				init_gone_or(pidfd, init, sb->id, err, "enter sandbox %s (step %d)",
					     sb->id, msg[0]);
			goto out;
		}
		exec_errno = msg[1];
	}

	size_t cap = req->output_cap ? req->output_cap : DEFAULT_CAP;
	so.fd = p_out[0];
	se.fd = p_err[0];
	p_out[0] = p_err[0] = -1;
	if (so.fd >= 0) {
		so.cap = cap;
		so.buf = sbx_xmalloc(cap + 1);
		fcntl(so.fd, F_SETFL, O_NONBLOCK);
	}
	if (se.fd >= 0) {
		se.cap = cap;
		se.buf = sbx_xmalloc(cap + 1);
		fcntl(se.fd, F_SETFL, O_NONBLOCK);
	}
	int in_fd = p_in[1];
	size_t in_off = 0;
	if (in_fd >= 0)
		fcntl(in_fd, F_SETFL, O_NONBLOCK);
	int cfd = (int)syscall(SYS_pidfd_open, child, 0);
	int64_t deadline = req->timeout_ms > 0 ? t0 + req->timeout_ms : -1;
	int status = 0, exited = 0;
	while (!exited) {
		struct pollfd pf[4];
		int n = 0, i_out = -1, i_err = -1, i_in = -1, i_c = -1;
		if (so.fd >= 0) { i_out = n; pf[n++] = (struct pollfd){.fd = so.fd, .events = POLLIN}; }
		if (se.fd >= 0) { i_err = n; pf[n++] = (struct pollfd){.fd = se.fd, .events = POLLIN}; }
		if (in_fd >= 0) { i_in = n; pf[n++] = (struct pollfd){.fd = in_fd, .events = POLLOUT}; }
		if (cfd >= 0) { i_c = n; pf[n++] = (struct pollfd){.fd = cfd, .events = POLLIN}; }
		int wait_ms = -1;
		if (deadline >= 0 && !res->timed_out) {
			int64_t left = deadline - sbx_mono_ms();
			wait_ms = left < 0 ? 0 : (int)(left > 60000 ? 60000 : left);
		}
		if (cfd < 0 && wait_ms < 0)
			wait_ms = 100;   /* no pidfd: poll the child */
		int pr = poll(pf, (nfds_t)n, wait_ms);
		if (pr < 0 && errno != EINTR)
			break;
		if (deadline >= 0 && !res->timed_out && sbx_mono_ms() >= deadline) {
			res->timed_out = 1;
			if (killfd < 0 || write(killfd, "1", 1) < 0)
				kill(child, SIGKILL);
		}
		if (pr <= 0) {
			if (cfd < 0 && waitpid(child, &status, WNOHANG) == child)
				exited = 1;
			continue;
		}
		if (i_out >= 0 && pf[i_out].revents && !sink_read(&so)) {
			close(so.fd);
			so.fd = -1;
		}
		if (i_err >= 0 && pf[i_err].revents && !sink_read(&se)) {
			close(se.fd);
			se.fd = -1;
		}
		if (i_in >= 0 && pf[i_in].revents) {
			ssize_t w = (pf[i_in].revents & POLLOUT)
				    ? write(in_fd, req->stdin_data + in_off, req->stdin_len - in_off) : -1;
			if (w > 0)
				in_off += (size_t)w;
			if ((w < 0 && errno != EAGAIN) || in_off >= req->stdin_len) {
				close(in_fd);
				in_fd = p_in[1] = -1;
			}
		}
		if (i_c >= 0 && pf[i_c].revents && waitpid(child, &status, WNOHANG) == child)
			exited = 1;
	}
	if (!exited)
		waitpid(child, &status, 0);
	child = -1;
	/* A timed-out exec is over only when its whole tree is gone. */
	if (res->timed_out && xcg)
		local_cg_wait(xcg, "populated", 0, 10000);
	if (cfd >= 0)
		close(cfd);
	/* The main process is gone: take what is already in the pipes, but
	 * do not wait for background processes that still hold them (nor
	 * read forever from one that keeps writing). */
	for (int i = 0; so.fd >= 0 && i < 256 && sink_read(&so) == 1; i++)
		;
	for (int i = 0; se.fd >= 0 && i < 256 && sink_read(&se) == 1; i++)
		;
	if (exec_errno) {
		const char *m = strerror(exec_errno);
		char line[512];
		int ln = snprintf(line, sizeof(line), "sbx: %s: %s\n", req->argv[0], m);
		if (se.buf) {
			size_t take = se.cap - se.len < (size_t)ln ? se.cap - se.len : (size_t)ln;
			memcpy(se.buf + se.len, line, take);
			se.len += take;
		} else if (req->raw_err_fd >= 0) {
			(void)!write(req->raw_err_fd, line, (size_t)ln);
		}
		res->exit_code = exec_errno == ENOENT ? 127 : 126;
	} else if (res->timed_out) {
		res->exit_code = -1;
		res->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	} else if (WIFEXITED(status)) {
		res->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		res->exit_code = -1;
		res->signal = WTERMSIG(status);
	}
	if (so.buf) {
		so.buf[so.len] = '\0';
		res->out = so.buf;
		res->out_len = so.len;
		res->out_truncated = so.truncated;
		so.buf = NULL;
	}
	if (se.buf) {
		se.buf[se.len] = '\0';
		res->err = se.buf;
		res->err_len = se.len;
		res->err_truncated = se.truncated;
		se.buf = NULL;
	}
	res->duration_ms = sbx_mono_ms() - t0;
	rc = 0;
out:
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (old_pipe != SIG_ERR)
		signal(SIGPIPE, old_pipe);
	int fds[] = {pidfd, selfns, report[0], report[1], p_in[0], p_in[1], p_out[0], p_out[1],
		     p_err[0], p_err[1], nul, killfd, so.fd, se.fd};
	for (size_t i = 0; i < SBX_ARRAY_LEN(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (int i = 0; i < LOCAL_NCG; i++)
		if (cg_fds[i] >= 0)
			close(cg_fds[i]);
	free(so.buf);
	free(se.buf);
	if (xcg) {
		rmdir(xcg);
		free(xcg);
	}
	if (work) {
		rm_empty_exec_cgroups(work);
		free(work);
	}
	env_free(&env);
	local_filter_free(&filter);
	local_sb_touch(b, sb->id);
	if (busy >= 0)
		close(busy);
	local_rec_free(&r);
	return rc;
}
