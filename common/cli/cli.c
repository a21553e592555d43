/* cli.c - see cli.h. */
#include "cli.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cliopt.h"
#include "doc.h"
#include "events.h"
#include "util.h"

void sbx_cli_warn_events(const char *program)
{
	static unsigned long said;
	unsigned long n = sbx_events_failed();
	if (n <= said)
		return;
	struct sbx_err w = *sbx_events_last_error();
	if (n - said > 1)
		sbx_err_prefix(&w, "%lu event writes failed, the last", n - said);
	said = n;
	sbx_cli_warn(program, "%s: %s", sbx_kind_name(w.kind), w.msg);
}

int sbx_cli_report(const char *program, const struct sbx_err *err)
{
	sbx_cli_warn_events(program);
	int st = sbx_err_exit_status(err);
	if (err->reason == SBX_R_STDOUT_GONE)
		return st;
	fprintf(stderr, "%s: error: %s: %s\n", program,
		err->exit_status == SBX_EXIT_USAGE ? "usage" : sbx_kind_name(err->kind), err->msg);
	return st;
}

void sbx_cli_warn(const char *program, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: warning: ", program);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int sbx_emit(json_object *doc, struct sbx_err *err)
{
	return sbx_doc_write(stdout, doc, err);
}

int sbx_cli_fail(const char *program, json_object *input, const struct sbx_err *err)
{
	struct sbx_err werr = {0};
	json_object *doc = input ? json_object_get(input) : json_object_new_object();
	sbx_doc_set_error(doc, program, err);
	sbx_doc_write(stdout, doc, &werr);
	json_object_put(doc);
	return sbx_cli_report(program, err);
}

int sbx_cli_finish(const char *program, int rc, const struct sbx_err *err)
{
	sbx_cli_warn_events(program);
	if (rc >= 0)
		return 0;
	if (err->reason == SBX_R_STDOUT_GONE)
		return SBX_EXIT_IOERR;
	return sbx_cli_fail(program, NULL, err);
}

static void ignore_sigpipe(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* One document: pass an error document through, else run fn on it and
 * write the result (or the input with an error).  Returns the exit status
 * this document contributes, or -1 when stdout is gone. */
static int one_doc(const char *program, json_object *doc, sbx_doc_fn fn, void *ctx)
{
	struct sbx_err err = {0};
	int inherited = sbx_doc_error_status(doc);
	if (inherited) {
		if (sbx_doc_write(stdout, doc, &err) < 0)
			return sbx_err_exit_status(&err) == SBX_EXIT_IOERR ? -1 : sbx_cli_report(program, &err);
		return inherited;
	}
	json_object *orig = NULL;
	if (json_object_deep_copy(doc, &orig, NULL) < 0)
		orig = NULL;
	int rc = fn(doc, ctx, &err);
	sbx_cli_warn_events(program);
	int status = 0;
	json_object *out = doc;
	if (rc < 0) {
		if (err.reason == SBX_R_STDOUT_GONE) {
			json_object_put(orig);
			return -1;
		}
		out = orig ? orig : doc;
		sbx_doc_set_error(out, program, &err);
		status = sbx_cli_report(program, &err);
	}
	if (rc != 1) {
		struct sbx_err werr = {0};
		if (sbx_doc_write(stdout, out, &werr) < 0) {
			json_object_put(orig);
			if (sbx_err_exit_status(&werr) == SBX_EXIT_IOERR)
				return -1;
			return sbx_cli_report(program, &werr);
		}
	}
	json_object_put(orig);
	return status;
}

int sbx_cli_stdin_check(struct sbx_err *err)
{
	if (isatty(0))
		return sbx_usage_err(err, "no input: pipe documents in, or name a sandbox (see --help)");
	return 0;
}

int sbx_cli_each_doc(sbx_doc_fn fn, void *ctx, struct sbx_err *err)
{
	size_t max = 0;
	const char *m = getenv("SBX_DOC_MAX");
	if (m)
		max = (size_t)strtoull(m, NULL, 10);
	struct sbx_doc_reader r;
	sbx_doc_reader_init(&r, 0, max);
	int rc = 0;
	for (;;) {
		json_object *doc;
		int got = sbx_doc_read(&r, &doc, err);
		if (got <= 0) {
			rc = got;
			break;
		}
		rc = fn(doc, ctx, err);
		json_object_put(doc);
		if (rc < 0)
			break;
	}
	sbx_doc_reader_free(&r);
	return rc < 0 ? -1 : 0;
}

struct run_ctx {
	const char *program;
	sbx_doc_fn fn;
	void *ctx;
	int first;             /* the first failure's status */
	int stopped;           /* stdout is gone */
};

static int run_step(json_object *doc, void *vctx, struct sbx_err *err)
{
	(void)err;
	struct run_ctx *c = vctx;
	int st = one_doc(c->program, doc, c->fn, c->ctx);
	if (st < 0) {
		c->first = c->first ? c->first : SBX_EXIT_IOERR;
		c->stopped = 1;
		return -1;
	}
	if (st && !c->first)
		c->first = st;
	return 0;
}

int sbx_cli_run_docs(const char *program, json_object *seed, sbx_doc_fn fn, void *ctx)
{
	ignore_sigpipe();
	if (seed) {
		int st = one_doc(program, seed, fn, ctx);
		return st < 0 ? SBX_EXIT_IOERR : st;
	}
	struct sbx_err err = {0};
	if (sbx_cli_stdin_check(&err) < 0)
		return sbx_cli_report(program, &err);
	struct run_ctx c = {.program = program, .fn = fn, .ctx = ctx};
	if (sbx_cli_each_doc(run_step, &c, &err) < 0 && !c.stopped) {
		int st = sbx_cli_fail(program, NULL, &err);    /* malformed input */
		if (!c.first)
			c.first = st;
	}
	return c.first;
}
