/* serve-int.h - what the parts of sbx-serve share: the request as a worker
 * process sees it, the response writer, the per-sandbox E2B record, and
 * the handlers of each plane.  Not for programs (they use serve.h).
 *
 * A worker writes its response to the connection's pipe in this form:
 *
 *     <status>\n
 *     <Name>: <value>\n ...        real response headers
 *     X-Sbx-Length: <n>\n          internal: the body's length, or absent
 *                                  for a streamed (chunked) body
 *     \n
 *     <body>
 *
 * The connection thread turns it into the HTTP response (serve-http.c). */
#ifndef SBX_SERVE_INT_H
#define SBX_SERVE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "backend.h"
#include "serve.h"
#include "volume.h"

#define SERVE_ENVD_PORT 49983
#define SERVE_ENVD_VERSION "0.6.13"
#define SERVE_CLIENT_ID "6532622b"
#define SERVE_MAX_HEADERS 96
#define SERVE_URL_MAX 8192           /* a longer request target is 414 */
#define SERVE_HEAD_MAX 16384         /* a larger request head is 431 */
#define SERVE_HOME "/home/user"      /* E2B's home of `user`: the files', ~'s, HOME */

struct serve_kv { char *k, *v; };

/* PLANE_SWEEP is the server's own end-time sweep (sbx_serve_sweep), run in
 * a worker like a request; no client's request is ever routed to it. */
enum serve_plane { PLANE_API, PLANE_ENVD, PLANE_PROXY, PLANE_SWEEP };

/* One request, built by the connection thread, read by the worker. */
struct serve_req {
	char method[16];
	char *path;                  /* decoded path, no query */
	struct serve_kv hdr[SERVE_MAX_HEADERS];   /* names lower-cased */
	size_t nhdr;
	struct serve_kv *query;      /* decoded; in order */
	size_t nquery;
	char *body;
	size_t body_len;
	enum serve_plane plane;
	char sandbox_id[72];         /* envd/proxy: from the header or host */
	unsigned port;               /* envd/proxy: the sandbox port */
	char team[17];               /* the API key's id (hex), "" on envd */
	const struct sbx_serve_cfg *cfg;
	const char *serve_dir;       /* the E2B records' folder */
};

const char *serve_hdr(const struct serve_req *r, const char *lname);
const char *serve_query(const struct serve_req *r, const char *name);
/* Free what r owns (header and query strings, path, body) and zero it, so a
 * second call is harmless; the borrowed cfg and serve_dir are left alone. */
void serve_req_clear(struct serve_req *r);

/* The worker's side of the pipe. */
struct serve_out {
	int fd;
	int head_done;
	char extra[1024];            /* headers added before the reply */
	size_t extra_len;
	int status;                  /* for the log line */
	int holding;                 /* serve_out_hold: writes are kept in held */
	char *held;
	size_t held_len, held_cap;
};

/* Keep what is written to o (the head, frames) until serve_out_flush,
 * which writes it in one write: what the client reads together (an
 * envelope's prefix and message; a process's end event and the end of
 * its stream) reaches the connection thread in one wake-up and the
 * client in one segment, not one per piece.  Only our own frames are
 * held (never a client-sized or sandbox-sized body), and a handler's
 * caller flushes what it left held.  Holding while held is one hold. */
void serve_out_hold(struct serve_out *o);
int serve_out_flush(struct serve_out *o);

