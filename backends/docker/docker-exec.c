/* docker-exec.c - commands in a Docker sandbox: the exec API.
 *
 * One exec = POST /containers/{id}/exec, then POST /exec/{eid}/start on a
 * hijacked connection (docker-api.h's docker_upgrade) that carries stdin
 * to the command and, back, the multiplexed stream: frames of an 8-byte
 * header [stream, 0, 0, 0, size (big-endian u32)] and `size` bytes, stream
 * 1 = stdout and 2 = stderr.  Then GET /exec/{eid}/json for the exit code.
 *
 * Promises:
 *   - the sandbox is resumed first when it is paused (any command resumes)
 *     and started when it had stopped; a container that is not ours is
 *     not_found;
 *   - the command runs as uid/gid 1000 unless as_root, in /workspace unless
 *     told otherwise, and touches the activity marker first (the idle
 *     sweep's clock);
 *   - a timeout is enforced inside the sandbox (whole seconds, rounded up):
 *     the command's whole process group is SIGKILLed; a command killed so
 *     is timed_out with exit_code -1 and signal 9, a result, not an error;
 *   - captured output is capped per stream (truncation is flagged, and the
 *     stream is still drained so the command never blocks on a full pipe);
 *     raw mode writes each frame to the caller's fd as it arrives;
 *   - stdin is written while output is read (no deadlock on large inputs)
 *     and half-closed at its end, so `cat` sees EOF;
 *   - with a tty (Tty: true; the engine makes the pty inside the
 *     container), the stream is the terminal's bytes, not frames; the
 *     size is set right after the start and on every record of
 *     tty_size_fd (POST /exec/{eid}/resize), and the end of stdin is the
 *     terminal's EOF character, not a half-close.  Not over TLS (no
 *     hijack) nor with a timeout (its setsid would take the terminal
 *     away from the command): unsupported.
 * Over TCP+TLS the connection cannot be hijacked (http.c): output is
 * spooled to a temporary file and demultiplexed after the command ends,
 * and stdin is staged into the container beforehand (stage_stdin). */
#include "docker-exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "docker-api.h"
#include "docker-container.h"
#include "docker-gate.h"
#include "doc.h"
#include "tar.h"
#include "util.h"

#define DEFAULT_CAP (1u << 20)
#define GRACE_MS 10000
/* How long an exec waits for a pause or a pausing commit to finish, and
 * for the daemon to report the pid of an exec it is starting. */
#define GATE_WAIT_MS 120000
#define START_WAIT_MS 30000

/* The freeze gate as an exec holds it (docker-gate.h): entered before the
 * state check, left once the exec runs, or on the way out. */
struct held_gate {
	const char *id;
	int held;
};

static void gate_release(struct held_gate *g)
{
	if (g->held)
		docker_gate_leave(g->id);
	g->held = 0;
}

struct sink {
	int fd;                  /* >= 0: raw mode */
	char *buf;
	size_t len, alloc, cap;
	int truncated;
	int werr;                /* errno of a failed raw write */
};

struct demux {
	int raw;                 /* a tty's stream: no frames, all stdout */
	unsigned char hdr[8];
	size_t hlen;
	uint32_t left;
	int stream;
	struct sink out, err;
};

