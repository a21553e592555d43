/* serve-http.c - sbx-serve's HTTP side: the libmicrohttpd daemon on one
 * listen address, API keys, limits, the request log, and the hand-off of
 * each request to a worker process of the pool (serve-pool.c; serve.h
 * says why processes).
 *
 * Promises: a connection thread never calls the backend, Redis, OpenSSL
 * or glibc's time functions (so a fork never copies a lock another thread
 * holds in them; cfg->log must not either); a head
 * over SERVE_URL_MAX / SERVE_HEAD_MAX is 414 / 431 before anything is
 * built from it; the key, the sandbox's record and its envd or traffic
 * token are checked on the head, before a byte of body is buffered, a
 * worker taken or a backend opened; a request body larger than its limit
 * is answered 413 before it is read; a client that stalls is cut off
 * after client_timeout_s of silence, a head (or an idle keep-alive) not
 * whole after head_timeout_s and an upload not finished after
 * request_deadline_s are cut off however steadily they trickle, and when
 * the server is full the oldest connection still sending its head makes
 * room for a new one; one key holds at most max_workers_per_key workers
 * and max_streams_per_key streams, one sandbox max_streams_per_sandbox;
 * every request gets one log line. */
#include "serve.h"
#include "serve-int.h"
#include "serve-pool.h"
#include "fault.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microhttpd.h>

#include "sha.h"
#include "util.h"

#define HEAD_MAX 8192

struct key { char *key; size_t len; char team[17]; };

/* What one key (or, at index nkeys, a sandbox of no loaded key) holds. */
struct key_use { unsigned workers, streams; };

/* Open streams of one sandbox, by its exact id. */
struct sb_use { char id[72]; unsigned streams; };

/* A connection, for the watchdog: which phase it is in since when.  Lives
 * from MHD's STARTED to its CLOSED notice (before the socket is closed), so
 * that a shutdown() under `mu` always hits this connection's socket. */
enum sock_phase { SOCK_HEAD, SOCK_BODY, SOCK_WORK };
struct sock {
	int fd;
	enum sock_phase phase;
	int64_t since_ms;
	int cut;
	struct sock *prev, *next;
};

struct sbx_serve {
	struct sbx_serve_cfg cfg;
	struct MHD_Daemon *d;
	int lfd;
	unsigned port;
	struct key *keys;
	size_t nkeys;
	char *dir;
	pthread_mutex_t mu;
	struct serve_pool *pool;
	unsigned inflight;
	struct key_use *kuse;        /* nkeys + 1 */
	struct sb_use *sbuse;
	size_t nsbuse;
	struct sock *socks;          /* every open connection */
	unsigned nsocks;             /* of them, not yet cut */
	int stopping;
	pthread_t sweeper, watchdog;
	int sweeper_on, watchdog_on;
	pid_t hooks;                 /* the webhook deliverer (serve-hooks.c) */
};

/* ---- keys ---- */

static void team_of(const char *key, size_t len, char team[17])
{
	unsigned char h[SBX_SHA256_LEN];
	sbx_sha256(key, len, h);
	for (int i = 0; i < 8; i++)
		snprintf(team + 2 * i, 3, "%02x", h[i]);
}

/* Every non-empty line that does not start with '#' is a key. */
static int load_keys(struct sbx_serve *s, struct sbx_err *err)
{
	for (const char *const *f = s->cfg.key_files; f && *f; f++) {
		char *data;
		size_t len;
		if (sbx_read_file(*f, 1 << 20, &data, &len, err) < 0) {
			err->exit_status = SBX_EXIT_CONFIG;
			return -1;
		}
		char *save = NULL;
		for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			sbx_trim(line);
			if (!*line || *line == '#')
				continue;
			s->keys = sbx_xrealloc(s->keys, (s->nkeys + 1) * sizeof(*s->keys));
			struct key *k = &s->keys[s->nkeys++];
			k->len = strlen(line);
			k->key = sbx_xstrdup(line);
			team_of(k->key, k->len, k->team);
		}
		sbx_secret_free(data);
	}
	if (!s->nkeys)
		return sbx_fail_config(err, "serve", "no API key: give --api-key-file FILE with one key a line");
	return 0;
}

static int ct_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char d = alen != blen;
	for (size_t i = 0; i < alen; i++)
		d |= (unsigned char)(a[i] ^ b[i < blen ? i : 0]);
	return d == 0;
}

/* The index of the key the request carries (X-API-Key, or Authorization:
 * Bearer), or -1. */
