/* serve-proc.c - envd's process.Process service over the backend's
 * detached processes (proc_* in backend.h): Start and Connect (server
 * streams of start, data, keepalive and end events), List, SendInput,
 * SendSignal, CloseStdin, and terminals: Start with `pty` (its size),
 * output as `pty` data (chunks of at most 16 KiB, envd's), SendInput's
 * `pty` keys and Update's resize, on the backend's tty processes.  The
 * client stream StreamInput is unimplemented.
 *
 * Start is proc_start, then proc_output from offset 0 following until the
 * process ends; closing the stream does not stop the process (E2B's
 * semantics: output with nobody attached is kept by the backend, and a
 * later Connect sees only what comes after it attached).  The SDK runs
 * commands as `/bin/bash -l -c CMD`: in a sandbox its create found bash
 * in (the record's `bash`) that is what runs, as on E2B; in one without
 * bash, or whose record does not say, the command runs through a
 * one-line /bin/sh wrapper that picks bash when it is there and /bin/sh
 * when not, so busybox templates work.  (The wrapper in front of every
 * command was one exec more per commands.run than sbx-exec's.)
 *
 * Users: Start acts as the user the request names (Basic "<user>:");
 * SendInput, SendSignal and CloseStdin carry no user in the SDK, so they
 * act as the process's own user (whoever holds the access token may start
 * root processes anyway: envd's model). */
#include "serve-int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include "doc.h"
#include "proc.h"
#include "util.h"

static const char BASH_WRAP[] =
	"if [ -x /bin/bash ]; then exec /bin/bash \"$@\"; fi; [ \"$1\" = -l ] && shift; exec /bin/sh \"$@\"";

static void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

/* argv from {cmd, args}; /bin/bash goes through the wrapper unless the
 * sandbox is known to have it. */
static char **make_argv(json_object *proc, int bash)
{
	const char *cmd = sbx_json_str(proc, "cmd");
	json_object *args = serve_json_arr(proc, "args");
	size_t na = args && json_object_is_type(args, json_type_array) ? json_object_array_length(args) : 0;
	char **v = sbx_xcalloc(na + 6, sizeof(char *));
	size_t n = 0;
	if (!strcmp(cmd, "/bin/bash") && bash != SERVE_BASH_YES) {
		v[n++] = sbx_xstrdup("/bin/sh");
		v[n++] = sbx_xstrdup("-c");
		v[n++] = sbx_xstrdup(BASH_WRAP);
		v[n++] = sbx_xstrdup("sh");
	} else {
		v[n++] = sbx_xstrdup(cmd);
	}
	for (size_t i = 0; i < na; i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(args, i));
		v[n++] = sbx_xstrdup(a ? a : "");
	}
	return v;
}

/* {cmd, args, envs, cwd} of a process as the client started it. */
static json_object *config_json(const struct sbx_proc_info *p)
{
	json_object *c = json_object_new_object();
	char **a = p->argv;
	int wrapped = a && a[0] && a[1] && a[2] && a[3] && !strcmp(a[0], "/bin/sh") &&
		      !strcmp(a[2], BASH_WRAP);
	sbx_json_set_str(c, "cmd", wrapped ? "/bin/bash" : a && a[0] ? a[0] : "");
	json_object *args = json_object_new_array();
	for (char **x = a ? a + (wrapped ? 4 : 1) : NULL; x && *x; x++)
		json_object_array_add(args, json_object_new_string(*x));
	json_object_object_add(c, "args", args);
	json_object *envs = json_object_new_object();
	for (char **e = p->env; e && *e; e++) {
		char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		SBX_AUTOFREE char *k = strndup(*e, (size_t)(eq - *e));
		sbx_json_set_str(envs, k, eq + 1);
	}
	json_object_object_add(c, "envs", envs);
	if (p->cwd)
		sbx_json_set_str(c, "cwd", p->cwd);
	return c;
}

static json_object *event(const char *kind, json_object *body)
{
	json_object *ev = json_object_new_object();
	json_object_object_add(ev, kind, body);
	json_object *m = json_object_new_object();
	json_object_object_add(m, "event", ev);
	return m;
}

