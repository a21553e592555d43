/* serve-wire.c - the texts sbx-serve reads and writes on the wire, as pure
 * functions (no backend, no socket, no process): the request head's
 * bounds, its routing, the URL unescaping, the body's accumulation under
 * its limit, the request a proxied sandbox server gets, the answer it
 * gives back, and the worker->thread pipe head.  They are here, apart
 * from the code that runs them, so that the fuzz targets
 * (tests/fuzz/fuzz-serve-head.c, fuzz-proxy.c) drive exactly them.
 *
 * Promises: every output buffer is sized from the lengths it holds (never
 * a fixed guess with a subtraction that can wrap); a head over
 * SERVE_URL_MAX / SERVE_HEAD_MAX is refused before anything is built from
 * it; a header name that crosses into a response or the pipe is an RFC
 * 9110 token and its value has no control character, so that neither a
 * client nor a sandbox can add lines to either. */
#include "serve-int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "doc.h"
#include "util.h"

/* ---- a growing text: capacity checked on every append ---- */

struct wbuf { char *p; size_t n, cap; };

static void wb_put(struct wbuf *b, const void *s, size_t len)
{
	if (!b->p || len >= b->cap - b->n) {   /* room for the NUL too */
		size_t want = b->n + len + 1;
		size_t cap = b->cap ? b->cap : 256;
		while (cap < want)
			cap *= 2;
		b->p = sbx_xrealloc(b->p, cap);
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
}

static void wb_str(struct wbuf *b, const char *s)
{
	wb_put(b, s, strlen(s));
}

/* Percent-encode what a request target cannot carry raw: space, '%', '#',
 * controls and bytes past ASCII, plus `extra` (the query's delimiters). */
static void wb_encoded(struct wbuf *b, const char *s, const char *extra)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c <= 0x20 || c >= 0x7f || c == '%' || c == '#' || strchr(extra, c)) {
			char e[4];
			snprintf(e, sizeof(e), "%%%02X", c);
			wb_put(b, e, 3);
		} else {
			wb_put(b, s, 1);
		}
	}
}

/* ---- the request head ---- */


int serve_head_check(const char *method, const char *url, const struct serve_kv *hdr, size_t nhdr)
{
	if (!*method)
		return 400;
	for (const unsigned char *m = (const unsigned char *)method; *m; m++)
		if (!serve_token_char(*m))
			return 400;
	size_t ul = strlen(url);
	if (ul > SERVE_URL_MAX)
		return 414;
	size_t total = strlen(method) + ul + 12;
	for (size_t i = 0; i < nhdr; i++)
		total += strlen(hdr[i].k) + strlen(hdr[i].v) + 4;
	return total > SERVE_HEAD_MAX ? 431 : 0;
}



/* "<port>-<id>.<domain>" (or "<port>-<id>" followed by anything when no
 * domain is configured).  1 and the parts, or 0. */
