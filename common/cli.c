/* cli.c - see cli.h. */
#include "cli.h"

#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doc.h"
#include "util.h"

#ifndef SBX_VERSION
#define SBX_VERSION "0.1.0"
#endif

int sbx_cli_progress;

enum { KEY_HELP = -1000, KEY_VERSION, KEY_PROGRESS };

void sbx_cli_help(const struct sbx_cmd *cmd, FILE *out)
{
	fprintf(out, "Usage: %s %s\n%s\n", cmd->name, cmd->synopsis, cmd->summary);
	if (cmd->subcommands) {
		fprintf(out, "\nCommands:");
		for (const char *const *s = cmd->subcommands; *s; s++)
			fprintf(out, " %s", *s);
		fprintf(out, "\n");
	}
	fprintf(out, "\nOptions:\n");
	for (const struct sbx_opt *o = cmd->opts; o && o->name; o++) {
		char left[64];
		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(out, "  %-28s %s\n", left, o->help);
	}
	fprintf(out, "  %-28s %s\n", "    --progress", "print progress on stderr even when it is not a tty");
	fprintf(out, "  %-28s %s\n", "-h, --help", "show this help and exit");
	fprintf(out, "  %-28s %s\n", "    --version", "show the version and exit");
	fprintf(out, "\nSee %s(1) and sbx(7).\n", cmd->name);
}

int sbx_usage_err(struct sbx_err *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err->kind = SBX_INVALID_REQUEST;
	err->http_status = 0;
	snprintf(err->op, sizeof(err->op), "usage");
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	err->exit_status = SBX_EXIT_USAGE;
	return -1;
}

int sbx_cli_parse(const struct sbx_cmd *cmd, int argc, char **argv,
		  sbx_opt_fn fn, void *ctx, struct sbx_err *err)
{
	size_t n = 0;
	for (const struct sbx_opt *o = cmd->opts; o && o->name; o++)
		n++;
	struct option *lo = sbx_xcalloc(n + 4, sizeof(*lo));
	char *so = sbx_xmalloc(3 * n + 8);
	char *sp = so;
	*sp++ = cmd->stop_at_operand ? '+' : '-';
	*sp++ = ':';
	*sp++ = 'h';
	for (size_t i = 0; i < n; i++) {
		const struct sbx_opt *o = &cmd->opts[i];
		lo[i] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, 1000 + (int)i};
		if (o->short_name) {
			*sp++ = (char)o->short_name;
			if (o->arg)
				*sp++ = ':';
		}
	}
	*sp = '\0';
	lo[n] = (struct option){"help", no_argument, NULL, KEY_HELP};
	lo[n + 1] = (struct option){"version", no_argument, NULL, KEY_VERSION};
	lo[n + 2] = (struct option){"progress", no_argument, NULL, KEY_PROGRESS};
	sbx_cli_progress = isatty(2);

	/* '-' mode returns operands as option 1, so that options may follow
	 * a subcommand while operands keep their order. */
	int rc = 0, nops = 0;
	char **ops = sbx_xcalloc((size_t)argc + 1, sizeof(char *));
	opterr = 0;
	optind = 1;
	for (;;) {
		int li = -1;
		int c = getopt_long(argc, argv, so, lo, &li);
		if (c == -1)
			break;
		if (c == 1) {
			ops[nops++] = optarg;
			continue;
		}
		if (c == 'h' || c == KEY_HELP) {
			sbx_cli_help(cmd, stdout);
			exit(0);
		}
		if (c == KEY_VERSION) {
			printf("%s %s\n", cmd->name, SBX_VERSION);
			exit(0);
		}
		if (c == KEY_PROGRESS) {
			sbx_cli_progress = 1;
			continue;
		}
		if (c == '?') {
			rc = optopt ? sbx_usage_err(err, "unknown option -%c", optopt)
				    : sbx_usage_err(err, "unknown option %s", argv[optind - 1]);
			break;
		}
		if (c == ':') {
			rc = sbx_usage_err(err, "option %s needs a value", argv[optind - 1]);
			break;
		}
		const struct sbx_opt *o = NULL;
		if (c >= 1000 && c < 1000 + (int)n)
			o = &cmd->opts[c - 1000];
		for (size_t i = 0; !o && i < n; i++)
			if (cmd->opts[i].short_name == c)
				o = &cmd->opts[i];
		if (!o) {
			rc = sbx_usage_err(err, "unknown option");
			break;
		}
		if (fn(o->key, optarg, ctx, err) < 0) {
			if (!err->exit_status && err->kind == SBX_INVALID_REQUEST)
				err->exit_status = SBX_EXIT_USAGE;
			rc = -1;
			break;
		}
	}
	if (rc == 0) {
		/* Rebuild argv: collected operands first (in order), then the rest after "--". */
		int first = argc - nops - (argc - optind);
		for (int i = optind; i < argc; i++)
			ops[nops++] = argv[i];
		for (int i = 0; i < nops; i++)
			argv[first + i] = ops[i];
		rc = first;
	}
	free(ops);
	free(lo);
	free(so);
	return rc;
}

int sbx_cli_report(const char *program, const struct sbx_err *err)
{
	int st = sbx_err_exit_status(err);
	if (st == SBX_EXIT_IOERR && !err->msg[0])
		return st;
	fprintf(stderr, "%s: error: %s: %s\n", program,
		err->exit_status == SBX_EXIT_USAGE ? "usage" : sbx_kind_name(err->kind), err->msg);
	return st;
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
	if (rc >= 0)
		return 0;
	if (sbx_err_exit_status(err) == SBX_EXIT_IOERR && !err->msg[0])
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
	int status = 0;
	json_object *out = doc;
	if (rc < 0) {
		if (sbx_err_exit_status(&err) == SBX_EXIT_IOERR && !err.msg[0]) {
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

int sbx_cli_run_docs(const char *program, json_object *seed, sbx_doc_fn fn, void *ctx)
{
	ignore_sigpipe();
	if (seed) {
		int st = one_doc(program, seed, fn, ctx);
		return st < 0 ? SBX_EXIT_IOERR : st;
	}
	if (isatty(0)) {
		struct sbx_err err;
		sbx_usage_err(&err, "no input: pipe documents in, or name a sandbox (see --help)");
		return sbx_cli_report(program, &err);
	}
	size_t max = 0;
	const char *m = getenv("SBX_DOC_MAX");
	if (m)
		max = (size_t)strtoull(m, NULL, 10);
	struct sbx_doc_reader r;
	sbx_doc_reader_init(&r, 0, max);
	int first = 0;
	for (;;) {
		struct sbx_err err = {0};
		json_object *doc;
		int got = sbx_doc_read(&r, &doc, &err);
		if (got == 0)
			break;
		if (got < 0) {
			int st = sbx_cli_fail(program, NULL, &err);
			if (!first)
				first = st;
			break;
		}
		int st = one_doc(program, doc, fn, ctx);
		json_object_put(doc);
		if (st < 0) {
			first = first ? first : SBX_EXIT_IOERR;
			break;
		}
		if (st && !first)
			first = st;
	}
	sbx_doc_reader_free(&r);
	return first;
}
