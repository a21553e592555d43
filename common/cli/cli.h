/* cli.h - what every program's main shares on the way out: the stderr
 * grammar, the error document, and the loop over documents.  (The way in,
 * the command line, is cliopt.h's.)
 *
 * This is the only part of libsbx that writes to stderr/stdout, and it does
 * so only on behalf of main: `PROGRAM: error: KIND: MESSAGE`, and
 * `PROGRAM: warning: MESSAGE` for what went wrong but did not fail. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <stdio.h>
#include <json-c/json.h>

#include "err.h"

/* Print `PROGRAM: error: KIND: MESSAGE` (nothing for a quiet EPIPE) and
 * return the exit status for err. */
int sbx_cli_report(const char *program, const struct sbx_err *err);
/* Print `PROGRAM: warning: MESSAGE`. */
void sbx_cli_warn(const char *program, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Say, as one warning (`PROGRAM: warning: KIND: MESSAGE`), the event
 * writes (events.h) that failed since the last call; nothing when none
 * did.  The document loop calls it after each document, sbx_cli_report and
 * sbx_cli_finish on the way out. */
void sbx_cli_warn_events(const char *program);
/* Report and also write an error document to stdout (for errors outside
 * the document loop, e.g. a bad flag value seen after parsing). */
int sbx_cli_fail(const char *program, json_object *input, const struct sbx_err *err);

/* The end of a program that is not a document loop: rc < 0 is reported
 * with an error document and its stderr line, except a quiet closed stdout
 * (74).  Returns the exit status. */
int sbx_cli_finish(const char *program, int rc, const struct sbx_err *err);

/* Per-document callback.  Add results to `doc` in place and return 0 (the
 * loop writes doc), 1 (the callback wrote what it wanted with sbx_emit;
 * the loop writes nothing), or -1 with err (the loop writes the input with
 * an error key, prints the stderr line, and goes on with the next one). */
typedef int (*sbx_doc_fn)(json_object *doc, void *ctx, struct sbx_err *err);

/* Run fn over the documents on stdin; or, when seed is non-NULL, over that
 * one document only (stdin is not read).  Error documents in the input pass
 * through unchanged.  Returns the exit status: 0 when every document
 * succeeded, else the status of the first failure (its own or inherited). */
int sbx_cli_run_docs(const char *program, json_object *seed, sbx_doc_fn fn, void *ctx);
/* The loop itself, for a program whose output is not documents
 * (sbx-exec --raw): fn gets each document read from stdin (SBX_DOC_MAX
 * applies; the loop frees the document) and returns 0 to go on or -1 to
 * stop.  Returns 0 at the end of the input, -1 with err when fn stopped it
 * or a document was malformed. */
int sbx_cli_each_doc(sbx_doc_fn fn, void *ctx, struct sbx_err *err);
/* -1 with the usage error "no input: ..." when stdin is a terminal (a
 * document loop with nothing piped in would wait forever). */
int sbx_cli_stdin_check(struct sbx_err *err);
/* Write an extra document to stdout from inside a callback. */
int sbx_emit(json_object *doc, struct sbx_err *err);

#endif
