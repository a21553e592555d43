/* docker-api.c - the Docker backend's transport (see docker-api.h): the
 * connection to the engine (unix socket, or TCP with TLS client
 * certificates and the SSRF dial guard, both through common/net/http.c), the
 * versioned requests, their JSON replies, and the engine's errors mapped to
 * sbx kinds.  It knows nothing of containers, labels or sandboxes. */
#include "docker-api.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doc.h"
#include "util.h"

#define DOCKER_API "/v1.41"
#define DEFAULT_HOST "unix:///var/run/docker.sock"

struct docker_conn {
	struct sbx_http *http;
	char *endpoint;          /* as configured ("" when the profile names none) */
	char *unix_path;         /* unix socket, or NULL for tcp */
	char *base_url;          /* "http://docker" or "https://host:port" */
	char *ca, *cert, *key;   /* tcp+TLS client files */
};

static struct docker_conn *conn_of(struct sbx_backend *b) { return b->priv; }

/* ---- the connection ---------------------------------------------------- */

int docker_engine_local(struct sbx_backend *b)
{
	return conn_of(b) && conn_of(b)->unix_path != NULL;
}

/* The endpoint as errors may show it: userinfo ("user:password@") after
 * the scheme is replaced by "***@", as the Redis URL's is left out. */
static char *shown_endpoint(const char *ep)
{
	const char *hier = strstr(ep, "://");
	hier = hier ? hier + 3 : ep;
	const char *end = hier + strcspn(hier, "/?#");
	const char *at = NULL;
	for (const char *c = hier; c < end; c++)
		if (*c == '@')
			at = c;        /* the last '@' ends the userinfo */
	if (!at)
		return sbx_xstrdup(ep);
	return sbx_xasprintf("%.*s***%s", (int)(hier - ep), ep, at);
}

static int parse_endpoint(struct docker_conn *d, const char *certs, struct sbx_err *err)
{
	const char *ep = d->endpoint && *d->endpoint ? d->endpoint : getenv("DOCKER_HOST");
	if (!ep || !*ep)
		ep = DEFAULT_HOST;
	SBX_AUTOFREE char *shown = shown_endpoint(ep);
	if (sbx_str_starts(ep, "unix://")) {
		const char *path = ep + strlen("unix://");
		if (*path != '/')
			return sbx_fail_config(err, "config", "docker endpoint '%s': unix:// needs an absolute path", shown);
		d->unix_path = sbx_xstrdup(path);
		d->base_url = sbx_xstrdup("http://docker");
		return 0;
	}
	if (sbx_str_starts(ep, "tcp://")) {
		const char *hp = ep + strlen("tcp://");
		if (!*hp || strpbrk(hp, "/?#@ "))
			return sbx_fail_config(err, "config", "docker endpoint '%s': expected tcp://host:port", shown);
		if (!certs || !*certs)
			return sbx_fail_config(err, "config",
					       "docker endpoint %s: tcp:// needs tls_cert_path (ca.pem, cert.pem, key.pem); "
					       "plain TCP to a Docker daemon is root without a password", hp);
		d->ca = sbx_xasprintf("%s/ca.pem", certs);
		d->cert = sbx_xasprintf("%s/cert.pem", certs);
		d->key = sbx_xasprintf("%s/key.pem", certs);
		const char *files[] = {d->ca, d->cert, d->key};
		for (size_t i = 0; i < 3; i++)
			if (access(files[i], R_OK) < 0)
				return sbx_fail_config(err, "config", "docker TLS file %s is not readable", files[i]);
		d->base_url = sbx_xasprintf("https://%s", hp);
		return 0;
	}
	return sbx_fail_config(err, "config", "docker endpoint '%s': expected unix:///path or tcp://host:port", shown);
}

void docker_conn_close(struct sbx_backend *b)
{
	struct docker_conn *d = conn_of(b);
	if (!d)
		return;
	sbx_http_close(d->http);
	free(d->endpoint);
	free(d->unix_path);
	free(d->base_url);
	free(d->ca);
	free(d->cert);
	free(d->key);
	free(d);
	b->priv = NULL;
}

