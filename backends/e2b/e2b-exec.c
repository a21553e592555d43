/* e2b-exec.c - exec for the e2b and cube backends: envd's
 * process.Process/Start, a Connect server stream (e2b-wire §3.6).
 *
 * Promises:
 *   - the command runs as the sandbox user ("user", uid 1000) or, with
 *     as_root, as root (Basic "root:"), in /workspace unless a cwd is given;
 *     argv is sent as cmd + args, never through a shell;
 *   - the timeout is envd's Connect-Timeout-Ms: envd kills the process at
 *     expiry; the result says timed_out, exit code -1.  The stream itself
 *     is bounded too, at the timeout and a grace (E2B_EXEC_GRACE_MS): a
 *     server that stalls ends the same way, timed_out, and the process
 *     (its pid known from the start event) is then sent SIGKILL through
 *     SendSignal: best effort, a server that does not answer that either
 *     leaves it running;
 *   - output beyond the cap (per stream, default 1 MiB) is counted and
 *     dropped, the result says truncated; in raw mode it is written through;
 *   - stdin (data or an fd) goes through SendInput on a second connection
 *     once the first start event names the pid (a repeated start is
 *     ignored: one feeder, one thread per handle), then CloseStdin; without stdin
 *     the request says "stdin": false (no pipe: a reading command sees EOF);
 *   - with tty, the Start asks envd for a pty of the request's size
 *     (80x24 by default); its output is stdout; the feeder sends the keys
 *     read from raw_in_fd as SendInput's `pty`, at their end a ^D (the
 *     terminal's EOF, as local's; never CloseStdin, which is for pipes),
 *     and each size read from tty_size_fd as an Update;
 *   - a stream that ends without the end event (a dropped connection, a
 *     proxy reset) is `unavailable` and says so; the sandbox is not
 *     touched: the command may still be running there. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "doc.h"
#include "e2b-sandbox.h"
#include "util.h"

#define DEFAULT_CAP ((size_t)1 << 20)
/* How long after its timeout a stream may still end on its own. */
#define E2B_EXEC_GRACE_MS 2000

struct stream {
	struct sbx_backend *b;
	const struct sbx_exec_req *req;
	int pid;
	pthread_t feeder;         /* stdin, while the stream is read */
	int feeding;
	struct e2b_exec_stream rd;
};

/* Send all of stdin (data, or the fd to its end) and close it, on the
 * second data-plane handle, in a thread of its own: the stream goes on
 * being read meanwhile.  A process that exits first closes its stdin;
 * what is left is dropped, as a pipe's writer gets EPIPE. */
static int feed_stdin(struct stream *s, struct sbx_err *err)
{
	struct sbx_backend *b = s->b;
	const struct sbx_exec_req *req = s->req;
	int rc = 0;
	char buf[65536];
	size_t off = 0;
	for (;;) {
		const char *d;
		size_t n;
		if (req->raw_in_fd >= 0) {
			pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
			ssize_t got = read(req->raw_in_fd, buf, sizeof(buf));
			pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0) {
				rc = sbx_fail_errno(err, SBX_INTERNAL, "exec", "reading stdin");
				break;
			}
			d = buf;
			n = (size_t)got;
		} else {
			d = req->stdin_data + off;
			n = req->stdin_len - off < sizeof(buf) ? req->stdin_len - off : sizeof(buf);
			off += n;
		}
		if (!n)
			break;
		char *b64 = sbx_base64(d, n, NULL);
		json_object *in = json_object_new_object(), *p = json_object_new_object(), *i = json_object_new_object();
		sbx_json_set_int(p, "pid", s->pid);
		json_object_object_add(in, "process", p);
		json_object_object_add(i, "stdin", json_object_new_string(b64));
		json_object_object_add(in, "input", i);
		free(b64);
		json_object *out = NULL;
		rc = e2b_rpc_on(b, 1, "exec", "process.Process/SendInput", in, NULL, &out, err);
		json_object_put(in);
		json_object_put(out);
		if (rc < 0)
			break;
	}
	if (rc == 0) {
		json_object *in = json_object_new_object(), *p = json_object_new_object(), *out = NULL;
		sbx_json_set_int(p, "pid", s->pid);
		json_object_object_add(in, "process", p);
		rc = e2b_rpc_on(b, 1, "exec", "process.Process/CloseStdin", in, NULL, &out, err);
		json_object_put(in);
		json_object_put(out);
	}
	return rc;
}

/* Our deadline cut the stream: the process envd did not kill is killed
 * (SIGKILL, as envd's own timeout does).  Best effort: the result is
 * timed_out whatever this answers. */
static void kill_cut(struct sbx_backend *b, const struct stream *s)
{
	if (s->pid <= 0)
		return;
	json_object *in = json_object_new_object(), *p = json_object_new_object(), *out = NULL;
	sbx_json_set_int(p, "pid", s->pid);
	json_object_object_add(in, "process", p);
	sbx_json_set_str(in, "signal", "SIGNAL_SIGKILL");
	struct sbx_err ignored = {0};
	e2b_rpc(b, "exec", "process.Process/SendSignal", in, s->req->as_root ? "root" : "user", &out, &ignored);
	sbx_err_clear(&ignored);
	json_object_put(in);
	json_object_put(out);
}