static long auth_key(const struct sbx_serve *s, const struct serve_req *r)
{
	const char *k = serve_hdr(r, "x-api-key");
	const char *a = serve_hdr(r, "authorization");
	if (!k && a && strncasecmp(a, "Bearer ", 7) == 0)
		k = a + 7;
	if (!k || !*k)
		return -1;
	size_t n = strlen(k);
	long found = -1;
	for (size_t i = 0; i < s->nkeys; i++)     /* all of them: constant time */
		if (ct_equal(k, n, s->keys[i].key, s->keys[i].len) && found < 0)
			found = (long)i;
	return found;
}

/* The index of the first key of `team`, else nkeys (the bucket of
 * sandboxes whose key is no longer loaded). */
static size_t key_of_team(const struct sbx_serve *s, const char *team)
{
	for (size_t i = 0; i < s->nkeys; i++)
		if (!strcmp(s->keys[i].team, team))
			return i;
	return s->nkeys;
}

/* ---- the request ---- */

struct conn {
	struct serve_req r;
	struct sbx_serve *s;
	size_t cap, limit;
	int too_large;
	int64_t start_ms;
	int status;
	uint64_t bytes;
	int counted;                 /* holds a worker slot (global and its key's) */
	int streaming;               /* holds a stream slot (its key's and sandbox's) */
	size_t key;                  /* index into kuse */
	struct sock *sock;
};

static enum MHD_Result add_hdr(void *ctx, enum MHD_ValueKind kind, const char *k, const char *v)
{
	(void)kind;
	struct serve_req *r = ctx;
	if (r->nhdr == SERVE_MAX_HEADERS)
		return MHD_NO;
	char *lk = sbx_xstrdup(k);
	for (char *p = lk; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	r->hdr[r->nhdr].k = lk;
	r->hdr[r->nhdr++].v = sbx_xstrdup(v ? v : "");
	return MHD_YES;
}

static enum MHD_Result add_query(void *ctx, enum MHD_ValueKind kind, const char *k, const char *v)
{
	(void)kind;
	struct serve_req *r = ctx;
	if (r->nquery == 64)
		return MHD_NO;
	r->query = sbx_xrealloc(r->query, (r->nquery + 1) * sizeof(*r->query));
	r->query[r->nquery].k = sbx_xstrdup(k);
	r->query[r->nquery++].v = sbx_xstrdup(v ? v : "");
	return MHD_YES;
}

/* ---- responses built in the connection thread ---- */

static enum MHD_Result reply_text(struct MHD_Connection *c, struct conn *q, int status,
				  const char *ctype, const char *body, const char *retry_after)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body), (void *)body,
								    MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", ctype);
	if (retry_after)
		MHD_add_response_header(resp, "Retry-After", retry_after);
	enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	q->status = status;
	q->bytes = strlen(body);
	return rc;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, struct conn *q, int status,
				  json_object *j, const char *retry_after)
{
	enum MHD_Result rc = reply_text(c, q, status, "application/json",
					json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
					retry_after);
	json_object_put(j);
	return rc;
}

static enum MHD_Result reply_error(struct MHD_Connection *c, struct conn *q, int status,
				   const char *msg, const char *retry_after)
{
	json_object *j = json_object_new_object();
	json_object_object_add(j, "code", json_object_new_int(status));
	json_object_object_add(j, "message", json_object_new_string(msg));
	return reply_json(c, q, status, j, retry_after);
}

/* E2B's answer for a sandbox plane request that reaches no sandbox. */
static enum MHD_Result reply_gone(struct MHD_Connection *c, struct conn *q, int status,
				  const char *msg)
{
	const struct serve_req *r = &q->r;
	json_object *j = json_object_new_object();
	json_object_object_add(j, "sandboxId", json_object_new_string(r->sandbox_id));
	json_object_object_add(j, "message", json_object_new_string(msg));
	if (status == 502 && r->plane == PLANE_PROXY)
		json_object_object_add(j, "port", json_object_new_int((int)r->port));
	json_object_object_add(j, "code", json_object_new_int(status));
	return reply_json(c, q, status, j, NULL);
}

/* ---- workers (serve-pool.c) ---- */

static int is_stream_rpc(const struct serve_req *r)
{
	return strcmp(r->path, "/process.Process/Start") == 0 ||
	       strcmp(r->path, "/process.Process/Connect") == 0;
}

struct body {
	struct sbx_serve *s;
	int fd;
	int sock;                    /* the client's socket, watched for a hang-up */
	struct serve_worker *w;
	long long length;            /* of the body, -1 streamed */
	uint64_t sent;               /* of it, relayed (q is gone by body_free) */
	int eof;                     /* the worker closed the pipe */
	char *pending;
	size_t plen, poff;
	struct conn *q;
	int drop;                /* test fault serve:stream-drop */
};

