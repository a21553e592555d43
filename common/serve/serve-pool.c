/* serve-pool.c - sbx-serve's worker processes, forked ahead of the
 * requests and kept (serve-pool.h has the model).
 *
 * Promises:
 *  - A worker serves one request at a time, in a process of its own, as
 *    the per-request fork did: the library's process-wide state is only
 *    ever touched by one thread, and a worker that crashes costs the
 *    request it held (its pipe ends early: the thread answers 500).
 *  - A worker ends after SERVE_POOL_REQUESTS requests, after an answer
 *    of 500 or more, after a handler's failure, and whenever the
 *    connection thread cannot tell that it finished cleanly; the next
 *    request that finds no idle worker gets a new one.
 *  - Workers are forked by the forker, a process of one thread forked
 *    from the server when the pool starts, before the server has a
 *    second thread: a fork from the threaded server copies every lock
 *    another thread holds at that instant, held for good (a kept worker
 *    hung at its first malloc under ASan, whose allocator has no fork
 *    handler, with a request already taken: stop 36's serve.bats hang),
 *    and no rule about which locks the threads take can cover the
 *    libraries'.  The pool's thread asks the forker for a worker over a
 *    socket and gets back its pid, its control socket and a pidfd, by
 *    which the worker is watched, signalled and waited for (it is the
 *    forker's child, reaped by the kernel: the forker ignores SIGCHLD).
 *    A worker dies with the forker (PR_SET_PDEATHSIG), the forker with
 *    the server, or when the pool closes its socket.  A forker that is
 *    gone (a kill -9) is started again by nobody: once the idle workers
 *    are used up, requests get 503 ("cannot start a worker").
 *  - The request crosses the control socket as texts the worker bounds
 *    again (at most SERVE_MAX_HEADERS headers, 64 query parameters, a
 *    body within cfg->max_body), so a broken frame ends that worker and
 *    nothing else. */
#include "serve-pool.h"
#include "fault.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdpass.h"
#include "util.h"

#define QUERY_MAX 64
#define WAIT_MS 10000                /* for a worker to be forked */
/* A worker killed a moment ago (kill -9 of an idle one) is not gone yet:
 * its control socket takes a request until the kernel closes its fds, and
 * then its answer pipe ends with nothing, a 500 for a request it never
 * looked at.  So a worker says ACK_BYTE once it holds a whole request,
 * before acting on it, and a request that got none goes to another
 * worker (any method: nothing of it was done). */
#define ACK_BYTE 'a'

struct serve_worker {
	pid_t pid;
	int pidfd;                   /* readable once it has exited */
	int ctl;                     /* our end of its control socket */
	int busy;
	uint64_t idle_since;         /* a sequence: the newest idle is taken */
};

struct serve_pool {
	pthread_mutex_t mu;
	pthread_cond_t wake;         /* the pool thread: a worker is wanted */
	pthread_cond_t ready;        /* a worker became idle */
	struct serve_worker **w;
	size_t n, max;               /* live workers (and ones being forked) */
	size_t forking;
	unsigned waiting;            /* requests waiting for an idle worker */
	uint64_t seq;
	int stopping;
	pthread_t thread;
	int forker;                  /* socket to the forker (the pool's thread's) */
	pid_t forker_pid;
	serve_pool_fn fn;
	const struct sbx_serve_cfg *cfg;
	const char *dir;
};

/* The frame's fixed part; the texts follow (path, then each header's
 * name and value, then each query parameter's, NUL-terminated), then the
 * body. */
struct frame {
	char method[16];
	char sandbox_id[72];
	char team[17];
	uint32_t plane, port, nhdr, nquery;
	uint64_t texts_len, body_len;
};

/* ---- both sides: whole reads and writes ---- */

/* All of len bytes sent (MSG_NOSIGNAL: a peer gone is -1, not SIGPIPE)
 * or read; -1 on an error or an early end. */
