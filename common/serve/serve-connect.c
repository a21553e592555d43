/* serve-connect.c - the Connect protocol over HTTP/1.1 with the JSON codec,
 * as envd speaks it: unary calls (a JSON body, 200 or an error status with
 * {"code": "<connect code>", "message"}), server streams (one request
 * envelope; a 200 response of envelopes, the last one flagged 0x02 with
 * {} or {"error": ...}), and the proto3 JSON details (int64 as strings,
 * standard padded base64).
 *
 * Promises: a malformed envelope or body is answered invalid_argument and
 * never parsed past its declared length; an envelope longer than the body
 * is refused; a stream always ends with its end-of-stream envelope unless
 * the client went away. */
#include "serve-int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "doc.h"
#include "util.h"

static const struct { const char *code; int status; } codes[] = {
	{"canceled", 499}, {"unknown", 500}, {"invalid_argument", 400},
	{"deadline_exceeded", 504}, {"not_found", 404}, {"already_exists", 409},
	{"permission_denied", 403}, {"resource_exhausted", 429},
	{"failed_precondition", 400}, {"aborted", 409}, {"out_of_range", 400},
	{"unimplemented", 501}, {"internal", 500}, {"unavailable", 503},
	{"data_loss", 500}, {"unauthenticated", 401},
};

const char *serve_connect_code(const struct sbx_err *err)
{
	switch (err->kind) {
	case SBX_NOT_FOUND: case SBX_TERMINAL: return "not_found";
	case SBX_AUTHENTICATION: return "unauthenticated";
	case SBX_INVALID_REQUEST: return "invalid_argument";
	case SBX_UNSUPPORTED: return "unimplemented";
	case SBX_CONFLICT: return "failed_precondition";
	case SBX_CAPACITY: return "resource_exhausted";
	case SBX_TIMEOUT: return "deadline_exceeded";
	case SBX_UNAVAILABLE: return "unavailable";
	default: return "internal";
	}
}

static json_object *err_obj(const char *code, const char *msg)
{
	json_object *e = json_object_new_object();
	json_object_object_add(e, "code", json_object_new_string(code));
	json_object_object_add(e, "message", json_object_new_string(msg));
	return e;
}

int serve_connect_unary_ok(struct serve_out *o, json_object *msg)
{
	return serve_reply_json(o, 200, msg);
}

int serve_connect_unary_err(struct serve_out *o, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int status = 500;
	for (size_t i = 0; i < SBX_ARRAY_LEN(codes); i++)
		if (strcmp(codes[i].code, code) == 0)
			status = codes[i].status;
	return serve_reply_json(o, status, err_obj(code, msg));
}

static int frame(struct serve_out *o, unsigned char flag, json_object *msg)
{
	size_t n;
	const char *s = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	unsigned char h[5] = {flag, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
			      (unsigned char)(n >> 8), (unsigned char)n};
	int held = o->holding;
	serve_out_hold(o);
	int rc = serve_stream_write(o, h, 5) < 0 || serve_stream_write(o, s, n) < 0 ? -1 : 0;
	if (!held && serve_out_flush(o) < 0)
		rc = -1;
	json_object_put(msg);
	return rc;
}

int serve_connect_stream_begin(struct serve_out *o)
{
	return serve_stream_begin(o, 200, "application/connect+json");
}

int serve_connect_frame(struct serve_out *o, json_object *msg)
{
	return frame(o, 0, msg);
}

int serve_connect_end(struct serve_out *o, const char *code, const char *msg)
{
	int held = o->holding;
	serve_out_hold(o);               /* the head, if any, and the frame: one write */
	int rc = !o->head_done && serve_connect_stream_begin(o) < 0 ? -1 : 0;
	if (rc == 0) {
		json_object *e = json_object_new_object();
		if (code)
			json_object_object_add(e, "error", err_obj(code, msg ? msg : code));
		rc = frame(o, 2, e);
	}
	if (!held && serve_out_flush(o) < 0)
		rc = -1;
	return rc;
}

int serve_connect_from_err(struct serve_out *o, int streaming, const struct sbx_err *err)
{
	if (streaming)
		return serve_connect_end(o, serve_connect_code(err), err->msg);
	return serve_connect_unary_err(o, serve_connect_code(err), "%s", err->msg);
}

json_object *serve_connect_request(const struct serve_req *r, struct serve_out *o, int *streaming)
{
	const char *ct = serve_hdr(r, "content-type");
	*streaming = ct && strncmp(ct, "application/connect+json", 24) == 0;
	const char *body = r->body ? r->body : "";
	size_t len = r->body_len;
	if (*streaming) {
		const unsigned char *b = (const unsigned char *)body;
		if (len < 5 || (b[0] & ~1u) != 0) {
			serve_connect_end(o, "invalid_argument", "malformed envelope");
			return NULL;
		}
		if (b[0] & 1) {
			serve_connect_end(o, "unimplemented", "compressed envelopes are not supported");
			return NULL;
		}
		size_t n = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
		if (n > len - 5) {
			serve_connect_end(o, "invalid_argument", "the envelope is longer than the body");
			return NULL;
		}
		body += 5;
		len = n;
	} else if (ct && strncmp(ct, "application/json", 16) != 0) {
		serve_connect_unary_err(o, "invalid_argument", "unsupported content type");
		return NULL;
	}
	json_object *j;
	struct sbx_err e = {0};
	if (sbx_json_parse_object(body, len, &j, &e) < 0) {
		char why[sizeof(e.msg) + 64];
		snprintf(why, sizeof(why), "the message is not a JSON object (%s)", e.msg);
		if (*streaming)
			serve_connect_end(o, "invalid_argument", why);
		else
			serve_connect_unary_err(o, "invalid_argument", "%s", why);
		return NULL;
	}
	return j;
}

void serve_set_int64(json_object *o, const char *key, int64_t v)
{
	if (!v)
		return;
	char b[32];
	snprintf(b, sizeof(b), "%lld", (long long)v);
	json_object_object_add(o, key, json_object_new_string(b));
}

json_object *serve_json_arr(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}
