/* sbx-proc - detached processes in a sandbox: start one, list them,
 * signal one, write to its stdin, read or follow its output.
 *
 *   sbx-proc start [--id ID] [--root] [--stdin] [--tag T] [--cwd DIR]
 *                  [--env K[=V]]... [--timeout DURATION] -- CMD [ARG...]
 *   sbx-proc ls [--id ID]
 *   sbx-proc kill [--id ID] (--pid N | --tag T) [--signal SIG] [--root]
 *   sbx-proc input [--id ID] (--pid N | --tag T) [--text T | --file PATH]
 *                  [--close] [--root]
 *   sbx-proc output [--id ID] (--pid N | --tag T) [--follow] [--new]
 *                   [--stdout-offset N] [--stderr-offset N] [--raw]
 *   sbx-proc attach --id ID (--pid N | --tag T) [--root] [--tty-size CxR]
 *
 * start --tty gives the process a terminal that outlives us; attach takes
 * it over (one writer at a time), replaying the last 64 KiB of its
 * screen, until Ctrl-P Ctrl-Q detaches (or the process exits: then its
 * status is ours, as output --raw's).
 *
 * A started process outlives this program, survives a pause of its
 * sandbox, and keeps its output in the backend (bounded) until a later
 * process takes its pid.  Per input document it acts on the document's
 * sandbox and adds {"proc": ...} (start, kill, input), {"procs": [...]}
 * (ls) or {"output": ...} (output).  output --raw writes the bytes
 * themselves to stdout and stderr and exits with the process's status
 * (124 timed out, 128+N killed by signal N; 0 while it runs), 125 when
 * sbx itself failed; it needs --id. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "app.h"
#include "cli.h"
#include "cliopt.h"
#include "cliterm.h"
#include "cliutil.h"
#include "doc.h"
#include "proc.h"
#include "util.h"

enum { O_PROFILE, O_ID, O_ROOT, O_STDIN, O_TAG, O_CWD, O_ENV, O_TIMEOUT, O_PID, O_SIGNAL,
       O_TEXT, O_FILE, O_CLOSE, O_FOLLOW, O_NEW, O_OUT_OFF, O_ERR_OFF, O_RAW, O_CAP, O_TTY,
       O_TTY_SIZE };
enum { S_START, S_LS, S_KILL, S_INPUT, S_OUTPUT, S_ATTACH };

/* What attach replays of a terminal's screen before the live bytes. */
#define REPLAY_BYTES (64 << 10)
/* The detach keys: Ctrl-P then Ctrl-Q (docker's). */
#define DETACH_1 0x10
#define DETACH_2 0x11

static const struct sbx_sub subs[] = {
	[S_START] = {"start", "-- COMMAND [ARG...]", 1, -1, "start a detached process", NULL},
	[S_LS] = {"ls", "", 0, 0, "list the sandbox's processes", NULL},
	[S_KILL] = {"kill", "", 0, 0, "send a signal (default KILL) to a process", NULL},
	[S_INPUT] = {"input", "", 0, 0, "write to a process's stdin, or close it", NULL},
	[S_OUTPUT] = {"output", "", 0, 0, "read (or follow) a process's output", NULL},
	[S_ATTACH] = {"attach", "", 0, 0, "take over a process's terminal (Ctrl-P Ctrl-Q detaches)", NULL},
	{0},
};

