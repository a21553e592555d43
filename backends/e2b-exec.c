/* e2b-exec.c - exec for the e2b and cube backends: envd's
 * process.Process/Start, a Connect server stream (e2b-wire §3.6).
 *
 * Promises:
 *   - the command runs as the sandbox user ("user", uid 1000) or, with
 *     as_root, as root (Basic "root:"), in /workspace unless a cwd is given;
 *     argv is sent as cmd + args, never through a shell;
 *   - the timeout is envd's Connect-Timeout-Ms: envd kills the process at
 *     expiry; the result says timed_out, exit code -1;
 *   - output beyond the cap (per stream, default 1 MiB) is counted and
 *     dropped, the result says truncated; in raw mode it is written through;
 *   - stdin (data or an fd) goes through SendInput on a second connection
 *     once the start event names the pid, then CloseStdin; without stdin
 *     the request says "stdin": false (no pipe: a reading command sees EOF);
 *   - a stream that ends without the end event (a dropped connection, a
 *     proxy reset) is `unavailable` and says so; the sandbox is not
 *     touched: the command may still be running there. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "doc.h"
#include "e2b-sandbox.h"
#include "util.h"

#define DEFAULT_CAP ((size_t)1 << 20)
#define FRAME_MAX ((size_t)16 << 20)

struct stream {
	struct sbx_backend *b;
	const struct sbx_exec_req *req;
	struct sbx_exec_result *res;
	char *buf;                /* unparsed bytes */
	size_t len, cap;
	size_t out_cap;
	int started, ended, pid;
	int frames;
	pthread_t feeder;         /* stdin, while the stream is read */
	int feeding;
	struct sbx_err end_err;   /* an error in the end-of-stream message */
	int end_error;
};