/* The stream's head and its start event, in one write (serve_out_hold):
 * the client reads them in one segment, one wake-up of its event loop
 * and of the connection thread, not two. */
static int stream_start(struct serve_out *o, int pid)
{
	json_object *s = json_object_new_object();
	sbx_json_set_int(s, "pid", pid);
	serve_out_hold(o);
	int rc = serve_connect_stream_begin(o) < 0 || serve_connect_frame(o, event("start", s)) < 0 ? -1 : 0;
	if (serve_out_flush(o) < 0)
		rc = -1;
	return rc;
}

struct sink_ctx { struct serve_out *o; int tty; };

static int sink(void *ctx, int stream, const char *data, size_t len, int64_t offset)
{
	(void)offset;
	struct sink_ctx *s = ctx;
	if (stream == SBX_PROC_TICK)
		return serve_connect_frame(s->o, event("keepalive", json_object_new_object())) < 0;
	json_object *d = json_object_new_object();
	/* envd's chunks are at most 32 KiB (a terminal's 16 KiB); so are
	 * these.  A terminal's output is its stdout stream (backend.h). */
	size_t chunk = s->tty ? 16384 : 32768;
	const char *kind = s->tty ? "pty" : stream == SBX_PROC_STDOUT ? "stdout" : "stderr";
	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		SBX_AUTOFREE char *b = serve_b64(data + off, n);
		json_object *dd = json_object_new_object();
		sbx_json_set_str(dd, kind, b);
		if (serve_connect_frame(s->o, event("data", dd)) < 0) {
			json_object_put(d);
			return 1;
		}
	}
	json_object_put(d);
	return 0;
}

/* A process's record (audit.h) as sbx-proc start and sbx-exec write it:
 * the client's cmd and args, the environment by name only, the user. */
static json_object *audit_data(json_object *proc, int as_root)
{
	json_object *a = json_object_new_object(), *av = json_object_new_array(),
		    *env = json_object_new_array();
	json_object_array_add(av, json_object_new_string(sbx_json_str(proc, "cmd")));
	json_object *args = serve_json_arr(proc, "args");
	for (size_t i = 0; args && json_object_is_type(args, json_type_array) &&
			   i < json_object_array_length(args); i++)
		json_object_array_add(av, json_object_new_string(
						  json_object_get_string(json_object_array_get_idx(args, i))));
	json_object_object_add(a, "argv", av);
	json_object *envs = sbx_json_obj(proc, "envs");
	if (envs && json_object_is_type(envs, json_type_object)) {
		json_object_object_foreach(envs, ek, ev) {
			(void)ev;
			json_object_array_add(env, json_object_new_string(ek));
		}
	}
	json_object_object_add(a, "env", env);
	sbx_json_set_str(a, "user", as_root ? "root" : "user");
	return a;
}

/* The end event and the end of the stream (end_event writes them). */
static int end_frames(struct serve_out *o, const struct sbx_proc_info *p)
{
	json_object *e = json_object_new_object();
	char st[64];
	if (p->signal) {
		sbx_json_set_int(e, "exitCode", -1);
		snprintf(st, sizeof(st), "signal: %s", p->signal == SIGKILL ? "killed"
						      : p->signal == SIGTERM ? "terminated"
						      : strsignal(p->signal));
		sbx_json_set_str(e, "status", st);
		sbx_json_set_str(e, "error", st);
	} else {
		if (p->exit_code)
			sbx_json_set_int(e, "exitCode", p->exit_code);
		sbx_json_set_bool(e, "exited", 1);
		snprintf(st, sizeof(st), "exit status %d", p->exit_code);
		sbx_json_set_str(e, "status", st);
		if (p->exit_code)
			sbx_json_set_str(e, "error", st);
	}
	if (serve_connect_frame(o, event("end", e)) < 0)
		return -1;
	if (p->timed_out)
		return serve_connect_end(o, "deadline_exceeded", "context deadline exceeded");
	return serve_connect_end(o, NULL, NULL);
}