static int host_route(const char *domain, const char *host, unsigned *port, char *id, size_t idlen)
{
	if (!host || strlen(host) >= 256)
		return 0;
	char h[256];
	snprintf(h, sizeof(h), "%s", host);
	char *colon = strrchr(h, ':');
	if (colon && !strchr(h, ']'))
		*colon = '\0';
	char *dot = strchr(h, '.');
	if (!dot)
		return 0;
	if (domain && strcasecmp(dot + 1, domain) != 0)
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

int serve_route(struct serve_req *r, const char *domain)
{
	const char *sid = serve_hdr(r, "e2b-sandbox-id");
	r->sandbox_id[0] = '\0';
	if (host_route(domain, serve_hdr(r, "host"), &r->port, r->sandbox_id, sizeof(r->sandbox_id))) {
		r->plane = r->port == SERVE_ENVD_PORT ? PLANE_ENVD : PLANE_PROXY;
	} else if (sid) {
		const char *port = serve_hdr(r, "e2b-sandbox-port");
		char *end = NULL;
		unsigned long pt = port ? strtoul(port, &end, 10) : SERVE_ENVD_PORT;
		if (port && (end == port || *end || pt == 0 || pt > 65535))
			return -1;
		r->port = (unsigned)pt;
		if (strlen(sid) >= sizeof(r->sandbox_id))
			return -1;
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", sid);
		r->plane = r->port == SERVE_ENVD_PORT ? PLANE_ENVD : PLANE_PROXY;
	} else {
		r->plane = PLANE_API;
		return 0;
	}
	return serve_id_ok(r->sandbox_id) ? 0 : -1;
}

size_t serve_unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		int hi, lo;
		if (r[0] == '%' && (hi = sbx_hexval(r[1])) >= 0 && (lo = sbx_hexval(r[2])) >= 0 &&
		    (hi | lo) != 0) {
			*w++ = (char)(hi << 4 | lo);
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

size_t serve_body_limit(const char *path, const struct sbx_serve_cfg *cfg)
{
	return strcmp(path, "/files") == 0 ? cfg->max_body : cfg->max_json;
}

int serve_body_add(struct serve_req *r, size_t *cap, const char *data, size_t len, size_t limit)
{
	if (len > limit || r->body_len > limit - len)
		return -1;
	if (r->body_len + len + 1 > *cap) {
		size_t want = r->body_len + len + 1;
		size_t c = want > SIZE_MAX / 2 ? want : want * 2;
		if (c > limit + 1)
			c = limit + 1;
		r->body = sbx_xrealloc(r->body, c);
		*cap = c;
	}
	memcpy(r->body + r->body_len, data, len);
	r->body_len += len;
	r->body[r->body_len] = '\0';
	return 0;
}

/* ---- the proxy plane ---- */

int serve_hop_by_hop(const char *name)
{
	static const char *const h[] = {"connection", "keep-alive", "proxy-connection", "te",
					"trailer", "transfer-encoding", "upgrade", "content-length",
					"host", "date", "e2b-traffic-access-token", "x-access-token"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(h); i++)
		if (!strcasecmp(name, h[i]))
			return 1;
	return 0;
}

char *serve_proxy_request(const struct serve_req *r, unsigned port, size_t *len)
{
	struct wbuf b = {0};
	wb_str(&b, r->method);
	wb_str(&b, " ");
	wb_encoded(&b, r->path, "?");    /* decoded once: a '?' in it is not a query */
	for (size_t i = 0; i < r->nquery; i++) {
		wb_str(&b, i ? "&" : "?");
		wb_encoded(&b, r->query[i].k, "&=+?");
		wb_str(&b, "=");
		wb_encoded(&b, r->query[i].v, "&=+?");
	}
	char line[96];
	snprintf(line, sizeof(line), " HTTP/1.0\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n", port);
	wb_str(&b, line);
	for (size_t i = 0; i < r->nhdr; i++) {
		if (serve_hop_by_hop(r->hdr[i].k) || !serve_header_name_ok(r->hdr[i].k))
			continue;
		wb_str(&b, r->hdr[i].k);
		wb_str(&b, ": ");
		for (const char *v = r->hdr[i].v; *v; v++)      /* no line of the client's own */
			wb_put(&b, (unsigned char)*v < 0x20 && *v != '\t' ? " " : v, 1);
		wb_str(&b, "\r\n");
	}
	snprintf(line, sizeof(line), "Content-Length: %zu\r\n\r\n", r->body_len);
	wb_str(&b, line);
	if (r->body_len)
		wb_put(&b, r->body, r->body_len);
	*len = b.n;
	return b.p;
}

int serve_proxy_error(struct serve_out *o, const char *id, unsigned port, int status, const char *msg)
{
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "sandboxId", id);
	sbx_json_set_str(j, "message", msg);
	if (status == 502)
		sbx_json_set_int(j, "port", port);
	sbx_json_set_int(j, "code", status);
	return serve_reply_json(o, status, j);
}

int serve_proxy_answer(struct serve_out *o, const char *id, unsigned port, const char *a, size_t n)
{
	const char *he = memmem(a, n, "\r\n\r\n", 4);
	int status = 0;
	if (!he || n < 12 || strncmp(a, "HTTP/1.", 7) != 0 || a[8] != ' ' ||
	    !isdigit((unsigned char)a[9]) || !isdigit((unsigned char)a[10]) ||
	    !isdigit((unsigned char)a[11]))
		return serve_proxy_error(o, id, port, 502, "The sandbox is running but port is not open");
	status = (a[9] - '0') * 100 + (a[10] - '0') * 10 + (a[11] - '0');
	if (status < 100 || status > 599)
		return serve_proxy_error(o, id, port, 502, "The sandbox is running but port is not open");
	const char *ctype = NULL;
	char ct[256] = "";
	const char *line = memmem(a, (size_t)(he - a) + 2, "\r\n", 2) + 2;
	while (line < he) {
		const char *eol = memmem(line, (size_t)(he + 2 - line), "\r\n", 2);
		const char *colon = memchr(line, ':', (size_t)(eol - line));
		if (colon && colon - line < 128) {
			char name[128], val[1024];
			snprintf(name, sizeof(name), "%.*s", (int)(colon - line), line);
			const char *v = colon + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			snprintf(val, sizeof(val), "%.*s", (int)(eol - v), v);
			if (strlen(name) != (size_t)(colon - line) || !serve_header_name_ok(name)) {
				/* a NUL, a space or a control in the name: not a header */
			} else if (!strcasecmp(name, "content-type")) {
				snprintf(ct, sizeof(ct), "%s", val);
				ctype = ct;
			} else if (!serve_hop_by_hop(name)) {
				serve_out_header(o, name, "%s", val);
			}
		}
		line = eol + 2;
	}
	return serve_reply(o, status, ctype, he + 4, n - (size_t)(he + 4 - a));
}

/* ---- the worker's pipe head ---- */

int serve_pipe_head(char *head, struct serve_pipe_head *h)
{
	memset(h, 0, sizeof(*h));
	h->length = -1;
	char *save = NULL;
	char *first = strtok_r(head, "\n", &save);
	if (!first || strlen(first) != 3 || !isdigit((unsigned char)first[0]) ||
	    !isdigit((unsigned char)first[1]) || !isdigit((unsigned char)first[2]))
		return -1;
	h->status = atoi(first);
	if (h->status < 100 || h->status > 599)
		return -1;
	for (char *l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *colon = strstr(l, ": ");
		if (!colon)
			continue;
		*colon = '\0';
		const char *v = colon + 2;
		if (!strcmp(l, "X-Sbx-Length")) {
			char *end;
			unsigned long long len = strtoull(v, &end, 10);
			if (end == v || *end || len > (1ULL << 40))
				return -1;
			h->length = (long long)len;
			continue;
		}
		if (!serve_header_name_ok(l) || h->n == SBX_ARRAY_LEN(h->name))
			continue;
		h->name[h->n] = l;
		h->value[h->n++] = v;
	}
	return 0;
}