static void sink_put(struct sink *s, const char *p, size_t n)
{
	if (s->fd >= 0) {
		if (!s->werr && sbx_write_all(s->fd, p, n) < 0)
			s->werr = errno ? errno : EIO;
		return;
	}
	size_t room = s->cap > s->len ? s->cap - s->len : 0;
	if (n > room) {
		s->truncated = 1;
		n = room;
	}
	if (!n)
		return;
	if (s->len + n + 1 > s->alloc) {
		size_t a = s->alloc ? s->alloc : 4096;
		while (a < s->len + n + 1)
			a *= 2;
		s->buf = sbx_xrealloc(s->buf, a);
		s->alloc = a;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = 0;
}

/* Feed bytes of the multiplexed stream.  Frames of unknown streams (0 is
 * stdin echo, which Docker never sends without a tty) are skipped. */
static void demux_feed(struct demux *d, const char *p, size_t n)
{
	if (d->raw) {
		sink_put(&d->out, p, n);
		return;
	}
	while (n) {
		if (d->hlen < 8) {
			size_t k = 8 - d->hlen < n ? 8 - d->hlen : n;
			memcpy(d->hdr + d->hlen, p, k);
			d->hlen += k;
			p += k;
			n -= k;
			if (d->hlen == 8) {
				d->stream = d->hdr[0];
				d->left = (uint32_t)d->hdr[4] << 24 | (uint32_t)d->hdr[5] << 16 |
					  (uint32_t)d->hdr[6] << 8 | d->hdr[7];
				if (!d->left)
					d->hlen = 0;
			}
			continue;
		}
		size_t k = d->left < n ? d->left : n;
		if (d->stream == 1)
			sink_put(&d->out, p, k);
		else if (d->stream == 2)
			sink_put(&d->err, p, k);
		p += k;
		n -= k;
		d->left -= (uint32_t)k;
		if (!d->left)
			d->hlen = 0;
	}
}

static int valid_id(const char *id, struct sbx_err *err)
{
	if (!id || !*id || strlen(id) > 128)
		return sbx_fail(err, SBX_INVALID_REQUEST, "exec", "the sandbox has no valid id");
	for (const char *p = id; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      *p == '_' || *p == '-' || *p == '.'))
			return sbx_fail(err, SBX_INVALID_REQUEST, "exec", "invalid sandbox id '%s'", id);
	return 0;
}

/* The exec's Cmd: a shell that touches the activity marker and then runs
 * the argv positionally (no quoting, no word splitting), and touches it
 * again when the command has ended, while the exec still runs: the end is
 * activity, as local's (the idle clock starts again), and the sweep that
 * sees the exec gone sees the new mtime.  A terminal's shell is exec'd
 * (its job control is the session leader's); its end is not marked.
 * With a timeout, the command gets its own process group (setsid) and a killer in another
 * one SIGKILLs that whole group after n seconds, so what the command
 * started dies with it; stdin is handed over through fd 3 because an
 * asynchronous command's stdin would otherwise be /dev/null.  The killer
 * is removed when the command ends first.  Applied in the exec, not to
 * PID 1: a SIGKILL from inside the namespace to its PID 1 is ignored. */