/* The end event and the end of the stream, in one write (as the start). */
static int end_event(struct serve_out *o, const struct sbx_proc_info *p)
{
	serve_out_hold(o);
	int rc = end_frames(o, p);
	if (serve_out_flush(o) < 0)
		rc = -1;
	return rc;
}

static int follow(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		  struct sbx_sandbox *sb, int pid, int tty, int64_t from)
{
	const char *ka = serve_hdr(r, "keepalive-ping-interval");
	long secs = ka ? strtol(ka, NULL, 10) : 50;
	if (secs < 1 || secs > 90)
		secs = 50;
	struct sbx_proc_sel sel = {.pid = pid};
	struct sbx_proc_attach at = {.out_offset = from, .err_offset = from, .follow = 1,
				     .tick_ms = (int)secs * 1000};
	struct sink_ctx sc = {o, tty};
	struct sbx_proc_info end = {0};
	struct sbx_err err = {0};
	if (sbx_call(b, proc_output, &err, sb, &sel, &at, sink, &sc, &end) < 0)
		return serve_connect_end(o, serve_connect_code(&err), err.msg);
	int rc = end.running ? 0 : end_event(o, &end);
	sbx_proc_info_clear(&end);
	return rc;
}

/* A backend without detached processes (no proc_start): the command runs
 * through exec in a child of this worker, its output streamed as it
 * comes; it cannot be listed, signalled or given input, and it ends with
 * the stream (the exec is killed when the client goes away). */