/* One envd call about the terminal of process s->pid: SendInput's pty
 * keys (data) or an Update to size sz, on the second handle. */
static int tty_call(struct stream *s, const char *data, size_t n, const struct sbx_tty_size *sz,
		    struct sbx_err *err)
{
	json_object *in = json_object_new_object(), *p = json_object_new_object(), *out = NULL;
	sbx_json_set_int(p, "pid", s->pid);
	json_object_object_add(in, "process", p);
	const char *method;
	if (sz) {
		json_object *pty = json_object_new_object(), *size = json_object_new_object();
		sbx_json_set_int(size, "cols", sz->cols);
		sbx_json_set_int(size, "rows", sz->rows);
		json_object_object_add(pty, "size", size);
		json_object_object_add(in, "pty", pty);
		method = "process.Process/Update";
	} else {
		char *b64 = sbx_base64(data, n, NULL);
		json_object *i = json_object_new_object();
		json_object_object_add(i, "pty", json_object_new_string(b64));
		json_object_object_add(in, "input", i);
		free(b64);
		method = "process.Process/SendInput";
	}
	int rc = e2b_rpc_on(s->b, 1, "exec", method, in, NULL, &out, err);
	json_object_put(in);
	json_object_put(out);
	return rc;
}

/* A terminal's feeder: keys from raw_in_fd and sizes from tty_size_fd as
 * they come, until both have ended (or the stream is over: cancelled in
 * poll).  A size is a whole struct sbx_tty_size (a short read ends the
 * size stream). */
static int feed_tty(struct stream *s, struct sbx_err *err)
{
	const struct sbx_exec_req *req = s->req;
	struct pollfd pf[2] = {{.fd = req->raw_in_fd, .events = POLLIN},
			       {.fd = req->tty_size_fd, .events = POLLIN}};
	char buf[16384];
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		int k = poll(pf, 2, -1);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "exec", "waiting for the terminal's input");
		if (pf[0].fd >= 0 && pf[0].revents) {
			ssize_t got = read(pf[0].fd, buf, sizeof(buf));
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				/* Our input's end is the terminal's EOF, once, as
				 * local's (^D: a reading cat ends). */
				pf[0].fd = -1;
				if (tty_call(s, "\x04", 1, NULL, err) < 0)
					return -1;
			} else if (tty_call(s, buf, (size_t)got, NULL, err) < 0)
				return -1;
		}
		if (pf[1].fd >= 0 && pf[1].revents) {
			struct sbx_tty_size sz;
			ssize_t got = read(pf[1].fd, &sz, sizeof(sz));
			if (got < 0 && errno == EINTR)
				continue;
			if (got != (ssize_t)sizeof(sz))
				pf[1].fd = -1;
			else if (sz.cols && sz.rows && tty_call(s, NULL, 0, &sz, err) < 0)
				return -1;
		}
	}
	return 0;
}

static void *feeder_main(void *arg)
{
	struct stream *s = arg;
	struct sbx_err err = {0};
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	if (s->req->tty)
		feed_tty(s, &err);
	else
		feed_stdin(s, &err);
	return NULL;
}

/* The first start event: stdin's feeder starts, once (on_start is called
 * once by the stream reader; `feeding` guards it all the same). */
static int start_feeder(void *ctx, int pid, struct sbx_err *err)
{
	struct stream *s = ctx;
	if (!s->pid)
		s->pid = pid;
	const struct sbx_exec_req *req = s->req;
	if (s->feeding || (!req->stdin_data && req->raw_in_fd < 0 && !(req->tty && req->tty_size_fd >= 0)))
		return 0;
	/* The second handle is opened here, before the thread uses it; the
	 * stream keeps the first. */
	if (e2b_envd_second(s->b, err) < 0)
		return -1;
	if (pthread_create(&s->feeder, NULL, feeder_main, s) != 0)
		return sbx_fail(err, SBX_INTERNAL, "exec", "cannot start the stdin thread");
	s->feeding = 1;
	return 0;
}

/* The stream is over: a feeder still blocked reading our stdin is
 * cancelled (read is a cancellation point), then joined. */
static void stop_feeder(struct stream *s)
{
	if (!s->feeding)
		return;
	pthread_cancel(s->feeder);
	pthread_join(s->feeder, NULL);
	s->feeding = 0;
}

static int on_body(void *ctx, const char *data, size_t len, struct sbx_err *err)
{
	struct stream *s = ctx;
	return e2b_exec_stream_feed(&s->rd, data, len, err);
}

