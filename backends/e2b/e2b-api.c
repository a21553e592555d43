/* e2b-api.c - the e2b and cube backends' transport (see e2b-api.h): the
 * profile read into a connection, control-plane calls with their bounded
 * retries, the data plane's addressing, unary Connect RPCs, and server
 * errors as sbx kinds.  It knows nothing of sandboxes' meaning. */
#include "e2b-api.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>


#include "doc.h"
#include "fault.h"
#include "ssrf.h"
#include "util.h"

struct e2b_conn *e2b_conn(struct sbx_backend *b) { return b->priv; }

static void wipe_free(char *s)
{
	if (s)
		sbx_secret_free(s);
}

void e2b_conn_close(struct sbx_backend *b)
{
	struct e2b_conn *c = e2b_conn(b);
	if (!c)
		return;
	sbx_http_close(c->api);
	sbx_http_close(c->envd);
	sbx_http_close(c->envd2);
	free(c->envd_domain);
	free(c->endpoint);
	wipe_free(c->key_hdr);
	wipe_free(c->bearer_hdr);
	wipe_free(c->envd_token);
	wipe_free(c->traffic_hdr);
	free(c->domain);
	free(c->proxy);
	free(c->envd_id);
	free(c->envd_prefix);
	free(c);
	b->priv = NULL;
}

static char *trimmed_url(const char *s)
{
	char *u = sbx_xstrdup(s);
	size_t n = strlen(u);
	while (n && u[n - 1] == '/')
		u[--n] = '\0';
	return u;
}

const char *const e2b_config_keys[] = {"domain", "proxy", "data_plane", NULL};

/* The profile's data-plane keys: domain, proxy, data_plane. */
static int read_plane(struct e2b_conn *c, const struct sbx_profile *p, struct sbx_err *err)
{
	const char *d = p->raw ? sbx_json_str(p->raw, "domain") : NULL;
	const char *px = p->raw ? sbx_json_str(p->raw, "proxy") : NULL;
	const char *mode = p->raw ? sbx_json_str(p->raw, "data_plane") : NULL;
	if (d && *d) {
		if (!e2b_dns_name(d))
			return sbx_fail_config(err, "config", "profile '%s': domain must be a bare DNS name", p->name);
		c->domain = sbx_xstrdup(d);
	}
	if (px && *px) {
		if (!sbx_str_starts(px, "http://") && !sbx_str_starts(px, "https://"))
			return sbx_fail_config(err, "config", "profile '%s': proxy must be an http(s):// URL", p->name);
		if (sbx_ssrf_check_url(px, p->allow_private, err) < 0) {
			err->exit_status = SBX_EXIT_CONFIG;
			return -1;
		}
		c->proxy = trimmed_url(px);
	}
	if (mode && strcmp(mode, "path") == 0)
		c->path_mode = 1;
	else if (mode && strcmp(mode, "host") != 0 && strcmp(mode, "header") != 0)
		return sbx_fail_config(err, "config", "profile '%s': data_plane must be host, header or path", p->name);
	if (mode && !strcmp(mode, "host") && !c->domain)
		return sbx_fail_config(err, "config", "profile '%s': data_plane host needs a domain", p->name);
	return 0;
}

int e2b_conn_open(struct sbx_backend *b, int cube, struct sbx_err *err)
{
	const struct sbx_profile *p = b->profile;
	struct e2b_conn *c = sbx_xcalloc(1, sizeof(*c));
	b->priv = c;
	c->cube = cube;
	const char *ep = p && p->endpoint && *p->endpoint ? p->endpoint : NULL;
	if (!ep) {
		e2b_conn_close(b);
		return sbx_fail_config(err, "config", "profile '%s': the %s backend needs an endpoint",
				       p ? p->name : "default", cube ? "cube" : "e2b");
	}
	c->endpoint = trimmed_url(ep);
	c->allow_private = p->allow_private;
	char *key = NULL;
	if (sbx_profile_secret(p, &key, err) < 0 || read_plane(c, p, err) < 0) {
		wipe_free(key);
		e2b_conn_close(b);
		return -1;
	}
	if (key && *key) {
		c->key_hdr = sbx_xasprintf("X-API-Key: %s", key);
		if (cube)   /* cube-wire §4: both, X-API-Key keeps its own rate bucket */
			c->bearer_hdr = sbx_xasprintf("Authorization: Bearer %s", key);
	}
	wipe_free(key);
	if (!c->key_hdr && !cube) {
		e2b_conn_close(b);
		return sbx_fail_config(err, "config", "profile '%s': the e2b backend needs api_key_file or api_key_env",
				       p->name);
	}
	/* Cube's snapshot and template-delete routes take up to 240 s. */
	struct sbx_http_opts o = {.base_url = c->endpoint, .allow_private = c->allow_private,
				  .timeout_ms = 250000};
	if (sbx_http_open(&o, &c->api, err) < 0) {
		err->exit_status = err->kind == SBX_INVALID_REQUEST ? SBX_EXIT_CONFIG : err->exit_status;
		e2b_conn_close(b);
		return -1;
	}
	return 0;
}