static json_object *exec_cmd(const struct sbx_exec_req *req, int64_t secs, const char *stage)
{
	json_object *a = json_object_new_array();
	char script[1400], pre[512];
	/* The clean environment of sbx-exec(1): the daemon gives PATH, HOME
	 * and HOSTNAME; the rest is set here unless the sandbox (create-time
	 * Env) or --env already set it, which keeps the documented order. */
	int n = snprintf(pre, sizeof(pre),
			 ": \"${USER=%s}\" \"${LOGNAME=%s}\" \"${LANG=C.UTF-8}\" "
			 "\"${SBX_SKILL_OUTPUT_DIR=/workspace/output}\" "
			 "\"${SBX_SESSION_INPUT_DIR=/workspace/input}\"\n"
			 "export USER LOGNAME LANG SBX_SKILL_OUTPUT_DIR SBX_SESSION_INPUT_DIR\n",
			 req->as_root ? "root" : "user", req->as_root ? "root" : "user");
	/* A terminal has its size before the command starts (the engine's
	 * resize comes after the start: a race with a command that asks at
	 * once); an image without stty keeps the engine's. */
	if (req->tty)
		n += snprintf(pre + n, sizeof(pre) - (size_t)n, "stty cols %u rows %u 2>/dev/null\n",
			      req->tty_cols ? req->tty_cols : 80, req->tty_rows ? req->tty_rows : 24);
	/* Staged stdin (TLS, see stage_stdin): open it, then remove the
	 * private folder before the command runs. */
	if (stage)
		snprintf(pre + n, sizeof(pre) - (size_t)n, "exec 0<'%s/in' && rm -rf '%s' || exit 125\n",
			 stage, stage);
	if (secs > 0)
		snprintf(script, sizeof(script),
			 "%s"
			 "touch " DOCKER_MARKER " 2>/dev/null\n"
			 "exec 3<&0\n"
			 "setsid \"$@\" <&3 3<&- &\n"
			 "p=$!\n"
			 "exec 3<&-\n"
			 "setsid sh -c 'sleep \"$1\"; kill -KILL -- \"-$2\" 2>/dev/null' sbx-timeout %lld \"$p\" "
			 "</dev/null >/dev/null 2>&1 &\n"
			 "k=$!\n"
			 "wait \"$p\" 2>/dev/null; rc=$?\n"
			 "kill -KILL -- \"-$k\" 2>/dev/null\n"
			 "touch " DOCKER_MARKER " 2>/dev/null\n"
			 "exit $rc\n",
			 pre, (long long)secs);
	else if (req->tty)
		snprintf(script, sizeof(script), "%stouch " DOCKER_MARKER " 2>/dev/null; exec \"$@\"", pre);
	else
		snprintf(script, sizeof(script),
			 "%stouch " DOCKER_MARKER " 2>/dev/null\n"
			 "\"$@\"; rc=$?\n"
			 "touch " DOCKER_MARKER " 2>/dev/null\n"
			 "exit $rc\n", pre);
	json_object_array_add(a, json_object_new_string("/bin/sh"));
	json_object_array_add(a, json_object_new_string("-c"));
	json_object_array_add(a, json_object_new_string(script));
	json_object_array_add(a, json_object_new_string("sbx-exec"));
	for (char *const *v = req->argv; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

/* POST /containers/{id}/exec.  A container paused or stopped between our
 * check and the call (409) is brought back and the call repeated, at most
 * three times: dockerd applies the engine's pause/resume events after the
 * calls that caused them, so a late event can say "paused" for a moment
 * about a running container. */
static int exec_create(struct sbx_backend *b, const char *id, json_object *body, char **eid,
		       struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/exec", id);
	for (int attempt = 0;; attempt++) {
		json_object *resp;
		if (docker_api(b, "exec", "POST", path, body, &resp, err) == 0) {
			const char *e = sbx_json_str(resp, "Id");
			*eid = e ? sbx_xstrdup(e) : NULL;
			json_object_put(resp);
			return *eid ? 0 : sbx_fail(err, SBX_INTERNAL, "exec", "docker returned no exec id");
		}
		if (err->kind != SBX_CONFLICT || attempt > 2)
			return -1;
		if (attempt > 0)
			sbx_sleep_ms(50);
		if (docker_ensure_running(b, id, err) < 0)
			return -1;
	}
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A tty exec's size (h = rows, w = cols).  Best effort: a size the
 * engine refuses leaves the terminal as it was. */
static void exec_resize(struct sbx_backend *b, const char *eid, unsigned cols, unsigned rows)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/exec/%s/resize?h=%u&w=%u", eid,
						 rows ? rows : 24, cols ? cols : 80);
	struct sbx_err ignored = {0};
	docker_api(b, "exec", "POST", path, NULL, NULL, &ignored);
}

/* The resizes waiting on a tty's tty_size_fd, the last one applied; 0 at
 * its EOF (no more polling it). */
static int pump_resize(struct sbx_backend *b, const char *eid, int fd)
{
	struct sbx_tty_size sz[16];
	ssize_t n = read(fd, sz, sizeof(sz));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	size_t k = n > 0 ? (size_t)n / sizeof(sz[0]) : 0;
	if (k && sz[k - 1].cols && sz[k - 1].rows)
		exec_resize(b, eid, sz[k - 1].cols, sz[k - 1].rows);
	return n != 0;
}

/* Pump the hijacked stream: stdin out (from memory or raw_in_fd, then
 * half-close; with a tty, the EOF character instead), the output in,
 * resizes to the engine, until the daemon closes. */
static int pump(struct sbx_backend *b, const char *eid, int sock, const struct sbx_exec_req *req,
		int attach_in, struct demux *dm, int64_t deadline, struct sbx_err *err)
{
	static const char veof[] = "\x04";
	int size_fd = req->tty ? req->tty_size_fd : -1;
	const char *in = req->stdin_data;
	size_t in_len = req->stdin_data ? req->stdin_len : 0, in_off = 0;
	int from_fd = req->raw_in_fd >= 0;
	char ibuf[65536];
	int in_done = !attach_in, in_eof = 0;
	char buf[65536];

	if (from_fd) {
		in = ibuf;
		in_len = 0;
	}
	set_nonblock(sock);
	for (;;) {
		if (!in_done && in_off == in_len && (!from_fd || in_eof)) {
			if (req->tty && in != veof) {
				/* The terminal's EOF: the pty has no half-close. */
				in = veof;
				in_len = 1;
				in_off = 0;
				from_fd = 0;
				continue;
			}
			if (!req->tty)
				shutdown(sock, SHUT_WR);
			in_done = 1;
		}
		struct pollfd p[3] = {{.fd = sock, .events = POLLIN}, {.fd = -1}, {.fd = size_fd, .events = POLLIN}};
		if (!in_done && in_off < in_len)
			p[0].events |= POLLOUT;
		if (!in_done && from_fd && in_off == in_len && !in_eof)
			p[1] = (struct pollfd){.fd = req->raw_in_fd, .events = POLLIN};
		int ms = -1;
		if (deadline > 0) {
			int64_t left = deadline - sbx_mono_ms();
			if (left <= 0)
				return sbx_fail(err, SBX_TIMEOUT, "exec",
						"the command outlived its timeout and the grace period");
			ms = left > 1000000 ? 1000000 : (int)left;
		}
		int r = poll(p, 3, ms);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return sbx_fail_errno(err, SBX_INTERNAL, "exec", "poll");
		}
		if (size_fd >= 0 && p[2].revents && !pump_resize(b, eid, size_fd))
			size_fd = -1;
		if (p[1].fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = read(req->raw_in_fd, ibuf, sizeof(ibuf));
			if (n < 0 && errno != EINTR && errno != EAGAIN)
				return sbx_fail_errno(err, SBX_INTERNAL, "exec", "reading stdin");
			if (n == 0)
				in_eof = 1;
			if (n > 0) {
				in_len = (size_t)n;
				in_off = 0;
			}
		}
		if (p[0].revents & POLLOUT) {
			ssize_t w = send(sock, in + in_off, in_len - in_off, MSG_NOSIGNAL);
			if (w > 0)
				in_off += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				/* The command closed its stdin (or exited): drop
				 * the rest, keep reading its output. */
				in_done = 1;
			}
			if (from_fd && in_off == in_len) {
				in_off = in_len = 0;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = recv(sock, buf, sizeof(buf), 0);
			if (n == 0)
				return 0;
			if (n < 0) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				if (errno == ECONNRESET)
					return 0;
				return sbx_fail_errno(err, SBX_UNAVAILABLE, "exec", "reading the output stream");
			}
			demux_feed(dm, buf, (size_t)n);
		}
	}
}