#define SEL (SBX_SUB(S_KILL) | SBX_SUB(S_INPUT) | SBX_SUB(S_OUTPUT) | SBX_SUB(S_ATTACH))
#define ACT (SBX_SUB(S_START) | SBX_SUB(S_KILL) | SBX_SUB(S_INPUT) | SBX_SUB(S_ATTACH))
static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"id", 0, "ID", "act on this sandbox instead of reading documents", O_ID, SBX_ALL},
	{"root", 0, NULL, "act as root (start: run as root) instead of uid 1000", O_ROOT, ACT},
	{"stdin", 0, NULL, "start: keep the process's stdin open for input", O_STDIN,
	 SBX_SUB(S_START)},
	{"tag", 0, "TAG", "start: tag the process; kill, input, output: the process so tagged",
	 O_TAG, SBX_SUB(S_START) | SEL},
	{"cwd", 0, "DIR", "start: working directory inside the sandbox (default /workspace)",
	 O_CWD, SBX_SUB(S_START)},
	{"env", 'e', "KEY[=VALUE]", "start: environment variable; a bare KEY copies our value (repeatable)",
	 O_ENV, SBX_SUB(S_START)},
	{"timeout", 0, "DURATION", "start: kill the process and all it started after this long",
	 O_TIMEOUT, SBX_SUB(S_START)},
	{"pid", 0, "PID", "the process (its pid in the sandbox)", O_PID, SEL},
	{"signal", 's', "SIG", "kill: the signal, by name (TERM, SIGTERM) or number", O_SIGNAL,
	 SBX_SUB(S_KILL)},
	{"text", 0, "TEXT", "input: write this text", O_TEXT, SBX_SUB(S_INPUT)},
	{"file", 0, "PATH", "input: write this host file", O_FILE, SBX_SUB(S_INPUT)},
	{"close", 0, NULL, "input: close stdin afterwards (alone: only close it)", O_CLOSE,
	 SBX_SUB(S_INPUT)},
	{"follow", 'f', NULL, "output: wait for more until the process exits", O_FOLLOW,
	 SBX_SUB(S_OUTPUT)},
	{"new", 0, NULL, "output: only what is written from now on", O_NEW, SBX_SUB(S_OUTPUT)},
	{"stdout-offset", 0, "N", "output: start stdout at this byte offset", O_OUT_OFF,
	 SBX_SUB(S_OUTPUT)},
	{"stderr-offset", 0, "N", "output: start stderr at this byte offset", O_ERR_OFF,
	 SBX_SUB(S_OUTPUT)},
	{"raw", 0, NULL, "output: write the bytes to stdout/stderr, exit with the process's status",
	 O_RAW, SBX_SUB(S_OUTPUT)},
	{"output-cap", 0, "SIZE", "output: keep at most this much of each stream in the document (default 1M)",
	 O_CAP, SBX_SUB(S_OUTPUT)},
	{"tty", 't', NULL, "start: give the process a terminal, to attach to later", O_TTY,
	 SBX_SUB(S_START)},
	{"tty-size", 0, "COLSxROWS", "start, attach: the terminal's size (default: ours, else 80x24)",
	 O_TTY_SIZE, SBX_SUB(S_START) | SBX_SUB(S_ATTACH)},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-proc",
	.synopsis = "start|ls|kill|input|output|attach [OPTIONS] [-- COMMAND [ARG...]]",
	.summary = "Start, list, signal, feed and follow detached processes in a sandbox.",
	.opts = opts,
	.subs = subs,
};

struct proc_opts {
	struct sbx_app app;
	int sub;
	const char *id;
	int root, keep_stdin, close, follow, news, raw;
	const char *tag, *cwd;
	char **env;
	size_t nenv;
	int64_t timeout_ms, out_off, err_off, cap;
	int pid, sig;
	char *data;
	size_t len;
	int have_data;
	char **argv;
	int raw_status;
	int tty, tty_size_given;
	unsigned cols, rows;
};