/* ---- control plane ----------------------------------------------------- */

/* Seconds the server asks us to wait; -1 when it does not say. */
static int retry_after(const struct sbx_http_resp *r)
{
	SBX_AUTOFREE char *v = sbx_http_header(r, "Retry-After");
	if (!v)
		return -1;
	char *end;
	long s = strtol(v, &end, 10);
	return end == v || s < 0 ? -1 : s > 10 ? 10 : (int)s;
}


int e2b_api(struct sbx_backend *b, const char *op, const char *method, const char *path,
	    json_object *body, int retry, json_object **out, char **next, struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	if (out)
		*out = NULL;
	if (next)
		*next = NULL;
	const char *text = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL;
	const char *hdrs[] = {c->key_hdr ? c->key_hdr : "X-API-Key:",
			      body ? "Content-Type: application/json" : "Accept: application/json",
			      c->bearer_hdr, NULL};
	struct sbx_http_req req = {.method = method, .path = path, .headers = hdrs,
				   .body = text, .body_len = text ? strlen(text) : 0};
	struct sbx_http_resp resp = {0};
	for (int attempt = 0;; attempt++) {
		if (sbx_http_do(c->api, &req, &resp, err) < 0) {
			snprintf(err->op, sizeof(err->op), "%s", op);
			return -1;
		}
		int wait = retry_after(&resp);
		int again = attempt < E2B_RETRIES &&
			    (resp.status == 429 || (resp.status == 503 && retry == E2B_IDEMPOTENT && wait >= 0));
		if (!again)
			break;
		sbx_http_resp_clear(&resp);
		sbx_sleep_ms(wait > 0 ? wait * 1000LL : 50);   /* 50 ms: no Retry-After */
	}
	if (resp.status < 200 || resp.status > 299) {
		e2b_status_err(op, &resp, err);
		sbx_http_resp_clear(&resp);
		return -1;
	}
	if (next)
		*next = sbx_http_header(&resp, "X-Next-Token");
	if (next && *next && !**next) {
		free(*next);
		*next = NULL;
	}
	if (next && *next && e2b_reply_token(*next, E2B_TOKEN_MAX, "X-Next-Token", op, err) < 0) {
		free(*next);
		*next = NULL;
		sbx_http_resp_clear(&resp);
		return -1;
	}
	if (out && resp.body && resp.len) {
		*out = json_tokener_parse(resp.body);
		if (!*out) {
			sbx_http_resp_clear(&resp);
			if (next) {
				free(*next);
				*next = NULL;
			}
			return sbx_fail(err, SBX_INTERNAL, op, "the server's reply is not JSON");
		}
	}
	sbx_http_resp_clear(&resp);
	return 0;
}

/* ---- data plane -------------------------------------------------------- */

/* "http://host:port" -> host and port (default by scheme). */
static int split_url(const char *url, char *host, size_t hlen, int *port, int *tls)
{
	*tls = sbx_str_starts(url, "https://");
	const char *h = strstr(url, "://");
	if (!h)
		return -1;
	h += 3;
	size_t n = strcspn(h, "/?#");
	const char *colon = NULL;
	for (const char *p = h; p < h + n; p++)
		if (*p == ':' && !memchr(p, ']', (size_t)(h + n - p)))
			colon = p;
	size_t hn = colon ? (size_t)(colon - h) : n;
	if (hn == 0 || hn >= hlen)
		return -1;
	memcpy(host, h, hn);
	host[hn] = '\0';
	*port = colon ? atoi(colon + 1) : *tls ? 443 : 80;
	return *port > 0 && *port < 65536 ? 0 : -1;
}

