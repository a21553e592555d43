/* serve.h - sbx-serve's library side: an E2B-compatible HTTP server (the
 * control plane and the envd data plane on one listen address) over any
 * backend of the vtable.
 *
 * Concurrency model: libmicrohttpd runs a thread per connection, and those
 * threads only parse HTTP, enforce limits and check API keys; they never
 * call the backend, Redis or OpenSSL.  Every request that passes is served
 * by a *worker process*, one request at a time, which opens the backend
 * itself and writes its response back through a pipe (a status line,
 * headers, then the body, streamed for Connect streams).  Workers are
 * forked ahead and kept for up to 256 requests (serve-pool.h).  So the
 * library's process-wide state (a signal disposition swapped around exec,
 * setns on the calling thread, lazily filled script hashes) is only ever
 * touched by one thread of one process, exactly as in the other programs.
 * A worker that crashes costs its one request a 500.
 *
 * Nothing here prints: the request log and notices go to cfg->log, which
 * main provides. */
#ifndef SBX_SERVE_H
#define SBX_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

struct sbx_serve;

enum sbx_serve_flavor { SBX_SERVE_E2B = 0, SBX_SERVE_CUBE };

struct sbx_serve_cfg {
	const char *listen;          /* "127.0.0.1:PORT", "[::1]:PORT" */
	const char *const *key_files;/* NULL-terminated; one API key per line */
	const char *domain;          /* for "49983-<id>.<domain>" host routing
				      * and the `domain` field; NULL = none */
	const char *state_dir;       /* E2B-side records (end times, tokens);
				      * NULL = <profile state_dir>/serve */
	const char *tls_cert_file, *tls_key_file;  /* both or neither */
	struct sbx_profile *profile; /* borrowed; outlives the server */
	enum sbx_serve_flavor flavor;
	size_t max_body;             /* bytes of one request body (default 64 MiB) */
	size_t max_json;             /* bytes of a JSON/RPC body (default 1 MiB) */
	unsigned max_conns;          /* concurrent connections (default 256) */
	unsigned max_workers;        /* requests in flight (default 64) */
	unsigned max_workers_per_key;/* requests in flight of one key
				      * (default half of max_workers) */
	unsigned max_streams_per_key;/* open process streams per key (default
				      * 3/4 of max_workers_per_key) */
	unsigned max_streams_per_sandbox; /* ... per sandbox (default 16) */
	unsigned max_sandboxes_per_key; /* live sandboxes per key (default 100) */
	unsigned client_timeout_s;   /* silence on a connection (default 30) */
	unsigned head_timeout_s;     /* a whole request head, and an idle
				      * keep-alive (default 10) */
	unsigned request_deadline_s; /* a whole request's upload (default 120) */
	int webhook_allow_private;   /* webhooks may name loopback and private
				      * addresses (tests); never link-local */
	/* Called from the connection threads: must take no lock a worker
	 * uses (no gmtime_r or localtime; serve-pool.c). */
	void (*log)(void *ctx, const char *line);
	void *log_ctx;
};

/* Load the keys, bind the address and start serving.  Returns 0 and *out,
 * or -1 with err (configuration: no key, a key file unreadable, a bad
 * address; unavailable: the address is in use). */
int sbx_serve_start(const struct sbx_serve_cfg *cfg, struct sbx_serve **out,
		    struct sbx_err *err);
/* The port actually bound (for --listen 127.0.0.1:0). */
unsigned sbx_serve_port(const struct sbx_serve *s);
/* Stop accepting, let requests in flight finish for up to grace_ms, then
 * end the rest (their worker processes get SIGTERM, then SIGKILL), and
 * free everything.  Sandboxes are not touched. */
void sbx_serve_stop(struct sbx_serve *s, int64_t grace_ms);
/* One pass of the end-time sweeper: kill or pause every sandbox whose E2B
 * end time has passed.  Runs in its own worker process every second while
 * the server runs; exposed for tests. */
int sbx_serve_sweep(struct sbx_serve *s, struct sbx_err *err);

#endif