/* "KILL", "SIGKILL", "kill" or "9". */
static int parse_signal(const char *s, int *sig)
{
	static const struct { const char *n; int v; } names[] = {
		{"HUP", SIGHUP}, {"INT", SIGINT}, {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
		{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},
		{"TERM", SIGTERM}, {"CONT", SIGCONT}, {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},
		{"WINCH", SIGWINCH},
	};
	char *end;
	long n = strtol(s, &end, 10);
	if (end != s && !*end) {
		*sig = (int)n;
		return n > 0 && n < NSIG ? 0 : -1;
	}
	const char *b = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
	for (size_t i = 0; i < SBX_ARRAY_LEN(names); i++)
		if (strcasecmp(b, names[i].n) == 0) {
			*sig = names[i].v;
			return 0;
		}
	return -1;
}

static int parse_count(const char *arg, const char *flag, int64_t *v, struct sbx_err *err)
{
	char *end;
	long long n = strtoll(arg, &end, 10);
	if (end == arg || *end || n < 0)
		return sbx_usage_err(err, "%s must be a number >= 0", flag);
	*v = n;
	return 0;
}

static int set_data(struct proc_opts *o, const char *arg, int file, struct sbx_err *err)
{
	if (o->have_data)
		return sbx_usage_err(err, "give one of --text and --file");
	o->have_data = 1;
	if (file)
		return sbx_read_file(arg, 64u << 20, &o->data, &o->len, err);
	o->data = sbx_xstrdup(arg);
	o->len = strlen(arg);
	return 0;
}

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct proc_opts *o = ctx;
	int64_t v = 0;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_ID: o->id = arg; return 0;
	case O_ROOT: o->root = 1; return 0;
	case O_STDIN: o->keep_stdin = 1; return 0;
	case O_TAG: o->tag = arg; return 0;
	case O_CWD: return sbx_cli_cwd_arg(arg, &o->cwd, err);
	case O_ENV: return sbx_cli_env_push(&o->env, &o->nenv, arg, err);
	case O_TIMEOUT: return sbx_cli_timeout_arg(arg, &o->timeout_ms, err);
	case O_PID:
		if (parse_count(arg, "--pid", &v, err) < 0 || v == 0 || v > 0x7fffffff)
			return sbx_usage_err(err, "--pid must be a pid (a number > 0)");
		o->pid = (int)v;
		return 0;
	case O_SIGNAL:
		return parse_signal(arg, &o->sig) == 0 ? 0
		       : sbx_usage_err(err, "--signal: no signal '%s'", arg);
	case O_TEXT: return set_data(o, arg, 0, err);
	case O_FILE: return set_data(o, arg, 1, err);
	case O_CLOSE: o->close = 1; return 0;
	case O_FOLLOW: o->follow = 1; return 0;
	case O_NEW: o->news = 1; return 0;
	case O_OUT_OFF: return parse_count(arg, "--stdout-offset", &o->out_off, err);
	case O_ERR_OFF: return parse_count(arg, "--stderr-offset", &o->err_off, err);
	case O_RAW: o->raw = 1; return 0;
	case O_TTY: o->tty = 1; return 0;
	case O_TTY_SIZE:
		o->tty_size_given = 1;
		return sbx_term_parse_size(arg, "--tty-size", &o->cols, &o->rows, err);
	case O_CAP:
		if (sbx_parse_size(arg, &o->cap, err) < 0)
			return -1;
		return o->cap > 0 ? 0 : sbx_usage_err(err, "--output-cap must be positive");
	}
	return 0;
}

static struct sbx_proc_sel selector(const struct proc_opts *o)
{
	return (struct sbx_proc_sel){.pid = o->pid, .tag = o->pid ? NULL : o->tag};
}

/* ---- output ---- */

struct capture {
	struct proc_opts *o;
	char *buf[2];
	size_t len[2];
	int64_t first[2];        /* offset of buf[k][0], -1 until the first byte */
	int truncated[2];
	int write_err;
};

static int capture_sink(void *ctx, int stream, const char *data, size_t len, int64_t offset)
{
	struct capture *c = ctx;
	if (stream == SBX_PROC_TICK)
		return 0;
	int k = stream == SBX_PROC_STDOUT ? 0 : 1;
	if (c->o->raw) {
		if (sbx_write_all(k + 1, data, len) < 0) {
			c->write_err = errno;
			return 1;
		}
		return 0;
	}
	if (c->first[k] < 0)
		c->first[k] = offset;
	size_t cap = (size_t)c->o->cap, take = c->len[k] + len > cap ? cap - c->len[k] : len;
	if (take < len)
		c->truncated[k] = 1;
	c->buf[k] = sbx_xrealloc(c->buf[k], c->len[k] + take + 1);
	memcpy(c->buf[k] + c->len[k], data, take);
	c->len[k] += take;
	return 0;
}

static int raw_status(const struct sbx_proc_info *p)
{
	return p->running ? 0 : sbx_raw_exit_status(p->timed_out, p->signal, p->exit_code);
}

