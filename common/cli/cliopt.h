/* cliopt.h - a program's command line as a table: its subcommands, its
 * options, and which options go with which subcommand.  The table is the
 * one source of the parser's checks, of --help, and through --help of the
 * completions (tools/gen-completions) and the man page check
 * (tests/surface.bats).
 *
 * A parse either succeeds with every declarative rule met (a known
 * subcommand, its operand count, only the options that apply to it, the
 * options it needs) or fails with a usage error (exit 64); what is left to
 * a main is the few rules between option values that a mask cannot say.
 * Prints only --help and --version (then exits 0), on behalf of main. */
#ifndef SBX_CLIOPT_H
#define SBX_CLIOPT_H

#include <stdio.h>

#include "err.h"

/* The mask bit of row i of a command's subcommand table; SBX_ALL: every
 * row. */
#define SBX_SUB(i) (1u << (i))
#define SBX_ALL 0u

struct sbx_opt {
	const char *name;    /* long name, without "--" */
	int short_name;      /* 0 when none */
	const char *arg;     /* NULL for a switch, else the placeholder ("ID") */
	const char *help;    /* one line */
	int key;             /* handed to the option callback */
	unsigned subs;       /* the subcommands it applies to (SBX_SUB bits), or SBX_ALL */
};

/* One row per subcommand (the options that go with it are those whose
 * mask names it).  A row named "" is the form without a
 * subcommand (sbx-snap alone takes a snapshot); a program without
 * subcommands has that one row only.  At most 32 rows. */
struct sbx_sub {
	const char *name;    /* "put"; "" = no subcommand; NULL ends the table */
	const char *args;    /* its operands, for --help and messages: "SRC DEST" */
	int min_args;
	int max_args;        /* -1: no limit */
	const char *help;    /* one line; NULL for the row of a program without subcommands */
	const char *needs;   /* the options it cannot go without: "tenant session", or NULL */
};

struct sbx_cmd {
	const char *name;                /* "sbx-exec" */
	const char *synopsis;            /* after the name: "[OPTIONS] -- COMMAND [ARG...]" */
	const char *summary;             /* one sentence */
	const struct sbx_opt *opts;      /* terminated by {0} */
	const struct sbx_sub *subs;      /* terminated by {0}; NULL = one row {"", "", 0, 0} */
	int stop_at_operand;             /* options end at the first operand (exec-style) */
};

/* What a parse found: the row (index into cmd->subs, or 0 for a program
 * with the implicit row) and its operands.  argv points into the caller's
 * argv, rearranged so that the operands follow each other in their order;
 * after a subcommand word, argv[-1] is that word's slot (a front program
 * may put its own argv[0] there). */
struct sbx_args {
	int sub;
	const char *word;    /* the subcommand as given, or "" */
	int argc;
	char **argv;         /* NULL-terminated */
};

typedef int (*sbx_opt_fn)(int key, const char *arg, void *ctx, struct sbx_err *err);

/* Parse argv against cmd, calling fn for each option in order, then check
 * the result against the table.  --help and --version are handled here
 * (print, exit 0).  Returns 0, or -1 with a usage error (exit 64) or the
 * error fn returned. */
int sbx_cli_parse(const struct sbx_cmd *cmd, int argc, char **argv,
		  sbx_opt_fn fn, void *ctx, struct sbx_args *a, struct sbx_err *err);
void sbx_cli_help(const struct sbx_cmd *cmd, FILE *out);
/* A usage error value (kind invalid_request, exit 64). */
int sbx_usage_err(struct sbx_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* True when progress may be printed (stderr is a tty, or --progress). */
extern int sbx_cli_progress;

#endif