/* Over TLS the exec connection cannot be hijacked, so there is no way to
 * write stdin to it.  Instead the bytes are put into the container first,
 * with the archive API, as /tmp/.sbx-stage-<128 random bits>/in, owned by
 * the exec's user, mode 0700/0400; the exec opens it as stdin and removes
 * the folder before the command starts.  The name cannot be guessed in
 * advance, so nothing can be planted there, and sticky /tmp keeps others
 * from renaming a folder they do not own.  raw_in_fd is read into
 * memory (at most 256 MiB) for this.  *stage gets the folder's path. */
static int stage_stdin(struct sbx_backend *b, const char *id, const struct sbx_exec_req *req,
		       char **stage, struct sbx_err *err)
{
	char rnd[33];
	SBX_AUTOFREE char *buf = NULL;
	const char *data = req->stdin_data ? req->stdin_data : "";
	size_t len = req->stdin_data ? req->stdin_len : 0;
	if (req->raw_in_fd >= 0) {
		if (sbx_read_all_fd(req->raw_in_fd, 256u << 20, &buf, &len, err) < 0) {
			sbx_err_prefix(err, "stdin for a tcp+TLS docker endpoint");
			return -1;
		}
		data = buf;
	}
	if (sbx_random_hex(rnd, 16, err) < 0)
		return -1;
	SBX_AUTOFREE char *dir = sbx_xasprintf(".sbx-stage-%s", rnd);
	SBX_AUTOFREE char *file = sbx_xasprintf("%s/in", dir);
	SBX_AUTOCLOSE int tmp = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	if (tmp < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "temporary file");
	unsigned uid = req->as_root ? 0 : 1000;
	int64_t now = sbx_now_ms() / 1000;
	struct sbx_tar_writer w;
	sbx_tar_writer_init(&w, tmp);
	struct sbx_tar_entry de = {.name = dir, .type = SBX_TAR_DIR, .mode = 0700,
				   .uid = uid, .gid = uid, .mtime = now};
	struct sbx_tar_entry fe = {.name = file, .type = SBX_TAR_FILE, .mode = 0400,
				   .uid = uid, .gid = uid, .size = (int64_t)len, .mtime = now};
	if (sbx_tar_write_header(&w, &de, err) < 0 || sbx_tar_write_header(&w, &fe, err) < 0 ||
	    (len && sbx_tar_write_data(&w, data, len, err) < 0) ||
	    sbx_tar_write_pad(&w, (int64_t)len, err) < 0 || sbx_tar_write_end(&w, err) < 0)
		return -1;
	if (lseek(tmp, 0, SEEK_SET) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "exec", "lseek");
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/archive?path=%%2Ftmp", id);
	const char *hdr[] = {"Content-Type: application/x-tar", NULL};
	struct sbx_http_req hr = {.method = "PUT", .path = path, .headers = hdr, .body_fd = tmp};
	struct sbx_http_resp resp = {0};
	if (docker_raw(b, "exec", &hr, &resp, err) < 0)
		return -1;
	int rc = 0;
	if (resp.status < 200 || resp.status >= 300)
		rc = docker_status_err("exec", &resp, err);
	sbx_http_resp_clear(&resp);
	if (rc == 0)
		*stage = sbx_xasprintf("/tmp/%s", dir);
	return rc;
}