static int do_output(struct proc_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		     json_object *doc, struct sbx_err *err)
{
	struct sbx_proc_sel sel = selector(o);
	struct sbx_proc_attach a = {.out_offset = o->news ? -1 : o->out_off,
				    .err_offset = o->news ? -1 : o->err_off,
				    .follow = o->follow};
	struct capture c = {.o = o, .first = {-1, -1}};
	struct sbx_proc_info end;
	int rc = sbx_call(b, proc_output, err, sb, &sel, &a, capture_sink, &c, &end);
	if (rc == 0 && c.write_err) {
		errno = c.write_err;
		rc = sbx_fail_errno(err, SBX_INTERNAL, "output", "write");
	}
	if (rc == 0 && o->raw) {
		o->raw_status = raw_status(&end);
	} else if (rc == 0) {
		json_object *out = json_object_new_object();   /* replaces an earlier stage's */
		json_object_object_add(doc, "output", out);
		sbx_proc_info_json(&end, out);
		const char *names[2] = {"stdout", "stderr"};
		for (int k = 0; k < 2; k++) {
			char key[32];
			sbx_json_set_bytes(out, names[k], c.buf[k] ? c.buf[k] : "", c.len[k]);
			snprintf(key, sizeof(key), "%s_offset", names[k]);
			sbx_json_set_int(out, key, c.first[k] >= 0 ? c.first[k]
						   : k == 0 ? end.out_end : end.err_end);
			snprintf(key, sizeof(key), "%s_truncated", names[k]);
			sbx_json_set_bool(out, key, c.truncated[k]);
		}
	}
	if (rc == 0)
		sbx_proc_info_clear(&end);
	free(c.buf[0]);
	free(c.buf[1]);
	return rc;
}

/* ---- attach ---- */

struct attach {
	struct proc_opts *o;
	struct sbx_backend *b;
	struct sbx_sandbox *sb;
	struct sbx_proc_sel sel;
	int winch;               /* resizes of our terminal, -1 = none */
	int held_p;              /* the last key was DETACH_1, held back */
	int detached;
	int write_err;
};

/* Our keys to the terminal, the detach keys taken out: what stdin has
 * now (it is polled, not waited on: the sink is called at least every
 * tick).  1 when we are to stop (detach keys, or stdin's end). */
static int attach_keys(struct attach *c)
{
	struct pollfd pf = {.fd = 0, .events = POLLIN};
	if (poll(&pf, 1, 0) <= 0)
		return 0;
	char in[4096], out[4097];
	ssize_t n = read(0, in, sizeof(in));
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		c->detached = 1;
		return 1;
	}
	size_t k = 0;
	for (ssize_t i = 0; i < n; i++) {
		if (c->held_p) {
			c->held_p = 0;
			if (in[i] == DETACH_2) {
				c->detached = 1;
				break;
			}
			out[k++] = DETACH_1;
		}
		if (in[i] == DETACH_1)
			c->held_p = 1;
		else
			out[k++] = in[i];
	}
	struct sbx_err ignored = {0};
	if (k)   /* a process that just exited: its end comes as the output's */
		sbx_call(c->b, proc_input, &ignored, c->sb, &c->sel, out, k, 0, c->o->root);
	return c->detached;
}

static void attach_resize(struct attach *c)
{
	struct sbx_tty_size sz[16];
	ssize_t n = c->winch >= 0 ? read(c->winch, sz, sizeof(sz)) : -1;
	if (n < (ssize_t)sizeof(sz[0]))
		return;
	size_t k = (size_t)n / sizeof(sz[0]);
	struct sbx_err ignored = {0};
	sbx_call(c->b, proc_resize, &ignored, c->sb, &c->sel, sz[k - 1].cols, sz[k - 1].rows,
		 c->o->root);
}

static int attach_sink(void *ctx, int stream, const char *data, size_t len, int64_t offset)
{
	(void)offset;
	struct attach *c = ctx;
	if (stream != SBX_PROC_TICK && sbx_write_all(1, data, len) < 0) {
		c->write_err = errno;
		return 1;
	}
	attach_resize(c);
	return attach_keys(c);
}

