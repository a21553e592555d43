/* doc.h - JSON documents on byte streams.
 *
 * A stream is zero or more JSON objects: NDJSON, or pretty-printed objects
 * one after another (whitespace between them is free).  The reader is
 * incremental: it never holds more than one document plus one read buffer,
 * and refuses a document larger than its limit.  Errors name the line.
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

struct sbx_doc_reader {
	int fd;
	size_t max;          /* per-document byte limit */
	json_tokener *tok;
	char buf[65536];
	size_t pos, len;
	long line;           /* 1-based line of the next unread byte */
	long doc_line;       /* line where the current document started */
	size_t doc_bytes;
	int scan;            /* string state of the \u0000 scan (doc.c) */
	char quote;          /* the quote of the string being scanned */
	int nul_escape;      /* the current document escapes a NUL */
	int eof;
};

void sbx_doc_reader_init(struct sbx_doc_reader *r, int fd, size_t max);
void sbx_doc_reader_free(struct sbx_doc_reader *r);
/* 1 and *doc (caller owns it) / 0 at a clean end / -1 with invalid_request
 * ("line N: ...") on bad JSON, a non-object, a truncated or oversized
 * document, a string with a NUL or with invalid UTF-8 (keys included).  After -1 the stream cannot be resynchronised. */
int sbx_doc_read(struct sbx_doc_reader *r, json_object **doc, struct sbx_err *err);

/* NULL when every string and key in `o` is NUL-free, strict UTF-8; else
 * what is wrong (a static phrase).  sbx_doc_read refuses such documents. */
const char *sbx_json_text_problem(json_object *o);

/* Write one document and a newline, then flush.  A closed pipe (EPIPE) is
 * -1 with exit_status SBX_EXIT_IOERR and an empty message: the caller ends
 * quietly.  Any other write error is internal. */
int sbx_doc_write(FILE *out, json_object *doc, struct sbx_err *err);

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
