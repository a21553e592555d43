/* cliopt.c - the command line as a table: parse, check, --help (see
 * cliopt.h). */
#include "cliopt.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#ifndef SBX_VERSION
#define SBX_VERSION "0.1.0"
#endif

int sbx_cli_progress;

enum { KEY_HELP = -1000, KEY_VERSION, KEY_PROGRESS };

/* The row of a program without subcommands. */
static const struct sbx_sub no_subs[] = {{"", "", 0, 0, NULL, NULL}, {0}};

static const struct sbx_sub *rows(const struct sbx_cmd *cmd)
{
	return cmd->subs ? cmd->subs : no_subs;
}

static int has_words(const struct sbx_cmd *cmd)
{
	for (const struct sbx_sub *s = rows(cmd); s->name; s++)
		if (*s->name)
			return 1;
	return 0;
}

static int applies(const struct sbx_opt *o, int sub)
{
	return !o->subs || (o->subs & SBX_SUB(sub));
}

/* "--a --b": the options of row `sub` that do not go with every row. */
static void list_opts(const struct sbx_cmd *cmd, int sub, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (const struct sbx_opt *o = cmd->opts; o && o->name && n < len; o++)
		if (o->subs & SBX_SUB(sub))
			n += (size_t)snprintf(buf + n, len - n, "%s--%s", n ? " " : "", o->name);
}

static void help_opt(FILE *out, const char *left, const char *help)
{
	fprintf(out, "  %-28s %s\n", left, help);
}

/* --help: the synopsis, the subcommand rows each with the options that go
 * with it only ("options:") and those it needs ("needs:"), then every
 * option.  tools/gen-completions reads this layout. */
void sbx_cli_help(const struct sbx_cmd *cmd, FILE *out)
{
	fprintf(out, "Usage: %s %s\n%s\n", cmd->name, cmd->synopsis, cmd->summary);
	if (has_words(cmd)) {
		fprintf(out, "\nCommands (each with the options that not every command takes):\n");
		int i = 0;
		for (const struct sbx_sub *s = rows(cmd); s->name; s++, i++) {
			char left[64], list[512];
			snprintf(left, sizeof(left), "%s%s%s", *s->name ? s->name : "(none)",
				 *s->args ? " " : "", s->args);
			help_opt(out, left, s->help ? s->help : "");
			list_opts(cmd, i, list, sizeof(list));
			if (*list)
				fprintf(out, "  %-28s options: %s\n", "", list);
			if (s->needs)
				fprintf(out, "  %-28s needs: --%s\n", "", s->needs);
		}
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
		help_opt(out, left, o->help);
	}
	help_opt(out, "    --progress", "print progress on stderr even when it is not a tty");
	help_opt(out, "-h, --help", "show this help and exit");
	help_opt(out, "    --version", "show the version and exit");
	fprintf(out, "\nSee %s(1) and sbx(7).\n", cmd->name);
}