/* GET /exec/{eid}/json until the daemon reports the exec's pid (runc has
 * started the process and left the container's cgroup) or its exit, at
 * most START_WAIT_MS.  An engine that reports no Pid is not waited for.
 * Errors are not the caller's: the stream still says how the exec went. */
static void exec_wait_started(struct sbx_backend *b, const char *eid)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/exec/%s/json", eid);
	int64_t deadline = sbx_mono_ms() + START_WAIT_MS;
	for (int i = 0; sbx_mono_ms() < deadline; i++) {
		json_object *j = NULL, *pid = NULL, *ec = NULL;
		struct sbx_err ignored = {0};
		if (docker_api(b, "exec", "GET", path, NULL, &j, &ignored) < 0)
			return;
		int has_pid = json_object_object_get_ex(j, "Pid", &pid);
		int started = has_pid && json_object_get_int64(pid) > 0;
		int ended = !sbx_json_bool(j, "Running", 0) && json_object_object_get_ex(j, "ExitCode", &ec) &&
			    json_object_is_type(ec, json_type_int);
		json_object_put(j);
		if (!has_pid || started || ended)
			return;
		sbx_sleep_ms(i < 20 ? 1 : 5);
	}
}

/* Start the exec and collect its output into dm; the gate is left once
 * the exec runs (over TLS, where it is a no-op, when it ends). */
