/* sbx-exec - run a command in a sandbox.
 *
 *   sbx-exec [--id ID] [OPTIONS] -- CMD [ARG...]
 *
 * Per input document (or the one named by --id) it runs CMD in the
 * document's sandbox and adds {"exec": {argv, exit_code, signal, timed_out,
 * stdout, stderr, ...}}.  --check turns a failed command into an error
 * document (kind "failed", exit 1) that still carries the result.  --raw
 * streams the command's output instead and exits with its status (124 on
 * timeout, 128+N when killed by signal N, 125 when sbx itself failed);
 * stdout then carries no documents.  -t gives the command a terminal
 * (a pty inside the sandbox; our own terminal in raw mode while -i
 * passes the keys through) and implies --raw; so does -i alone. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "app.h"
#include "cli.h"
#include "cliopt.h"
#include "cliterm.h"
#include "cliutil.h"
#include "doc.h"
#include "util.h"

enum { O_PROFILE, O_ID, O_ROOT, O_CHECK, O_RAW, O_TIMEOUT, O_ENV, O_CWD, O_STDIN_FILE,
       O_STDIN_TEXT, O_OUTPUT_CAP, O_TTY, O_INTERACTIVE, O_TTY_SIZE };

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"id", 0, "ID", "act on this sandbox instead of reading documents", O_ID, SBX_ALL},
	{"root", 0, NULL, "run as root (reduced capabilities) instead of uid 1000", O_ROOT, SBX_ALL},
	{"check", 0, NULL, "a non-zero exit or a timeout is an error (kind failed)", O_CHECK, SBX_ALL},
	{"raw", 0, NULL, "stream stdout/stderr and exit with the command's status", O_RAW, SBX_ALL},
	{"timeout", 0, "DURATION", "kill the command and all it started after this long", O_TIMEOUT, SBX_ALL},
	{"env", 'e', "KEY[=VALUE]", "environment variable for the command; a bare KEY copies our value (repeatable)", O_ENV, SBX_ALL},
	{"cwd", 0, "DIR", "working directory inside the sandbox (default /workspace)", O_CWD, SBX_ALL},
	{"stdin-file", 0, "PATH", "feed this host file to the command's stdin", O_STDIN_FILE, SBX_ALL},
	{"stdin-text", 0, "TEXT", "feed this text to the command's stdin", O_STDIN_TEXT, SBX_ALL},
	{"output-cap", 0, "SIZE", "keep at most this much of each stream (default 1M)", O_OUTPUT_CAP, SBX_ALL},
	{"tty", 't', NULL, "give the command a terminal (with --id; implies --raw)", O_TTY, SBX_ALL},
	{"interactive", 'i', NULL, "pass stdin through (with --id; implies --raw); with -t, the keys", O_INTERACTIVE, SBX_ALL},
	{"tty-size", 0, "COLSxROWS", "the terminal's size when stdin is no terminal (scripts)", O_TTY_SIZE, SBX_ALL},
	{0},
};

static const struct sbx_sub subs[] = {{"", "-- COMMAND [ARG...]", 1, -1, NULL, NULL}, {0}};

static const struct sbx_cmd cmd = {
	.name = "sbx-exec",
	.synopsis = "[OPTIONS] -- COMMAND [ARG...]",
	.summary = "Run a command in a sandbox and add its result to the document.",
	.opts = opts,
	.subs = subs,
	.stop_at_operand = 1,
};

struct exec_opts {
	struct sbx_app app;
	const char *id;
	int root, check, raw;
	int64_t timeout_ms;
	char **env;
	size_t nenv;
	const char *cwd;
	char *stdin_data;
	size_t stdin_len;
	int have_stdin;
	int64_t output_cap;
	int tty, interactive, tty_size_given;
	unsigned cols, rows;
	int winch_fd;            /* resizes of our terminal, -1 = none */
	char **argv;
	int check_status;        /* first --check failure's exit status */
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct exec_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_ID: o->id = arg; return 0;
	case O_ROOT: o->root = 1; return 0;
	case O_CHECK: o->check = 1; return 0;
	case O_RAW: o->raw = 1; return 0;
	case O_TIMEOUT: return sbx_cli_timeout_arg(arg, &o->timeout_ms, err);
	case O_ENV: return sbx_cli_env_push(&o->env, &o->nenv, arg, err);
	case O_CWD: return sbx_cli_cwd_arg(arg, &o->cwd, err);
	case O_STDIN_FILE:
		if (o->have_stdin)
			return sbx_usage_err(err, "give one of --stdin-file and --stdin-text");
		o->have_stdin = 1;
		return sbx_read_file(arg, 256u << 20, &o->stdin_data, &o->stdin_len, err);
	case O_STDIN_TEXT:
		if (o->have_stdin)
			return sbx_usage_err(err, "give one of --stdin-file and --stdin-text");
		o->have_stdin = 1;
		o->stdin_data = sbx_xstrdup(arg);
		o->stdin_len = strlen(arg);
		return 0;
	case O_TTY: o->tty = o->raw = 1; return 0;
	case O_INTERACTIVE: o->interactive = o->raw = 1; return 0;
	case O_TTY_SIZE:
		o->tty_size_given = 1;
		return sbx_term_parse_size(arg, "--tty-size", &o->cols, &o->rows, err);
	case O_OUTPUT_CAP:
		if (sbx_parse_size(arg, &o->output_cap, err) < 0)
			return -1;
		if (o->output_cap <= 0)
			return sbx_usage_err(err, "--output-cap must be positive");
		return 0;
	}
	return 0;
}

