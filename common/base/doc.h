/* doc.h - JSON documents on byte streams.
 *
 * A stream is zero or more JSON objects: NDJSON, or pretty-printed objects
 * one after another (whitespace between them is free).  The reader is
 * incremental: it never holds more than one document plus one read buffer,
 * and refuses a document larger than its limit.  Documents are read
 * strictly (RFC 8259, strings valid UTF-8): what json-c's tokener lets
 * through even in its strict mode (single quotes, NaN and Infinity, "1.",
 * "-01", raw control characters and invalid UTF-8 in strings) is refused
 * too.  Errors name the line and the byte offset.
 *
 * Every document carries a `sandbox` object (the handle) and whatever keys
 * earlier stages added; a stage adds its result under its own key and leaves
 * every other key untouched.  A document with an `error` key is an error
 * document: stages pass it through unchanged. */
#ifndef SBX_DOC_H
#define SBX_DOC_H

#include <stdio.h>
#include <json-c/json.h>

#include "err.h"

#define SBX_DOC_MAX_DEFAULT (16u << 20)   /* per document; SBX_DOC_MAX overrides */

/* The byte-level check that runs beside json-c's tokener (doc.c): the
 * state survives buffer boundaries, so a document split across reads is
 * judged as a whole. */
struct sbx_json_scan {
	long line;           /* 1-based line of the next byte */
	size_t off;          /* 0-based offset of the next byte in the input */
	int str;             /* string state: 0 outside, 1 in, 2 after '\\', 3..6 in \u */
	int num;             /* number state outside strings (0: not in one) */
	int u8_need;         /* UTF-8 continuation bytes still expected */
	unsigned char u8_lo, u8_hi;  /* the range the next one must fall in */
	int nul_escape;      /* the current document escapes a NUL */
	const char *why;     /* the first problem (a static phrase), or NULL */
	long why_line;
	size_t why_off;
};

struct sbx_doc_reader {
	int fd;
	size_t max;          /* per-document byte limit */
	json_tokener *tok;
	char buf[65536];
	size_t pos, len;
	struct sbx_json_scan sc;
	long doc_line;       /* line where the current document started */
	size_t doc_bytes;
	int eof;
};

void sbx_doc_reader_init(struct sbx_doc_reader *r, int fd, size_t max);
void sbx_doc_reader_free(struct sbx_doc_reader *r);
/* 1 and *doc (caller owns it) / 0 at a clean end / -1 with invalid_request
 * ("line N: ... (at offset B)", B counted in bytes from the start of the
 * input)
 * on JSON that RFC 8259 does not allow, a non-object, a truncated or
 * oversized document, a string with a NUL, a raw control character or
 * invalid UTF-8 (keys included).  After -1 the stream cannot be
 * resynchronised. */
int sbx_doc_read(struct sbx_doc_reader *r, json_object **doc, struct sbx_err *err);

/* Parse buf[0..len) as exactly one JSON object (whitespace around it is
 * allowed), with the same strict rules as sbx_doc_read: the one reader for
 * a document held in memory (a request body, a record).  0 and *out (caller
 * owns it), or -1 with invalid_request ("at offset B: ...") and *out NULL. */
int sbx_json_parse_object(const char *buf, size_t len, json_object **out, struct sbx_err *err);

/* NULL when every string and key in `o` is NUL-free, strict UTF-8; else
 * what is wrong (a static phrase).  sbx_doc_read refuses such documents. */
const char *sbx_json_text_problem(json_object *o);

/* Write one document and a newline, then flush.  A closed pipe (EPIPE) is
 * -1 with exit_status SBX_EXIT_IOERR, reason SBX_R_STDOUT_GONE and an
 * empty message: the caller ends quietly.  Any other write error is internal. */
int sbx_doc_write(FILE *out, json_object *doc, struct sbx_err *err);

/* Replace the file `path` by `j` as one line of plain JSON and a newline,
 * through sbx_write_file_atomic (mode, flags and promises are its). */
int sbx_json_write_file(const char *path, json_object *j, unsigned mode, unsigned flags,
			struct sbx_err *err);

/* Add {"error": {kind, message, program, op, retryable, exit_status
 * [, http_status]}} to `doc` (replacing any earlier error key). */
void sbx_doc_set_error(json_object *doc, const char *program, const struct sbx_err *err);
/* If `doc` is an error document, its exit status (>0); else 0. */
int sbx_doc_error_status(json_object *doc);
/* Recreate the sbx_err carried by an error document; -1 if none. */
int sbx_doc_get_error(json_object *doc, struct sbx_err *err);

/* Small typed accessors: NULL / dflt when missing or of another type. */
const char *sbx_json_str(json_object *o, const char *key);
json_object *sbx_json_obj(json_object *o, const char *key);
int64_t sbx_json_int(json_object *o, const char *key, int64_t dflt);
int sbx_json_bool(json_object *o, const char *key, int dflt);
/* Set (replacing) key to a new string / int / bool value. */
void sbx_json_set_str(json_object *o, const char *key, const char *val);
void sbx_json_set_int(json_object *o, const char *key, int64_t val);
void sbx_json_set_bool(json_object *o, const char *key, int val);
/* Whether bytes can travel as a JSON string a strict reader accepts: UTF-8
 * without NUL (a NUL makes a document the next stage refuses). */
int sbx_json_text_ok(const char *data, size_t len);
/* Bytes from a sandbox (a captured stream, a file name): under `key` as a
 * string when sbx_json_text_ok, else base64 under "<key>_base64" (and
 * nothing under key), so the document stays one a strict reader takes. */
void sbx_json_set_bytes(json_object *o, const char *key, const char *data, size_t len);
/* Get `key` as an object, creating an empty one when absent. */
json_object *sbx_json_child(json_object *o, const char *key);

#endif