int sbx_usage_err(struct sbx_err *err, const char *fmt, ...)
{
	/* Formatted apart first: the arguments may be err->msg itself
	 * ("--grace: %s", err->msg). */
	char msg[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sbx_fail(err, SBX_INVALID_REQUEST, "usage", "%s", msg);
	err->exit_status = SBX_EXIT_USAGE;
	return -1;
}

/* getopt_long's tables for cmd: option i of the table answers 1000 + i. */
static void getopt_tables(const struct sbx_cmd *cmd, size_t n, struct option **lo_out,
			  char **so_out)
{
	struct option *lo = sbx_xcalloc(n + 4, sizeof(*lo));
	char *so = sbx_xmalloc(3 * n + 8);
	char *sp = so;
	*sp++ = cmd->stop_at_operand ? '+' : '-';
	*sp++ = ':';
	*sp++ = 'h';
	for (size_t i = 0; i < n; i++) {
		const struct sbx_opt *o = &cmd->opts[i];
		lo[i] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
					1000 + (int)i};
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
	*lo_out = lo;
	*so_out = so;
}

/* The option of the table that getopt answered with c, or NULL. */
static const struct sbx_opt *opt_of(const struct sbx_cmd *cmd, size_t n, int c)
{
	if (c >= 1000 && c < 1000 + (int)n)
		return &cmd->opts[c - 1000];
	for (size_t i = 0; i < n; i++)
		if (cmd->opts[i].short_name == c)
			return &cmd->opts[i];
	return NULL;
}

/* One option as given, for the callback once the row is known. */
struct given {
	const struct sbx_opt *opt;
	const char *arg;
};

/* Run getopt over argv, recording each option in given[] (in order) and
 * marking seen[i] for option i.  Operands are moved to the front of what
 * follows argv[0], in order (getopt's '-' mode hands them out one by one,
 * so that options may follow a subcommand); *first is the index of the
 * first.  Exits for --help and --version. */
static int scan(const struct sbx_cmd *cmd, size_t n, int argc, char **argv,
		struct given *given, char *seen, int *first, struct sbx_err *err)
{
	struct option *lo;
	char *so;
	getopt_tables(cmd, n, &lo, &so);
	sbx_cli_progress = isatty(2);
	int rc = 0, nops = 0;
	char **ops = sbx_xcalloc((size_t)argc + 1, sizeof(char *));
	opterr = 0;
	optind = 1;
	for (;;) {
		int c = getopt_long(argc, argv, so, lo, NULL);
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
		const struct sbx_opt *o = opt_of(cmd, n, c);
		if (!o) {
			rc = sbx_usage_err(err, "unknown option");
			break;
		}
		seen[o - cmd->opts] = 1;
		*given++ = (struct given){o, optarg};
	}
	if (rc == 0) {
		/* Collected operands first (in order), then the rest after "--". */
		*first = argc - nops - (argc - optind);
		for (int i = optind; i < argc; i++)
			ops[nops++] = argv[i];
		for (int i = 0; i < nops; i++)
			argv[*first + i] = ops[i];
	}
	free(ops);
	free(lo);
	free(so);
	return rc;
}

/* "put and mkdir", "cat, get and collect": the rows in mask. */
static void name_rows(const struct sbx_cmd *cmd, unsigned mask, char *buf, size_t len)
{
	int total = 0, k = 0, i = 0;
	for (const struct sbx_sub *s = rows(cmd); s->name; s++, i++)
		total += !!(mask & SBX_SUB(i));
	size_t n = 0;
	buf[0] = '\0';
	i = 0;
	for (const struct sbx_sub *s = rows(cmd); s->name && n < len; s++, i++) {
		if (!(mask & SBX_SUB(i)))
			continue;
		k++;
		const char *sep = k == 1 ? "" : k == total ? " and " : ", ";
		if (*s->name)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, s->name);
		else
			n += (size_t)snprintf(buf + n, len - n, "%s%s without a command", sep,
					      cmd->name);
	}
}

/* The row argv[0..nops) asks for: a subcommand word, else the row "" when
 * the table has one (which then gets every operand). */
static int pick_row(const struct sbx_cmd *cmd, int nops, char **ops, struct sbx_args *a,
		    struct sbx_err *err)
{
	int bare = -1, i = 0;
	char names[256];
	size_t n = 0;
	names[0] = '\0';
	for (const struct sbx_sub *s = rows(cmd); s->name; s++, i++) {
		if (!*s->name)
			bare = i;
		else if (n < sizeof(names))
			n += (size_t)snprintf(names + n, sizeof(names) - n, " %s", s->name);
		if (*s->name && nops > 0 && strcmp(s->name, ops[0]) == 0) {
			a->sub = i;
			a->word = ops[0];
			a->argc = nops - 1;
			a->argv = ops + 1;
			return 0;
		}
	}
	const struct sbx_sub *b = bare >= 0 ? &rows(cmd)[bare] : NULL;
	if (nops > 0 && n && (!b || b->max_args == 0))
		return sbx_usage_err(err, "unknown command '%s'", ops[0]);
	if (!b)
		return sbx_usage_err(err, "a command is needed:%s", names);
	a->sub = bare;
	a->word = "";
	a->argc = nops;
	a->argv = ops;
	return 0;
}