static int start_exec(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		      struct sbx_sandbox *sb, const struct sbx_proc_req *pr, json_object *audit)
{
	char started[40];
	sbx_time_iso(sbx_now_ms() / 1000, started, sizeof(started));
	int64_t t0 = sbx_now_ms();
	int po[2], pe[2], px[2];
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 || pipe2(px, O_CLOEXEC) < 0)
		return serve_connect_end(o, "internal", "pipe failed");
	pid_t c = fork();
	if (c == 0) {
		close(po[0]);
		close(pe[0]);
		close(px[0]);
		struct sbx_exec_req req = {.argv = pr->argv, .env = pr->env, .cwd = pr->cwd,
					   .as_root = pr->as_root, .timeout_ms = pr->timeout_ms,
					   .raw_out_fd = po[1], .raw_err_fd = pe[1], .raw_in_fd = -1};
		struct sbx_exec_result res = {0};
		struct sbx_err err = {0};
		char line[900];
		int n;
		if (sbx_call(b, exec, &err, sb, &req, &res) < 0)
			n = snprintf(line, sizeof(line), "E %s %s", serve_connect_code(&err), err.msg);
		else
			n = snprintf(line, sizeof(line), "X %d %d %d", res.exit_code, res.signal, res.timed_out);
		sbx_write_all(px[1], line, (size_t)n);
		_exit(0);
	}
	close(po[1]);
	close(pe[1]);
	close(px[1]);
	int rc = stream_start(o, c > 0 ? c : 1);
	struct sink_ctx sc = {o, 0};
	struct pollfd pf[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
	int open_fds = 2;
	char buf[32768];
	const char *ka = serve_hdr(r, "keepalive-ping-interval");
	long secs = ka ? strtol(ka, NULL, 10) : 50;
	if (secs < 1 || secs > 90)
		secs = 50;
	while (rc == 0 && open_fds) {
		int k = poll(pf, 2, (int)secs * 1000);
		if (k == 0) {
			rc = sink(&sc, SBX_PROC_TICK, NULL, 0, 0) ? -1 : 0;
			continue;
		}
		for (int i = 0; i < 2 && rc == 0; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t got = read(pf[i].fd, buf, sizeof(buf));
			if (got > 0) {
				rc = sink(&sc, i ? SBX_PROC_STDERR : SBX_PROC_STDOUT, buf, (size_t)got, 0) ? -1 : 0;
			} else if (got == 0 || errno != EINTR) {
				close(pf[i].fd);
				pf[i].fd = -1;
				open_fds--;
			}
		}
	}
	char line[900] = "";
	ssize_t n = rc == 0 ? read(px[0], line, sizeof(line) - 1) : -1;
	close(px[0]);
	for (int i = 0; i < 2; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	if (rc < 0 && c > 0)
		kill(c, SIGTERM);
	if (c > 0)
		waitpid(c, NULL, 0);
	line[n > 0 ? n : 0] = '\0';
	struct sbx_proc_info end = {0};
	int ended = line[0] == 'X' &&
		    sscanf(line, "X %d %d %d", &end.exit_code, &end.signal, &end.timed_out) == 3;
	/* The exec's record, as sbx-exec's: after it ended (or the client left). */
	sbx_json_set_str(audit, "start", started);
	if (ended) {
		sbx_json_set_int(audit, "exit_code", end.exit_code);
		sbx_json_set_int(audit, "signal", end.signal);
		sbx_json_set_bool(audit, "timed_out", end.timed_out);
	} else {
		sbx_json_set_str(audit, "outcome", rc < 0 ? "disconnected" : "error");
	}
	sbx_json_set_int(audit, "duration_ms", sbx_now_ms() - t0);
	serve_audit(r->cfg, b, sb, "exec", audit);
	if (rc < 0)
		return -1;
	if (ended)
		return end_event(o, &end);
	char code[40] = "internal";
	const char *msg = "the command did not run";
	if (line[0] == 'E' && sscanf(line, "E %39s", code) == 1)
		msg = line + 3 + strlen(code);
	return serve_connect_end(o, code, msg);
}

/* A StartRequest's or UpdateRequest's pty: {size: {cols, rows}}, each
 * 1 to 1000; -1 otherwise. */
static int pty_size(json_object *pty, unsigned *cols, unsigned *rows)
{
	json_object *size = sbx_json_obj(pty, "size");
	int64_t c = size ? sbx_json_int(size, "cols", 0) : 0, r = size ? sbx_json_int(size, "rows", 0) : 0;
	if (c < 1 || c > 1000 || r < 1 || r > 1000)
		return -1;
	*cols = (unsigned)c;
	*rows = (unsigned)r;
	return 0;
}

static int start(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		 struct sbx_sandbox *sb, const struct serve_rec *rec, json_object *in, int as_root)
{
	json_object *proc = sbx_json_obj(in, "process");
	if (!proc || !sbx_json_str(proc, "cmd"))
		return serve_connect_end(o, "invalid_argument", "process.cmd is required");
	json_object *pty = sbx_json_obj(in, "pty");
	unsigned cols = 0, rows = 0;
	if (pty && pty_size(pty, &cols, &rows) < 0)
		return serve_connect_end(o, "invalid_argument", "pty.size needs cols and rows, 1 to 1000");
	if (pty && !b->ops->proc_start)
		return serve_connect_end(o, "unimplemented", "this backend has no terminals for sbx-serve");
	char **argv = make_argv(proc, rec->bash);
	json_object *envs = sbx_json_obj(proc, "envs");
	size_t ne = envs && json_object_is_type(envs, json_type_object) ? (size_t)json_object_object_length(envs) : 0;
	/* HOME first: the user's home, the one "~" of /files (the backend's
	 * default may differ: docker takes the image's); the client's envs,
	 * later, win.  The working directory defaults to it, as envd's. */
	char **env = sbx_xcalloc(ne + 2, sizeof(char *));
	size_t k = 0;
	SBX_AUTOFREE char *home = serve_map_path("~", as_root);
	env[k++] = sbx_xasprintf("HOME=%s", home);
	if (ne) {
		json_object_object_foreach(envs, ek, ev)
			env[k++] = sbx_xasprintf("%s=%s", ek, json_object_get_string(ev));
	}
	const char *cwd_in = sbx_json_str(proc, "cwd");
	SBX_AUTOFREE char *cwd = serve_map_path(cwd_in ? cwd_in : "", as_root);
	const char *tm = serve_hdr(r, "connect-timeout-ms");
	struct sbx_proc_req req = {
		.argv = argv, .env = env, .cwd = cwd, .as_root = as_root,
		.keep_stdin = sbx_json_bool(in, "stdin", 1), .tag = sbx_json_str(in, "tag"),
		.timeout_ms = tm ? strtoll(tm, NULL, 10) : 0,
		.tty = pty != NULL, .tty_cols = cols, .tty_rows = rows,
	};
	struct sbx_proc_info info = {0};
	struct sbx_err err = {0};
	if (!b->ops->proc_start) {
		int rc = start_exec(r, o, b, sb, &req, audit_data(proc, as_root));
		strv_free(argv);
		strv_free(env);
		return rc;
	}
	int rc = sbx_call(b, proc_start, &err, sb, &req, &info);
	strv_free(argv);
	strv_free(env);
	if (rc < 0) {
		return serve_connect_end(o, serve_connect_code(&err), err.msg);
	}
	int pid = info.pid;
	sbx_proc_info_clear(&info);
	if (stream_start(o, pid) < 0)
		return -1;
	/* Its start record, as sbx-proc start's, once the client has its pid
	 * (its end: the backend's supervisor spools it, serve_audit). */
	json_object *a = audit_data(proc, as_root);
	sbx_json_set_str(a, "event", "start");
	sbx_json_set_int(a, "pid", pid);
	serve_audit(r->cfg, b, sb, "process", a);
	return follow(r, o, b, sb, pid, pty != NULL, 0);
}

/* The process a selector names, from the backend's list. */
static int find(struct sbx_backend *b, struct sbx_sandbox *sb, json_object *sel_j,
		struct sbx_proc_info *out, struct sbx_err *err)
{
	int pid = (int)sbx_json_int(sel_j, "pid", 0);
	const char *tag = sbx_json_str(sel_j, "tag");
	struct sbx_proc_info *v = NULL;
	size_t n = 0;
	if (sbx_call(b, proc_list, err, sb, &v, &n) < 0)
		return -1;
	int found = -1;
	for (size_t i = 0; i < n; i++)
		if ((pid > 0 && v[i].pid == pid) || (pid <= 0 && tag && v[i].tag && !strcmp(v[i].tag, tag) &&
						     v[i].running))
			found = (int)i;
	if (found >= 0) {
		*out = v[found];
		memset(&v[found], 0, sizeof(v[found]));
	}
	sbx_proc_infos_free(v, n);
	if (found < 0)
		return sbx_fail(err, SBX_NOT_FOUND, "process", "process with %s %s not found",
				pid > 0 ? "pid" : "tag", pid > 0 ? "" : tag ? tag : "");
	return 0;
}

static int list(struct serve_out *o, struct sbx_backend *b, struct sbx_sandbox *sb)
{
	struct sbx_proc_info *v = NULL;
	size_t n = 0;
	struct sbx_err err = {0};
	if (sbx_call(b, proc_list, &err, sb, &v, &n) < 0)
		return serve_connect_from_err(o, 0, &err);
	json_object *arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		if (!v[i].running)
			continue;
		json_object *p = json_object_new_object();
		json_object_object_add(p, "config", config_json(&v[i]));
		sbx_json_set_int(p, "pid", v[i].pid);
		if (v[i].tag)
			sbx_json_set_str(p, "tag", v[i].tag);
		json_object_array_add(arr, p);
	}
	sbx_proc_infos_free(v, n);
	json_object *out = json_object_new_object();
	if (json_object_array_length(arr))
		json_object_object_add(out, "processes", arr);
	else
		json_object_put(arr);
	return serve_connect_unary_ok(o, out);
}