static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct body *b = cls;
	if (b->poff < b->plen) {
		size_t n = b->plen - b->poff < max ? b->plen - b->poff : max;
		memcpy(buf, b->pending + b->poff, n);
		b->poff += n;
		b->q->bytes += n;
		b->sent += n;
		return (ssize_t)n;
	}
	/* serve:stream-drop: the connection breaks after the first piece
	 * of a process stream, as a proxy reset would break it. */
	if (b->drop && b->q->bytes > 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	for (;;) {
		/* Wait for the worker, but not for a client that hung up: its
		 * stream's slot (and worker) must not outlive it until the next
		 * keepalive finds the socket closed. */
		struct pollfd pf[2] = {{.fd = b->fd, .events = POLLIN},
				       {.fd = b->sock, .events = POLLRDHUP}};
		if (poll(pf, b->sock >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (b->sock >= 0 && (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) &&
		    !(pf[0].revents & POLLIN))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		ssize_t n = read(b->fd, buf, max);
		if (n > 0) {
			b->q->bytes += (uint64_t)n;
			b->sent += (uint64_t)n;
			return n;
		}
		if (n == 0) {
			b->eof = 1;
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (errno != EINTR)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

/* The answer is over: its worker goes back to the pool when all of it
 * was relayed (a client gone mid-stream leaves it running: it is ended).
 * MHD may call this after on_done has freed the request (b->q). */
static void body_free(void *cls)
{
	struct body *b = cls;
	close(b->fd);
	int whole = b->length < 0 ? b->eof : b->sent >= (uint64_t)b->length;
	serve_pool_done(b->s->pool, b->w, whole);
	free(b->pending);
	free(b);
}

/* Read the worker's head (status, headers) and queue the response.  The
 * worker's pipe and process are owned by the response from here on (its
 * free callback closes and reaps them); on any failure before that, here. */
static enum MHD_Result relay(struct MHD_Connection *c, struct conn *q, int fd,
			     struct serve_worker *w)
{
	char *head = sbx_xmalloc(HEAD_MAX + 1);
	size_t n = 0;
	char *end = NULL;
	while (!end && n < HEAD_MAX) {
		ssize_t got = read(fd, head + n, HEAD_MAX - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
		head[n] = '\0';
		end = strstr(head, "\n\n");
	}
	struct serve_pipe_head ph;
	if (end)
		end[1] = '\0';
	if (!end || serve_pipe_head(head, &ph) < 0) {
		free(head);
		close(fd);
		serve_pool_done(q->s->pool, w, 0);
		return reply_error(c, q, 500, "the worker failed", NULL);
	}
	struct body *b = sbx_xcalloc(1, sizeof(*b));
	b->s = q->s;
	b->fd = fd;
	b->w = w;
	b->length = ph.length;
	b->q = q;
	b->drop = is_stream_rpc(&q->r) && sbx_fault_on("serve:stream-drop");
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	b->sock = ci ? ci->connect_fd : -1;
	b->plen = n - (size_t)(end + 2 - head);
	b->pending = sbx_xmalloc(b->plen + 1);
	memcpy(b->pending, end + 2, b->plen);
	struct MHD_Response *resp;
	if (ph.length == 0) {
		body_free(b);
		b = NULL;
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		resp = MHD_create_response_from_callback(ph.length < 0 ? MHD_SIZE_UNKNOWN : (uint64_t)ph.length,
							 32 * 1024, body_read, b, body_free);
	}
	if (!resp) {
		if (b)
			body_free(b);
		free(head);
		return MHD_NO;
	}
	for (size_t i = 0; i < ph.n; i++)
		MHD_add_response_header(resp, ph.name[i], ph.value[i]);
	free(head);
	q->status = ph.status;
	enum MHD_Result rc = MHD_queue_response(c, (unsigned)ph.status, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* The worker's entry: which plane. */
static int serve_worker(const struct serve_req *r, struct serve_out *o)
{
	if (r->plane == PLANE_SWEEP) {
		struct sbx_err err = {0};
		if (serve_sweep_once(r->serve_dir, r->cfg, &err) < 0)
			return serve_reply_err(o, &err);
		return serve_reply(o, 200, NULL, NULL, 0);
	}
	if (r->plane == PLANE_API)
		return serve_api(r, o);
	return serve_envd(r, o);
}

/* The test faults of the control plane (fault.h), answered before any
 * worker runs, so the server does nothing else for the request:
 *   serve:api-503-once      the first API request: 503, Retry-After: 0
 *   serve:snapshot-500      every POST /sandboxes/{id}/snapshots: 500
 *   serve:list-repeat-token every GET /v2/sandboxes: an empty page whose
 *                           X-Next-Token is always the same
 * Returns 1 when it answered. */
static int injected_fault(struct MHD_Connection *c, struct conn *q, enum MHD_Result *rc)
{
	static int once;
	const struct serve_req *r = &q->r;
	if (sbx_fault_on("serve:api-503-once") && !__atomic_exchange_n(&once, 1, __ATOMIC_SEQ_CST)) {
		*rc = reply_error(c, q, 503, "Service is unavailable (test fault)", "0");
		return 1;
	}
	if (sbx_fault_on("serve:snapshot-500") && !strcmp(r->method, "POST") &&
	    sbx_str_starts(r->path, "/sandboxes/") && strstr(r->path, "/snapshots")) {
		*rc = reply_error(c, q, 500, "snapshot failed (test fault)", NULL);
		return 1;
	}
	if (sbx_fault_on("serve:list-repeat-token") && !strcmp(r->method, "GET") &&
	    !strcmp(r->path, "/v2/sandboxes")) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(2, (void *)"[]", MHD_RESPMEM_PERSISTENT);
		if (!resp)
			return *rc = MHD_NO, 1;
		MHD_add_response_header(resp, "Content-Type", "application/json");
		MHD_add_response_header(resp, "X-Next-Token", "c2FtZQ==");
		*rc = MHD_queue_response(c, 200, resp);
		MHD_destroy_response(resp);
		q->status = 200;
		return 1;
	}
	return 0;
}

/* The stream slots of sandbox `id` (exact id, not a bucket); NULL when
 * none is held and `make` is 0.  Under s->mu. */
static struct sb_use *sb_use(struct sbx_serve *s, const char *id, int make)
{
	for (size_t i = 0; i < s->nsbuse; i++)
		if (!strcmp(s->sbuse[i].id, id))
			return &s->sbuse[i];
	if (!make)
		return NULL;
	s->sbuse = sbx_xrealloc(s->sbuse, (s->nsbuse + 1) * sizeof(*s->sbuse));
	struct sb_use *u = &s->sbuse[s->nsbuse++];
	snprintf(u->id, sizeof(u->id), "%s", id);
	u->streams = 0;
	return u;
}

static void sb_release(struct sbx_serve *s, const char *id)
{
	struct sb_use *u = sb_use(s, id, 0);
	if (u && !--u->streams)
		*u = s->sbuse[--s->nsbuse];
}

/* Take the request's slots: a worker (the server's and its key's), and
 * for a process stream a stream (its key's and its sandbox's).  0, or the
 * message of the 429. */
static const char *take_slots(struct sbx_serve *s, struct conn *q)
{
	const char *busy = NULL;
	struct key_use *k = &s->kuse[q->key];
	int stream = q->r.plane == PLANE_ENVD && is_stream_rpc(&q->r);
	pthread_mutex_lock(&s->mu);
	if (s->inflight >= s->cfg.max_workers)
		busy = "the server is at capacity";
	else if (k->workers >= s->cfg.max_workers_per_key)
		busy = "too many requests in flight for this key";
	else if (stream && k->streams >= s->cfg.max_streams_per_key)
		busy = "too many open streams for this key";
	else if (stream) {
		struct sb_use *u = sb_use(s, q->r.sandbox_id, 1);
		if (u->streams >= s->cfg.max_streams_per_sandbox) {
			busy = "too many open streams";
			if (!u->streams)
				*u = s->sbuse[--s->nsbuse];
		} else {
			u->streams++;
			k->streams++;
			q->streaming = 1;
		}
	}
	if (!busy) {
		s->inflight++;
		k->workers++;
		q->counted = 1;
	}
	pthread_mutex_unlock(&s->mu);
	return busy;
}

static void give_slots(struct sbx_serve *s, struct conn *q)
{
	pthread_mutex_lock(&s->mu);
	if (q->counted) {
		s->inflight--;
		s->kuse[q->key].workers--;
	}
	if (q->streaming) {
		s->kuse[q->key].streams--;
		sb_release(s, q->r.sandbox_id);
	}
	q->counted = q->streaming = 0;
	pthread_mutex_unlock(&s->mu);
}

static void sock_phase(struct sbx_serve *s, struct sock *k, enum sock_phase ph)
{
	if (!k)
		return;
	pthread_mutex_lock(&s->mu);
	k->phase = ph;
	k->since_ms = sbx_mono_ms();
	pthread_mutex_unlock(&s->mu);
}

/* The checks of a whole head, before any body is read: its size, its
 * plane, the key (API) or the sandbox's record and token (envd, proxy),
 * the body's declared length.  Returns 1 with a response queued in *rc
 * when the request is answered here, else 0. */
static int check_head(struct MHD_Connection *c, struct conn *q, enum MHD_Result *rc)
{
	struct sbx_serve *s = q->s;
	struct serve_req *r = &q->r;
	int st = serve_head_check(r->method, r->path, r->hdr, r->nhdr);
	if (st)
		return *rc = reply_error(c, q, st, st == 400 ? "malformed request method"
						   : st == 414 ? "the request target is too long"
						   : "the request head is too large", NULL), 1;
	if (serve_route(r, s->cfg.domain) < 0) {
		r->sandbox_id[0] = '\0';
		return *rc = reply_gone(c, q, 502, "The sandbox was not found"), 1;
	}
	if (r->plane == PLANE_API) {
		if (strcmp(r->path, "/health") == 0 && strcmp(r->method, "GET") == 0)
			return *rc = reply_text(c, q, 200, "text/plain", "Health check successful", NULL), 1;
		long k = auth_key(s, r);
		if (k < 0)
			return *rc = reply_error(c, q, 401, "Invalid API key, it must start with 'e2b_'", NULL), 1;
		q->key = (size_t)k;
		snprintf(r->team, sizeof(r->team), "%s", s->keys[k].team);
		if (injected_fault(c, q, rc))
			return 1;
	} else {
		struct serve_rec rec;
		struct sbx_err err = {0};
		if (serve_rec_load(s->dir, r->sandbox_id, &rec, &err) < 0)
			return *rc = reply_gone(c, q, 502, r->plane == PLANE_ENVD ? "The sandbox was not found"
						   : "The sandbox is running but port is not open"), 1;
		q->key = key_of_team(s, rec.team);
		int public = rec.allow_public;
		serve_rec_clear(&rec);
		if (r->plane == PLANE_ENVD && !strcmp(r->path, "/health")) {
			struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
			if (!resp)
				return *rc = MHD_NO, 1;
			MHD_add_response_header(resp, "Cache-Control", "no-store");
			*rc = MHD_queue_response(c, 204, resp);
			MHD_destroy_response(resp);
			q->status = 204;
			return 1;
		}
		const char *denied = r->plane == PLANE_ENVD ? serve_envd_denied(r, r->sandbox_id)
							    : serve_proxy_denied(r, r->sandbox_id, public);
		if (denied && r->plane == PLANE_ENVD)
			return *rc = reply_error(c, q, 401, denied, NULL), 1;
		if (denied)
			return *rc = reply_gone(c, q, 403, denied), 1;
	}
	q->limit = serve_body_limit(r->path, &s->cfg);
	const char *cl = serve_hdr(r, "content-length");
	if (cl && strtoull(cl, NULL, 10) > q->limit) {
		char msg[96];
		snprintf(msg, sizeof(msg), "the request body is larger than %zu bytes", q->limit);
		return *rc = reply_error(c, q, 413, msg, NULL), 1;
	}
	return 0;
}

/* Take the limits' slots and hand the request to a worker. */
static enum MHD_Result dispatch(struct MHD_Connection *c, struct conn *q)
{
	struct sbx_serve *s = q->s;
	sock_phase(s, q->sock, SOCK_WORK);
	const char *busy = take_slots(s, q);
	if (busy)
		return reply_error(c, q, 429, busy, "1");
	struct serve_worker *w;
	int fd = serve_pool_run(s->pool, &q->r, &w);
	if (fd < 0) {
		give_slots(s, q);
		return reply_error(c, q, 503, "cannot start a worker", "1");
	}
	return relay(c, q, fd, w);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	(void)version;
	struct sbx_serve *s = cls;
	struct conn *q = *con_cls;
	if (!q) {
		q = sbx_xcalloc(1, sizeof(*q));
		q->s = s;
		q->start_ms = sbx_mono_ms();
		*con_cls = q;
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		q->sock = ci ? ci->socket_context : NULL;
		sock_phase(s, q->sock, SOCK_BODY);
		snprintf(q->r.method, sizeof(q->r.method), "%s", method);
		q->r.path = sbx_xstrdup(url);
		q->r.cfg = &s->cfg;
		q->r.serve_dir = s->dir;
		if (MHD_get_connection_values(c, MHD_HEADER_KIND, add_hdr, &q->r) < 0 ||
		    q->r.nhdr >= SERVE_MAX_HEADERS)
			return reply_error(c, q, 431, "too many headers", NULL);
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_query, &q->r);
		enum MHD_Result rc;
		if (check_head(c, q, &rc)) {
			sock_phase(s, q->sock, SOCK_WORK);
			return rc;
		}
		return MHD_YES;
	}
	if (q->status)               /* answered early: discard the rest */
		return (*upload_size = 0), MHD_YES;
	if (*upload_size) {
		if (serve_body_add(&q->r, &q->cap, upload, *upload_size, q->limit) < 0) {
			char msg[96];
			snprintf(msg, sizeof(msg), "the request body is larger than %zu bytes", q->limit);
			*upload_size = 0;
			sock_phase(s, q->sock, SOCK_WORK);
			return reply_error(c, q, 413, msg, NULL);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return dispatch(c, q);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
		    enum MHD_RequestTerminationCode why)
{
	struct sbx_serve *s = cls;
	struct conn *q = *con_cls;
	if (!q)
		return;
	give_slots(s, q);
	/* keep-alive: the next head's clock; the connection's own context,
	 * NULL once MHD has noticed its close */
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	sock_phase(s, ci ? ci->socket_context : NULL, SOCK_HEAD);
	if (s->cfg.log) {
		char line[768];
		snprintf(line, sizeof(line), "%s %.256s %d %llu %lldms %s%s%s%s", q->r.method, q->r.path,
			 q->status ? q->status : 0, (unsigned long long)q->bytes,
			 (long long)(sbx_mono_ms() - q->start_ms),
			 q->r.plane == PLANE_API ? "api" : q->r.plane == PLANE_ENVD ? "envd" : "proxy",
			 q->r.sandbox_id[0] ? " " : "", q->r.sandbox_id,
			 why == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
		s->cfg.log(s->cfg.log_ctx, line);
	}
	serve_req_clear(&q->r);
	free(q);
	*con_cls = NULL;
}

/* URL and query unescaping for MHD: serve_unescape's (%00 kept). */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return serve_unescape(s);
}

/* ---- connections: the head deadline and room when full ---- */

/* MHD's notice of a connection opened or closed.  A new one past
 * max_conns makes room: the oldest connection still in its head phase
 * (a slow or idle keep-alive client) is shut down, else the new one. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct sbx_serve *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct sock *k = sbx_xcalloc(1, sizeof(*k));
		k->fd = ci ? ci->connect_fd : -1;
		k->phase = SOCK_HEAD;
		k->since_ms = sbx_mono_ms();
		pthread_mutex_lock(&s->mu);
		k->next = s->socks;
		if (s->socks)
			s->socks->prev = k;
		s->socks = k;
		if (++s->nsocks > s->cfg.max_conns) {
			struct sock *old = NULL;
			for (struct sock *o = k->next; o; o = o->next)
				if (!o->cut && o->phase == SOCK_HEAD && (!old || o->since_ms <= old->since_ms))
					old = o;
			old = old ? old : k;
			old->cut = 1;
			s->nsocks--;
			shutdown(old->fd, SHUT_RDWR);
		}
		pthread_mutex_unlock(&s->mu);
		*socket_context = k;
		return;
	}
	struct sock *k = *socket_context;
	if (!k)
		return;
	pthread_mutex_lock(&s->mu);
	if (k->prev)
		k->prev->next = k->next;
	else
		s->socks = k->next;
	if (k->next)
		k->next->prev = k->prev;
	if (!k->cut)
		s->nsocks--;
	pthread_mutex_unlock(&s->mu);
	free(k);
	*socket_context = NULL;
}

/* Every 200 ms: shut down each connection whose head (or idle keep-alive)
 * has taken head_timeout_s, or whose body request_deadline_s.  MHD's own
 * timeout only sees silence; this sees a client that trickles. */
static void *watchdog_main(void *arg)
{
	struct sbx_serve *s = arg;
	for (;;) {
		sbx_sleep_ms(200);
		pthread_mutex_lock(&s->mu);
		if (s->stopping) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		int64_t now = sbx_mono_ms();
		for (struct sock *k = s->socks; k; k = k->next) {
			int64_t limit = k->phase == SOCK_HEAD ? (int64_t)s->cfg.head_timeout_s * 1000
				      : k->phase == SOCK_BODY ? (int64_t)s->cfg.request_deadline_s * 1000 : -1;
			if (!k->cut && limit >= 0 && now - k->since_ms > limit) {
				k->cut = 1;
				s->nsocks--;
				shutdown(k->fd, SHUT_RDWR);
			}
		}
		pthread_mutex_unlock(&s->mu);
	}
}

/* ---- listen, start, stop ---- */

static int listen_on(const char *addr, int *fd, unsigned *port, struct sbx_err *err)
{
	char host[128];
	const char *colon = strrchr(addr ? addr : "", ':');
	if (!addr || !colon || colon == addr || (size_t)(colon - addr) >= sizeof(host))
		return sbx_fail_config(err, "serve", "--listen must be HOST:PORT, got '%s'",
				       addr ? addr : "");
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	if (host[0] == '[') {
		size_t n = strlen(host);
		if (host[n - 1] != ']')
			return sbx_fail_config(err, "serve", "--listen: bad IPv6 address '%s'", addr);
		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				 .ai_socktype = SOCK_STREAM}, *ai;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return sbx_fail_config(err, "serve",
				       "--listen needs a numeric address and port, got '%s'", addr);
	int s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (s >= 0)
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s < 0 || bind(s, ai->ai_addr, ai->ai_addrlen) < 0 || listen(s, 128) < 0) {
		freeaddrinfo(ai);
		sbx_fail_errno(err, SBX_UNAVAILABLE, "serve", "cannot listen on %s", addr);
		if (s >= 0)
			close(s);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(s, (struct sockaddr *)&ss, &sl);
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					       : ((struct sockaddr_in *)&ss)->sin_port);
	*fd = s;
	return 0;
}

static void hooks_end(struct sbx_serve *s)
{
	if (s->hooks <= 0)
		return;
	kill(s->hooks, SIGKILL);
	while (waitpid(s->hooks, NULL, 0) < 0 && errno == EINTR)
		;
	s->hooks = 0;
}

static void *sweeper_main(void *arg)
{
	struct sbx_serve *s = arg;
	for (;;) {
		for (int i = 0; i < 10; i++) {
			sbx_sleep_ms(100);
			pthread_mutex_lock(&s->mu);
			int stop = s->stopping;
			pthread_mutex_unlock(&s->mu);
			if (stop)
				return NULL;
		}
		struct sbx_err err = {0};
		serve_pool_tidy(s->pool);
		sbx_serve_sweep(s, &err);
	}
}

/* One sweep, in a worker of the pool: its answer's status says how it
 * went. */
int sbx_serve_sweep(struct sbx_serve *s, struct sbx_err *err)
{
	struct serve_req r = {.plane = PLANE_SWEEP, .cfg = &s->cfg, .serve_dir = s->dir};
	snprintf(r.method, sizeof(r.method), "SWEEP");
	struct serve_worker *w;
	int fd = serve_pool_run(s->pool, &r, &w);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "sweep", "no worker for the sweep");
	char buf[512];
	size_t n = 0;
	ssize_t got;
	while ((got = read(fd, buf + n, sizeof(buf) - 1 - n)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			break;
		n += (size_t)got;
		if (n == sizeof(buf) - 1)
			n = 4;           /* only the status line matters */
	}
	buf[n] = '\0';
	close(fd);
	serve_pool_done(s->pool, w, got == 0);
	if (strncmp(buf, "200\n", 4) != 0)
		return sbx_fail(err, SBX_INTERNAL, "sweep", "the sweep failed");
	return 0;
}

static void set_defaults(struct sbx_serve_cfg *c)
{
	if (!c->max_body) c->max_body = 64u << 20;
	if (!c->max_json) c->max_json = 1u << 20;
	if (!c->max_conns) c->max_conns = 256;
	if (!c->max_workers) c->max_workers = 64;
	if (!c->max_workers_per_key) c->max_workers_per_key = (c->max_workers + 1) / 2;
	if (!c->max_streams_per_key) c->max_streams_per_key = c->max_workers_per_key * 3 / 4 ? c->max_workers_per_key * 3 / 4 : 1;
	if (!c->max_streams_per_sandbox) c->max_streams_per_sandbox = 16;
	if (!c->head_timeout_s) c->head_timeout_s = 10;
	if (!c->max_sandboxes_per_key) c->max_sandboxes_per_key = 100;
	if (!c->client_timeout_s) c->client_timeout_s = 30;
	if (!c->request_deadline_s) c->request_deadline_s = 120;
}

static void serve_free(struct sbx_serve *s)
{
	hooks_end(s);
	if (s->pool)
		serve_pool_stop(s->pool);
	for (size_t i = 0; i < s->nkeys; i++)
		sbx_secret_free(s->keys[i].key);
	free(s->keys);
	free(s->kuse);
	free(s->sbuse);
	free(s->dir);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int sbx_serve_start(const struct sbx_serve_cfg *cfg, struct sbx_serve **out, struct sbx_err *err)
{
	struct sbx_serve *s = sbx_xcalloc(1, sizeof(*s));
	s->cfg = *cfg;
	set_defaults(&s->cfg);
	s->lfd = -1;
	pthread_mutex_init(&s->mu, NULL);
	s->dir = cfg->state_dir ? sbx_xstrdup(cfg->state_dir)
				: sbx_xasprintf("%s/serve", cfg->profile->state_dir);
	char tok[65];
	if (load_keys(s, err) < 0 || sbx_mkdir_p(s->dir, 0700, err) < 0 ||
	    serve_token(s->dir, "envd", "probe", tok, err) < 0 ||
	    listen_on(cfg->listen, &s->lfd, &s->port, err) < 0) {
		serve_free(s);
		return -1;
	}
	/* Forked while this process has no thread of its own yet. */
	s->hooks = serve_hooks_spawn(&s->cfg);
	/* Room for every request in flight, and the sweep. */
	if (serve_pool_start(&s->pool, s->cfg.max_workers + 1, serve_worker, &s->cfg, s->dir) < 0) {
		close(s->lfd);
		serve_free(s);
		return sbx_fail_errno(err, SBX_INTERNAL, "serve", "cannot start the worker pool");
	}
	s->kuse = sbx_xcalloc(s->nkeys + 1, sizeof(*s->kuse));
	SBX_AUTOFREE char *cert = NULL, *key = NULL;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
	if (cfg->tls_cert_file || cfg->tls_key_file) {
		size_t l;
		if (!cfg->tls_cert_file || !cfg->tls_key_file) {
			serve_free(s);
			return sbx_fail_config(err, "serve", "TLS needs both --tls-cert-file and --tls-key-file");
		}
		if (sbx_read_file(cfg->tls_cert_file, 1 << 20, &cert, &l, err) < 0 ||
		    sbx_read_file(cfg->tls_key_file, 1 << 20, &key, &l, err) < 0) {
			serve_free(s);
			return -1;
		}
		flags |= MHD_USE_TLS;
	}
	struct MHD_OptionItem tls[] = {
		{MHD_OPTION_HTTPS_MEM_CERT, 0, cert},
		{MHD_OPTION_HTTPS_MEM_KEY, 0, key},
		{MHD_OPTION_END, 0, NULL},
	};
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				MHD_OPTION_LISTEN_SOCKET, s->lfd,
				/* room past max_conns, for on_connection to
				 * make room in: */
				MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_conns + s->cfg.max_conns / 8 + 8,
				MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.client_timeout_s,
				MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
				MHD_OPTION_ARRAY, cert ? tls : tls + 2,
				MHD_OPTION_END);
	if (key)
		explicit_bzero(key, strlen(key));
	if (!s->d) {
		close(s->lfd);
		serve_free(s);
		return sbx_fail(err, SBX_UNAVAILABLE, "serve", "the HTTP server did not start%s",
				cert ? " (is the TLS certificate or key malformed?)" : "");
	}
	if (pthread_create(&s->sweeper, NULL, sweeper_main, s) == 0)
		s->sweeper_on = 1;
	if (pthread_create(&s->watchdog, NULL, watchdog_main, s) == 0)
		s->watchdog_on = 1;
	*out = s;
	return 0;
}

unsigned sbx_serve_port(const struct sbx_serve *s)
{
	return s->port;
}

static int no_inflight(void *ctx)
{
	struct sbx_serve *s = ctx;
	pthread_mutex_lock(&s->mu);
	unsigned n = s->inflight;
	pthread_mutex_unlock(&s->mu);
	return n == 0;
}

/* No worker of the pool is busy with a request. */
static int pool_idle(void *ctx)
{
	struct sbx_serve *s = ctx;
	return !serve_pool_signal_busy(s->pool, 0);
}

void sbx_serve_stop(struct sbx_serve *s, int64_t grace_ms)
{
	int lfd = MHD_quiesce_daemon(s->d);
	if (lfd >= 0)
		close(lfd);
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_mutex_unlock(&s->mu);
	if (s->sweeper_on)
		pthread_join(s->sweeper, NULL);
	if (s->watchdog_on)
		pthread_join(s->watchdog, NULL);
	sbx_poll_until(grace_ms, 20, no_inflight, s);
	/* SIGTERM, then SIGKILL for what is left SERVE_POOL_TERM_MS later: the
	 * connection threads reap them, and MHD_stop_daemon joins those. */
	for (int sig = SIGTERM;; sig = SIGKILL) {
		if (!serve_pool_signal_busy(s->pool, sig) || sig == SIGKILL)
			break;
		sbx_poll_until(SERVE_POOL_TERM_MS, 20, pool_idle, s);
	}
	MHD_stop_daemon(s->d);
	serve_free(s);
}