static int move_all(int fd, char *p, size_t len, int sending)
{
	while (len) {
		ssize_t n = sending ? send(fd, p, len, MSG_NOSIGNAL) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	return move_all(fd, (char *)buf, len, 1);
}

static int read_all(int fd, void *buf, size_t len)
{
	return move_all(fd, buf, len, 0);
}

/* ---- the worker ---- */

/* 1 for the first worker of the server's run that asks (a file made
 * with O_EXCL in its state folder), 0 for every later one. */
static int first_of_run(const char *dir)
{
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/fault-worker-dies-taking", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Read one request and the answer's fd.  0, 1 at the end (the server
 * closed the socket: stop), -1 on a broken frame. */
static int recv_req(int ctl, const struct serve_pool *p, struct serve_req *r, int *out)
{
	struct frame f;
	struct iovec iov = {.iov_base = &f, .iov_len = sizeof(f)};
	size_t nfd;
	ssize_t got = sbx_fds_recv(ctl, &iov, 1, out, 1, &nfd, 0);
	if (got == 0)
		return 1;
	if (got < 0 || nfd != 1)
		return -1;
	if ((size_t)got < sizeof(f) && read_all(ctl, (char *)&f + got, sizeof(f) - (size_t)got) < 0)
		return -1;
	f.method[sizeof(f.method) - 1] = f.sandbox_id[sizeof(f.sandbox_id) - 1] =
		f.team[sizeof(f.team) - 1] = '\0';
	if (f.nhdr > SERVE_MAX_HEADERS || f.nquery > QUERY_MAX || f.texts_len > (4u << 20) ||
	    f.body_len > (p->cfg->max_body > p->cfg->max_json ? p->cfg->max_body : p->cfg->max_json))
		return -1;
	memset(r, 0, sizeof(*r));
	memcpy(r->method, f.method, sizeof(r->method));
	memcpy(r->sandbox_id, f.sandbox_id, sizeof(r->sandbox_id));
	memcpy(r->team, f.team, sizeof(r->team));
	r->plane = (enum serve_plane)f.plane;
	r->port = f.port;
	r->cfg = p->cfg;
	r->serve_dir = p->dir;
	SBX_AUTOFREE char *t = sbx_xmalloc(f.texts_len + 1);
	if (read_all(ctl, t, f.texts_len) < 0)
		return -1;
	t[f.texts_len] = '\0';
	const char *q = t, *end = t + f.texts_len;
	size_t want = 1 + 2 * (size_t)(f.nhdr + f.nquery);
	char *s[1 + 2 * (SERVE_MAX_HEADERS + QUERY_MAX)];
	for (size_t i = 0; i < want; i++) {
		if (q >= end)
			return -1;
		s[i] = (char *)q;
		q += strlen(q) + 1;
	}
	r->path = sbx_xstrdup(s[0]);
	for (size_t i = 0; i < f.nhdr; i++) {
		r->hdr[i].k = sbx_xstrdup(s[1 + 2 * i]);
		r->hdr[i].v = sbx_xstrdup(s[2 + 2 * i]);
	}
	r->nhdr = f.nhdr;
	if (f.nquery)
		r->query = sbx_xcalloc(f.nquery, sizeof(*r->query));
	for (size_t i = 0; i < f.nquery; i++) {
		r->query[i].k = sbx_xstrdup(s[1 + 2 * (f.nhdr + i)]);
		r->query[i].v = sbx_xstrdup(s[2 + 2 * (f.nhdr + i)]);
	}
	r->nquery = f.nquery;
	if (f.body_len) {
		r->body = sbx_xmalloc(f.body_len + 1);
		if (read_all(ctl, r->body, f.body_len) < 0)
			return -1;
		r->body[f.body_len] = '\0';
		r->body_len = f.body_len;
	}
	return 0;
}

static __attribute__((noreturn)) void worker_main(struct serve_pool *p, int ctl)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	prctl(PR_SET_NAME, "sbx-serve-work");
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	/* serve:worker-ignores-term: a worker stuck where SIGTERM does not
	 * reach it, for the SIGKILL escalation's test. */
	signal(SIGTERM, sbx_fault_on("serve:worker-ignores-term") ? SIG_IGN : SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);    /* the forker's SIG_IGN: handlers wait for their children */
	if (ctl != 3 && (dup2(ctl, 3) < 0 || close(ctl) < 0))
		_exit(1);
	/* Nothing of the server's (the listen socket, clients' sockets,
	 * other workers' control sockets) lives on in a worker. */
	close_range(4, ~0U, 0);
	for (unsigned served = 0; served < SERVE_POOL_REQUESTS; served++) {
		struct serve_req r;
		int fd = -1;
		int got = recv_req(3, p, &r, &fd);
		if (got != 0)
			_exit(got > 0 ? 0 : 1);
		if (sbx_fault_on("serve:worker-dies-taking") && first_of_run(p->dir))
			raise(SIGKILL);          /* the test's worker, dying with a request */
		/* Taken: from here on the request is this worker's (ACK_BYTE). */
		char ack = ACK_BYTE;
		if (write_all(3, &ack, 1) < 0)
			_exit(1);
		struct serve_out o = {.fd = fd};
		int rc = p->fn(&r, &o);
		if (!o.head_done)
			serve_reply_error(&o, 500, "the request was not answered");
		if (serve_out_flush(&o) < 0)
			rc = -1;
		close(fd);
		serve_req_clear(&r);
		char done = rc < 0 || o.status >= 500 || served + 1 == SERVE_POOL_REQUESTS ? 'x' : 'k';
		if (write_all(3, &done, 1) < 0 || done != 'k')
			_exit(0);
	}
	_exit(0);
}