static int decode_b64(const char *s, unsigned char **out, size_t *n)
{
	size_t l = strlen(s);
	*out = sbx_xmalloc(l / 4 * 3 + 4);
	long k = sbx_base64_decode(*out, s, l);
	if (k < 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	*n = (size_t)k;
	return 0;
}

static void keep(char **dst, size_t *dlen, int *trunc, size_t cap, const unsigned char *d, size_t n)
{
	size_t room = *dlen < cap ? cap - *dlen : 0;
	size_t take = n < room ? n : room;
	if (take < n)
		*trunc = 1;
	if (!take)
		return;
	*dst = sbx_xrealloc(*dst, *dlen + take + 1);
	memcpy(*dst + *dlen, d, take);
	*dlen += take;
	(*dst)[*dlen] = '\0';
}

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

static void *feeder_main(void *arg)
{
	struct stream *s = arg;
	struct sbx_err err = {0};
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	feed_stdin(s, &err);
	return NULL;
}

static int start_feeder(struct stream *s, struct sbx_err *err)
{
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

static int signal_of(const char *status)
{
	static const struct { const char *name; int sig; } names[] = {
		{"killed", SIGKILL}, {"terminated", SIGTERM}, {"interrupt", SIGINT},
		{"hangup", SIGHUP}, {"aborted", SIGABRT}, {"segmentation fault", SIGSEGV},
		{"broken pipe", SIGPIPE}, {"quit", SIGQUIT}, {"alarm clock", SIGALRM},
	};
	if (!status || strncmp(status, "signal: ", 8) != 0)
		return 0;
	for (size_t i = 0; i < SBX_ARRAY_LEN(names); i++)
		if (!strncmp(status + 8, names[i].name, strlen(names[i].name)))
			return names[i].sig;
	return SIGKILL;
}

static int on_event(struct stream *s, json_object *ev, struct sbx_err *err)
{
	json_object *x;
	if ((x = sbx_json_obj(ev, "start"))) {
		s->started = 1;
		s->pid = (int)sbx_json_int(x, "pid", 0);
		if (s->req->stdin_data || s->req->raw_in_fd >= 0)
			return start_feeder(s, err);
	} else if ((x = sbx_json_obj(ev, "data"))) {
		const char *o = sbx_json_str(x, "stdout"), *e = sbx_json_str(x, "stderr");
		const char *d = o ? o : e;
		if (!d)
			return 0;
		unsigned char *raw;
		size_t n;
		if (decode_b64(d, &raw, &n) < 0)
			return sbx_fail(err, SBX_INTERNAL, "exec", "envd sent output that is not base64");
		int fd = o ? s->req->raw_out_fd : s->req->raw_err_fd;
		int rc = 0;
		if (fd >= 0) {
			if (sbx_write_all(fd, raw, n) < 0)
				rc = sbx_fail_errno(err, SBX_INTERNAL, "exec", "writing the command's output");
		} else if (o) {
			keep(&s->res->out, &s->res->out_len, &s->res->out_truncated, s->out_cap, raw, n);
		} else {
			keep(&s->res->err, &s->res->err_len, &s->res->err_truncated, s->out_cap, raw, n);
		}
		free(raw);
		return rc;
	} else if ((x = sbx_json_obj(ev, "end"))) {
		s->ended = 1;
		const char *st = sbx_json_str(x, "status");
		int sig = signal_of(st);
		s->res->signal = sig;
		s->res->exit_code = sig ? -1 : (int)sbx_json_int(x, "exitCode", 0);
	}
	return 0;
}

/* The end-of-stream message: {} or {"error": {"code", "message"}}. */
static void on_trailer(struct stream *s, json_object *m)
{
	json_object *e = sbx_json_obj(m, "error");
	if (!e)
		return;
	const char *code = sbx_json_str(e, "code"), *msg = sbx_json_str(e, "message");
	if (code && !strcmp(code, "deadline_exceeded")) {
		s->res->timed_out = 1;
		s->res->exit_code = -1;
		return;
	}
	s->end_error = 1;
	sbx_fail(&s->end_err, e2b_connect_kind(code), "exec", "envd: %s%s%s", code ? code : "error",
		 msg ? ": " : "", msg ? msg : "");
}

static int on_body(void *ctx, const char *data, size_t len, struct sbx_err *err)
{
	struct stream *s = ctx;
	if (s->len + len > s->cap) {
		s->cap = (s->len + len) * 2;
		s->buf = sbx_xrealloc(s->buf, s->cap);
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	size_t off = 0;
	int rc = 0;
	while (rc == 0 && s->len - off >= 5) {
		unsigned char *h = (unsigned char *)s->buf + off;
		uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
		if (n > FRAME_MAX)
			return sbx_fail(err, SBX_INTERNAL, "exec", "envd sent a %u-byte frame", n);
		if (s->len - off - 5 < n)
			break;
		json_tokener *tok = json_tokener_new();
		json_object *m = json_tokener_parse_ex(tok, (char *)h + 5, (int)n);
		json_tokener_free(tok);
		off += 5 + n;
		s->frames++;
		if (!m)
			return sbx_fail(err, SBX_INTERNAL, "exec", "envd sent a frame that is not JSON");
		if (h[0] & 2)
			on_trailer(s, m);
		else if (sbx_json_obj(m, "event"))
			rc = on_event(s, sbx_json_obj(m, "event"), err);
		json_object_put(m);
	}
	memmove(s->buf, s->buf + off, s->len - off);
	s->len -= off;
	return rc;
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
	json_object_object_add(proc, "envs", envs);
	sbx_json_set_str(proc, "cwd", req->cwd ? req->cwd : "/workspace");
	json_object *body = json_object_new_object();
	json_object_object_add(body, "process", proc);
	sbx_json_set_bool(body, "stdin", req->stdin_data != NULL || req->raw_in_fd >= 0);
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
	struct stream s = {.b = b, .req = req, .res = res,
			   .out_cap = req->output_cap ? req->output_cap : DEFAULT_CAP};
	struct sbx_http_req hr = {.method = "POST", .path = "/process.Process/Start", .headers = hdrs,
				  .body = frame, .body_len = n + 5, .timeout_ms = -1,
				  .on_body = on_body, .on_body_ctx = &s};
	struct sbx_http_resp resp = {0};
	int rc = e2b_envd_do(b, "exec", &hr, &resp, err);
	stop_feeder(&s);
	free(frame);
	res->duration_ms = sbx_mono_ms() - t0;
	free(s.buf);
	if (rc == 0 && resp.status != 200)
		rc = e2b_status_err("exec", &resp, err);
	sbx_http_resp_clear(&resp);
	if (rc == 0 && s.end_error) {
		*err = s.end_err;
		rc = -1;
	}
	if (rc == 0 && !s.ended && !res->timed_out)
		rc = sbx_fail(err, SBX_UNAVAILABLE, "exec",
			      "the exec stream of sandbox %s ended before the command did (%s); "
			      "the sandbox is kept, the command may still run", sb->id,
			      s.started ? "after its start" : "before its start");
	if (rc < 0 && err->kind == SBX_UNAVAILABLE && !strstr(err->msg, "sandbox is kept"))
		sbx_err_prefix(err, "the exec stream of sandbox %s broke (the sandbox is kept)", sb->id);
	if (rc < 0)
		sbx_exec_result_clear(res);
	return rc;
}