static json_object *start_body(const struct sbx_exec_req *req)
{
	json_object *proc = json_object_new_object();
	sbx_json_set_str(proc, "cmd", req->argv[0]);
	json_object *args = json_object_new_array();
	for (char *const *a = req->argv + 1; *a; a++)
		json_object_array_add(args, json_object_new_string(*a));
	json_object_object_add(proc, "args", args);
	json_object *envs = json_object_new_object();
	for (char *const *e = req->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		SBX_AUTOFREE char *k = strndup(*e, (size_t)(eq - *e));
		sbx_json_set_str(envs, k, eq + 1);
	}
	/* What docker exec -t sets, and local's -t (sbx-exec(1)). */
	if (req->tty && !json_object_object_get_ex(envs, "TERM", NULL))
		sbx_json_set_str(envs, "TERM", "xterm");
	json_object_object_add(proc, "envs", envs);
	sbx_json_set_str(proc, "cwd", req->cwd ? req->cwd : "/workspace");
	json_object *body = json_object_new_object();
	json_object_object_add(body, "process", proc);
	if (req->tty) {
		json_object *pty = json_object_new_object(), *size = json_object_new_object();
		sbx_json_set_int(size, "cols", req->tty_cols ? req->tty_cols : 80);
		sbx_json_set_int(size, "rows", req->tty_rows ? req->tty_rows : 24);
		json_object_object_add(pty, "size", size);
		json_object_object_add(body, "pty", pty);
	} else {
		sbx_json_set_bool(body, "stdin", req->stdin_data != NULL || req->raw_in_fd >= 0);
	}
	return body;
}

int e2b_exec(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req,
	     struct sbx_exec_result *res, struct sbx_err *err)
{
	memset(res, 0, sizeof(*res));
	if (!req->argv || !req->argv[0])
		return sbx_fail(err, SBX_INVALID_REQUEST, "exec", "no command");
	if (e2b_attach(b, sb, "exec", err) < 0)
		return -1;
	int64_t t0 = sbx_mono_ms();
	json_object *body = start_body(req);
	const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(text);
	char *frame = sbx_xmalloc(n + 5);
	frame[0] = 0;
	frame[1] = (char)(n >> 24);
	frame[2] = (char)(n >> 16);
	frame[3] = (char)(n >> 8);
	frame[4] = (char)n;
	memcpy(frame + 5, text, n);
	json_object_put(body);
	SBX_AUTOFREE char *auth = e2b_basic_hdr(req->as_root ? "root" : "user");
	SBX_AUTOFREE char *tmo = req->timeout_ms > 0 ? sbx_xasprintf("Connect-Timeout-Ms: %lld",
								    (long long)req->timeout_ms) : NULL;
	const char *hdrs[] = {"Content-Type: application/connect+json", "Connect-Protocol-Version: 1",
			      "Keepalive-Ping-Interval: 50", auth, tmo, NULL};
	struct stream s = {.b = b, .req = req,
			   .rd = {.res = res, .raw_out_fd = req->raw_out_fd, .raw_err_fd = req->raw_err_fd,
				  .out_cap = req->output_cap ? req->output_cap : DEFAULT_CAP,
				  .on_start = start_feeder}};
	s.rd.ctx = &s;
	/* envd ends the stream at the timeout; a server that does not is
	 * cut off a grace later, with the same result. */
	int64_t limit = req->timeout_ms > 0 ? req->timeout_ms + E2B_EXEC_GRACE_MS : -1;
	struct sbx_http_req hr = {.method = "POST", .path = "/process.Process/Start", .headers = hdrs,
				  .body = frame, .body_len = n + 5, .timeout_ms = limit,
				  .on_body = on_body, .on_body_ctx = &s};
	struct sbx_http_resp resp = {0};
	int rc = e2b_envd_do(b, "exec", &hr, &resp, err);
	stop_feeder(&s);
	free(frame);
	res->duration_ms = sbx_mono_ms() - t0;
	e2b_exec_stream_free(&s.rd);
	int cut = rc < 0 && err->kind == SBX_TIMEOUT && limit > 0 && res->duration_ms >= req->timeout_ms;
	if (cut) {              /* our deadline, not envd's: the same result */
		sbx_err_clear(err);
		kill_cut(b, &s);
		res->timed_out = 1;
		res->exit_code = -1;
		rc = 0;
	}
	if (rc == 0 && !cut && resp.status != 200)
		rc = e2b_status_err("exec", &resp, err);
	sbx_http_resp_clear(&resp);
	if (rc == 0 && s.rd.end_error) {
		*err = s.rd.end_err;
		rc = -1;
	}
	/* Unavailable says the sandbox is kept, once: this message says so
	 * itself, any other gets the prefix. */
	if (rc == 0 && !s.rd.ended && !res->timed_out)
		rc = sbx_fail(err, SBX_UNAVAILABLE, "exec",
			      "the exec stream of sandbox %s ended before the command did (%s); "
			      "the sandbox is kept, the command may still run", sb->id,
			      s.rd.started ? "after its start" : "before its start");
	else if (rc < 0 && err->kind == SBX_UNAVAILABLE)
		sbx_err_prefix(err, "the exec stream of sandbox %s broke (the sandbox is kept)", sb->id);
	if (rc < 0)
		sbx_exec_result_clear(res);
	return rc;
}