static json_object *result_json(const struct exec_opts *o, const struct sbx_exec_result *r)
{
	json_object *e = json_object_new_object();
	json_object *av = json_object_new_array();
	for (char **a = o->argv; *a; a++)
		json_object_array_add(av, json_object_new_string(*a));
	json_object_object_add(e, "argv", av);
	sbx_json_set_int(e, "exit_code", r->exit_code);
	sbx_json_set_int(e, "signal", r->signal);
	sbx_json_set_bool(e, "timed_out", r->timed_out);
	sbx_json_set_bytes(e, "stdout", r->out, r->out_len);
	sbx_json_set_bytes(e, "stderr", r->err, r->err_len);
	sbx_json_set_bool(e, "stdout_truncated", r->out_truncated);
	sbx_json_set_bool(e, "stderr_truncated", r->err_truncated);
	sbx_json_set_int(e, "duration_ms", r->duration_ms);
	sbx_json_set_bool(e, "as_root", o->root);
	return e;
}

/* Run the command in the sandbox of `doc`. */
/* The exec's audit record (audit.h): the environment by name only, never
 * its values. */
static json_object *exec_audit(const struct exec_opts *o, const char *start,
			       const struct sbx_exec_result *r)
{
	json_object *a = json_object_new_object(), *av = json_object_new_array(),
		    *env = json_object_new_array();
	for (char **p = o->argv; p && *p; p++)
		json_object_array_add(av, json_object_new_string(*p));
	json_object_object_add(a, "argv", av);
	for (size_t i = 0; i < o->nenv; i++) {
		const char *eq = strchr(o->env[i], '=');
		json_object_array_add(env, json_object_new_string_len(
						   o->env[i], eq ? (int)(eq - o->env[i]) : (int)strlen(o->env[i])));
	}
	json_object_object_add(a, "env", env);
	sbx_json_set_str(a, "user", o->root ? "root" : "user");
	if (o->cwd)
		sbx_json_set_str(a, "cwd", o->cwd);
	sbx_json_set_str(a, "start", start);
	if (!r) {
		sbx_json_set_str(a, "outcome", "error");
		return a;
	}
	sbx_json_set_int(a, "exit_code", r->exit_code);
	sbx_json_set_int(a, "signal", r->signal);
	sbx_json_set_bool(a, "timed_out", r->timed_out);
	sbx_json_set_int(a, "duration_ms", r->duration_ms);
	return a;
}

static int run(struct exec_opts *o, json_object *doc, int raw_in, struct sbx_exec_result *res,
	       struct sbx_err *err)
{
	json_object *sbj = sbx_json_obj(doc, "sandbox");
	struct sbx_sandbox sb;
	struct sbx_backend *b;
	if (sbx_cli_open_sandbox(&o->app, sbj, &sb, &b, err) < 0)
		return -1;
	if (o->tty && sbx_backend_require(b, SBX_CAP_TTY, "exec --tty", err) < 0) {
		sbx_sandbox_clear(&sb);
		return -1;
	}
	struct sbx_exec_req req = {
		.argv = o->argv,
		.stdin_data = o->have_stdin ? o->stdin_data : NULL,
		.stdin_len = o->stdin_len,
		.env = o->env,
		.cwd = o->cwd,
		.as_root = o->root,
		.timeout_ms = o->timeout_ms,
		.output_cap = (size_t)o->output_cap,
		.raw_out_fd = o->raw ? 1 : -1,
		.raw_err_fd = o->raw ? 2 : -1,
		.raw_in_fd = raw_in,
		.tty = o->tty,
		.tty_cols = o->cols,
		.tty_rows = o->rows,
		.tty_size_fd = o->winch_fd,
	};
	char start[40];
	sbx_time_iso(sbx_now_ms() / 1000, start, sizeof(start));
	int rc = sbx_call(b, exec, err, &sb, &req, res);
	json_object *a = exec_audit(o, start, rc == 0 ? res : NULL);
	sbx_cli_audit(&o->app, b, &sb, "exec", a);
	json_object_put(a);
	sbx_sandbox_clear(&sb);
	if (rc == 0 && sbj)
		sbx_json_set_str(sbj, "state", "running");
	return rc;
}