int docker_conn_open(struct sbx_backend *b, struct sbx_err *err)
{
	struct docker_conn *d = sbx_xcalloc(1, sizeof(*d));
	struct sbx_profile *p = b->profile;
	b->priv = d;
	d->endpoint = sbx_trim(sbx_xstrdup(p && p->endpoint ? p->endpoint : ""));
	if (parse_endpoint(d, docker_tls_certs(b), err) < 0) {
		docker_conn_close(b);
		return -1;
	}
	struct sbx_http_opts o = {
		.base_url = d->base_url, .unix_socket = d->unix_path,
		/* Commit, remove and image deletes of big sandboxes are slow;
		 * exec streams and imports set their own limits. */
		.timeout_ms = 120000,
		/* A unix socket never leaves the host; a tcp:// daemon on a
		 * private address needs the profile's allow_private, as every
		 * other endpoint does. */
		.allow_private = p ? p->allow_private : 0,
		.ca_file = d->ca, .cert_file = d->cert, .key_file = d->key,
	};
	if (sbx_http_open(&o, &d->http, err) < 0) {
		docker_conn_close(b);
		return -1;
	}
	return 0;
}

int docker_conn_tls(struct sbx_backend *b)
{
	struct docker_conn *d = conn_of(b);
	return !d->unix_path && sbx_str_starts(d->base_url, "https://");
}

/* ---- requests -------------------------------------------------------- */

int docker_ping(struct sbx_backend *b, struct sbx_err *err)
{
	struct sbx_http_req req = {.method = "GET", .path = "/_ping", .timeout_ms = 10000};
	struct sbx_http_resp resp = {0};
	struct docker_conn *d = conn_of(b);
	if (sbx_http_do(d->http, &req, &resp, err) < 0)
		return -1;
	int ok = resp.status == 200 && resp.body && !strncmp(resp.body, "OK", 2);
	int rc = ok ? 0 : docker_status_err("health", &resp, err);
	if (!ok && err->kind == SBX_INTERNAL)
		err->kind = SBX_UNAVAILABLE;
	sbx_http_resp_clear(&resp);
	return rc;
}

/* The reason behind an engine's message, for the callers that act on it:
 * pausing twice, a resume that lost the race to another ("not paused",
 * runc's "cannot resume a running process"), a removal already under way,
 * and a start that the engine's own setup refuses (no init binary for
 * Init: true, dockerd's docker-init or podman's catatonit, or rlimits the
 * engine's defaults ask for and the host cannot grant: podman's "error
 * setting rlimit", "OCI permission denied"). */
static enum sbx_reason docker_reason(const char *msg)
{
	static const char *const setup[] = {
		"rlimit", "OCI permission denied", "docker-init", "catatonit", "init binary",
		"container-init", NULL,
	};
	if (strstr(msg, "already paused"))
		return SBX_R_ALREADY_PAUSED;
	if (strstr(msg, "not paused") || strstr(msg, "cannot resume a running process"))
		return SBX_R_NOT_PAUSED;
	if (strstr(msg, "already in progress"))
		return SBX_R_IN_PROGRESS;
	for (size_t i = 0; setup[i]; i++)
		if (strstr(msg, setup[i]))
			return SBX_R_ENGINE_SETUP;
	return SBX_R_NONE;
}

int docker_status_err(const char *op, const struct sbx_http_resp *resp, struct sbx_err *err)
{
	const char *msg = NULL;
	json_object *j = resp->body && resp->len ? json_tokener_parse(resp->body) : NULL;
	if (j)
		msg = sbx_json_str(j, "message");
	if (!msg && resp->body && resp->len)
		msg = resp->body;
	enum sbx_kind k = sbx_kind_from_http(op, resp->status);
	/* Docker says 409 for most state conflicts but 500 for a few. */
	if (msg && (strstr(msg, "is paused") || strstr(msg, "is not running") ||
		    strstr(msg, "already in progress") || strstr(msg, "is restarting") ||
		    strstr(msg, "is already paused") || strstr(msg, "is not paused") ||
		    strstr(msg, "conflict")))
		k = SBX_CONFLICT;
	if (msg && strstr(msg, "is marked for removal"))
		k = SBX_TERMINAL;
	/* A bad import or archive body is the caller's input, not an outage. */
	if (msg && resp->status == 500 && (strstr(msg, "Error processing tar file") ||
					   strstr(msg, "invalid tar header")))
		k = SBX_INVALID_REQUEST;
	if (msg)
		sbx_fail_reason(err, k, docker_reason(msg), op, "docker: %s", msg);
	else
		sbx_fail(err, k, op, "docker: HTTP %d", resp->status);
	/* Docker messages end with a newline sometimes. */
	sbx_trim(err->msg);
	err->http_status = resp->status;
	json_object_put(j);
	return -1;
}