static int signal_of(json_object *in)
{
	json_object *s = NULL;
	if (!json_object_object_get_ex(in, "signal", &s))
		return 0;
	if (json_object_is_type(s, json_type_int))
		return json_object_get_int(s);
	const char *n = json_object_get_string(s);
	return !strcmp(n, "SIGNAL_SIGKILL") ? SIGKILL : !strcmp(n, "SIGNAL_SIGTERM") ? SIGTERM : 0;
}

/* SendInput, SendSignal, CloseStdin, Connect: they name one process. */
static int on_one(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		  struct sbx_sandbox *sb, json_object *in, const char *method, int user, int streaming)
{
	struct sbx_err err = {0};
	struct sbx_proc_info p = {0};
	json_object *sel_j = sbx_json_obj(in, "process");
	if (!sel_j)
		sel_j = in;
	if (find(b, sb, sel_j, &p, &err) < 0)
		return serve_connect_from_err(o, streaming, &err);
	struct sbx_proc_sel sel = {.pid = p.pid};
	int as_root = user >= 0 ? user : p.as_root;
	int rc = 0;
	if (!strcmp(method, "Connect")) {
		int pid = p.pid;
		int running = p.running;
		if (stream_start(o, pid) < 0)
			rc = -1;
		else if (!running)
			rc = end_event(o, &p);
		else
			rc = follow(r, o, b, sb, pid, p.tty, -1);
		sbx_proc_info_clear(&p);
		return rc;
	}
	if (!strcmp(method, "Update")) {
		json_object *pty = sbx_json_obj(in, "pty");
		unsigned cols, rows;
		if (!pty)
			rc = serve_connect_unary_ok(o, json_object_new_object());   /* nothing to change */
		else if (pty_size(pty, &cols, &rows) < 0)
			rc = serve_connect_unary_err(o, "invalid_argument", "pty.size needs cols and rows, 1 to 1000");
		else if (!p.tty)
			rc = serve_connect_unary_err(o, "failed_precondition", "the process has no terminal");
		else if (sbx_call(b, proc_resize, &err, sb, &sel, cols, rows, as_root) < 0)
			rc = serve_connect_from_err(o, 0, &err);
		else
			rc = serve_connect_unary_ok(o, json_object_new_object());
	} else if (!strcmp(method, "SendSignal")) {
		int sig = signal_of(in);
		if (!sig)
			rc = serve_connect_unary_err(o, "invalid_argument", "unknown signal");
		else if (sbx_call(b, proc_signal, &err, sb, &sel, sig, as_root) < 0)
			rc = serve_connect_from_err(o, 0, &err);
		else
			rc = serve_connect_unary_ok(o, json_object_new_object());
	} else if (!strcmp(method, "SendInput") || !strcmp(method, "CloseStdin")) {
		json_object *input = sbx_json_obj(in, "input");
		const char *keys = input ? sbx_json_str(input, "pty") : NULL;
		const char *b64 = keys ? keys : input ? sbx_json_str(input, "stdin") : NULL;
		char *data = NULL;
		size_t len = 0;
		int close_in = !strcmp(method, "CloseStdin");
		if (!close_in && keys && !p.tty)
			rc = serve_connect_unary_err(o, "failed_precondition", "the process has no terminal");
		else if (!close_in && (!b64 || serve_unb64(b64, &data, &len) < 0))
			rc = serve_connect_unary_err(o, "invalid_argument", "input.%s must be base64",
						     keys ? "pty" : "stdin");
		else if (sbx_call(b, proc_input, &err, sb, &sel, data, len, close_in, as_root) < 0)
			rc = serve_connect_from_err(o, 0, &err);
		else
			rc = serve_connect_unary_ok(o, json_object_new_object());
		free(data);
	}
	sbx_proc_info_clear(&p);
	return rc;
}

int serve_envd_proc(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		    struct sbx_sandbox *sb, const struct serve_rec *rec, const char *method)
{
	int streaming;
	int user = -1;
	char who[65];
	if (serve_hdr(r, "authorization") && (user = serve_envd_user(r, NULL, who)) < 0)
		return serve_connect_unary_err(o, "unauthenticated", "invalid username: '%s'", who);
	json_object *in = serve_connect_request(r, o, &streaming);
	if (!in)
		return 0;
	int rc;
	if (!strcmp(method, "Start"))
		rc = start(r, o, b, sb, rec, in, user > 0);
	else if (!strcmp(method, "List"))
		rc = list(o, b, sb);
	else if (!strcmp(method, "Connect") || !strcmp(method, "SendSignal") ||
		 !strcmp(method, "SendInput") || !strcmp(method, "CloseStdin") || !strcmp(method, "Update"))
		rc = on_one(r, o, b, sb, in, method, user, streaming);
	else if (streaming)
		rc = serve_connect_end(o, "unimplemented", "this process.Process call is not supported");
	else
		rc = serve_connect_unary_err(o, "unimplemented", "process.Process/%.64s is not supported", method);
	json_object_put(in);
	return rc;
}
