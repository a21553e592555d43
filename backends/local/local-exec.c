/* local-exec.c - run one command inside a local sandbox and wait for it:
 * the vtable's exec.  Entering the sandbox (namespaces, cgroups,
 * privileges, seccomp) is local-spawn.c's; this file adds the cgroup of a
 * timed exec, the I/O pump and the result.
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
#include "local-exec.h"
#include "local-cgroup.h"
#include "local-forkd.h"
#include "local-spawn.h"

#include "local-state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doc.h"
#include "fault.h"
#include "util.h"

#define DEFAULT_CAP (1u << 20)

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

static void sink_open(struct sink *s, int fd, size_t cap)
{
	s->fd = fd;
	if (fd < 0)
		return;
	s->cap = cap;
	s->buf = sbx_xmalloc(cap + 1);
	fcntl(fd, F_SETFL, O_NONBLOCK);
}

/* Hand the captured bytes to the result (NUL-terminated). */
static void sink_take(struct sink *s, char **out, size_t *len, int *truncated)
{
	if (!s->buf)
		return;
	s->buf[s->len] = '\0';
	*out = s->buf;
	*len = s->len;
	*truncated = s->truncated;
	s->buf = NULL;
}

static void sink_close(struct sink *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->buf);
	s->buf = NULL;
}

/* ---- one exec ---- */

struct run {
	const struct sbx_exec_req *req;
	struct local_spawn sp;
	char *work, *xcg;        /* <cg>/work, and the timed exec's own group */
	int killfd;              /* xcg's cgroup.kill */
	int p_in[2], p_out[2], p_err[2], nul;
	struct sink so, se;
	pid_t child;
	struct local_forkd_proc fk;  /* fk.conn >= 0: started by the fork server */
	int64_t t0;
};

static void run_init(struct run *x, const struct sbx_exec_req *req)
{
	memset(x, 0, sizeof(*x));
	x->req = req;
	x->killfd = x->nul = -1;
	x->p_in[0] = x->p_in[1] = x->p_out[0] = x->p_out[1] = x->p_err[0] = x->p_err[1] = -1;
	x->so.fd = x->se.fd = -1;
	x->child = -1;
	x->fk.conn = x->fk.pidfd = -1;
	x->sp.selfns = x->sp.report[0] = x->sp.report[1] = -1;
	for (int i = 0; i < LOCAL_NCG; i++)
		x->sp.cg_fds[i] = -1;
}

static void run_free(struct run *x)
{
	if (x->child > 0 && x->fk.conn >= 0) {
		syscall(SYS_pidfd_send_signal, x->fk.pidfd, SIGKILL, NULL, 0);
	} else if (x->child > 0) {
		kill(x->child, SIGKILL);
		waitpid(x->child, NULL, 0);
	}
	local_forkd_close(&x->fk);
	int *fds[] = {&x->p_in[0], &x->p_in[1], &x->p_out[0], &x->p_out[1], &x->p_err[0],
		      &x->p_err[1], &x->nul, &x->killfd};
	for (size_t i = 0; i < SBX_ARRAY_LEN(fds); i++)
		local_closep(fds[i]);
	sink_close(&x->so);
	sink_close(&x->se);
	if (x->xcg) {
		rmdir(x->xcg);
		free(x->xcg);
	}
	if (x->work) {
		local_cg_sweep_x(x->work, 0);
		free(x->work);
	}
	local_spawn_free(&x->sp);
}

/* The cgroup the command joins: <cg>/work, or a fresh <cg>/work/x-* when
 * the exec has a timeout (its cgroup.kill is the timeout). */
static int run_cgroup(struct run *x, const struct local_rec *r, struct sbx_err *err)
{
	x->work = sbx_xasprintf("%s/work", r->cg[CG_V2]);
	if (x->req->timeout_ms <= 0)
		return 0;
	char hex[17];
	if (sbx_random_hex(hex, 8, err) < 0)
		return -1;
	x->xcg = sbx_xasprintf("%s/x-%d-%s", x->work, (int)getpid(), hex);
	if (mkdir(x->xcg, 0755) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "mkdir %s", x->xcg);
	sbx_fault("local:exec-cgroup");
	x->killfd = local_open_wr(x->xcg, "cgroup.kill");
	return 0;
}

/* stdin: the caller's fd, a pipe we feed stdin_data into, or /dev/null;
 * stdout/stderr: the caller's fds or pipes we capture. */
static int run_pipes(struct run *x, struct sbx_err *err)
{
	const struct sbx_exec_req *req = x->req;
	x->nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (x->nul < 0 ||
	    (req->raw_in_fd < 0 && req->stdin_data && pipe2(x->p_in, O_CLOEXEC) < 0) ||
	    (req->raw_out_fd < 0 && pipe2(x->p_out, O_CLOEXEC) < 0) ||
	    (req->raw_err_fd < 0 && pipe2(x->p_err, O_CLOEXEC) < 0))
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "pipe");
	x->sp.in = req->raw_in_fd >= 0 ? req->raw_in_fd : x->p_in[0] >= 0 ? x->p_in[0] : x->nul;
	x->sp.out = req->raw_out_fd >= 0 ? req->raw_out_fd : x->p_out[1];
	x->sp.errfd = req->raw_err_fd >= 0 ? req->raw_err_fd : x->p_err[1];
	return 0;
}

