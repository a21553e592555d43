/* serve-http.c - sbx-serve's HTTP side: the libmicrohttpd daemon on one
 * listen address, API keys, limits, the request log, and the worker
 * process that serves each request (serve.h says why processes).
 *
 * Promises: a connection thread never calls the backend, Redis or OpenSSL
 * (so a fork never copies a lock another thread holds in them); a request
 * body larger than its limit is answered 413 before it is read; a client
 * that stalls is cut off after client_timeout_s of silence, and an upload
 * that has not finished after request_deadline_s is cut off however
 * steadily it trickles; an API request without a known key never reaches a
 * worker; every request gets one log line. */
#include "serve.h"
#include "serve-int.h"
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

struct sbx_serve {
	struct sbx_serve_cfg cfg;
	struct MHD_Daemon *d;
	int lfd;
	unsigned port;
	struct key *keys;
	size_t nkeys;
	char *dir;
	pthread_mutex_t mu;
	pid_t workers[1024];
	size_t nworkers;
	unsigned inflight;
	unsigned streams_sb[64];     /* open streams, by sandbox id hash bucket */
	int stopping;
	pthread_t sweeper;
	int sweeper_on;
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

/* The team of the key the request carries (X-API-Key, or Authorization:
 * Bearer), or NULL. */
static const char *auth_team(const struct sbx_serve *s, const struct serve_req *r)
{
	const char *k = serve_hdr(r, "x-api-key");
	const char *a = serve_hdr(r, "authorization");
	if (!k && a && strncasecmp(a, "Bearer ", 7) == 0)
		k = a + 7;
	if (!k || !*k)
		return NULL;
	size_t n = strlen(k);
	const char *found = NULL;
	for (size_t i = 0; i < s->nkeys; i++)     /* all of them: constant time */
		if (ct_equal(k, n, s->keys[i].key, s->keys[i].len))
			found = s->keys[i].team;
	return found;
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
	int counted;
	int stream_bucket;           /* >= 0: holds a stream slot */
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

static void req_free(struct serve_req *r)
{
	for (size_t i = 0; i < r->nhdr; i++) {
		free(r->hdr[i].k);
		free(r->hdr[i].v);
	}
	for (size_t i = 0; i < r->nquery; i++) {
		free(r->query[i].k);
		free(r->query[i].v);
	}
	free(r->query);
	free(r->path);
	free(r->body);
}

/* "<port>-<id>.<domain>" (or "<port>-<id>" followed by anything when no
 * domain is configured and the host is not an address).  1 and the parts,
 * or 0. */
static int host_route(const struct sbx_serve *s, const char *host, unsigned *port, char *id,
		      size_t idlen)
{
	if (!host)
		return 0;
	char h[256];
	snprintf(h, sizeof(h), "%s", host);
	char *colon = strrchr(h, ':');
	if (colon && !strchr(h, ']'))
		*colon = '\0';
	char *dot = strchr(h, '.');
	if (!dot)
		return 0;
	if (s->cfg.domain && strcasecmp(dot + 1, s->cfg.domain) != 0)
		return 0;
	*dot = '\0';
	char *dash = strchr(h, '-');
	if (!dash || dash == h || dash - h > 5)
		return 0;
	for (char *p = h; p < dash; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	unsigned long pt = strtoul(h, NULL, 10);
	if (pt == 0 || pt > 65535 || strlen(dash + 1) >= idlen)
		return 0;
	*port = (unsigned)pt;
	snprintf(id, idlen, "%s", dash + 1);
	return 1;
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

static enum MHD_Result reply_error(struct MHD_Connection *c, struct conn *q, int status,
				   const char *msg, const char *retry_after)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"code\":%d,\"message\":\"%s\"}", status, msg);
	return reply_text(c, q, status, "application/json", body, retry_after);
}

/* ---- workers ---- */

static void worker_add(struct sbx_serve *s, pid_t pid)
{
	pthread_mutex_lock(&s->mu);
	if (s->nworkers < SBX_ARRAY_LEN(s->workers))
		s->workers[s->nworkers++] = pid;
	pthread_mutex_unlock(&s->mu);
}

static void worker_del(struct sbx_serve *s, pid_t pid)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nworkers; i++)
		if (s->workers[i] == pid) {
			s->workers[i] = s->workers[--s->nworkers];
			break;
		}
	pthread_mutex_unlock(&s->mu);
}

