/* doc.c - see doc.h. */
#include "doc.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

void sbx_doc_reader_init(struct sbx_doc_reader *r, int fd, size_t max)
{
	r->tok = NULL;
	r->fd = fd;
	r->max = max ? max : SBX_DOC_MAX_DEFAULT;
	r->tok = json_tokener_new_ex(64);
	r->scan = 0;
	r->quote = 0;
	r->nul_escape = 0;
	r->pos = r->len = 0;
	r->line = 1;
	r->doc_line = 1;
	r->doc_bytes = 0;
	r->eof = 0;
}

void sbx_doc_reader_free(struct sbx_doc_reader *r)
{
	if (r->tok)
		json_tokener_free(r->tok);
	r->tok = NULL;
}

/* Count lines, and spot a "\u0000" escape inside a string.  json-c keeps
 * such a value whole (sbx_json_text_problem sees it) but cuts an object key
 * at the NUL, so keys can only be checked here, on the raw bytes.  The scan
 * state survives buffer boundaries; json-c's single-quoted strings count.
 * (json-c's own JSON_TOKENER_VALIDATE_UTF8 is not used: it refuses a UTF-8
 * character split across two reads.) */
static void count_lines(struct sbx_doc_reader *r, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '\n')
			r->line++;
		switch (r->scan) {
		case 0:         /* outside strings */
			if (c == '"' || c == '\'') {
				r->quote = c;
				r->scan = 1;
			}
			break;
		case 1:         /* in a string */
			if (c == '\\')
				r->scan = 2;
			else if (c == r->quote)
				r->scan = 0;
			break;
		case 2:         /* after a backslash */
			r->scan = c == 'u' ? 3 : 1;
			break;
		default:        /* 3..6: after \u and (scan - 3) zeros */
			if (c != '0')
				r->scan = c == r->quote ? 0 : 1;
			else if (r->scan == 6) {
				r->nul_escape = 1;
				r->scan = 1;
			} else
				r->scan++;
			break;
		}
	}
}

static int fill(struct sbx_doc_reader *r, struct sbx_err *err)
{
	for (;;) {
		ssize_t n = read(r->fd, r->buf, sizeof(r->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "read", "reading documents");
		r->pos = 0;
		r->len = (size_t)n;
		if (n == 0)
			r->eof = 1;
		return 0;
	}
}

int sbx_doc_read(struct sbx_doc_reader *r, json_object **doc, struct sbx_err *err)
{
	*doc = NULL;
	for (;;) {
		if (r->pos == r->len) {
			if (r->eof || fill(r, err) < 0) {
				if (!r->eof)
					return -1;
				if (r->doc_bytes)
					return sbx_fail(err, SBX_INVALID_REQUEST, "read",
							"line %ld: document truncated at end of input",
							r->doc_line);
				return 0;
			}
			continue;
		}
		if (r->doc_bytes == 0) {
			/* Between documents: skip whitespace, remember where the next starts. */
			char c = r->buf[r->pos];
			if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
				if (c == '\n')
					r->line++;
				r->pos++;
				continue;
			}
			r->doc_line = r->line;
		}
		const char *p = r->buf + r->pos;
		size_t n = r->len - r->pos;
		json_object *o = json_tokener_parse_ex(r->tok, p, (int)n);
		enum json_tokener_error je = json_tokener_get_error(r->tok);
		if (je == json_tokener_continue) {
			count_lines(r, p, n);
			r->doc_bytes += n;
			r->pos = r->len;
			if (r->doc_bytes > r->max)
				return sbx_fail(err, SBX_INVALID_REQUEST, "read",
						"line %ld: document larger than %zu bytes",
						r->doc_line, r->max);
			continue;
		}
		if (je != json_tokener_success) {
			size_t used = json_tokener_get_parse_end(r->tok);
			count_lines(r, p, used < n ? used : n);
			return sbx_fail(err, SBX_INVALID_REQUEST, "read", "line %ld: invalid JSON: %s",
					r->line, json_tokener_error_desc(je));
		}
		size_t used = json_tokener_get_parse_end(r->tok);
		count_lines(r, p, used);
		r->pos += used;
		r->doc_bytes += used;
		json_tokener_reset(r->tok);
		size_t total = r->doc_bytes;
		int nul_escape = r->nul_escape;
		r->doc_bytes = 0;
		r->scan = 0;
		r->nul_escape = 0;
		if (total > r->max) {
			json_object_put(o);
			return sbx_fail(err, SBX_INVALID_REQUEST, "read",
					"line %ld: document larger than %zu bytes", r->doc_line, r->max);
		}
		if (!json_object_is_type(o, json_type_object)) {
			json_object_put(o);
			return sbx_fail(err, SBX_INVALID_REQUEST, "read",
					"line %ld: a document must be a JSON object", r->doc_line);
		}
		const char *why = nul_escape ? "a string holds a NUL character (\\u0000)"
					     : sbx_json_text_problem(o);
		if (why) {
			json_object_put(o);
			return sbx_fail(err, SBX_INVALID_REQUEST, "read", "line %ld: %s",
					r->doc_line, why);
		}
		*doc = o;
		return 1;
	}
}

static const char *text_problem(const char *s, size_t n)
{
	if (memchr(s, '\0', n))
		return "a string holds a NUL character (\\u0000)";
	if (!sbx_utf8_valid(s, n))
		return "a string is not valid UTF-8";
	return NULL;
}