static int exec_start(struct sbx_backend *b, const char *eid, const struct sbx_exec_req *req,
		      int attach_in, struct demux *dm, int64_t deadline, struct held_gate *gate,
		      struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/exec/%s/start", eid);
	const char *body = req->tty ? "{\"Detach\":false,\"Tty\":true}"
				    : "{\"Detach\":false,\"Tty\":false}";
	const char *hdr[] = {"Content-Type: application/json", NULL};
	struct sbx_http_req hr = {
		.method = "POST", .path = path, .headers = hdr, .body = body,
		.body_len = strlen(body),
	};
	struct sbx_http_resp resp = {0};

	if (docker_conn_tls(b)) {
		/* No hijack over TLS: spool the whole stream, then demux. */
		if (attach_in)
			return sbx_fail(err, SBX_UNSUPPORTED, "exec",
					"stdin is not supported over a tcp+TLS docker endpoint");
		SBX_AUTOCLOSE int tmp = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
		if (tmp < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "exec", "temporary file");
		hr.out_fd = tmp;
		hr.timeout_ms = deadline > 0 ? deadline - sbx_mono_ms() : -1;
		if (hr.timeout_ms == 0)
			hr.timeout_ms = 1;
		if (docker_raw(b, "exec", &hr, &resp, err) < 0)
			return -1;
		if (resp.status < 200 || resp.status >= 300) {
			docker_status_err("exec", &resp, err);
			sbx_http_resp_clear(&resp);
			return -1;
		}
		sbx_http_resp_clear(&resp);
		if (lseek(tmp, 0, SEEK_SET) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "exec", "lseek");
		char buf[65536];
		ssize_t n;
		while ((n = read(tmp, buf, sizeof(buf))) > 0)
			demux_feed(dm, buf, (size_t)n);
		return n < 0 ? sbx_fail_errno(err, SBX_INTERNAL, "exec", "reading the spool") : 0;
	}

	int sock = -1;
	hr.timeout_ms = 30000;
	if (docker_upgrade(b, "exec", &hr, &sock, &resp, err) < 0) {
		exec_wait_started(b, eid);      /* the daemon may start it all the same */
		return -1;
	}
	if (sock < 0) {
		docker_status_err("exec", &resp, err);
		sbx_http_resp_clear(&resp);
		return -1;
	}
	/* Bytes that came with the response headers belong to the stream. */
	if (resp.len)
		demux_feed(dm, resp.body, resp.len);
	sbx_http_resp_clear(&resp);
	exec_wait_started(b, eid);
	gate_release(gate);
	if (req->tty)
		exec_resize(b, eid, req->tty_cols, req->tty_rows);
	int rc = pump(b, eid, sock, req, attach_in, dm, deadline, err);
	close(sock);
	return rc;
}

/* GET /exec/{eid}/json until it reports the exit code.  The stream can end
 * a moment before the daemon records the exit, so "still running" is
 * asked again, a bounded number of times. */
static int exec_exit_code(struct sbx_backend *b, const char *eid, int *code, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/exec/%s/json", eid);
	for (int i = 0; i < 1000; i++) {
		json_object *j;
		if (docker_api(b, "exec", "GET", path, NULL, &j, err) < 0)
			return -1;
		int running = sbx_json_bool(j, "Running", 0);
		json_object *ec = NULL;
		int have = json_object_object_get_ex(j, "ExitCode", &ec) && ec &&
			   json_object_is_type(ec, json_type_int);
		*code = have ? json_object_get_int(ec) : -1;
		json_object_put(j);
		if (!running && have)
			return 0;
		sbx_sleep_ms(i < 20 ? 2 : 10);
	}
	return sbx_fail(err, SBX_TIMEOUT, "exec", "the daemon never reported the exit code");
}

