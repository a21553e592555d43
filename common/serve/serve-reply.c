/* serve-reply.c - the worker's response writer (the pipe format is in
 * serve-int.h) and E2B's error bodies.
 *
 * Promises: a response head is written at most once; a body announced
 * with a length is exactly that long; a library error becomes E2B's
 * {"code", "message"} with the status its kind implies, and its message
 * is the library's own (which never carries a secret). */
#include "serve-int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "doc.h"
#include "util.h"

/* A name that is not a token (a sandbox's answer can carry any bytes),
 * or that is the pipe's own (X-Sbx-*), is dropped and a control character
 * in a value becomes a space: a header line never becomes two lines of
 * the pipe, nor of the response, nor changes the pipe's framing. */
void serve_out_header(struct serve_out *o, const char *name, const char *fmt, ...)
{
	if (!serve_header_name_ok(name) || !strncasecmp(name, "x-sbx-", 6))
		return;
	char v[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	for (char *p = v; *p; p++)          /* no header splitting */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	int n = snprintf(o->extra + o->extra_len, sizeof(o->extra) - o->extra_len, "%s: %s\n",
			 name, v);
	if (n > 0 && (size_t)n < sizeof(o->extra) - o->extra_len)
		o->extra_len += (size_t)n;
}

/* Every byte of a response goes through here. */
static int out_write(struct serve_out *o, const void *data, size_t len)
{
	if (!o->holding)
		return sbx_write_all(o->fd, data, len);
	if (o->held_len + len > o->held_cap) {
		size_t cap = o->held_cap ? o->held_cap : 512;
		while (cap < o->held_len + len)
			cap *= 2;
		o->held = sbx_xrealloc(o->held, cap);
		o->held_cap = cap;
	}
	memcpy(o->held + o->held_len, data, len);
	o->held_len += len;
	return 0;
}

void serve_out_hold(struct serve_out *o)
{
	o->holding = 1;
}

int serve_out_flush(struct serve_out *o)
{
	int rc = o->held_len ? sbx_write_all(o->fd, o->held, o->held_len) : 0;
	free(o->held);
	o->held = NULL;
	o->held_len = o->held_cap = 0;
	o->holding = 0;
	return rc;
}

static int head(struct serve_out *o, int status, const char *ctype, long long len)
{
	if (o->head_done)
		return -1;
	o->head_done = 1;
	o->status = status;
	char h[1400];
	int n = snprintf(h, sizeof(h), "%d\n%.*s", status, (int)o->extra_len, o->extra);
	if (ctype) {                        /* a sandbox's own, when proxied */
		int at = n + 14;
		n += snprintf(h + n, sizeof(h) - (size_t)n, "Content-Type: %.256s\n", ctype);   /* 5 + 1023 + 271 + 35 + 1 < 1400 */
		for (int i = at; i < n - 1; i++)
			if ((unsigned char)h[i] < 0x20 || h[i] == 0x7f)
				h[i] = ' ';
	}
	if (len >= 0)
		n += snprintf(h + n, sizeof(h) - (size_t)n, "X-Sbx-Length: %lld\n", len);
	n += snprintf(h + n, sizeof(h) - (size_t)n, "\n");
	return out_write(o, h, (size_t)n);
}

int serve_reply(struct serve_out *o, int status, const char *ctype, const void *body, size_t len)
{
	if (head(o, status, len ? ctype : NULL, (long long)len) < 0)
		return -1;
	return len ? out_write(o, body, len) : 0;
}

int serve_reply_json(struct serve_out *o, int status, json_object *j)
{
	size_t n;
	const char *s = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	int rc = serve_reply(o, status, "application/json", s, n);
	json_object_put(j);
	return rc;
}

int serve_reply_error(struct serve_out *o, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object *j = json_object_new_object();
	json_object_object_add(j, "code", json_object_new_int(status));
	json_object_object_add(j, "message", json_object_new_string(msg));
	return serve_reply_json(o, status, j);
}

int serve_status_of(const struct sbx_err *err)
{
	switch (err->kind) {
	case SBX_NOT_FOUND: case SBX_TERMINAL: return 404;
	case SBX_AUTHENTICATION: return 401;
	case SBX_INVALID_REQUEST: return 400;
	case SBX_UNSUPPORTED: return 501;
	case SBX_CONFLICT: return 409;
	case SBX_CAPACITY: return 429;
	case SBX_TIMEOUT: return 504;
	case SBX_UNAVAILABLE: return 503;
	default: return 500;
	}
}

int serve_reply_err(struct serve_out *o, const struct sbx_err *err)
{
	int st = serve_status_of(err);
	if (st == 429 || st == 503)
		serve_out_header(o, "Retry-After", "1");
	return serve_reply_error(o, st, "%s", err->msg);
}

int serve_stream_begin(struct serve_out *o, int status, const char *ctype)
{
	return head(o, status, ctype, -1);
}

int serve_stream_write(struct serve_out *o, const void *data, size_t len)
{
	return out_write(o, data, len);
}

/* The request body as a JSON object ({} when empty), read strictly
 * (sbx_json_parse_object: RFC 8259, UTF-8); NULL with a 400 naming the
 * offset, so no metadata that is not text is ever stored. */
json_object *serve_body_obj(const struct serve_req *r, struct serve_out *o)
{
	if (!r->body_len)
		return json_object_new_object();
	json_object *j;
	struct sbx_err e = {0};
	if (sbx_json_parse_object(r->body, r->body_len, &j, &e) < 0) {
		serve_reply_error(o, 400, "Error when parsing request: the body is not a JSON object "
				  "(%s)", e.msg);
		return NULL;
	}
	return j;
}