/* Every id, name and path the programs read from a document is handed on as
 * a C string, so a NUL inside a JSON string would silently cut it ("a\u0000b"
 * counted as "a"); and a string that is not UTF-8 would be written back raw,
 * which strict readers refuse.  Rather than trust each accessor, a document
 * with such a string anywhere (keys included) is refused as a whole. */
const char *sbx_json_text_problem(json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_string:
		return text_problem(json_object_get_string(o), (size_t)json_object_get_string_len(o));
	case json_type_object: {
		json_object_object_foreach(o, k, v) {
			const char *why = text_problem(k, strlen(k));
			if (!why)
				why = sbx_json_text_problem(v);
			if (why)
				return why;
		}
		return NULL;
	}
	case json_type_array: {
		size_t n = json_object_array_length(o);
		for (size_t i = 0; i < n; i++) {
			const char *why = sbx_json_text_problem(json_object_array_get_idx(o, i));
			if (why)
				return why;
		}
		return NULL;
	}
	default:
		return NULL;
	}
}

int sbx_doc_write(FILE *out, json_object *doc, struct sbx_err *err)
{
	const char *s = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE);
	errno = 0;
	if (fputs(s, out) == EOF || fputc('\n', out) == EOF || fflush(out) == EOF) {
		if (errno == EPIPE) {
			sbx_fail(err, SBX_INTERNAL, "write", "%s", "");
			err->msg[0] = '\0';
			err->exit_status = SBX_EXIT_IOERR;
			return -1;
		}
		return sbx_fail_errno(err, SBX_INTERNAL, "write", "writing a document");
	}
	return 0;
}

void sbx_doc_set_error(json_object *doc, const char *program, const struct sbx_err *err)
{
	json_object *e = json_object_new_object();
	json_object_object_add(e, "kind", json_object_new_string(sbx_kind_name(err->kind)));
	json_object_object_add(e, "message", json_object_new_string(err->msg));
	json_object_object_add(e, "program", json_object_new_string(program));
	json_object_object_add(e, "op", json_object_new_string(err->op));
	json_object_object_add(e, "retryable", json_object_new_boolean(sbx_kind_retryable(err->kind)));
	json_object_object_add(e, "exit_status", json_object_new_int(sbx_err_exit_status(err)));
	if (err->http_status)
		json_object_object_add(e, "http_status", json_object_new_int(err->http_status));
	json_object_object_add(doc, "error", e);
}

int sbx_doc_get_error(json_object *doc, struct sbx_err *err)
{
	json_object *e = sbx_json_obj(doc, "error");
	if (!e)
		return -1;
	int kind = sbx_kind_from_name(sbx_json_str(e, "kind"));
	const char *msg = sbx_json_str(e, "message");
	const char *op = sbx_json_str(e, "op");
	sbx_fail(err, kind > 0 ? kind : SBX_INTERNAL, op, "%s", msg ? msg : "error document");
	err->http_status = (int)sbx_json_int(e, "http_status", 0);
	int64_t st = sbx_json_int(e, "exit_status", 0);
	err->exit_status = st > 0 && st < 256 ? (int)st : 0;
	return 0;
}

int sbx_doc_error_status(json_object *doc)
{
	struct sbx_err err;
	json_object *e;
	if (!json_object_object_get_ex(doc, "error", &e))
		return 0;
	if (sbx_doc_get_error(doc, &err) < 0)
		return SBX_EXIT_DATAERR;   /* "error" that is not an object: still an error */
	int st = sbx_err_exit_status(&err);
	return st ? st : SBX_EXIT_SOFTWARE;
}

const char *sbx_json_str(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

json_object *sbx_json_obj(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

int64_t sbx_json_int(json_object *o, const char *key, int64_t dflt)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v))
		return dflt;
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	if (json_object_is_type(v, json_type_string)) {
		char *end;
		const char *s = json_object_get_string(v);
		long long x = strtoll(s, &end, 10);
		if (*s && !*end)
			return x;
	}
	return dflt;
}

int sbx_json_bool(json_object *o, const char *key, int dflt)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_boolean))
		return dflt;
	return json_object_get_boolean(v);
}

void sbx_json_set_str(json_object *o, const char *key, const char *val)
{
	json_object_object_add(o, key, val ? json_object_new_string(val) : NULL);
}

void sbx_json_set_int(json_object *o, const char *key, int64_t val)
{
	json_object_object_add(o, key, json_object_new_int64(val));
}

void sbx_json_set_bool(json_object *o, const char *key, int val)
{
	json_object_object_add(o, key, json_object_new_boolean(val));
}

int sbx_json_text_ok(const char *data, size_t len)
{
	return !memchr(data, '\0', len) && sbx_utf8_valid(data, len);
}

void sbx_json_set_bytes(json_object *o, const char *key, const char *data, size_t len)
{
	if (!data)
		return;
	if (sbx_json_text_ok(data, len)) {
		json_object_object_add(o, key, json_object_new_string_len(data, (int)len));
		return;
	}
	size_t n;
	SBX_AUTOFREE char *b64 = sbx_base64(data, len, &n);
	SBX_AUTOFREE char *k = sbx_xasprintf("%s_base64", key);
	json_object_object_add(o, k, json_object_new_string_len(b64, (int)n));
}

json_object *sbx_json_child(json_object *o, const char *key)
{
	json_object *v = sbx_json_obj(o, key);
	if (!v) {
		v = json_object_new_object();
		json_object_object_add(o, key, v);
	}
	return v;
}