int docker_exec(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req,
		struct sbx_exec_result *res, struct sbx_err *err)
{
	memset(res, 0, sizeof(*res));
	if (!req->argv || !req->argv[0])
		return sbx_fail(err, SBX_INVALID_REQUEST, "exec", "no command");
	if (valid_id(sb->id, err) < 0)
		return -1;
	int64_t t0 = sbx_mono_ms();
	/* A pause must not land between our look at the state and the
	 * exec's start (docker-gate.h): hold the gate until it runs. */
	SBX_AUTOFREE char *full = docker_full_id(b, sb->id, "exec", err);
	if (!full)
		return -1;
	__attribute__((cleanup(gate_release))) struct held_gate gate = {.id = full};
	if (docker_gate_enter(b, full, 0, GATE_WAIT_MS, err) < 0)
		return -1;
	gate.held = 1;
	if (docker_ensure_running(b, sb->id, err) < 0)
		return -1;
	int attach_in = req->stdin_data != NULL || req->raw_in_fd >= 0;
	int64_t secs = req->timeout_ms > 0 ? (req->timeout_ms + 999) / 1000 : 0;
	if (req->tty && (secs > 0 || docker_conn_tls(b)))
		return sbx_fail(err, SBX_UNSUPPORTED, "exec",
				"a terminal with %s is not supported on the docker backend",
				secs > 0 ? "a timeout" : "a tcp+TLS endpoint");