/* ---- the server's side ---- */

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* The forker's loop: for each byte read on fd 3, a worker forked and
 * {pid} sent back with its control socket and a pidfd (pid -1 and no fds
 * when it could not be made).  EOF: the pool is done. */
static __attribute__((noreturn)) void forker_main(struct serve_pool *p, int sock, pid_t server)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != server)
		_exit(0);
	prctl(PR_SET_NAME, "sbx-serve-fork");    /* ps, and tests, tell it apart */
	signal(SIGCHLD, SIG_IGN);    /* its workers are reaped by the kernel */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_IGN);     /* a ^C is the server's to handle */
	if (sock != 3 && (dup2(sock, 3) < 0 || close(sock) < 0))
		_exit(1);
	close_range(4, ~0U, 0);
	for (;;) {
		char c;
		ssize_t n = read(3, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		int sv[2] = {-1, -1}, pfd = -1;
		pid_t pid = -1;
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
			pid = fork();
			if (pid == 0) {
				close(sv[0]);
				worker_main(p, sv[1]);
			}
			close(sv[1]);
			if (pid > 0 && (pfd = pidfd_open_(pid)) < 0) {
				kill(pid, SIGKILL);
				pid = -1;
			}
		}
		struct iovec iov = {.iov_base = &pid, .iov_len = sizeof(pid)};
		int fds[2] = {sv[0], pfd};
		if (sbx_fds_send(3, &iov, 1, fds, pid > 0 ? 2 : 0, 0) < 0)
			_exit(0);
		if (sv[0] >= 0)
			close(sv[0]);
		if (pfd >= 0)
			close(pfd);
	}
}

/* One worker from the forker (in the pool's thread, its only user).
 * NULL on failure: out of processes, or the forker gone. */
static struct serve_worker *spawn(struct serve_pool *p)
{
	char c = 'w';
	if (write_all(p->forker, &c, 1) < 0)
		return NULL;
	pid_t pid = -1;
	struct iovec iov = {.iov_base = &pid, .iov_len = sizeof(pid)};
	int fds[2] = {-1, -1};
	size_t nfd;
	ssize_t got = sbx_fds_recv(p->forker, &iov, 1, fds, 2, &nfd, MSG_WAITALL);
	if (got != (ssize_t)sizeof(pid) || pid <= 0 || nfd != 2) {
		for (size_t i = 0; i < nfd; i++)
			close(fds[i]);
		return NULL;
	}
	struct serve_worker *w = sbx_xcalloc(1, sizeof(*w));
	w->pid = pid;
	w->ctl = fds[0];
	w->pidfd = fds[1];
	return w;
}

/* Whether it has exited, waiting up to ms (-1: for good). */
static int exited_within(const struct serve_worker *w, int ms)
{
	struct pollfd pf = {.fd = w->pidfd, .events = POLLIN};
	int r;
	while ((r = poll(&pf, 1, ms)) < 0 && errno == EINTR)
		;
	return r != 0;
}

static void release(struct serve_worker *w)
{
	close(w->pidfd);
	close(w->ctl);
	free(w);
}

static void reap(struct serve_worker *w)
{
	exited_within(w, -1);
	release(w);
}

/* SIGTERM, SIGKILL SERVE_POOL_TERM_MS later if it has not exited. */
static void end_worker(struct serve_worker *w)
{
	if (!exited_within(w, 0)) {
		pidfd_signal(w->pidfd, SIGTERM);
		if (!exited_within(w, SERVE_POOL_TERM_MS)) {
			pidfd_signal(w->pidfd, SIGKILL);
			reap(w);
			return;
		}
	}
	release(w);
}

/* Back to the idle ones.  Under p->mu. */
static void idle_again(struct serve_pool *p, struct serve_worker *w)
{
	w->busy = 0;
	w->idle_since = ++p->seq;
	pthread_cond_broadcast(&p->ready);
}

/* Under p->mu. */
static void forget(struct serve_pool *p, struct serve_worker *w)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->w[i] == w) {
			p->w[i] = p->w[--p->n];
			break;
		}
	pthread_cond_signal(&p->wake);
}

