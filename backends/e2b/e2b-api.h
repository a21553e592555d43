/* e2b-api.h - the e2b and cube backends' transport: the control plane
 * (REST/JSON with the API key) and the envd data plane (Connect RPC and
 * /files), both on common/net/http.c.
 *
 * Promises:
 *   - the API key comes from the profile's api_key_file or api_key_env
 *     only; it lives in this connection's memory (wiped on close) and in
 *     request headers, never in a path, an argument or a message;
 *   - every URL passes the SSRF guard when opened and every socket at dial
 *     time (http.h), loopback and private addresses only with the
 *     profile's allow_private;
 *   - retries happen only where the server did not act: a 429 is retried
 *     for every call (the rate limiter answers before the handler runs), a
 *     503 only for calls marked E2B_IDEMPOTENT, each after the server's
 *     Retry-After (at most E2B_RETRIES times, at most 10 s a wait); a
 *     create or a snapshot is never sent twice on a 503, a 5xx or a lost
 *     connection;
 *   - one data-plane handle per sandbox, kept for the connection's life,
 *     so a program that makes several envd calls reuses one TCP
 *     connection (libcurl keeps it alive).
 *
 * Data-plane addressing (profile keys, docs/remote.md):
 *   domain unset            header mode: requests go to the endpoint with
 *                           E2b-Sandbox-Id/E2b-Sandbox-Port (E2B's
 *                           E2B_SANDBOX_URL form; what sbx-serve answers)
 *   domain D                host mode: https://49983-<id>.D (a sandbox's
 *                           own `domain` from the API wins when it is D
 *                           or below D; any other is refused, and so is
 *                           any domain when the profile names none)
 *   domain D + proxy URL    host mode through a proxy node: the URL keeps
 *                           49983-<id>.D (Host, TLS name) while TCP goes to
 *                           the proxy's address (CURLOPT_CONNECT_TO), with
 *                           the proxy's scheme and port
 *   data_plane "path"       <proxy or endpoint>/sandbox/<id>/49983/...
 */
#ifndef SBX_E2B_API_H
#define SBX_E2B_API_H

#include <stddef.h>
#include <json-c/json.h>

#include "backend.h"
#include "e2b-wire.h"
#include "http.h"

#define E2B_ENVD_PORT 49983
#define E2B_RETRIES 3

enum { E2B_ONCE = 0, E2B_IDEMPOTENT = 1 };

struct e2b_conn {
	int cube;                /* Cube's dialect (cube.c) */
	char *endpoint;          /* control plane base URL, no trailing '/' */
	char *key_hdr;           /* "X-API-Key: ..." (secret, wiped) */
	char *bearer_hdr;        /* cube: "Authorization: Bearer ..." too */
	char *domain;            /* data plane host mode, or NULL */
	char *proxy;             /* proxy node base URL, or NULL */
	int path_mode;
	int allow_private;
	struct sbx_http *api;
	struct sbx_http *envd;   /* data plane of envd_id */
	struct sbx_http *envd2;  /* a second one, for calls made while a
				  * stream holds the first (exec's stdin) */
	char *envd_domain;
	char *envd_id;
	char *envd_token;        /* "X-Access-Token: ..." of envd_id, or NULL */
	char *traffic_hdr;       /* cube: the traffic token header, or NULL */
	char *envd_prefix;       /* path mode: "/sandbox/<id>/49983" */
	int envd_by_header;      /* header mode: E2b-Sandbox-Id routing */
};

struct e2b_conn *e2b_conn(struct sbx_backend *b);
/* The profile keys the e2b and cube backends own: domain, proxy,
 * data_plane (the vtables' config_keys).  They are read and checked at
 * open (e2b_conn_open), where the connection they shape is made. */
extern const char *const e2b_config_keys[];

/* Read the profile (endpoint required, key, domain, proxy, data_plane)
 * and open the control plane.  Configuration errors exit 78; nothing is
 * sent yet. */
int e2b_conn_open(struct sbx_backend *b, int cube, struct sbx_err *err);
void e2b_conn_close(struct sbx_backend *b);

/* One control-plane call.  `body` (borrowed, may be NULL) is sent as
 * JSON.  On 2xx: 0, *out = the parsed reply (NULL when empty; out may be
 * NULL), *next = the X-Next-Token header (NULL when absent; next may be
 * NULL).  Else -1: the status as a kind (sbx_kind_from_http; 401/403 are
 * authentication), the server's message, err->http_status set. */
int e2b_api(struct sbx_backend *b, const char *op, const char *method, const char *path,
	    json_object *body, int retry, json_object **out, char **next, struct sbx_err *err);

/* Point the data plane at sandbox `sb` (its id; extra.domain and
 * extra.traffic_token from the handle) with the access token `token`
 * (NULL: none).  Reuses the handle when it is the same sandbox.  Nothing
 * is sent, and -1 returned, unless the id is an id, the tokens are tokens
 * (e2b-wire.h) and, in host mode, the sandbox's domain is the profile's
 * `domain` or below it: a server cannot send the data plane, and the
 * tokens with it, to a host of its choosing (internal). */
int e2b_envd_bind(struct sbx_backend *b, const struct sbx_sandbox *sb, const char *token,
		  struct sbx_err *err);
/* A data-plane request to the bound sandbox: the routing, token and
 * traffic headers are added to `req`'s; path is envd's own
 * ("/files?...", "/process.Process/Start"). */
int e2b_envd_do(struct sbx_backend *b, const char *op, struct sbx_http_req *req,
		struct sbx_http_resp *resp, struct sbx_err *err);
/* Open the second data-plane handle (for e2b_rpc_on(b, 1, ...)) if it is
 * not open: calls made from another thread while the first one carries a
 * stream (exec's stdin).  The two handles may be used by two threads at
 * once, one each. */
int e2b_envd_second(struct sbx_backend *b, struct sbx_err *err);
int e2b_rpc_on(struct sbx_backend *b, int side, const char *op, const char *method,
	       json_object *in, const char *user, json_object **out, struct sbx_err *err);
/* A unary Connect RPC (application/json) with `user` in Basic auth (NULL:
 * none).  0 with *out the reply object; -1 with the Connect code as a
 * kind (not_found, already_exists -> conflict, unauthenticated ->
 * authentication, ...). */
int e2b_rpc(struct sbx_backend *b, const char *op, const char *method, json_object *in,
	    const char *user, json_object **out, struct sbx_err *err);
/* "Authorization: Basic base64(user:)" (malloc'd). */
char *e2b_basic_hdr(const char *user);

#endif