/* Wait for a worker; one still running (a client gone mid-stream) is
 * ended first. */
static void worker_reap(struct sbx_serve *s, pid_t pid)
{
	int st;
	if (waitpid(pid, &st, WNOHANG) == 0) {
		kill(pid, SIGTERM);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	worker_del(s, pid);
}

/* Fork the worker for `r`; it runs fn and exits.  Returns the pipe's read
 * end and *pid, or -1. */
static int worker_spawn(struct sbx_serve *s, int (*fn)(const struct serve_req *, struct serve_out *),
			const struct serve_req *r, pid_t *pid)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t c = fork();
	if (c < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (c == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		if (p[1] != 3) {
			dup2(p[1], 3);
		}
		close_range(4, ~0U, 0);
		struct serve_out o = {.fd = 3};
		fn(r, &o);
		if (!o.head_done)
			serve_reply_error(&o, 500, "the request was not answered");
		_exit(0);
	}
	close(p[1]);
	worker_add(s, c);
	*pid = c;
	return p[0];
}

static int is_stream_rpc(const struct serve_req *r)
{
	return strcmp(r->path, "/process.Process/Start") == 0 ||
	       strcmp(r->path, "/process.Process/Connect") == 0;
}

struct body {
	struct sbx_serve *s;
	int fd;
	int sock;                    /* the client's socket, watched for a hang-up */
	pid_t pid;
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
			return n;
		}
		if (n == 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (errno != EINTR)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

static void body_free(void *cls)
{
	struct body *b = cls;
	close(b->fd);
	worker_reap(b->s, b->pid);
	free(b->pending);
	free(b);
}

/* Read the worker's head (status, headers) and queue the response. */
static enum MHD_Result relay(struct MHD_Connection *c, struct conn *q, int fd, pid_t pid)
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
	if (!end) {
		free(head);
		close(fd);
		worker_reap(q->s, pid);
		return reply_error(c, q, 500, "the worker failed", NULL);
	}
	*end = '\0';
	struct body *b = sbx_xcalloc(1, sizeof(*b));
	b->s = q->s;
	b->fd = fd;
	b->pid = pid;
	b->q = q;
	b->drop = is_stream_rpc(&q->r) && sbx_fault_on("serve:stream-drop");
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	b->sock = ci ? ci->connect_fd : -1;
	b->plen = n - (size_t)(end + 2 - head);
	b->pending = sbx_xmalloc(b->plen + 1);
	memcpy(b->pending, end + 2, b->plen);
	int status = atoi(head);
	uint64_t size = MHD_SIZE_UNKNOWN;
	char *save = NULL;
	strtok_r(head, "\n", &save);
	char *hdrs[64];
	size_t nh = 0;
	for (char *l = strtok_r(NULL, "\n", &save); l && nh < 64; l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "X-Sbx-Length: ", 14) == 0)
			size = strtoull(l + 14, NULL, 10);
		else
			hdrs[nh++] = l;
	}
	struct MHD_Response *resp;
	if (size == 0) {
		body_free(b);
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		resp = MHD_create_response_from_callback(size, 32 * 1024, body_read, b, body_free);
	}
	if (!resp) {
		free(head);
		return MHD_NO;
	}
	for (size_t i = 0; i < nh; i++) {
		char *colon = strstr(hdrs[i], ": ");
		if (!colon)
			continue;
		*colon = '\0';
		MHD_add_response_header(resp, hdrs[i], colon + 2);
	}
	free(head);
	q->status = status;
	enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* The worker's entry: which plane. */