	json_object *body = json_object_new_object();
	json_object_object_add(body, "AttachStdin", json_object_new_boolean(attach_in));
	json_object_object_add(body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStderr", json_object_new_boolean(1));
	json_object_object_add(body, "Tty", json_object_new_boolean(req->tty != 0));
	json_object_object_add(body, "User", json_object_new_string(req->as_root ? "0" : "1000:1000"));
	json_object_object_add(body, "WorkingDir",
			       json_object_new_string(req->cwd && *req->cwd ? req->cwd : "/workspace"));
	json_object *env = json_object_new_array();
	for (char *const *e = req->env; e && *e; e++) {
		if (!strchr(*e, '=') || **e == '=') {
			json_object_put(env);
			json_object_put(body);
			return sbx_fail(err, SBX_INVALID_REQUEST, "exec", "invalid env entry '%s'", *e);
		}
		json_object_array_add(env, json_object_new_string(*e));
	}
	json_object_object_add(body, "Env", env);
	SBX_AUTOFREE char *stage = NULL;
	if (attach_in && docker_conn_tls(b)) {
		if (stage_stdin(b, sb->id, req, &stage, err) < 0) {
			json_object_put(body);
			return -1;
		}
		attach_in = 0;
		json_object_object_add(body, "AttachStdin", json_object_new_boolean(0));
	}
	json_object_object_add(body, "Cmd", exec_cmd(req, secs, stage));

	SBX_AUTOFREE char *eid = NULL;
	int rc = exec_create(b, sb->id, body, &eid, err);
	json_object_put(body);
	if (rc < 0)
		return -1;

	size_t cap = req->output_cap ? req->output_cap : DEFAULT_CAP;
	struct demux dm = {
		.raw = req->tty != 0,
		.out = {.fd = req->raw_out_fd, .cap = cap},
		.err = {.fd = req->raw_err_fd, .cap = cap},
	};
	int64_t deadline = secs > 0 ? sbx_mono_ms() + secs * 1000 + GRACE_MS : 0;
	rc = exec_start(b, eid, req, attach_in, &dm, deadline, &gate, err);
	gate_release(&gate);
	int code = -1;
	if (rc == 0)
		rc = exec_exit_code(b, eid, &code, err);
	if (rc == 0 && (dm.out.werr || dm.err.werr)) {
		errno = dm.out.werr ? dm.out.werr : dm.err.werr;
		rc = sbx_fail_errno(err, SBX_INTERNAL, "exec", "writing the command's output");
		if (errno == EPIPE)
			err->exit_status = SBX_EXIT_IOERR;
	}
	if (rc < 0) {
		free(dm.out.buf);
		free(dm.err.buf);
		return -1;
	}
	res->duration_ms = sbx_mono_ms() - t0;
	res->exit_code = code;
	/* SIGKILL: the shell reports 137; only a kill at or after the limit
	 * counts as the timeout (an OOM kill before it does not). */
	if (secs > 0 && (code == 137 || code == 124) && res->duration_ms + 250 >= req->timeout_ms) {
		res->timed_out = 1;
		res->exit_code = -1;
		res->signal = 9;
	}
	if (req->raw_out_fd < 0) {
		res->out = dm.out.buf ? dm.out.buf : sbx_xstrdup("");
		res->out_len = dm.out.len;
	}
	if (req->raw_err_fd < 0) {
		res->err = dm.err.buf ? dm.err.buf : sbx_xstrdup("");
		res->err_len = dm.err.len;
	}
	res->out_truncated = dm.out.truncated;
	res->err_truncated = dm.err.truncated;
	return 0;
}

/* The kind a failed helper command's stderr points to, and in *why the
 * reason callers tell apart (a folder where a file was wanted). */
static enum sbx_kind kind_of_stderr(const char *s, enum sbx_reason *why)
{
	*why = s && strstr(s, "Is a directory") ? SBX_R_IS_DIR : SBX_R_NONE;
	if (!s)
		return SBX_INTERNAL;
	if (strstr(s, "No such file") || strstr(s, "can't stat") || strstr(s, "can't open"))
		return SBX_NOT_FOUND;
	if (strstr(s, "File exists") || strstr(s, "Directory not empty"))
		return SBX_CONFLICT;
	if (strstr(s, "No space left") || strstr(s, "quota"))
		return SBX_CAPACITY;
	if (strstr(s, "Permission denied") || strstr(s, "Not a directory") ||
	    strstr(s, "Is a directory") || strstr(s, "Read-only") || strstr(s, "Operation not permitted") ||
	    strstr(s, "Invalid argument"))
		return SBX_INVALID_REQUEST;
	return SBX_INTERNAL;
}

int docker_sh(struct sbx_backend *b, struct sbx_sandbox *sb, int as_root, const char *script,
	      const char *const *args, const void *in, size_t in_len, int in_fd, size_t cap,
	      struct sbx_exec_result *res, const char *op, struct sbx_err *err)
{
	size_t n = 0;
	while (args && args[n])
		n++;
	SBX_AUTOFREE char **argv = sbx_xcalloc(n + 5, sizeof(char *));
	argv[0] = (char *)"/bin/sh";
	argv[1] = (char *)"-c";
	argv[2] = (char *)script;
	argv[3] = (char *)"sbx-fs";
	for (size_t i = 0; i < n; i++)
		argv[4 + i] = (char *)args[i];
	struct sbx_exec_req req = {
		.argv = argv, .stdin_data = in, .stdin_len = in_len, .cwd = "/",
		.as_root = as_root, .output_cap = cap ? cap : DEFAULT_CAP,
		.raw_out_fd = -1, .raw_err_fd = -1, .raw_in_fd = in_fd,
	};
	if (in && !in_len)
		req.stdin_data = "";
	if (docker_exec(b, sb, &req, res, err) < 0) {
		snprintf(err->op, sizeof(err->op), "%s", op);
		return -1;
	}
	if (res->exit_code != 0) {
		char *msg = res->err && *res->err ? sbx_trim(res->err) : NULL;
		/* "sbx-fs: line 1: can't create /x: Permission denied" → the tail. */
		const char *shown = msg ? msg : "";
		enum sbx_reason why;
		enum sbx_kind k = kind_of_stderr(msg, &why);
		sbx_fail_reason(err, k, why, op, "%s%s(exit %d)", shown, *shown ? " " : "",
				res->exit_code);
		sbx_exec_result_clear(res);
		return -1;
	}
	return 0;
}