static int exec_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct exec_opts *o = ctx;
	struct sbx_exec_result res;
	if (run(o, doc, -1, &res, err) < 0)
		return -1;
	json_object_object_add(doc, "exec", result_json(o, &res));
	int failed = res.timed_out || res.exit_code != 0;
	if (o->check && failed) {
		/* The error document keeps the result: the caller wants to see
		 * what the command printed. */
		struct sbx_err ferr = {0};
		if (res.timed_out)
			sbx_fail(&ferr, SBX_FAILED, "exec", "%s timed out", o->argv[0]);
		else if (res.signal)
			sbx_fail(&ferr, SBX_FAILED, "exec", "%s was killed by signal %d", o->argv[0],
				 res.signal);
		else
			sbx_fail(&ferr, SBX_FAILED, "exec", "%s exited with status %d", o->argv[0],
				 res.exit_code);
		sbx_exec_result_clear(&res);
		sbx_doc_set_error(doc, cmd.name, &ferr);
		int st = sbx_cli_report(cmd.name, &ferr);
		if (!o->check_status)
			o->check_status = st;
		if (sbx_emit(doc, err) < 0)
			return -1;
		return 1;
	}
	sbx_exec_result_clear(&res);
	return 0;
}

static int raw_status(const struct sbx_exec_result *r)
{
	return sbx_raw_exit_status(r->timed_out, r->signal, r->exit_code);
}

struct raw_ctx {
	struct exec_opts *o;
	int status;            /* the last command's */
};

/* One document of --raw: its command's output streams through; an error
 * document in the input stops the loop (there is no document to pass it
 * on in). */
static int raw_one(json_object *doc, void *vctx, struct sbx_err *err)
{
	struct raw_ctx *c = vctx;
	if (sbx_doc_error_status(doc)) {
		sbx_doc_get_error(doc, err);
		sbx_err_prefix(err, "input document");
		return -1;
	}
	struct sbx_exec_result res;
	if (run(c->o, doc, -1, &res, err) < 0)
		return -1;
	c->status = raw_status(&res);
	sbx_exec_result_clear(&res);
	return 0;
}

/* -t and -i: check what they need (before anything is done), take the
 * size of our terminal unless --tty-size gave one. */
static int tty_check(struct exec_opts *o, struct sbx_err *err)
{
	if (o->tty_size_given && !o->tty)
		return sbx_usage_err(err, "--tty-size needs -t");
	if (!o->tty && !o->interactive)
		return 0;
	o->raw = 1;              /* from here on, 125 is our own failure */
	if (!o->id)
		return sbx_usage_err(err, "-t and -i need --id (stdin is the terminal, not documents)");
	if (o->tty && !o->tty_size_given && sbx_term_size(0, &o->cols, &o->rows) < 0)
		return sbx_usage_err(err, "-t needs a terminal on stdin; give --tty-size COLSxROWS "
					  "to run without one");
	return 0;
}

/* Lend our terminal: raw mode while -i passes the keys (restored on
 * every exit path we can catch, cliterm.h), and its resizes forwarded
 * when the size is the terminal's. */
static int tty_begin(struct exec_opts *o, struct sbx_err *err)
{
	if (!o->tty || !isatty(0))
		return 0;
	if (!o->tty_size_given && (o->winch_fd = sbx_term_winch_pipe(0, err)) < 0)
		return -1;
	if (o->interactive && !o->have_stdin)
		return sbx_term_raw(0, err);
	return 0;
}

/* --raw: no documents out; the status is the (last) command's, or
 * SBX_EXIT_RAW_SELF for a failure of our own. */
static int raw_main(struct exec_opts *o, json_object *seed)
{
	struct sbx_err err = {0};
	struct raw_ctx c = {.o = o};
	if (seed) {
		struct sbx_exec_result res;
		int raw_in = o->have_stdin || (o->tty && !o->interactive) ? -1 : 0;
		int rc = tty_begin(o, &err);
		if (rc == 0)
			rc = run(o, seed, raw_in, &res, &err);
		sbx_term_restore();
		if (rc < 0) {
			sbx_cli_report(cmd.name, &err);
			return SBX_EXIT_RAW_SELF;
		}
		c.status = raw_status(&res);
		sbx_exec_result_clear(&res);
		return c.status;
	}
	if (sbx_cli_stdin_check(&err) < 0 || sbx_cli_each_doc(raw_one, &c, &err) < 0) {
		sbx_cli_report(cmd.name, &err);
		return SBX_EXIT_RAW_SELF;
	}
	return c.status;
}

int main(int argc, char **argv)
{
	struct exec_opts o = {.winch_fd = -1};
	struct sbx_err err = {0};
	struct sbx_args a;
	if (sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err) < 0 || tty_check(&o, &err) < 0) {
		int st = sbx_cli_report(cmd.name, &err);
		return o.raw ? SBX_EXIT_RAW_SELF : st;
	}
	o.argv = a.argv;
	json_object *seed = sbx_cli_id_seed(o.id);
	int st;
	if (o.raw) {
		st = raw_main(&o, seed);
	} else {
		st = sbx_cli_run_docs(cmd.name, seed, exec_one, &o);
		if (!st && o.check_status)
			st = o.check_status;
	}
	json_object_put(seed);
	sbx_cli_env_free(o.env, o.nenv);
	free(o.stdin_data);
	sbx_app_close(&o.app);
	return st;
}