/* The data-plane handle for `id` (see the modes in e2b-api.h). */
static int open_plane(struct e2b_conn *c, const char *id, const char *domain, struct sbx_http **h,
		      struct sbx_err *err)
{
	struct sbx_http_opts o = {.allow_private = c->allow_private, .timeout_ms = 60000};
	c->envd_by_header = 0;
	SBX_AUTOFREE char *base = NULL;
	SBX_AUTOFREE char *ct = NULL;
	const char *ctv[2] = {NULL, NULL};
	if (c->path_mode) {
		base = sbx_xstrdup(c->proxy ? c->proxy : c->endpoint);
		c->envd_prefix = sbx_xasprintf("/sandbox/%s/%d", id, E2B_ENVD_PORT);
	} else if (domain && c->proxy) {
		char host[256];
		int port, tls;
		if (split_url(c->proxy, host, sizeof(host), &port, &tls) < 0)
			return sbx_fail_config(err, "config", "proxy URL has no usable host and port");
		base = sbx_xasprintf("%s://%d-%s.%s:%d", tls ? "https" : "http", E2B_ENVD_PORT, id, domain, port);
		ct = sbx_xasprintf("%d-%s.%s:%d:%s:%d", E2B_ENVD_PORT, id, domain, port, host, port);
		ctv[0] = ct;
		o.connect_to = ctv;
	} else if (domain) {
		base = sbx_xasprintf("https://%d-%s.%s", E2B_ENVD_PORT, id, domain);
	} else {
		base = sbx_xstrdup(c->endpoint);
		c->envd_by_header = 1;
	}
	o.base_url = base;
	return sbx_http_open(&o, h, err);
}

/* The domain the data plane of a sandbox may use: the server's when the
 * profile allows it, else the profile's (NULL: header or path mode). */
static int plane_domain(const struct e2b_conn *c, const char *id, const char *server,
			const char **out, struct sbx_err *err)
{
	*out = c->domain;
	if (!server || !*server || c->path_mode)
		return 0;
	if (!e2b_dns_name(server))
		return sbx_fail(err, SBX_INTERNAL, "envd", "sandbox %s: its domain is not a DNS name (refused)", id);
	if (!c->domain)
		return sbx_fail(err, SBX_INTERNAL, "envd", "the server puts sandbox %s under domain %s, and this "
				"profile names no domain: refused, the access token stays with the endpoint "
				"(set the profile's domain to accept it)", id, server);
	if (!e2b_domain_within(server, c->domain))
		return sbx_fail(err, SBX_INTERNAL, "envd", "the server puts sandbox %s under domain %s, "
				"outside the profile's domain %s: refused, no token is sent there", id, server,
				c->domain);
	*out = server;
	return 0;
}

int e2b_envd_bind(struct sbx_backend *b, const struct sbx_sandbox *sb, const char *token,
		  struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	const char *dom = NULL;
	const char *traffic = sb->extra ? sbx_json_str(sb->extra, "traffic_token") : NULL;
	if (e2b_check_id(sb->id, "sandbox id", "envd", err) < 0 ||
	    plane_domain(c, sb->id, sb->extra ? sbx_json_str(sb->extra, "domain") : NULL, &dom, err) < 0 ||
	    (token && *token && e2b_reply_token(token, E2B_TOKEN_MAX, "envdAccessToken", "envd", err) < 0) ||
	    (traffic && *traffic && e2b_reply_token(traffic, E2B_TOKEN_MAX, "traffic token", "envd", err) < 0))
		return -1;
	if (!c->envd || !c->envd_id || strcmp(c->envd_id, sb->id) != 0 ||
	    (dom ? !c->envd_domain || strcmp(dom, c->envd_domain) : c->envd_domain != NULL)) {
		sbx_http_close(c->envd);
		c->envd = NULL;
		free(c->envd_id);
		free(c->envd_prefix);
		c->envd_prefix = NULL;
		sbx_http_close(c->envd2);
		c->envd2 = NULL;
		free(c->envd_domain);
		c->envd_domain = dom ? sbx_xstrdup(dom) : NULL;
		c->envd_id = sbx_xstrdup(sb->id);
		if (open_plane(c, sb->id, dom, &c->envd, err) < 0) {
			free(c->envd_id);
			c->envd_id = NULL;
			return -1;
		}
	}
	wipe_free(c->envd_token);
	c->envd_token = token && *token ? sbx_xasprintf("X-Access-Token: %s", token) : NULL;
	wipe_free(c->traffic_hdr);
	c->traffic_hdr = traffic && *traffic ? sbx_xasprintf("e2b-traffic-access-token: %s", traffic) : NULL;
	return 0;
}