static int serve_worker(const struct serve_req *r, struct serve_out *o)
{
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

/* Classify the request, check the key, take the limits' slots and hand it
 * to a worker. */
static enum MHD_Result dispatch(struct MHD_Connection *c, struct conn *q)
{
	struct sbx_serve *s = q->s;
	struct serve_req *r = &q->r;
	const char *sid = serve_hdr(r, "e2b-sandbox-id");
	if (host_route(s, serve_hdr(r, "host"), &r->port, r->sandbox_id, sizeof(r->sandbox_id))) {
		r->plane = r->port == SERVE_ENVD_PORT ? PLANE_ENVD : PLANE_PROXY;
	} else if (sid) {
		const char *port = serve_hdr(r, "e2b-sandbox-port");
		r->port = port ? (unsigned)strtoul(port, NULL, 10) : SERVE_ENVD_PORT;
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", sid);
		r->plane = r->port == SERVE_ENVD_PORT ? PLANE_ENVD : PLANE_PROXY;
	} else {
		r->plane = PLANE_API;
	}
	if (r->plane != PLANE_API && !serve_id_ok(r->sandbox_id)) {
		char body[160];
		snprintf(body, sizeof(body),
			 "{\"sandboxId\":\"\",\"message\":\"The sandbox was not found\",\"code\":502}");
		return reply_text(c, q, 502, "application/json", body, NULL);
	}
	if (r->plane == PLANE_API) {
		if (strcmp(r->path, "/health") == 0 && strcmp(r->method, "GET") == 0)
			return reply_text(c, q, 200, "text/plain", "Health check successful", NULL);
		const char *team = auth_team(s, r);
		if (!team)
			return reply_error(c, q, 401, "Invalid API key, it must start with 'e2b_'", NULL);
		snprintf(r->team, sizeof(r->team), "%s", team);
		enum MHD_Result frc;
		if (injected_fault(c, q, &frc))
			return frc;
	}
	pthread_mutex_lock(&s->mu);
	int busy = s->inflight >= s->cfg.max_workers;
	if (!busy && r->plane == PLANE_ENVD && is_stream_rpc(r)) {
		/* Open streams are bounded per sandbox (by a hash bucket of
		 * its id: the thread does not know its key). */
		unsigned h = 0;
		for (const char *p = r->sandbox_id; *p; p++)
			h = h * 31 + (unsigned char)*p;
		h %= 64;
		if (s->streams_sb[h] >= s->cfg.max_streams_per_key)
			busy = 2;
		else {
			s->streams_sb[h]++;
			q->stream_bucket = (int)h;
		}
	}
	if (!busy) {
		s->inflight++;
		q->counted = 1;
	}
	pthread_mutex_unlock(&s->mu);
	if (busy)
		return reply_error(c, q, 429, busy == 2 ? "too many open streams" : "the server is at capacity",
				   "1");
	pid_t pid;
	int fd = worker_spawn(s, serve_worker, r, &pid);
	if (fd < 0)
		return reply_error(c, q, 503, "cannot start a worker", "1");
	return relay(c, q, fd, pid);
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
		q->stream_bucket = -1;
		q->start_ms = sbx_mono_ms();
		*con_cls = q;
		snprintf(q->r.method, sizeof(q->r.method), "%s", method);
		q->r.path = sbx_xstrdup(url);
		q->r.cfg = &s->cfg;
		q->r.serve_dir = s->dir;
		if (MHD_get_connection_values(c, MHD_HEADER_KIND, add_hdr, &q->r) < 0 ||
		    q->r.nhdr >= SERVE_MAX_HEADERS)
			return reply_error(c, q, 431, "too many headers", NULL);
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_query, &q->r);
		q->limit = strncmp(url, "/files", 6) == 0 ? s->cfg.max_body : s->cfg.max_json;
		const char *cl = serve_hdr(&q->r, "content-length");
		if (cl && strtoull(cl, NULL, 10) > q->limit) {
			char msg[96];
			snprintf(msg, sizeof(msg), "the request body is larger than %zu bytes", q->limit);
			return reply_error(c, q, 413, msg, NULL);
		}
		return MHD_YES;
	}
	if (q->status)               /* answered early: discard the rest */
		return (*upload_size = 0), MHD_YES;
	if (*upload_size) {
		if (sbx_mono_ms() - q->start_ms > (int64_t)s->cfg.request_deadline_s * 1000)
			return MHD_NO;       /* a trickling upload: cut off */
		if (q->r.body_len + *upload_size > q->limit) {
			char msg[96];
			snprintf(msg, sizeof(msg), "the request body is larger than %zu bytes", q->limit);
			*upload_size = 0;
			return reply_error(c, q, 413, msg, NULL);
		}
		if (q->r.body_len + *upload_size + 1 > q->cap) {
			q->cap = (q->r.body_len + *upload_size + 1) * 2;
			if (q->cap > q->limit + 1)
				q->cap = q->limit + 1;
			q->r.body = sbx_xrealloc(q->r.body, q->cap);
		}
		memcpy(q->r.body + q->r.body_len, upload, *upload_size);
		q->r.body_len += *upload_size;
		q->r.body[q->r.body_len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	return dispatch(c, q);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
		    enum MHD_RequestTerminationCode why)
{
	(void)c;
	struct sbx_serve *s = cls;
	struct conn *q = *con_cls;
	if (!q)
		return;
	pthread_mutex_lock(&s->mu);
	if (q->counted)
		s->inflight--;
	if (q->stream_bucket >= 0)
		s->streams_sb[q->stream_bucket]--;
	pthread_mutex_unlock(&s->mu);
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
	req_free(&q->r);
	free(q);
	*con_cls = NULL;
}

/* URL and query unescaping for MHD: %XX decoded, except %00, which stays
 * as it is (three literal bytes), so that a NUL can never cut an id or a
 * path short: "sb-x%00y" is an invalid id, not "sb-x". */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	char *w = s;
	for (char *r = s; *r; r++) {
		unsigned v;
		if (r[0] == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2]) &&
		    sscanf(r + 1, "%2x", &v) == 1 && v != 0) {
			*w++ = (char)v;
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
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

static void *sweeper_main(void *arg)
{
	struct sbx_serve *s = arg;
	for (;;) {
		for (int i = 0; i < 10; i++) {
			usleep(100 * 1000);
			pthread_mutex_lock(&s->mu);
			int stop = s->stopping;
			pthread_mutex_unlock(&s->mu);
			if (stop)
				return NULL;
		}
		struct sbx_err err = {0};
		sbx_serve_sweep(s, &err);
	}
}

static int sweep_worker(const struct serve_req *r, struct serve_out *o)
{
	struct sbx_err err = {0};
	(void)o;
	if (serve_sweep_once(r->serve_dir, r->cfg->profile, &err) < 0)
		_exit(1);
	_exit(0);
}

int sbx_serve_sweep(struct sbx_serve *s, struct sbx_err *err)
{
	struct serve_req r = {.cfg = &s->cfg, .serve_dir = s->dir};
	pid_t pid;
	int fd = worker_spawn(s, sweep_worker, &r, &pid);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "sweep", "fork");
	close(fd);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	worker_del(s, pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return sbx_fail(err, SBX_INTERNAL, "sweep", "the sweep failed");
	return 0;
}

static void set_defaults(struct sbx_serve_cfg *c)
{
	if (!c->max_body) c->max_body = 64u << 20;
	if (!c->max_json) c->max_json = 1u << 20;
	if (!c->max_conns) c->max_conns = 256;
	if (!c->max_workers) c->max_workers = 64;
	if (!c->max_streams_per_key) c->max_streams_per_key = 32;
	if (!c->max_sandboxes_per_key) c->max_sandboxes_per_key = 100;
	if (!c->client_timeout_s) c->client_timeout_s = 30;
	if (!c->request_deadline_s) c->request_deadline_s = 120;
}

static void serve_free(struct sbx_serve *s)
{
	for (size_t i = 0; i < s->nkeys; i++)
		sbx_secret_free(s->keys[i].key);
	free(s->keys);
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
				MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_conns,
				MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.client_timeout_s,
				MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
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
	*out = s;
	return 0;
}

unsigned sbx_serve_port(const struct sbx_serve *s)
{
	return s->port;
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
	int64_t until = sbx_mono_ms() + grace_ms;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		unsigned n = s->inflight;
		pthread_mutex_unlock(&s->mu);
		if (!n || sbx_mono_ms() >= until)
			break;
		usleep(20 * 1000);
	}
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nworkers; i++)
		kill(s->workers[i], SIGTERM);
	pthread_mutex_unlock(&s->mu);
	MHD_stop_daemon(s->d);
	serve_free(s);
}