/* "sbx-fs put SRC DEST": how row s is called, for a message. */
static void row_usage(const struct sbx_cmd *cmd, const struct sbx_sub *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", cmd->name, *s->name ? " " : "", s->name,
		 *s->args ? " " : "", s->args);
}

/* The row's operand count, then each option given against the row's mask,
 * then the options the row needs. */
static int check_row(const struct sbx_cmd *cmd, const char *seen, const struct sbx_args *a,
		     struct sbx_err *err)
{
	const struct sbx_sub *s = &rows(cmd)[a->sub];
	char use[256];
	row_usage(cmd, s, use, sizeof(use));
	if (s->max_args >= 0 && a->argc > s->max_args)
		return sbx_usage_err(err, "unexpected argument '%s' (%s)", a->argv[s->max_args], use);
	if (a->argc < s->min_args)
		return sbx_usage_err(err, "missing argument: %s", use);
	for (int i = 0; cmd->opts && cmd->opts[i].name; i++) {
		const struct sbx_opt *o = &cmd->opts[i];
		if (seen[i] && !applies(o, a->sub)) {
			/* Name the shorter list: where it goes, or where it does not. */
			unsigned all = 0;
			for (int k = 0; rows(cmd)[k].name; k++)
				all |= SBX_SUB(k);
			unsigned in = o->subs & all, out = all & ~o->subs;
			int more_in = __builtin_popcount(in) > __builtin_popcount(out);
			char names[256];
			name_rows(cmd, more_in ? out : in, names, sizeof(names));
			return sbx_usage_err(err, "--%s %s %s", o->name,
					     more_in ? "does not apply to" : "applies to", names);
		}
	}
	/* needs: long names, one space apart. */
	for (const char *p = s->needs; p && *p;) {
		size_t len = strcspn(p, " ");
		for (int i = 0; cmd->opts && cmd->opts[i].name; i++)
			if (!seen[i] && strlen(cmd->opts[i].name) == len &&
			    strncmp(cmd->opts[i].name, p, len) == 0)
				return sbx_usage_err(err, "%s%s%s needs --%.*s", cmd->name,
						     *s->name ? " " : "", s->name, (int)len, p);
		p += len + (p[len] == ' ');
	}
	return 0;
}

/* The callbacks run after the table's checks, so that a flag given where
 * it does not go is reported as that, whatever its value. */
int sbx_cli_parse(const struct sbx_cmd *cmd, int argc, char **argv,
		  sbx_opt_fn fn, void *ctx, struct sbx_args *a, struct sbx_err *err)
{
	size_t n = 0;
	for (const struct sbx_opt *o = cmd->opts; o && o->name; o++)
		n++;
	SBX_AUTOFREE char *seen = sbx_xcalloc(n + 1, 1);
	SBX_AUTOFREE struct given *given = sbx_xcalloc((size_t)argc + 1, sizeof(*given));
	int first = 0;
	*a = (struct sbx_args){0};
	if (scan(cmd, n, argc, argv, given, seen, &first, err) < 0 ||
	    pick_row(cmd, argc - first, argv + first, a, err) < 0 ||
	    check_row(cmd, seen, a, err) < 0)
		return -1;
	for (struct given *g = given; g->opt; g++)
		if (fn(g->opt->key, g->arg, ctx, err) < 0) {
			if (!err->exit_status && err->kind == SBX_INVALID_REQUEST)
				err->exit_status = SBX_EXIT_USAGE;
			return -1;
		}
	return 0;
}