static int envd_do(struct sbx_backend *b, int side, const char *op, struct sbx_http_req *req,
		   struct sbx_http_resp *resp, struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	struct sbx_http *h = side ? c->envd2 : c->envd;
	if (!h)
		return sbx_fail(err, SBX_INTERNAL, op, "the data plane is not bound to a sandbox");
	const char *hdrs[24];
	size_t n = 0;
	SBX_AUTOFREE char *sid = NULL;
	if (c->envd_by_header) {
		sid = sbx_xasprintf("E2b-Sandbox-Id: %s", c->envd_id);
		hdrs[n++] = sid;
		hdrs[n++] = "E2b-Sandbox-Port: 49983";
	}
	if (c->envd_token)
		hdrs[n++] = c->envd_token;
	if (c->traffic_hdr)
		hdrs[n++] = c->traffic_hdr;
	hdrs[n++] = "Accept-Encoding:";       /* e2b-wire §3.10: no compression */
	for (const char *const *h = req->headers; h && *h && n < SBX_ARRAY_LEN(hdrs) - 1; h++)
		hdrs[n++] = *h;
	hdrs[n] = NULL;
	SBX_AUTOFREE char *path = c->envd_prefix ? sbx_xasprintf("%s%s", c->envd_prefix, req->path) : NULL;
	struct sbx_http_req r = *req;
	r.headers = hdrs;
	if (path)
		r.path = path;
	if (sbx_http_do(h, &r, resp, err) < 0) {
		snprintf(err->op, sizeof(err->op), "%s", op);
		return -1;
	}
	return 0;
}

int e2b_envd_do(struct sbx_backend *b, const char *op, struct sbx_http_req *req,
		struct sbx_http_resp *resp, struct sbx_err *err)
{
	return envd_do(b, 0, op, req, resp, err);
}

int e2b_envd_second(struct sbx_backend *b, struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	if (!c->envd)
		return sbx_fail(err, SBX_INTERNAL, "envd", "the data plane is not bound to a sandbox");
	if (!c->envd2) {
		SBX_AUTOFREE char *prefix = c->envd_prefix;
		c->envd_prefix = NULL;
		int rc = open_plane(c, c->envd_id, c->envd_domain, &c->envd2, err);
		free(c->envd_prefix);
		c->envd_prefix = prefix;
		prefix = NULL;
		if (rc < 0)
			return -1;
	}
	return 0;
}

char *e2b_basic_hdr(const char *user)
{
	SBX_AUTOFREE char *raw = sbx_xasprintf("%s:", user);
	char *b64 = sbx_base64(raw, strlen(raw), NULL);
	char *h = sbx_xasprintf("Authorization: Basic %s", b64);
	free(b64);
	return h;
}

int e2b_rpc_on(struct sbx_backend *b, int side, const char *op, const char *method,
	       json_object *in, const char *user, json_object **out, struct sbx_err *err)
{
	*out = NULL;
	SBX_AUTOFREE char *path = sbx_xasprintf("/%s", method);
	SBX_AUTOFREE char *auth = user ? e2b_basic_hdr(user) : NULL;
	const char *hdrs[] = {"Content-Type: application/json", "Connect-Protocol-Version: 1", auth, NULL};
	const char *text = json_object_to_json_string_ext(in, JSON_C_TO_STRING_PLAIN);
	struct sbx_http_req req = {.method = "POST", .path = path, .headers = hdrs,
				   .body = text, .body_len = strlen(text)};
	struct sbx_http_resp resp = {0};
	if (envd_do(b, side, op, &req, &resp, err) < 0)
		return -1;
	if (resp.status != 200) {
		e2b_status_err(op, &resp, err);
		sbx_http_resp_clear(&resp);
		return -1;
	}
	*out = resp.body && resp.len ? json_tokener_parse(resp.body) : json_object_new_object();
	sbx_http_resp_clear(&resp);
	if (!*out)
		return sbx_fail(err, SBX_INTERNAL, op, "envd's reply is not JSON");
	return 0;
}

int e2b_rpc(struct sbx_backend *b, const char *op, const char *method, json_object *in,
	    const char *user, json_object **out, struct sbx_err *err)
{
	return e2b_rpc_on(b, 0, op, method, in, user, out, err);
}
