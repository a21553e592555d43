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
 *    the sandbox's `busy` file that dies with us): a terminal under a
 *    user's hands keeps its sandbox awake.
 *  - With a tty, the pty is made inside the sandbox (local-spawn.c) and
 *    only its master reaches us; we move bytes between it and the
 *    caller's fds and apply resizes, holding at most one 64 KiB buffer
 *    each way (a command that does not read its input stops ours being
 *    read, it never grows a buffer). */
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
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
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
	int ptm;                 /* tty: the pty's master */
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
	x->ptm = -1;
	x->sp.selfns = x->sp.report[0] = x->sp.report[1] = x->sp.cg_dir = -1;
	x->sp.tty_sock[0] = x->sp.tty_sock[1] = -1;
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
		      &x->p_err[1], &x->nul, &x->killfd, &x->ptm};
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
	if (x->nul >= 0 && req->tty)
		return 0;        /* stdio is the pty, made by the child */
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
	/* A terminal is made by local-spawn.c's child, not the fork server's. */
	if (!x->req->tty && local_forkd_start(id, r, &x->sp, &x->fk, &stage, &e)) {
		/* The fork server's: held by us until it exits. */
		x->child = stage == 0 || stage == LOCAL_STAGE_EXEC ? x->fk.hostpid : -1;
		local_forkd_adopt(&x->fk);
	} else {
		x->child = local_spawn_fork(&x->sp, 1);
		if (x->child < 0)
			return local_spawn_fail(x->sp.pidfd, x->sp.init, id, "exec", err,
						"fork into the pid namespace of %s", id);
		local_closep(&x->sp.report[1]);
		local_closep(&x->sp.tty_sock[1]);
		stage = local_spawn_report(&x->sp, &e);
	}
	local_closep(&x->p_in[0]);
	local_closep(&x->p_out[1]);
	local_closep(&x->p_err[1]);
	*exec_errno = 0;
	if ((stage == 0 || stage == LOCAL_STAGE_EXEC) && x->req->tty &&
	    (x->ptm = local_spawn_tty_master(&x->sp)) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "receive the pty of %s", id);
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
	if (stage == LOCAL_STAGE_TTY)
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "open a pty in %s", id);
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

/* How long a wait loop may sleep in poll: until the deadline (a minute at
 * most), for good without one, and 100 ms when there is no pidfd (the
 * child is polled). */
static int poll_ms(int64_t deadline, int timed_out, int cfd)
{
	int ms = -1;
	if (deadline >= 0 && !timed_out) {
		int64_t left = deadline - sbx_mono_ms();
		ms = left < 0 ? 0 : (int)(left > 60000 ? 60000 : left);
	}
	return cfd < 0 && ms < 0 ? 100 : ms;
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
		int pr = poll(pf, (nfds_t)n, poll_ms(deadline, res->timed_out, cfd));
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

/* ---- a terminal ---- */

/* Write all of buf to a caller's fd (which may be non-blocking); 0, or
 * -1 when it is gone (the rest of the output is then dropped). */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = fd, .events = POLLOUT};
			poll(&pf, 1, 1000);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The master's output: to raw_out_fd, else captured as stdout.  1 after
 * data, 2 when none now, 0 when the slave side is closed (EIO). */
static int tty_out(struct run *x, int *out_gone)
{
	const struct sbx_exec_req *req = x->req;
	if (req->raw_out_fd < 0) {
		x->so.fd = x->ptm;
		int r = sink_read(&x->so);
		x->so.fd = -1;
		return r;
	}
	char buf[65536];
	ssize_t n = read(x->ptm, buf, sizeof(buf));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 2 : 0;
	if (n == 0)
		return 0;
	if (!*out_gone && write_all(req->raw_out_fd, buf, (size_t)n) < 0)
		*out_gone = 1;
	return 1;
}

/* Apply the last complete resize waiting on tty_size_fd (TIOCSWINSZ on
 * the master: the kernel sends SIGWINCH to the foreground group inside).
 * 0 at its EOF. */
static int tty_resize(struct run *x)
{
	struct sbx_tty_size sz[16];
	ssize_t n = read(x->req->tty_size_fd, sz, sizeof(sz));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 1 : 0;
	if (n == 0)
		return 0;
	size_t k = (size_t)n / sizeof(sz[0]);
	if (k) {
		struct winsize ws = {.ws_col = sz[k - 1].cols, .ws_row = sz[k - 1].rows};
		if (ws.ws_col && ws.ws_row)
			ioctl(x->ptm, TIOCSWINSZ, &ws);
	}
	return 1;
}

/* The pump of an exec with a tty: input to the master, its output out,
 * resizes, the timeout, until the command's main process exits; returns
 * its wait status.  Input is read only once the last read is written,
 * so at most one buffer is held. */