static size_t idle_count(const struct serve_pool *p)
{
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++)
		k += !p->w[i]->busy;
	return k;
}

/* The pool's thread: keeps SERVE_POOL_SPARE idle workers, and one more
 * for each request waiting, within max. */
static void *pool_main(void *arg)
{
	struct serve_pool *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		size_t idle = idle_count(p) + p->forking;
		size_t want = SERVE_POOL_SPARE > p->waiting ? SERVE_POOL_SPARE : p->waiting;
		if (idle >= want || p->n + p->forking >= p->max) {
			pthread_cond_wait(&p->wake, &p->mu);
			continue;
		}
		p->forking++;
		pthread_mutex_unlock(&p->mu);
		struct serve_worker *w = spawn(p);
		pthread_mutex_lock(&p->mu);
		p->forking--;
		if (!w) {
			/* out of processes: try again when one is given back */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&p->wake, &p->mu, &ts);
			continue;
		}
		w->idle_since = ++p->seq;
		p->w[p->n++] = w;
		pthread_cond_broadcast(&p->ready);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int serve_pool_start(struct serve_pool **out, unsigned max, serve_pool_fn fn,
		     const struct sbx_serve_cfg *cfg, const char *dir)
{
	struct serve_pool *p = sbx_xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->ready, NULL);
	p->max = max ? max : 1;
	p->w = sbx_xcalloc(p->max, sizeof(*p->w));
	p->fn = fn;
	p->cfg = cfg;
	p->dir = dir;
	int fs[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fs) < 0) {
		free(p->w);
		free(p);
		return -1;
	}
	pid_t server = getpid();
	p->forker_pid = fork();
	if (p->forker_pid == 0) {
		close(fs[0]);
		forker_main(p, fs[1], server);
	}
	close(fs[1]);
	p->forker = fs[0];
	int e = p->forker_pid < 0 ? errno : pthread_create(&p->thread, NULL, pool_main, p);
	if (e) {
		close(p->forker);
		if (p->forker_pid > 0)
			while (waitpid(p->forker_pid, NULL, 0) < 0 && errno == EINTR)
				;
		free(p->w);
		free(p);
		errno = e;
		return -1;
	}
	*out = p;
	return 0;
}

/* Whether an idle worker is gone: it never writes while idle, so its
 * socket readable (EOF) or hung up means it died. */

/* 1 when the worker acknowledged the request just sent (within
 * SERVE_POOL_TERM_MS), else 0: dead, dying, or stuck. */
static int taken(const struct serve_worker *w)
{
	struct pollfd pf = {.fd = w->ctl, .events = POLLIN};
	char c = 0;
	return poll(&pf, 1, SERVE_POOL_TERM_MS) == 1 && read(w->ctl, &c, 1) == 1 && c == ACK_BYTE;
}

static int idle_dead(const struct serve_worker *w)
{
	struct pollfd pf = {.fd = w->ctl, .events = POLLIN};
	return poll(&pf, 1, 0) != 0;
}

/* Take the newest idle worker, waiting for one; NULL after WAIT_MS or
 * when stopping. */
static struct serve_worker *take(struct serve_pool *p)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&p->mu);
	p->waiting++;
	pthread_cond_signal(&p->wake);
	struct serve_worker *got = NULL;
	while (!got && !p->stopping) {
		for (size_t i = 0; i < p->n; i++)
			if (!p->w[i]->busy && (!got || p->w[i]->idle_since > got->idle_since))
				got = p->w[i];
		if (got)
			break;
		if (pthread_cond_timedwait(&p->ready, &p->mu, &ts) == ETIMEDOUT)
			break;
	}
	if (got)
		got->busy = 1;
	p->waiting--;
	pthread_cond_signal(&p->wake);    /* the spare, topped up */
	pthread_mutex_unlock(&p->mu);
	return got;
}

