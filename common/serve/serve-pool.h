/* serve-pool.h - sbx-serve's worker processes (serve-pool.c): forked ahead
 * of the requests, each serving one request at a time, and ended after
 * SERVE_POOL_REQUESTS requests or any failure.
 *
 * A worker is a process forked by the forker, a one-thread process the
 * pool forks from the server at its start, before the server has a second
 * thread (serve-pool.c says why); the pool's own thread asks it for each.  The connection thread hands it a request (serve_pool_run): the
 * request's texts and body over the worker's control socket, and the
 * write end of a fresh pipe, on which the worker writes its answer
 * (serve-int.h's pipe form) and which it closes when the answer is
 * whole.  Then the worker says on the control socket whether it takes
 * another request; the connection thread gives it back (serve_pool_done).
 * Not for programs: serve-http.c is the one user. */
#ifndef SBX_SERVE_POOL_H
#define SBX_SERVE_POOL_H

#include <stddef.h>
#include <sys/types.h>

#include "serve-int.h"

/* Requests one worker serves before it exits and is replaced: a leak or
 * a state a handler left behind lives at most this long. */
#define SERVE_POOL_REQUESTS 256
/* Idle workers the pool keeps forked ahead of demand. */
#define SERVE_POOL_SPARE 2
/* From SIGTERM to SIGKILL, and the longest a worker may take after its
 * answer's last byte to say it is done. */
#define SERVE_POOL_TERM_MS 2000

struct serve_pool;
struct serve_worker;

/* The handler a worker runs for each request. */
typedef int (*serve_pool_fn)(const struct serve_req *r, struct serve_out *o);

/* Start the pool's thread and fork SERVE_POOL_SPARE workers; at most
 * `max` workers live at once (idle or busy).  `cfg` and `dir` are the
 * server's, shared with the workers (the fork copies them).  0, or -1
 * with errno. */
int serve_pool_start(struct serve_pool **out, unsigned max, serve_pool_fn fn,
		     const struct sbx_serve_cfg *cfg, const char *dir);
/* Hand `r` to an idle worker, waiting (up to 10 s) for one to be forked
 * when none is idle.  Returns the read end of the answer's pipe and *w,
 * or -1 (no worker could be had: the caller answers 503).  A worker found
 * dead on the way (killed while idle) is reaped and another taken. */
int serve_pool_run(struct serve_pool *p, const struct serve_req *r, struct serve_worker **w);
/* The answer is over.  `whole`: the connection thread relayed all of it;
 * the worker then goes back to the idle ones when it says so within
 * SERVE_POOL_TERM_MS.  Otherwise (a client gone mid-stream, a malformed
 * answer), and whenever the worker does not come back, it is ended:
 * SIGTERM, SIGKILL SERVE_POOL_TERM_MS later, reaped. */
void serve_pool_done(struct serve_pool *p, struct serve_worker *w, int whole);
/* Reap idle workers that died (a kill -9): run once a second. */
void serve_pool_tidy(struct serve_pool *p);
/* Send `sig` to every busy worker; returns how many there are. */
size_t serve_pool_signal_busy(struct serve_pool *p, int sig);
/* End the idle workers, join the pool's thread and free it: after every
 * busy worker has been given back (the connection threads are joined). */
void serve_pool_stop(struct serve_pool *p);

#endif