static int run_pump_tty(struct run *x, struct sbx_exec_result *res)
{
	const struct sbx_exec_req *req = x->req;
	fcntl(x->ptm, F_SETFL, O_NONBLOCK);
	if (req->raw_out_fd < 0) {
		x->so.cap = req->output_cap ? req->output_cap : DEFAULT_CAP;
		x->so.buf = sbx_xmalloc(x->so.cap + 1);
	}
	int in_fd = req->raw_in_fd;
	const char *in_data = in_fd < 0 ? req->stdin_data : NULL;
	size_t in_left = in_data ? req->stdin_len : 0;
	int in_open = in_fd >= 0 || in_data;
	int size_fd = req->tty_size_fd;
	char inbuf[65536];
	const char *pend = NULL;     /* bytes waiting for the master */
	size_t npend = 0;
	int eof_sent = 0, out_gone = 0, ptm_open = 1;
	char veof = 4;
	struct termios tio;
	if (tcgetattr(x->ptm, &tio) == 0 && tio.c_cc[VEOF])
		veof = (char)tio.c_cc[VEOF];
	int cfd = (int)syscall(SYS_pidfd_open, x->child, 0);
	int64_t deadline = req->timeout_ms > 0 ? x->t0 + req->timeout_ms : -1;
	int status = 0, exited = 0;
	while (!exited) {
		/* Refill what goes to the master. */
		if (!npend && in_data && in_left) {
			pend = in_data;
			npend = in_left > sizeof(inbuf) ? sizeof(inbuf) : in_left;
			in_data += npend;
			in_left -= npend;
		} else if (!npend && in_data && !in_left) {
			in_data = NULL;
			in_open = 0;
		}
		if (!npend && !in_open && !eof_sent && (in_fd >= 0 || req->stdin_data)) {
			pend = &veof;
			npend = 1;
			eof_sent = 1;
		}
		struct pollfd pf[4];
		int n = 0, i_m = -1, i_in = -1, i_sz = -1, i_c = -1;
		if (ptm_open) {
			i_m = n;
			pf[n++] = (struct pollfd){.fd = x->ptm,
						  .events = (short)(POLLIN | (npend ? POLLOUT : 0))};
		}
		if (in_fd >= 0 && in_open && !npend) { i_in = n; pf[n++] = (struct pollfd){.fd = in_fd, .events = POLLIN}; }
		if (size_fd >= 0) { i_sz = n; pf[n++] = (struct pollfd){.fd = size_fd, .events = POLLIN}; }
		if (cfd >= 0) { i_c = n; pf[n++] = (struct pollfd){.fd = cfd, .events = POLLIN}; }
		int pr = poll(pf, (nfds_t)n, poll_ms(deadline, res->timed_out, cfd));
		if (pr < 0 && errno != EINTR)
			break;
		if (deadline >= 0 && !res->timed_out && sbx_mono_ms() >= deadline) {
			res->timed_out = 1;
			if (x->killfd < 0 || write(x->killfd, "1", 1) < 0)
				kill(x->child, SIGKILL);
		}
		if (pr <= 0) {
			if (cfd < 0 && waitpid(x->child, &status, WNOHANG) == x->child)
				exited = 1;
			continue;
		}
		if (i_m >= 0 && (pf[i_m].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !tty_out(x, &out_gone))
			ptm_open = 0;    /* nothing holds the slave: wait for the exit */
		if (i_m >= 0 && ptm_open && npend && (pf[i_m].revents & POLLOUT)) {
			ssize_t w = write(x->ptm, pend, npend);
			if (w > 0) {
				pend += w;
				npend -= (size_t)w;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				npend = 0;
			}
		}
		if (i_in >= 0 && pf[i_in].revents) {
			ssize_t r = read(in_fd, inbuf, sizeof(inbuf));
			if (r > 0) {
				pend = inbuf;
				npend = (size_t)r;
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				in_open = 0;
			}
		}
		if (i_sz >= 0 && pf[i_sz].revents && !tty_resize(x))
			size_fd = -1;
		if (i_c >= 0 && pf[i_c].revents && waitpid(x->child, &status, WNOHANG) == x->child)
			exited = 1;
	}
	if (!exited)
		waitpid(x->child, &status, 0);
	x->child = -1;
	if (res->timed_out && x->xcg)
		local_cg_wait(x->xcg, "populated", 0, 10000);
	if (cfd >= 0)
		close(cfd);
	/* What the shell wrote before it exited; not what a background
	 * process that still holds the terminal goes on writing. */
	for (int i = 0; ptm_open && i < 256 && tty_out(x, &out_gone) == 1; i++)
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
				.as_root = req->as_root, .tty = req->tty,
				.cols = (unsigned short)(req->tty_cols > 0xffff ? 0xffff : req->tty_cols),
				.rows = (unsigned short)(req->tty_rows > 0xffff ? 0xffff : req->tty_rows)};
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
	int status = req->tty ? run_pump_tty(x, res) : run_pump(x, res);
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