/* Fork the command and learn whether it exec'd.  0 with *exec_errno set
 * when execve itself failed (the command "ran" and exits 127/126), -1 when
 * entering the sandbox failed. */
static int run_start(struct run *x, const char *id, const struct local_rec *r, int *exec_errno,
		     struct sbx_err *err)
{
	int e = 0, stage;
	if (local_forkd_start(id, r, &x->sp, &x->fk, &stage, &e)) {
		/* The fork server's: held by us until it exits. */
		x->child = stage == 0 || stage == LOCAL_STAGE_EXEC ? x->fk.hostpid : -1;
		local_forkd_adopt(&x->fk);
	} else {
		x->child = local_spawn_fork(&x->sp, 1);
		if (x->child < 0)
			return local_spawn_fail(x->sp.pidfd, x->sp.init, id, "exec", err,
						"fork into the pid namespace of %s", id);
		local_closep(&x->sp.report[1]);
		stage = local_spawn_report(&x->sp, &e);
	}
	local_closep(&x->p_in[0]);
	local_closep(&x->p_out[1]);
	local_closep(&x->p_err[1]);
	*exec_errno = 0;
	if (stage == 0)
		return 0;
	if (stage == LOCAL_STAGE_EXEC) {
		*exec_errno = e;
		return 0;
	}
	if (x->fk.conn < 0)
		waitpid(x->child, NULL, 0);   /* the fork server reaps its own */
	x->child = -1;
	errno = e;
	if (stage == LOCAL_STAGE_CWD)
		return sbx_fail_errno(err, SBX_INVALID_REQUEST, "exec", "cwd %s", x->sp.cwd);
	return local_spawn_fail(x->sp.pidfd, x->sp.init, id, "exec", err,
				"enter sandbox %s (step %d)", id, stage);
}

/* Move stdin_data into the command's stdin as it takes it. */
static void pump_stdin(struct run *x, size_t *off, short revents)
{
	const struct sbx_exec_req *req = x->req;
	ssize_t w = (revents & POLLOUT) ? write(x->p_in[1], req->stdin_data + *off,
						 req->stdin_len - *off) : -1;
	if (w > 0)
		*off += (size_t)w;
	if ((w < 0 && errno != EAGAIN) || *off >= req->stdin_len)
		local_closep(&x->p_in[1]);
}

/* Feed stdin, capture output, enforce the timeout, until the command's
 * main process exits; returns its wait status. */
static int run_pump(struct run *x, struct sbx_exec_result *res)
{
	size_t in_off = 0;
	if (x->p_in[1] >= 0)
		fcntl(x->p_in[1], F_SETFL, O_NONBLOCK);
	/* Through the fork server, its connection brings the status; if
	 * the server dies first, the pidfd says when the process is gone
	 * (its status lost). */
	int via = x->fk.conn >= 0;
	int cfd = via ? x->fk.conn : (int)syscall(SYS_pidfd_open, x->child, 0);
	int64_t deadline = x->req->timeout_ms > 0 ? x->t0 + x->req->timeout_ms : -1;
	int status = 0, exited = 0;
	while (!exited) {
		struct pollfd pf[4];
		int n = 0, i_out = -1, i_err = -1, i_in = -1, i_c = -1;
		if (x->so.fd >= 0) { i_out = n; pf[n++] = (struct pollfd){.fd = x->so.fd, .events = POLLIN}; }
		if (x->se.fd >= 0) { i_err = n; pf[n++] = (struct pollfd){.fd = x->se.fd, .events = POLLIN}; }
		if (x->p_in[1] >= 0) { i_in = n; pf[n++] = (struct pollfd){.fd = x->p_in[1], .events = POLLOUT}; }
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
			if ((x->killfd < 0 || write(x->killfd, "1", 1) < 0) &&
			    !(via && syscall(SYS_pidfd_send_signal, x->fk.pidfd, SIGKILL, NULL, 0) == 0))
				kill(x->child, SIGKILL);
		}
		if (pr <= 0) {
			if (cfd < 0 && waitpid(x->child, &status, WNOHANG) == x->child)
				exited = 1;
			continue;
		}
		if (i_out >= 0 && pf[i_out].revents && !sink_read(&x->so))
			local_closep(&x->so.fd);
		if (i_err >= 0 && pf[i_err].revents && !sink_read(&x->se))
			local_closep(&x->se.fd);
		if (i_in >= 0 && pf[i_in].revents)
			pump_stdin(x, &in_off, pf[i_in].revents);
		if (i_c >= 0 && pf[i_c].revents && via == 1) {
			if (local_forkd_status(&x->fk, &status)) {
				exited = 1;
			} else {
				via = 2;
				cfd = x->fk.pidfd;
			}
		} else if (i_c >= 0 && pf[i_c].revents && via == 2) {
			status = -1;
			exited = 1;
		} else if (i_c >= 0 && pf[i_c].revents &&
			   waitpid(x->child, &status, WNOHANG) == x->child) {
			exited = 1;
		}
	}
	if (!exited && !via)
		waitpid(x->child, &status, 0);
	x->child = -1;
	/* A timed-out exec is over only when its whole tree is gone. */
	if (res->timed_out && x->xcg)
		local_cg_wait(x->xcg, "populated", 0, 10000);
	if (cfd >= 0 && !via)
		close(cfd);
	/* The main process is gone: take what is already in the pipes, but
	 * do not wait for background processes that still hold them (nor
	 * read forever from one that keeps writing). */
	for (int i = 0; x->so.fd >= 0 && i < 256 && sink_read(&x->so) == 1; i++)
		;
	for (int i = 0; x->se.fd >= 0 && i < 256 && sink_read(&x->se) == 1; i++)
		;
	return status;
}

