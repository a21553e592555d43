/* cli.h - what every program's main shares: the option table (the one
 * source of --help, the man page check and the completions), the stderr
 * grammar, and the loop over documents.
 *
 * This is the only part of libsbx that writes to stderr/stdout, and it does
 * so only on behalf of main: `PROGRAM: error: KIND: MESSAGE`. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <stdio.h>
#include <json-c/json.h>

#include "err.h"

struct sbx_opt {
	const char *name;    /* long name, without "--" */
	int short_name;      /* 0 when none */
	const char *arg;     /* NULL for a switch, else the placeholder ("ID") */
	const char *help;    /* one line */
	int key;             /* handed to the option callback */
};

struct sbx_cmd {
	const char *name;                /* "sbx-exec" */
	const char *synopsis;            /* after the name: "[OPTIONS] -- COMMAND [ARG...]" */
	const char *summary;             /* one sentence */
	const struct sbx_opt *opts;      /* terminated by {0} */
	const char *const *subcommands;  /* NULL-terminated, or NULL */
	int stop_at_operand;             /* options end at the first operand (exec-style) */
};

typedef int (*sbx_opt_fn)(int key, const char *arg, void *ctx, struct sbx_err *err);

/* Parse argv against cmd->opts, calling fn for each option.  --help and
 * --version are handled here (print, exit 0).  Returns the index of the
 * first operand, or -1 with an error whose exit_status is 64. */
int sbx_cli_parse(const struct sbx_cmd *cmd, int argc, char **argv,
		  sbx_opt_fn fn, void *ctx, struct sbx_err *err);
void sbx_cli_help(const struct sbx_cmd *cmd, FILE *out);
/* A usage error value (kind invalid_request, exit 64). */
int sbx_usage_err(struct sbx_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print `PROGRAM: error: KIND: MESSAGE` (nothing for a quiet EPIPE) and
 * return the exit status for err. */
int sbx_cli_report(const char *program, const struct sbx_err *err);
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
/* Write an extra document to stdout from inside a callback. */
int sbx_emit(json_object *doc, struct sbx_err *err);

/* True when progress may be printed (stderr is a tty, or --progress). */
extern int sbx_cli_progress;

#endif