/* `req` with the version before its path; *path owns the new path. */
static struct sbx_http_req versioned(const struct sbx_http_req *req, char **path)
{
	struct sbx_http_req r = *req;
	*path = sbx_xasprintf(DOCKER_API "%s", req->path);
	r.path = *path;
	return r;
}

/* A transport failure is reported as the caller's operation. */
static int failed_as(const char *op, struct sbx_err *err)
{
	snprintf(err->op, sizeof(err->op), "%s", op);
	return -1;
}

int docker_raw(struct sbx_backend *b, const char *op, struct sbx_http_req *req,
	       struct sbx_http_resp *resp, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = NULL;
	struct sbx_http_req r = versioned(req, &path);
	return sbx_http_do(conn_of(b)->http, &r, resp, err) < 0 ? failed_as(op, err) : 0;
}

int docker_raw_ok(struct sbx_backend *b, const char *op, struct sbx_http_req *req,
		  struct sbx_http_resp *resp, struct sbx_err *err)
{
	if (docker_raw(b, op, req, resp, err) < 0)
		return -1;
	if (resp->status < 200 || resp->status >= 300) {
		docker_status_err(op, resp, err);
		sbx_http_resp_clear(resp);
		return -1;
	}
	return 0;
}

int docker_upgrade(struct sbx_backend *b, const char *op, struct sbx_http_req *req, int *fd,
		   struct sbx_http_resp *resp, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = NULL;
	struct sbx_http_req r = versioned(req, &path);
	return sbx_http_upgrade(conn_of(b)->http, &r, fd, resp, err) < 0 ? failed_as(op, err) : 0;
}

int docker_api(struct sbx_backend *b, const char *op, const char *method, const char *path,
	       json_object *body, json_object **out, struct sbx_err *err)
{
	const char *hdr[] = {"Content-Type: application/json", NULL};
	const char *js = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL;
	struct sbx_http_req req = {
		.method = method, .path = path, .headers = body ? hdr : NULL,
		.body = js, .body_len = js ? strlen(js) : 0,
	};
	struct sbx_http_resp resp = {0};
	if (out)
		*out = NULL;
	if (docker_raw_ok(b, op, &req, &resp, err) < 0)
		return -1;
	if (out && resp.body && resp.len)
		*out = json_tokener_parse(resp.body);
	sbx_http_resp_clear(&resp);
	return 0;
}

int docker_get_listing(struct sbx_backend *b, const char *op, const char *what,
		       const char *filters, json_object **arr, size_t *n, struct sbx_err *err)
{
	SBX_AUTOFREE char *q = sbx_http_escape(filters);
	SBX_AUTOFREE char *path = sbx_xasprintf("%sfilters=%s", what, q);
	if (docker_api(b, op, "GET", path, NULL, arr, err) < 0)
		return -1;
	*n = *arr && json_object_is_type(*arr, json_type_array) ? json_object_array_length(*arr) : 0;
	return 0;
}

int docker_check_ref(const char *s, const char *what, const char *op, struct sbx_err *err)
{
	if (!s || !*s || strlen(s) > 255)
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "empty or overlong %s", what);
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-:/@", *p))
			return sbx_fail(err, SBX_INVALID_REQUEST, op, "invalid %s '%s'", what, s);
	if (strstr(s, ".."))
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "invalid %s '%s'", what, s);
	return 0;
}