/* The result: exit status, signal, and a failed execve reported the way a
 * shell would (127 not found, 126 otherwise, the reason on stderr). */
static void run_status(struct run *x, int status, int exec_errno, struct sbx_exec_result *res)
{
	if (exec_errno) {
		char line[512];
		int ln = snprintf(line, sizeof(line), "sbx: %s: %s\n", x->req->argv[0],
				  strerror(exec_errno));
		struct sink *se = &x->se;
		if (se->buf) {
			size_t take = se->cap - se->len < (size_t)ln ? se->cap - se->len : (size_t)ln;
			memcpy(se->buf + se->len, line, take);
			se->len += take;
		} else if (x->req->raw_err_fd >= 0) {
			(void)!write(x->req->raw_err_fd, line, (size_t)ln);
		}
		res->exit_code = exec_errno == ENOENT ? 127 : 126;
	} else if (status == -1) {
		res->exit_code = -1;   /* the fork server died with its status */
	} else if (res->timed_out) {
		res->exit_code = -1;
		res->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	} else if (WIFEXITED(status)) {
		res->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		res->exit_code = -1;
		res->signal = WTERMSIG(status);
	}
	sink_take(&x->so, &res->out, &res->out_len, &res->out_truncated);
	sink_take(&x->se, &res->err, &res->err_len, &res->err_truncated);
	res->duration_ms = sbx_mono_ms() - x->t0;
}

/* Everything of one exec once the init is held and the record loaded. */
static int run_exec(struct run *x, const char *id, const struct local_rec *r,
		    struct sbx_exec_result *res, struct sbx_err *err)
{
	const struct sbx_exec_req *req = x->req;
	struct local_cmd cmd = {.argv = req->argv, .env = req->env, .cwd = req->cwd,
				.as_root = req->as_root};
	if (run_cgroup(x, r, err) < 0 ||
	    local_spawn_prepare(id, r, x->sp.pidfd, x->sp.init, x->xcg ? x->xcg : x->work, &cmd,
				&x->sp, err) < 0 ||
	    run_pipes(x, err) < 0)
		return -1;
	int exec_errno;
	if (run_start(x, id, r, &exec_errno, err) < 0)
		return -1;
	void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
	size_t cap = req->output_cap ? req->output_cap : DEFAULT_CAP;
	sink_open(&x->so, x->p_out[0], cap);
	sink_open(&x->se, x->p_err[0], cap);
	x->p_out[0] = x->p_err[0] = -1;
	int status = run_pump(x, res);
	if (old_pipe != SIG_ERR)
		signal(SIGPIPE, old_pipe);
	run_status(x, status, exec_errno, res);
	return 0;
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
	SBX_AUTOCLOSE int pidfd = local_sb_init_pidfd(b, sb->id, "exec", &init, err);
	if (pidfd < 0)
		return -1;
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	struct run x;
	run_init(&x, req);
	x.sp.pidfd = pidfd;
	x.sp.init = init;
	x.t0 = sbx_mono_ms();
	SBX_AUTOFREE char *busyp = sbx_xasprintf("%s/busy", r.dir);
	SBX_AUTOCLOSE int busy = open(busyp, O_RDONLY | O_CLOEXEC);
	if (busy >= 0)
		flock(busy, LOCK_SH);
	local_sb_touch(b, sb->id);
	int rc = run_exec(&x, sb->id, &r, res, err);
	run_free(&x);
	local_sb_touch(b, sb->id);
	/* busy's mtime is the end of the last exec (local-idle.h): the idle
	 * timer counts from here and names the exec. */
	if (busy >= 0)
		futimens(busy, NULL);
	local_rec_free(&r);
	return rc;
}