/* The running terminal `sel` names, and where its replay starts. */
static int attach_find(struct proc_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		       int *pid, int64_t *from, struct sbx_err *err)
{
	struct sbx_proc_info *all;
	size_t n;
	if (sbx_call(b, proc_list, err, sb, &all, &n) < 0)
		return -1;
	*pid = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sbx_proc_info *p = &all[i];
		if (!p->running || (o->pid ? p->pid != o->pid : !p->tag || strcmp(p->tag, o->tag)))
			continue;
		*pid = p->pid;
		*from = p->out_end - REPLAY_BYTES > p->out_start ? p->out_end - REPLAY_BYTES
								 : p->out_start;
	}
	sbx_proc_infos_free(all, n);
	if (!*pid)
		return sbx_fail(err, SBX_NOT_FOUND, "attach", "no running process %s%s",
				o->pid ? "with that pid" : "tagged ", o->pid ? "" : o->tag);
	return 0;
}

/* Claim the terminal, lend it ours (raw, resizes), replay, relay until
 * the detach keys or the process's end; our terminal is put back on
 * every path (cliterm.h) and the claim dies with us. */
static int do_attach(struct proc_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		     struct sbx_err *err)
{
	struct attach c = {.o = o, .b = b, .sb = sb, .winch = -1};
	int64_t from = 0;
	int pid, hold = -1;
	if (attach_find(o, b, sb, &pid, &from, err) < 0)
		return -1;
	c.sel = (struct sbx_proc_sel){.pid = pid};
	if (sbx_call(b, proc_claim, err, sb, &c.sel, o->root, &hold) < 0)
		return -1;
	int rc = 0;
	unsigned cols = o->cols, rows = o->rows;
	if (isatty(0)) {
		if (!o->tty_size_given && (c.winch = sbx_term_winch_pipe(0, err)) < 0)
			rc = -1;
		if (rc == 0 && !o->tty_size_given)
			sbx_term_size(0, &cols, &rows);
		if (rc == 0)
			rc = sbx_term_raw(0, err);
	}
	if (rc == 0 && cols && rows)
		rc = sbx_call(b, proc_resize, err, sb, &c.sel, cols, rows, o->root);
	struct sbx_proc_attach a = {.out_offset = from, .err_offset = -1, .follow = 1,
				    .tick_ms = 50};
	struct sbx_proc_info end;
	if (rc == 0 && (rc = sbx_call(b, proc_output, err, sb, &c.sel, &a, attach_sink, &c, &end)) == 0) {
		o->raw_status = c.detached ? 0 : raw_status(&end);
		sbx_proc_info_clear(&end);
	}
	sbx_term_restore();
	if (hold >= 0)
		close(hold);
	if (rc == 0 && c.detached)
		fprintf(stderr, "\nsbx-proc: detached from process %d\n", pid);
	return rc;
}

/* ---- the rest ---- */

static int do_start(struct proc_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		    json_object *doc, struct sbx_err *err)
{
	struct sbx_proc_req req = {.argv = o->argv, .env = o->env, .cwd = o->cwd,
				   .as_root = o->root, .keep_stdin = o->keep_stdin, .tag = o->tag,
				   .timeout_ms = o->timeout_ms, .tty = o->tty};
	if (o->tty && !o->tty_size_given && sbx_term_size(0, &o->cols, &o->rows) < 0)
		o->cols = 80, o->rows = 24;
	req.tty_cols = o->cols;
	req.tty_rows = o->rows;
	struct sbx_proc_info p;
	if (sbx_call(b, proc_start, err, sb, &req, &p) < 0)
		return -1;
	json_object *j = json_object_new_object();
	json_object_object_add(doc, "proc", j);
	sbx_proc_info_json(&p, j);
	json_object *a = json_object_new_object(), *av = json_object_new_array();
	for (char **q = o->argv; q && *q; q++)
		json_object_array_add(av, json_object_new_string(*q));
	sbx_json_set_str(a, "event", "start");
	json_object_object_add(a, "argv", av);
	sbx_json_set_str(a, "user", o->root ? "root" : "user");
	json_object *pid;
	if (json_object_object_get_ex(j, "pid", &pid))
		json_object_object_add(a, "pid", json_object_get(pid));
	sbx_cli_audit(&o->app, b, sb, "process", a);
	json_object_put(a);
	sbx_proc_info_clear(&p);
	return 0;
}

