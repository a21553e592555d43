/* doc.c - see doc.h. */
#include "doc.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* json-c's strict mode, which alone refuses trailing commas, bare words and
 * more, and would refuse the next document in the same buffer (the reader
 * and sbx_json_parse_object judge what follows themselves). */
static json_tokener *strict_tokener(void)
{
	json_tokener *t = json_tokener_new_ex(64);
	if (t)
		json_tokener_set_flags(t, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	return t;
}

void sbx_doc_reader_init(struct sbx_doc_reader *r, int fd, size_t max)
{
	memset(&r->sc, 0, sizeof(r->sc));
	r->sc.line = 1;
	r->fd = fd;
	r->max = max ? max : SBX_DOC_MAX_DEFAULT;
	r->tok = strict_tokener();
	r->pos = r->len = 0;
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

/* Forget the state of one document; line and offset carry on. */
static void scan_reset(struct sbx_json_scan *s)
{
	long line = s->line;
	size_t off = s->off;
	memset(s, 0, sizeof(*s));
	s->line = line;
	s->off = off;
}

enum { N_NONE, N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

/* One byte of a number (s->num != N_NONE): 1 when it belongs to the
 * number, 0 when it ends it (the number was complete), -1 (s->why set)
 * when the number is not one RFC 8259 allows. */
static int scan_number(struct sbx_json_scan *s, unsigned char c)
{
	int digit = c >= '0' && c <= '9';
	switch (s->num) {
	case N_MINUS:
		if (digit) {
			s->num = c == '0' ? N_ZERO : N_INT;
			return 1;
		}
		s->why = "invalid JSON: a '-' not followed by a digit (NaN and Infinity are not JSON)";
		return -1;
	case N_ZERO:
		if (digit) {
			s->why = "invalid JSON: a number with a leading zero";
			return -1;
		}
		/* fall through */
	case N_INT:
		if (digit)
			return 1;
		if (c == '.')
			s->num = N_DOT;
		else if (c == 'e' || c == 'E')
			s->num = N_E;
		else
			break;
		return 1;
	case N_DOT:
		if (digit) {
			s->num = N_FRAC;
			return 1;
		}
		s->why = "invalid JSON: a '.' in a number not followed by a digit";
		return -1;
	case N_FRAC:
		if (digit)
			return 1;
		if (c == 'e' || c == 'E') {
			s->num = N_E;
			return 1;
		}
		break;
	case N_E:
		if (c == '+' || c == '-') {
			s->num = N_ESIGN;
			return 1;
		}
		/* fall through */
	case N_ESIGN:
		if (digit) {
			s->num = N_EXP;
			return 1;
		}
		s->why = "invalid JSON: an exponent without digits";
		return -1;
	case N_EXP:
		if (digit)
			return 1;
		break;
	}
	s->num = N_NONE;
	return 0;
}

/* One byte inside a string (s->str == 1): UTF-8 (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), no raw control character.
 * 0, or -1 with s->why set. */
static int scan_string_byte(struct sbx_json_scan *s, unsigned char c)
{
	if (s->u8_need) {
		if (c < s->u8_lo || c > s->u8_hi) {
			s->why = "a string is not valid UTF-8";
			return -1;
		}
		s->u8_need--;
		s->u8_lo = 0x80;
		s->u8_hi = 0xbf;
		return 0;
	}
	if (c < 0x20) {
		s->why = "invalid JSON: a control character in a string (RFC 8259 wants it escaped)";
		return -1;
	}
	if (c < 0x80)
		return 0;
	s->u8_lo = 0x80;
	s->u8_hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		s->u8_need = 1;
	else if (c >= 0xe0 && c <= 0xef) {
		s->u8_need = 2;
		if (c == 0xe0)
			s->u8_lo = 0xa0;        /* no overlong forms */
		if (c == 0xed)
			s->u8_hi = 0x9f;        /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		s->u8_need = 3;
		if (c == 0xf0)
			s->u8_lo = 0x90;
		if (c == 0xf4)
			s->u8_hi = 0x8f;        /* nothing above U+10FFFF */
	} else {
		s->why = "a string is not valid UTF-8";
		return -1;
	}
	return 0;
}

/* Scan n bytes of one document beside the tokener: count lines and
 * offsets, spot a "\u0000" escape (json-c keeps such a value whole, so
 * sbx_json_text_problem sees it, but cuts an object key at the NUL, so keys
 * can only be checked here), and refuse what json-c's strict mode lets
 * through: single-quoted strings, bare words other than true/false/null
 * (NaN, Infinity), numbers RFC 8259 does not allow, raw control characters
 * and invalid UTF-8 in strings.  The tokener still judges the structure.
 * Returns the count of bytes scanned: n, or the index of the first bad byte
 * (s->why, why_line and why_off then name it).  (json-c's own
 * JSON_TOKENER_VALIDATE_UTF8 is not used: it refuses a UTF-8 character
 * split across two reads.) */
static size_t scan(struct sbx_json_scan *s, const char *p, size_t n)
{
	size_t i;
	for (i = 0; i < n && !s->why; i++, s->off++) {
		unsigned char c = (unsigned char)p[i];
		if (s->str == 0 && s->num && scan_number(s, c))
			goto next;      /* part of a number, or s->why */
		switch (s->str) {
		case 0:         /* outside strings */
			if (c == '"')
				s->str = 1;
			else if (c == '-')
				s->num = N_MINUS;
			else if (c >= '0' && c <= '9')
				s->num = c == '0' ? N_ZERO : N_INT;
			else if (c == '\'')
				s->why = "invalid JSON: a single-quoted string (JSON strings take '\"')";
			else if (!strchr("{}[]:, \t\r\ntruefalsn", c) || !c)
				s->why = "invalid JSON: a character JSON does not allow outside a string";
			break;
		case 1:         /* in a string */
			if (s->u8_need || c < 0x20 || c >= 0x80)
				scan_string_byte(s, c);
			else if (c == '\\')
				s->str = 2;
			else if (c == '"')
				s->str = 0;
			break;
		case 2:         /* after a backslash */
			s->str = c == 'u' ? 3 : 1;
			break;
		default:        /* 3..6: after \u and (str - 3) zeros */
			if (c != '0')
				s->str = c == '"' ? 0 : 1;
			else if (s->str == 6) {
				s->nul_escape = 1;
				s->str = 1;
			} else
				s->str++;
			break;
		}
next:
		if (s->why)
			break;
		if (c == '\n')
			s->line++;
	}
	if (s->why) {
		s->why_line = s->line;
		s->why_off = s->off;
	}
	return i;
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

/* A whole document the tokener returned (o, its first line doc_line):
 * refused unless an object whose strings are text.  Takes o. */
static int finish_doc(json_object *o, const struct sbx_json_scan *s, const char *where,
		      json_object **doc, struct sbx_err *err)
{
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return sbx_fail(err, SBX_INVALID_REQUEST, "read", "%s: a document must be a JSON object",
				where);
	}
	const char *why = s->nul_escape ? "a string holds a NUL character (\\u0000)"
					: sbx_json_text_problem(o);
	if (why) {
		json_object_put(o);
		return sbx_fail(err, SBX_INVALID_REQUEST, "read", "%s: %s", where, why);
	}
	*doc = o;
	return 0;
}

int sbx_doc_read(struct sbx_doc_reader *r, json_object **doc, struct sbx_err *err)
{
	struct sbx_json_scan *s = &r->sc;
	*doc = NULL;
	for (;;) {
		if (r->pos == r->len) {
			if (r->eof || fill(r, err) < 0) {
				if (!r->eof)
					return -1;
				if (r->doc_bytes)
					return sbx_fail(err, SBX_INVALID_REQUEST, "read",
							"line %ld: document truncated at end of input (at offset %zu)",
							r->doc_line, s->off);
				return 0;
			}
			continue;
		}
		if (r->doc_bytes == 0) {
			/* Between documents: skip whitespace, remember where the next starts. */
			char c = r->buf[r->pos];
			if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
				if (c == '\n')
					s->line++;
				s->off++;
				r->pos++;
				continue;
			}
			r->doc_line = s->line;
		}
		const char *p = r->buf + r->pos;
		size_t n = r->len - r->pos;
		json_object *o = json_tokener_parse_ex(r->tok, p, (int)n);
		enum json_tokener_error je = json_tokener_get_error(r->tok);
		size_t used = je == json_tokener_continue ? n : json_tokener_get_parse_end(r->tok);
		if (scan(s, p, used) < used) {
			json_object_put(o);
			return sbx_fail(err, SBX_INVALID_REQUEST, "read", "line %ld: %s (at offset %zu)",
					s->why_line, s->why, s->why_off);
		}
		if (je == json_tokener_continue) {
			r->doc_bytes += n;
			r->pos = r->len;
			if (r->doc_bytes > r->max)
				return sbx_fail(err, SBX_INVALID_REQUEST, "read",
						"line %ld: document larger than %zu bytes",
						r->doc_line, r->max);
			continue;
		}
		if (je != json_tokener_success) {
			/* The byte the tokener stopped at: the scan's phrase when it
			 * has one, json-c's otherwise; the same line and offset. */
			long line = s->line;
			size_t bad = s->off;
			if (used < n && scan(s, p + used, 1) == 0)
				return sbx_fail(err, SBX_INVALID_REQUEST, "read", "line %ld: %s (at offset %zu)",
						line, s->why, bad);
			return sbx_fail(err, SBX_INVALID_REQUEST, "read",
					"line %ld: invalid JSON: %s (at offset %zu)", line,
					json_tokener_error_desc(je), bad);
		}
		r->pos += used;
		r->doc_bytes += used;
		json_tokener_reset(r->tok);
		size_t total = r->doc_bytes;
		struct sbx_json_scan done = *s;
		r->doc_bytes = 0;
		scan_reset(s);
		if (total > r->max) {
			json_object_put(o);
			return sbx_fail(err, SBX_INVALID_REQUEST, "read",
					"line %ld: document larger than %zu bytes", r->doc_line, r->max);
		}
		char where[64];
		snprintf(where, sizeof(where), "line %ld", r->doc_line);
		if (finish_doc(o, &done, where, doc, err) < 0)
			return -1;
		return 1;
	}
}

int sbx_json_parse_object(const char *buf, size_t len, json_object **out, struct sbx_err *err)
{
	struct sbx_json_scan s = {.line = 1};
	*out = NULL;
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
		i++;
	if (i == len)
		return sbx_fail(err, SBX_INVALID_REQUEST, "read", "at offset %zu: no JSON document", len);
	if (len - i > INT32_MAX)
		return sbx_fail(err, SBX_INVALID_REQUEST, "read", "at offset %zu: document too large", i);
	s.off = i;
	json_tokener *tok = strict_tokener();
	if (!tok)
		return sbx_fail(err, SBX_INTERNAL, "read", "out of memory");
	json_object *o = json_tokener_parse_ex(tok, buf + i, (int)(len - i));
	enum json_tokener_error je = json_tokener_get_error(tok);
	size_t used = je == json_tokener_continue ? len - i : json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (scan(&s, buf + i, used) < used) {
		json_object_put(o);
		return sbx_fail(err, SBX_INVALID_REQUEST, "read", "at offset %zu: %s",
				s.why_off, s.why);
	}
	if (je == json_tokener_continue)
		return sbx_fail(err, SBX_INVALID_REQUEST, "read",
				"at offset %zu: document truncated at end of input", len);
	if (je != json_tokener_success) {
		size_t bad = s.off;
		if (i + used < len && scan(&s, buf + i + used, 1) == 0)
			return sbx_fail(err, SBX_INVALID_REQUEST, "read", "at offset %zu: %s", bad, s.why);
		return sbx_fail(err, SBX_INVALID_REQUEST, "read", "at offset %zu: invalid JSON: %s", bad,
				json_tokener_error_desc(je));
	}
	for (size_t j = i + used; j < len; j++)
		if (buf[j] != ' ' && buf[j] != '\t' && buf[j] != '\r' && buf[j] != '\n') {
			json_object_put(o);
			return sbx_fail(err, SBX_INVALID_REQUEST, "read",
					"at offset %zu: invalid JSON: more after the document", j);
		}
	char where[64];
	snprintf(where, sizeof(where), "at offset %zu", i);
	return finish_doc(o, &s, where, out, err);
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
			sbx_fail_reason(err, SBX_INTERNAL, SBX_R_STDOUT_GONE, "write", "%s", "");
			err->exit_status = SBX_EXIT_IOERR;
			return -1;
		}
		return sbx_fail_errno(err, SBX_INTERNAL, "write", "writing a document");
	}
	return 0;
}

int sbx_json_write_file(const char *path, json_object *j, unsigned mode, unsigned flags,
			struct sbx_err *err)
{
	size_t n;
	const char *s = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN, &n);
	SBX_AUTOFREE char *line = sbx_xasprintf("%s\n", s);
	return sbx_write_file_atomic(path, line, n + 1, mode, flags, err);
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