void serve_out_header(struct serve_out *o, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A whole response with a known body. */
int serve_reply(struct serve_out *o, int status, const char *ctype, const void *body,
		size_t len);
int serve_reply_json(struct serve_out *o, int status, json_object *j);  /* takes j */
/* E2B's error body: {"code": status, "message": ...}. */
int serve_reply_error(struct serve_out *o, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A library error as E2B's error body, its status from the kind. */
int serve_reply_err(struct serve_out *o, const struct sbx_err *err);
int serve_status_of(const struct sbx_err *err);
/* A streamed body: the head now, then chunks. */
int serve_stream_begin(struct serve_out *o, int status, const char *ctype);
int serve_stream_write(struct serve_out *o, const void *data, size_t len);

/* ---- The wire texts (serve-wire.c): pure, fuzzed ---- */
/* 0 when the head fits, else the status to refuse it with: 400 for a
 * method that is not a token, 414 for a target over SERVE_URL_MAX, 431
 * for a head over SERVE_HEAD_MAX. */
int serve_head_check(const char *method, const char *url, const struct serve_kv *hdr, size_t nhdr);
/* An RFC 9110 token of at most 128 bytes: what may name a header that
 * crosses into a response, the pipe or a proxied request (serve-req.c). */
int serve_header_name_ok(const char *name);
int serve_token_char(unsigned char c);      /* tchar of RFC 9110 */
/* The plane, port and sandbox id of r from its Host ("<port>-<id>.<domain>")
 * or its E2b-Sandbox-Id / E2b-Sandbox-Port headers.  0, or -1 when it names
 * a sandbox plane with an invalid id or port (the caller answers 502). */
int serve_route(struct serve_req *r, const char *domain);
/* %XX decoded in place, except %00 (kept as three bytes, so that a NUL
 * never cuts an id or path short).  Returns the new length. */
size_t serve_unescape(char *s);
/* The body limit of a request path: max_body for exactly /files, else
 * max_json (Connect and JSON calls). */
size_t serve_body_limit(const char *path, const struct sbx_serve_cfg *cfg);
/* Append a piece of the body; -1 (nothing appended) when the body would
 * pass `limit`.  r->body stays NUL-terminated. */
int serve_body_add(struct serve_req *r, size_t *cap, const char *data, size_t len, size_t limit);
int serve_hop_by_hop(const char *name);
/* The request as a proxied sandbox server gets it: HTTP/1.0, Connection:
 * close, path and query encoded again, hop-by-hop and the tokens dropped,
 * the body as is.  Malloc'd, *len bytes. */
char *serve_proxy_request(const struct serve_req *r, unsigned port, size_t *len);
/* Relay a sandbox server's raw answer a[0..n) (status, headers that are
 * tokens and not hop-by-hop, body); E2B's 502 when it is not HTTP. */
int serve_proxy_answer(struct serve_out *o, const char *id, unsigned port, const char *a, size_t n);
/* E2B's proxy error body {"sandboxId", "message", "port" (502), "code"}. */
int serve_proxy_error(struct serve_out *o, const char *id, unsigned port, int status, const char *msg);
/* The worker's response head (the pipe format above), parsed in place
 * from a NUL-terminated text without its blank line: -1 when the status is
 * not three digits in 100..599 or the length is malformed; header lines
 * whose name is not a token are dropped. */
struct serve_pipe_head {
	int status;
	long long length;            /* -1: streamed */
	const char *name[64], *value[64];
	size_t n;
};
int serve_pipe_head(char *head, struct serve_pipe_head *h);

/* ---- Connect protocol (serve-connect.c) ---- */
const char *serve_connect_code(const struct sbx_err *err);
/* The request message: the body of a unary call, or the first envelope
 * of a streaming one (Content-Type application/connect+json).  NULL with
 * a reply already written when it is malformed. */
json_object *serve_connect_request(const struct serve_req *r, struct serve_out *o,
				   int *streaming);
int serve_connect_unary_ok(struct serve_out *o, json_object *msg);   /* takes msg */
int serve_connect_unary_err(struct serve_out *o, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int serve_connect_from_err(struct serve_out *o, int streaming, const struct sbx_err *err);
int serve_connect_stream_begin(struct serve_out *o);
int serve_connect_frame(struct serve_out *o, json_object *msg);      /* takes msg */
/* The end-of-stream envelope: {} or {"error": {code, message}}. */
int serve_connect_end(struct serve_out *o, const char *code, const char *msg);
/* Proto3 JSON helpers. */
json_object *serve_json_arr(json_object *o, const char *key);   /* an array member, or NULL */
char *serve_b64(const void *data, size_t len);
int serve_unb64(const char *s, char **out, size_t *len);
void serve_set_int64(json_object *o, const char *key, int64_t v);  /* as string, 0 omitted */

/* ---- The E2B record of a sandbox (serve-state.c) ----
 * Kept as <serve_dir>/sandboxes/<id>.json, written atomically. */
struct serve_rec {
	char team[17];
	int64_t end_at_ms;           /* the E2B timeout: absolute */
	int64_t started_at_ms;
	int auto_pause;
	int auto_resume;
	int allow_public;
	char *alias;                 /* the template name asked for */
	json_object *fork_recipe;    /* what a fork repeats of the create
				      * (serve-api.c fork_recipe); NULL for a
				      * sandbox made before forks were served */
	int bash;                    /* SERVE_BASH_*: whether create found
				      * /bin/bash in the sandbox */
};
/* What a create found of /bin/bash (serve-create.c): unknown for a record
 * made before the field, or when the look failed. */
enum { SERVE_BASH_UNKNOWN = 0, SERVE_BASH_YES = 1, SERVE_BASH_NO = 2 };
void serve_rec_clear(struct serve_rec *rec);
int serve_rec_load(const char *dir, const char *id, struct serve_rec *rec, struct sbx_err *err);
int serve_rec_save(const char *dir, const char *id, const struct serve_rec *rec,
		   struct sbx_err *err);
void serve_rec_remove(const char *dir, const char *id);
/* The envd access token and traffic token of `id` (64 hex + NUL): HMAC of
 * the id under the server's secret, so that nothing is stored per sandbox
 * and a restart keeps them valid. */
int serve_token(const char *dir, const char *kind, const char *id, char out[65],
		struct sbx_err *err);
/* Sandbox ids from URLs and headers: [a-z0-9][a-z0-9-]{0,63}, which every
 * backend's ids fit; anything else never reaches the backend. */
int serve_id_ok(const char *id);

/* Creates of one key run one at a time, so that its sandbox limit holds
 * against concurrent requests: an exclusive flock on
 * <dir>/teams/<team>.lock, released when the fd is closed (or the worker
 * dies).  Returns the fd or -1. */
int serve_team_lock(const char *dir, const char *team, struct sbx_err *err);

/* The metadata key that names a sandbox's key ("team") id. */
#define SERVE_TEAM_KEY "sbx.serve.team"

/* The request body as a JSON object ({} when empty), read strictly
 * (sbx_json_parse_object: RFC 8259, UTF-8); NULL with a 400 answered,
 * naming the offset, so no metadata that is not text is ever stored
 * (serve-reply.c). */
json_object *serve_body_obj(const struct serve_req *r, struct serve_out *o);
/* A field a client left unset: null, "", [], {} (serve-create.c). */
int serve_unset(json_object *v);
/* E2B's create (serve-create.c): the answer made, 201 or the error. */
int serve_api_create(const struct serve_req *r, struct serve_out *o, int v2);
/* A sandbox in E2B's JSON (serve-sbjson.c): an ISO time with
 * milliseconds; the user metadata (all but sbx.* keys, a new object);
 * Sandbox (create, connect: ids, tokens, domain); ListedSandbox, and with
 * `detail` SandboxDetail. */
void serve_iso_ms(int64_t ms, char *buf, size_t len);
json_object *serve_user_metadata(const struct sbx_sandbox *sb);
int serve_sandbox_json(const struct serve_req *r, const struct sbx_sandbox *sb,
		       const struct serve_rec *rec, json_object **out, struct sbx_err *err);
json_object *serve_listed_json(const struct serve_req *r, const struct sbx_sandbox *sb,
			       const struct serve_rec *rec, int detail);
/* The key's sandboxes (serve-team.c): those matching `md` and `states`,
 * newest first (created_at desc, id asc); the live ones' count. */
int serve_team_list(const struct serve_req *r, struct sbx_backend *b, json_object *md,
		    unsigned states, struct sbx_sandbox **out, size_t *n, struct sbx_err *err);
int serve_team_count(const struct serve_req *r, struct sbx_backend *b, size_t *n,
		     struct sbx_err *err);

/* Create one sandbox from an E2B create body `in` (borrowed; v2: its
 * default timeout), for the key of `r`: the checks, the key's limit
 * (capacity), the backend's create, the record and the event.  0 with
 * *out the 201 answer's body (the caller's), or -1 with err (a template
 * the key may not use: not_found). */
int serve_create_sandbox(const struct serve_req *r, json_object *in, int v2, json_object **out,
			 struct sbx_err *err);
/* POST /sandboxes/{id}/fork (serve-fork.c): `src` and `rec` are the
 * loaded source, `in` the body; the answer is made. */
int serve_fork(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
	       struct sbx_sandbox *src, const struct serve_rec *rec, json_object *in);

/* The snapshot records: which sandbox a snapshot was taken from. */
int serve_snap_note(const char *dir, const char *snap_id, const char *sandbox_id,
		    const char *team, struct sbx_err *err);
int serve_snap_owner(const char *dir, const char *snap_id, char sandbox[72], char team[17]);
/* Whether the request's key may boot template `id` (serve-tpl.c): `base`,
 * a backend template that is not a snapshot, or a snapshot taken from one
 * of the key's own sandboxes.  Another key's snapshot, a backend snapshot
 * this server did not take and a missing template are SBX_NOT_FOUND
 * ("template '<id>' not found", E2B's 404); -1 on any failure. */
int serve_tpl_usable(const struct serve_req *r, struct sbx_backend *b, const char *id,
		     struct sbx_err *err);

/* ---- Handlers, run in the worker (serve-api.c, serve-envd.c, serve-proc.c) ---- */
int serve_open_backend(const struct serve_req *r, struct sbx_backend **b, struct sbx_err *err);
/* Load sandbox `id` if it belongs to the request's team (else not_found). */
int serve_load_sandbox(const struct serve_req *r, struct sbx_backend *b, const char *id,
		       struct sbx_sandbox *sb, struct serve_rec *rec, struct sbx_err *err);
int serve_api(const struct serve_req *r, struct serve_out *o);
int serve_envd(const struct serve_req *r, struct serve_out *o);
/* The proxy plane's and the envd plane's access checks, cheap enough for
 * the connection thread (a file read and an HMAC): NULL when r may reach
 * sandbox `id`, else the message of its 403 (proxy) or 401 (envd). */
const char *serve_proxy_denied(const struct serve_req *r, const char *id, int allow_public);
const char *serve_envd_denied(const struct serve_req *r, const char *id);
int serve_proxy(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		struct sbx_sandbox *sb, const struct serve_rec *rec);
int serve_envd_files(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		     struct sbx_sandbox *sb);
int serve_envd_fs(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		  struct sbx_sandbox *sb, const char *method);
int serve_envd_proc(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		    struct sbx_sandbox *sb, const struct serve_rec *rec, const char *method);
int serve_sweep_once(const char *dir, const struct sbx_serve_cfg *cfg, struct sbx_err *err);

/* ---- Volumes (serve-vol.c) ---- */
/* /volumes (id NULL) and /volumes/{id} of the control plane. */
int serve_api_volumes(const struct serve_req *r, struct serve_out *o, const char *id);
/* The mounts of one create, owned here until serve_vols_clear. */
struct serve_vols {
	char tenant[24];
	size_t n;
	struct sbx_vol vols[SBX_VOLUMES_MAX];
	char *paths[SBX_VOLUMES_MAX];
	struct sbx_vol_mount mounts[SBX_VOLUMES_MAX];
};
/* The create's `volumeMounts` ([{name, path, readOnly?}], at most
 * SBX_VOLUMES_MAX; absent, null or [] is none) checked and looked up in
 * the key's tenant, then set as req's volumes.  A malformed entry, a bad
 * name or path, or a volume the tenant lacks: invalid_request (not_found
 * for a missing volume, which create answers as 400); a backend without
 * volumes: unsupported. */
int serve_vol_prepare(const struct serve_req *r, struct sbx_backend *b, json_object *in,
		      struct serve_vols *sv, struct sbx_create_req *req, struct sbx_err *err);
/* Sandbox `id` is made: record it as a user of its volumes; on failure
 * the sandbox is removed again (sbx_vol_attach_all). */
int serve_vol_attach(const struct serve_req *r, struct sbx_backend *b, struct serve_vols *sv,
		     const char *id, struct sbx_err *err);
/* The mounts, as E2B's volumeMounts [{name, path, readOnly?}], noted in
 * the create's metadata (an sbx.* key, which no client may set), and read
 * back for the listings and the detail (NULL when there are none). */
void serve_vol_note(const struct serve_vols *sv, json_object *meta);
json_object *serve_vol_listed(const struct sbx_sandbox *sb);
void serve_vols_clear(struct serve_vols *sv);

/* ---- The session record (serve-audit.c) ---- */
/* One record of `kind` (audit.h) about sb in the stream of its key's
 * tenant, after the act, then the sandbox's spool taken; kind NULL: only
 * the take.  Takes data.  Never fails the caller (events.h's policy). */
void serve_audit(const struct sbx_serve_cfg *cfg, struct sbx_backend *b,
		 const struct sbx_sandbox *sb, const char *kind, json_object *data);
/* A file record's data: {op, path, bytes} (bytes < 0: absent). */
json_object *serve_audit_file(const char *op, const char *path, int64_t bytes);

/* ---- Events and webhooks (serve-events.c; the deliverer: serve-hooks.c) ---- */
/* The tenant of a key: "e2b-<team>". */
void serve_tenant(const char *team, char out[24]);
/* This process's Redis (the profile's), opened on first use; NULL with err. */
struct sbx_redis *serve_redis(const struct sbx_serve_cfg *cfg, struct sbx_err *err);
/* E2B's pause, on an API call or at an autoPause end (serve-state.c):
 * hibernated where the backend can here, else frozen; 0 or -1. */
int serve_pause(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);

/* Append an event of the key `team` about `sandbox` (events.h: never fails
 * the caller); takes detail. */
void serve_event(const struct sbx_serve_cfg *cfg, const char *team, const char *sandbox,
		 const char *type, const char *why, json_object *detail);
/* The E2B type of an sbx event type, or NULL when E2B has none. */
const char *serve_e2b_type(const char *type);
/* An event as read from the stream in E2B's shape (the webhook payload and
 * the listing's entries), or NULL when it has no E2B type or is not a
 * key's. */
json_object *serve_e2b_event(json_object *ev);
/* /events/... of the control plane. */
int serve_api_events(const struct serve_req *r, struct serve_out *o);
/* The deliverer's keeper (which forks it again when it dies): forked
 * by serve-http.c before the server has a thread, and ended by it. */
pid_t serve_hooks_spawn(const struct sbx_serve_cfg *cfg);

/* The envd user of a request (`name`, else Basic "<user>:"): 1 root, 0
 * user, -1 unknown (its name in `who`; the caller answers 401). */
int serve_envd_user(const struct serve_req *r, const char *name, char who[65]);
/* An E2B path made absolute as envd does: "", "~", "~/x" and relative
 * paths start at the user's home (SERVE_HOME, /root for root); an
 * absolute path is itself (no aliasing: /home/user is the sandbox's own
 * /home/user, the commands' HOME).  Returns a malloc'd string. */
char *serve_map_path(const char *p, int as_root);
/* What may reach the backend: `p` mapped (serve_map_path), then under the
 * library's one path rule (sbx_path_norm, path.h), so that envd's routes
 * spell paths as sbx-fs does.  The normal spelling, malloc'd, or NULL with
 * err (invalid_request, why in its message). */
char *serve_sandbox_path(const char *p, int as_root, struct sbx_err *err);
/* Equal strings, in time that depends on the length only. */
int serve_ct_eq(const char *a, const char *b);

#endif