static int do_ls(struct sbx_backend *b, struct sbx_sandbox *sb, json_object *doc,
		 struct sbx_err *err)
{
	struct sbx_proc_info *all;
	size_t n;
	if (sbx_call(b, proc_list, err, sb, &all, &n) < 0)
		return -1;
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
	{
		json_object *j = json_object_new_object();
		sbx_proc_info_json(&all[i], j);
		json_object_array_add(a, j);
	}
	sbx_proc_infos_free(all, n);
	json_object_object_add(doc, "procs", a);
	return 0;
}

/* kill and input: act, then describe the process as it is now. */
static int do_act(struct proc_opts *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		  json_object *doc, struct sbx_err *err)
{
	struct sbx_proc_sel sel = selector(o);
	int rc = o->sub == S_KILL
		 ? sbx_call(b, proc_signal, err, sb, &sel, o->sig ? o->sig : SIGKILL, o->root)
		 : sbx_call(b, proc_input, err, sb, &sel, o->data, o->len, o->close, o->root);
	if (rc < 0)
		return -1;
	json_object *res = json_object_new_object();
	if (o->pid)
		sbx_json_set_int(res, "pid", o->pid);
	else
		sbx_json_set_str(res, "tag", o->tag);
	if (o->sub == S_KILL)
		sbx_json_set_int(res, "signal", o->sig ? o->sig : SIGKILL);
	else
		sbx_json_set_int(res, "written", (int64_t)o->len);
	json_object_object_add(doc, "proc", res);
	return 0;
}

static int proc_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct proc_opts *o = ctx;
	json_object *sbj = sbx_json_obj(doc, "sandbox");
	struct sbx_sandbox sb;
	struct sbx_backend *b;
	if (sbx_cli_open_sandbox(&o->app, sbj, &sb, &b, err) < 0)
		return -1;
	int rc = sbx_backend_require(b, SBX_CAP_PROCESS, "run detached processes", err);
	if (rc == 0) {
		switch (o->sub) {
		case S_START: rc = do_start(o, b, &sb, doc, err); break;
		case S_LS: rc = do_ls(b, &sb, doc, err); break;
		case S_OUTPUT: rc = do_output(o, b, &sb, doc, err); break;
		case S_ATTACH: rc = do_attach(o, b, &sb, err); break;
		default: rc = do_act(o, b, &sb, doc, err); break;
		}
	}
	sbx_sandbox_clear(&sb);
	return rc < 0 ? -1 : o->raw ? 1 : 0;
}

static int check_combinations(struct proc_opts *o, struct sbx_err *err)
{
	int sel = o->sub == S_KILL || o->sub == S_INPUT || o->sub == S_OUTPUT || o->sub == S_ATTACH;
	if (o->sub == S_ATTACH)
		o->raw = 1;      /* no documents; the process's status, 125 ours */
	if (sel && !o->pid && !o->tag)
		return sbx_usage_err(err, "name the process: --pid PID or --tag TAG");
	if (sel && o->pid && o->tag)
		return sbx_usage_err(err, "give one of --pid and --tag");
	if (o->sub == S_INPUT && !o->have_data && !o->close)
		return sbx_usage_err(err, "input needs --text, --file or --close");
	if (o->news && (o->out_off || o->err_off))
		return sbx_usage_err(err, "--new starts at the end: no offsets with it");
	if (o->raw && !o->id)
		return sbx_usage_err(err, o->sub == S_ATTACH ? "attach needs --id" : "--raw needs --id");
	return 0;
}

int main(int argc, char **argv)
{
	struct proc_opts o = {.cap = 1 << 20};
	struct sbx_err err = {0};
	struct sbx_args a;
	int rc = sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err);
	o.sub = a.sub;
	if (rc == 0)
		rc = check_combinations(&o, &err);
	if (rc < 0) {
		int st = sbx_cli_report(cmd.name, &err);
		return o.raw ? SBX_EXIT_RAW_SELF : st;
	}
	o.argv = a.argv;
	json_object *seed = sbx_cli_id_seed(o.id);
	int st = sbx_cli_run_docs(cmd.name, seed, proc_one, &o);
	if (o.raw)
		st = st ? SBX_EXIT_RAW_SELF : o.raw_status;
	json_object_put(seed);
	sbx_cli_env_free(o.env, o.nenv);
	free(o.data);
	sbx_app_close(&o.app);
	return st;
}