static int send_req(struct serve_worker *w, const struct serve_req *r, int fd)
{
	struct frame f = {0};
	snprintf(f.method, sizeof(f.method), "%s", r->method);
	snprintf(f.sandbox_id, sizeof(f.sandbox_id), "%s", r->sandbox_id);
	snprintf(f.team, sizeof(f.team), "%s", r->team);
	f.plane = (uint32_t)r->plane;
	f.port = r->port;
	f.nhdr = (uint32_t)r->nhdr;
	f.nquery = (uint32_t)r->nquery;
	f.body_len = r->body ? r->body_len : 0;
	size_t len = strlen(r->path ? r->path : "") + 1;
	for (size_t i = 0; i < r->nhdr; i++)
		len += strlen(r->hdr[i].k) + strlen(r->hdr[i].v) + 2;
	for (size_t i = 0; i < r->nquery; i++)
		len += strlen(r->query[i].k) + strlen(r->query[i].v) + 2;
	SBX_AUTOFREE char *t = sbx_xmalloc(len);
	char *q = t;
#define PUT(str) (q = stpcpy(q, (str)) + 1)
	PUT(r->path ? r->path : "");
	for (size_t i = 0; i < r->nhdr; i++) {
		PUT(r->hdr[i].k);
		PUT(r->hdr[i].v);
	}
	for (size_t i = 0; i < r->nquery; i++) {
		PUT(r->query[i].k);
		PUT(r->query[i].v);
	}
#undef PUT
	f.texts_len = len;
	struct iovec iov = {.iov_base = &f, .iov_len = sizeof(f)};
	ssize_t n = sbx_fds_send(w->ctl, &iov, 1, &fd, 1, 0);
	if (n <= 0 || (n < (ssize_t)sizeof(f) && write_all(w->ctl, (char *)&f + n, sizeof(f) - (size_t)n) < 0))
		return -1;
	if (write_all(w->ctl, t, len) < 0)
		return -1;
	return f.body_len ? write_all(w->ctl, r->body, f.body_len) : 0;
}

int serve_pool_run(struct serve_pool *p, const struct serve_req *r, struct serve_worker **out)
{
	/* Each failed try ends one worker: at most every live one, and the
	 * one forked meanwhile. */
	for (size_t tries = 0; tries < p->max + 2; tries++) {
		struct serve_worker *w = take(p);
		if (!w)
			return -1;
		int pp[2];
		if (pipe2(pp, O_CLOEXEC) < 0) {
			pthread_mutex_lock(&p->mu);
			idle_again(p, w);              /* untouched */
			pthread_mutex_unlock(&p->mu);
			return -1;
		}
		if (!idle_dead(w) && send_req(w, r, pp[1]) == 0 && taken(w)) {
			close(pp[1]);
			*out = w;
			return pp[0];
		}
		/* It died while idle, or while taking the request (before its
		 * ACK_BYTE: it did nothing with it, so another may take it). */
		close(pp[0]);
		close(pp[1]);
		pthread_mutex_lock(&p->mu);
		forget(p, w);
		pthread_mutex_unlock(&p->mu);
		end_worker(w);
	}
	return -1;
}

void serve_pool_done(struct serve_pool *p, struct serve_worker *w, int whole)
{
	char done = 0;
	if (whole) {
		struct pollfd pf = {.fd = w->ctl, .events = POLLIN};
		if (poll(&pf, 1, SERVE_POOL_TERM_MS) == 1 && read(w->ctl, &done, 1) != 1)
			done = 0;
	}
	pthread_mutex_lock(&p->mu);
	if (done == 'k' && !p->stopping) {
		idle_again(p, w);
		pthread_mutex_unlock(&p->mu);
		return;
	}
	forget(p, w);
	pthread_mutex_unlock(&p->mu);
	end_worker(w);
}

void serve_pool_tidy(struct serve_pool *p)
{
	struct serve_worker *dead[64];
	size_t nd = 0;
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->n && nd < SBX_ARRAY_LEN(dead);)
		if (!p->w[i]->busy && idle_dead(p->w[i])) {
			dead[nd++] = p->w[i];
			p->w[i] = p->w[--p->n];
		} else {
			i++;
		}
	if (nd)
		pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < nd; i++)
		reap(dead[i]);
}

size_t serve_pool_signal_busy(struct serve_pool *p, int sig)
{
	pthread_mutex_lock(&p->mu);
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++)
		if (p->w[i]->busy) {
			pidfd_signal(p->w[i]->pidfd, sig);
			k++;
		}
	pthread_mutex_unlock(&p->mu);
	return k;
}

void serve_pool_stop(struct serve_pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_cond_broadcast(&p->ready);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	/* The idle ones read EOF and exit; a busy one left (it should not
	 * be) is ended. */
	for (size_t i = 0; i < p->n; i++) {
		if (!p->w[i]->busy) {
			shutdown(p->w[i]->ctl, SHUT_RDWR);
			reap(p->w[i]);
		} else {
			end_worker(p->w[i]);
		}
	}
	/* EOF: the forker exits. */
	close(p->forker);
	while (waitpid(p->forker_pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(p->w);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->ready);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
