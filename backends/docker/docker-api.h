/* docker-api.h - the Docker backend's transport: the connection to the
 * engine, its requests and JSON replies, and engine errors as sbx kinds.
 *
 * The backend never runs the docker CLI: it speaks the Engine API v1.41 on
 * the daemon's unix socket, or over TCP with TLS client certificates
 * (profile endpoint tcp://host:port, tls_cert_path holding ca.pem, cert.pem
 * and key.pem).  Every path a caller passes starts after the version
 * ("/containers/..."); the version prefix is added here and nowhere else.
 * The connection is the backend's private state (b->priv); nothing above
 * this file looks inside it. */
#ifndef SBX_DOCKER_API_H
#define SBX_DOCKER_API_H

#include <stddef.h>
#include <json-c/json.h>

#include "backend.h"
#include "http.h"

/* The profile keys the docker backend owns (docker.c's config_load). */
struct docker_conf {
	char *tls_cert_path;     /* tcp://: the folder of ca.pem, cert.pem, key.pem */
	char **egress_allow;     /* CIDRs the egress broker may dial after all */
	char *egress_resolver;   /* the broker's upstream resolver, or NULL: the host's */
};
/* The profile's tls_cert_path, NULL when none. */
static inline const char *docker_tls_certs(const struct sbx_backend *b)
{
	const struct docker_conf *c = sbx_backend_conf(b);
	return c ? c->tls_cert_path : NULL;
}

/* Connect b (b->priv) to the engine the profile's endpoint names: the
 * profile's endpoint, else DOCKER_HOST, else the local socket.  A malformed
 * endpoint, tcp:// without tls_cert_path or with an unreadable TLS file is a
 * configuration error whose message never shows the endpoint's userinfo.
 * Nothing is sent yet.  On failure b->priv is NULL. */
int docker_conn_open(struct sbx_backend *b, struct sbx_err *err);
/* Release the connection (b->priv = NULL); safe when it is not open. */
void docker_conn_close(struct sbx_backend *b);
/* True when the engine is reached over TCP+TLS, where a connection cannot
 * be hijacked for a raw stream (see docker_upgrade). */
int docker_conn_tls(struct sbx_backend *b);

/* GET /_ping (unversioned): 0 when the engine answers "OK"; otherwise an
 * error as docker_status_err makes it, internal turned into unavailable. */
int docker_ping(struct sbx_backend *b, struct sbx_err *err);

/* One Engine API call.  `path` starts after the version ("/containers/..."),
 * the caller escapes query values.  `body` (may be NULL) is sent as JSON.
 * On 2xx: 0, *out = the parsed JSON response body (NULL when empty or not
 * JSON; out may be NULL).  On any other status: -1 with the kind from
 * sbx_kind_from_http(op, status), refined by the daemon's message ("is
 * paused", "is not running", "already in progress" -> conflict), and the
 * daemon's message in err. */
int docker_api(struct sbx_backend *b, const char *op, const char *method, const char *path,
	       json_object *body, json_object **out, struct sbx_err *err);
/* 1 when the engine is reached over a unix socket (it runs on this host
 * and sees its paths: a volume's folder can be bound), else 0. */
int docker_engine_local(struct sbx_backend *b);
/* The same, returning the raw response (any status) for callers that need
 * headers or a streamed body.  -1 only on a transport failure (err->op is
 * then `op`). */
int docker_raw(struct sbx_backend *b, const char *op, struct sbx_http_req *req,
	       struct sbx_http_resp *resp, struct sbx_err *err);
/* docker_raw, and a non-2xx status is an error (as docker_api makes it;
 * resp cleared): for streamed requests and answers. */
int docker_raw_ok(struct sbx_backend *b, const char *op, struct sbx_http_req *req,
		  struct sbx_http_resp *resp, struct sbx_err *err);
/* Hijack the connection for a raw stream (sbx_http_upgrade's contract,
 * the version prefix added): 0 with *fd the socket on success, 0 with
 * *fd = -1 and the error body in resp on a refusal, -1 on a transport
 * failure (err->op is then `op`). */
int docker_upgrade(struct sbx_backend *b, const char *op, struct sbx_http_req *req, int *fd,
		   struct sbx_http_resp *resp, struct sbx_err *err);
/* Turn a non-2xx response into an error (as docker_api does), with the
 * reason the engine's message names (paused twice, not paused, removal in
 * progress, the engine's setup); returns -1. */
int docker_status_err(const char *op, const struct sbx_http_resp *resp, struct sbx_err *err);

/* GET the listing `what` (a path ending in '?' or '&') with `filters` (a
 * JSON text) escaped onto it.  *arr gets the answer (the caller puts it;
 * may be NULL), *n its length (0 unless it is an array). */
int docker_get_listing(struct sbx_backend *b, const char *op, const char *what,
		       const char *filters, json_object **arr, size_t *n, struct sbx_err *err);

/* Ids and image references go into URL paths unescaped (Docker routes
 * image names with '/' in them): 0 when `s` is non-empty, at most 255
 * characters of [A-Za-z0-9._-:/@] and free of "..", else -1
 * invalid_request naming `what`. */
int docker_check_ref(const char *s, const char *what, const char *op, struct sbx_err *err);

#endif
