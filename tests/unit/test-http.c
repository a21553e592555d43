/* The HTTP transport against a real loopback server written here: a forked
 * process that speaks just enough HTTP/1.1 (keep-alive, Content-Length and
 * chunked request bodies, a 101 upgrade) on 127.0.0.1 and on a unix socket.
 * Each connection is served by its own child, numbered by the accept loop,
 * so a test can see whether the client reused its connection. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "http.h"
#include "util.h"
#include "tap.h"

/* ---- the server ------------------------------------------------------ */

struct rq {
	char method[16], path[512], ctype[64];
	long clen;
	int chunked;
	char *body;
	size_t blen;
};

static char inbuf[(1 << 18) + 1];
static size_t inlen;

/* Read more bytes into inbuf; 0 on EOF. */
static ssize_t fill(int fd)
{
	if (inlen >= sizeof(inbuf) - 1)
		return -1;
	ssize_t r = read(fd, inbuf + inlen, sizeof(inbuf) - 1 - inlen);
	if (r > 0)
		inlen += (size_t)r;
	return r;
}

static void consume(size_t n)
{
	memmove(inbuf, inbuf + n, inlen - n);
	inlen -= n;
}

static int need(int fd, size_t n)
{
	while (inlen < n)
		if (fill(fd) <= 0)
			return -1;
	return 0;
}

static void append(struct rq *q, const char *p, size_t n)
{
	q->body = sbx_xrealloc(q->body, q->blen + n + 1);
	memcpy(q->body + q->blen, p, n);
	q->blen += n;
	q->body[q->blen] = 0;
}

/* One request: 1, or 0 at EOF / garbage. */
static int read_request(int fd, struct rq *q)
{
	char *end;
	memset(q, 0, sizeof(*q));
	q->clen = -1;
	for (;;) {
		inbuf[inlen < sizeof(inbuf) ? inlen : sizeof(inbuf) - 1] = 0;
		if ((end = strstr(inbuf, "\r\n\r\n")))
			break;
		if (fill(fd) <= 0)
			return 0;
	}
	size_t hl = (size_t)(end - inbuf) + 4;
	char head[8192];
	snprintf(head, sizeof(head), "%.*s", (int)hl, inbuf);
	consume(hl);
	if (sscanf(head, "%15s %511s", q->method, q->path) != 2)
		return 0;
	for (char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
		if (!strncasecmp(l + 2, "Content-Length:", 15))
			q->clen = atol(l + 17);
		if (!strncasecmp(l + 2, "Transfer-Encoding: chunked", 26))
			q->chunked = 1;
		if (!strncasecmp(l + 2, "Content-Type:", 13))
			sscanf(l + 15, "%63[^\r]", q->ctype);
	}
	if (q->chunked) {
		for (;;) {
			char *crlf;
			while (!(inbuf[inlen] = 0, crlf = strstr(inbuf, "\r\n")))
				if (fill(fd) <= 0)
					return 0;
			size_t n = strtoul(inbuf, NULL, 16);
			consume((size_t)(crlf - inbuf) + 2);
			if (need(fd, n + 2) < 0)
				return 0;
			append(q, inbuf, n);
			consume(n + 2);
			if (n == 0)
				break;
		}
	} else if (q->clen > 0) {
		size_t left = (size_t)q->clen;
		while (left) {
			if (!inlen && fill(fd) <= 0)
				return 0;
			size_t n = inlen < left ? inlen : left;
			append(q, inbuf, n);
			consume(n);
			left -= n;
		}
	}
	if (!q->body)
		append(q, "", 0);
	return 1;
}

static void reply(int fd, int status, const char *extra, const char *body, size_t len)
{
	char head[1024];
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s\r\n",
			 status, len, extra ? extra : "");
	sbx_write_all(fd, head, (size_t)n);
	sbx_write_all(fd, body, len);
}

static void serve_conn(int fd, int connno)
{
	struct rq q;
	while (read_request(fd, &q)) {
		char extra[512];
		if (!strncmp(q.path, "/v1.41/", 7))     /* a base URL with a path */
			memmove(q.path, q.path + 6, strlen(q.path + 6) + 1);
		if (!strncmp(q.path, "/status/", 8)) {
			int st = atoi(q.path + 8);
			char body[64];
			snprintf(body, sizeof(body), st == 204 ? "" : "status %d", st);
			snprintf(extra, sizeof(extra), "X-Conn: %d\r\n", connno);
			reply(fd, st, extra, body, strlen(body));
		} else if (!strcmp(q.path, "/echo")) {
			snprintf(extra, sizeof(extra),
				 "X-Method: %s\r\nX-Chunked: %s\r\nX-Clen: %ld\r\nX-Conn: %d\r\n"
				 "x-lower-case:  spaced value  \r\nContent-Type: text/plain\r\n"
				 "X-Req-Type: %s\r\n",
				 q.method, q.chunked ? "yes" : "no", q.clen, connno, q.ctype[0] ? q.ctype : "none");
			reply(fd, 200, extra, q.body, q.blen);
		} else if (!strncmp(q.path, "/big/", 5)) {
			size_t n = strtoul(q.path + 5, NULL, 10);
			char *b = sbx_xmalloc(n);
			for (size_t i = 0; i < n; i++)
				b[i] = (char)('a' + i % 26);
			reply(fd, 200, NULL, b, n);
			free(b);
		} else if (!strcmp(q.path, "/hang")) {
			pause();
		} else if (!strcmp(q.path, "/redirect")) {
			reply(fd, 302, "Location: http://169.254.169.254/latest/meta-data/\r\n", "", 0);
		} else if (!strcmp(q.path, "/upgrade")) {
			/* Headers and the first stream bytes in one write: the client
			 * must not lose "EARLY". */
			const char *r = "HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
					"Content-Type: application/vnd.docker.raw-stream\r\n\r\nEARLY";
			sbx_write_all(fd, r, strlen(r));
			char b[4096];
			if (inlen) {          /* stream bytes that came with the request */
				for (size_t i = 0; i < inlen; i++)
					inbuf[i] = (char)toupper((unsigned char)inbuf[i]);
				sbx_write_all(fd, inbuf, inlen);
				inlen = 0;
			}
			ssize_t n;
			while ((n = read(fd, b, sizeof(b))) > 0) {
				for (ssize_t i = 0; i < n; i++)
					b[i] = (char)toupper((unsigned char)b[i]);
				sbx_write_all(fd, b, (size_t)n);
			}
			free(q.body);
			return;
		} else {
			reply(fd, 404, NULL, "no such path", 12);
		}
		free(q.body);
	}
}

static void serve(int lfd)
{
	signal(SIGCHLD, SIG_IGN);
	for (int connno = 1;; connno++) {
		int c = accept(lfd, NULL, NULL);
		if (c < 0)
			continue;
		if (fork() == 0) {
			serve_conn(c, connno);
			_exit(0);
		}
		close(c);
	}
}

static pid_t server_pid;

/* Start the server (its own process group) on a TCP and a unix listener. */
static void start_server(int tcp_fd, int unix_fd)
{
	server_pid = fork();
	if (server_pid == 0) {
		setpgid(0, 0);
		if (fork() == 0)
			serve(unix_fd);
		serve(tcp_fd);
	}
	setpgid(server_pid, server_pid);
}

static void stop_server(void)
{
	kill(-server_pid, SIGKILL);
	waitpid(server_pid, NULL, 0);
}

static int listen_tcp(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0)
		return -1;
	getsockname(fd, (struct sockaddr *)&a, &al);
	*port = ntohs(a.sin_port);
	return fd;
}

static int listen_unix(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0)
		return -1;
	return fd;
}

/* ---- the tests ------------------------------------------------------- */

static char *hdr(const struct sbx_http_resp *r, const char *name)
{
	static char keep[4][256];
	static int k;
	char *v = sbx_http_header(r, name);
	char *slot = keep[k++ % 4];
	snprintf(slot, 256, "%s", v ? v : "(none)");
	free(v);
	return slot;
}

static void test_basic(struct sbx_http *h, const char *label)
{
	struct sbx_err err = {0};
	struct sbx_http_resp r;
	int st[] = {200, 201, 204, 400, 401, 404, 409, 500, 503};
	for (size_t i = 0; i < SBX_ARRAY_LEN(st); i++) {
		char path[32];
		snprintf(path, sizeof(path), "/status/%d", st[i]);
		struct sbx_http_req q = {.method = "GET", .path = path};
		int rc = sbx_http_do(h, &q, &r, &err);
		if (!ok(rc == 0 && r.status == st[i], "%s: status %d is returned, not an error", label, st[i]))
			printf("#   rc %d status %d: %s\n", rc, r.status, err.msg);
		sbx_http_resp_clear(&r);
	}

	/* Body both ways, headers, and the keep-alive connection. */
	const char *hs[] = {"X-Test: 1", "Content-Type: application/json", NULL};
	struct sbx_http_req q = {.method = "POST", .path = "/echo", .headers = hs,
				 .body = "{\"a\":1}", .body_len = 7};
	ok(sbx_http_do(h, &q, &r, &err) == 0, "%s: POST with a body", label);
	is_int(r.status, 200, "%s: POST status", label);
	is_str(r.body, "{\"a\":1}", "%s: request body arrives and comes back", label);
	is_int((long long)r.len, 7, "%s: response length", label);
	is_str(hdr(&r, "x-method"), "POST", "%s: header lookup is case-insensitive", label);
	is_str(hdr(&r, "X-Lower-Case"), "spaced value", "%s: header value is trimmed", label);
	is_str(hdr(&r, "X-Clen"), "7", "%s: in-memory body is sent with Content-Length", label);
	ok(sbx_http_header(&r, "X-Missing") == NULL, "%s: missing header is NULL", label);
	ok(sbx_http_header(&r, "X-Con") == NULL, "%s: a header name prefix does not match", label);
	char conn1[16];
	snprintf(conn1, sizeof(conn1), "%s", hdr(&r, "X-Conn"));
	sbx_http_resp_clear(&r);

	struct sbx_http_req q2 = {.method = "PUT", .path = "echo"};
	ok(sbx_http_do(h, &q2, &r, &err) == 0 && r.status == 200, "%s: PUT without a body", label);
	is_str(r.body, "", "%s: empty body is an empty string", label);
	is_str(hdr(&r, "X-Method"), "PUT", "%s: method kept; path without '/' works", label);
	is_str(hdr(&r, "X-Conn"), conn1, "%s: the connection is reused", label);
	is_str(hdr(&r, "X-Clen"), "0", "%s: an empty PUT says Content-Length: 0", label);
	is_str(hdr(&r, "X-Req-Type"), "none", "%s: and carries no form Content-Type", label);
	sbx_http_resp_clear(&r);
	struct sbx_http_req qp = {.method = "POST", .path = "/echo", .headers = hs};
	ok(sbx_http_do(h, &qp, &r, &err) == 0, "%s: empty POST with the caller's Content-Type", label);
	is_str(hdr(&r, "X-Req-Type"), "application/json", "%s: the caller's Content-Type is kept", label);
	sbx_http_resp_clear(&r);

	struct sbx_http_req q3 = {.method = "DELETE", .path = "/echo"};
	ok(sbx_http_do(h, &q3, &r, &err) == 0 && !strcmp(hdr(&r, "X-Method"), "DELETE"),
	   "%s: DELETE", label);
	sbx_http_resp_clear(&r);

	/* Redirects are not followed. */
	struct sbx_http_req q4 = {.method = "GET", .path = "/redirect"};
	ok(sbx_http_do(h, &q4, &r, &err) == 0 && r.status == 302,
	   "%s: a redirect to a metadata address is returned as 302, not followed", label);
	sbx_http_resp_clear(&r);
}

static void test_streams(struct sbx_http *h, const char *label)
{
	struct sbx_err err = {0};
	struct sbx_http_resp r;

	/* Request body from a pipe: chunked, with a writer child. */
	int p[2];
	if (pipe(p) < 0)
		abort();
	size_t total = 200000;
	pid_t w = fork();
	if (w == 0) {
		close(p[0]);
		char b[1000];
		for (size_t i = 0; i < total; i += sizeof(b)) {
			for (size_t j = 0; j < sizeof(b); j++)
				b[j] = (char)('0' + (i + j) % 10);
			sbx_write_all(p[1], b, sizeof(b));
		}
		_exit(0);
	}
	close(p[1]);
	struct sbx_http_req q = {.method = "POST", .path = "/echo", .body_fd = p[0]};
	ok(sbx_http_do(h, &q, &r, &err) == 0 && r.status == 200, "%s: body from a pipe", label);
	close(p[0]);
	waitpid(w, NULL, 0);
	is_str(hdr(&r, "X-Chunked"), "yes", "%s: a pipe body is sent chunked", label);
	int same = r.len == total;
	for (size_t i = 0; same && i < total; i++)
		same = r.body[i] == (char)('0' + i % 10);
	ok(same, "%s: all %zu streamed bytes arrive in order", label, total);
	sbx_http_resp_clear(&r);

	/* Request body from a regular file, from its current offset. */
	char tmpl[] = "/tmp/sbx-http-XXXXXX";
	int f = mkstemp(tmpl);
	unlink(tmpl);
	sbx_write_all(f, "skipTHE FILE BODY", 17);
	lseek(f, 4, SEEK_SET);
	struct sbx_http_req q2 = {.method = "PUT", .path = "/echo", .body_fd = f};
	ok(sbx_http_do(h, &q2, &r, &err) == 0, "%s: body from a file", label);
	is_str(hdr(&r, "X-Chunked"), "no", "%s: a file body has a Content-Length", label);
	is_str(hdr(&r, "X-Clen"), "13", "%s: length counted from the current offset", label);
	is_str(r.body, "THE FILE BODY", "%s: file body content", label);
	sbx_http_resp_clear(&r);
	close(f);

	/* Response streamed to an fd. */
	char tmpl2[] = "/tmp/sbx-http-XXXXXX";
	int o = mkstemp(tmpl2);
	unlink(tmpl2);
	struct sbx_http_req q3 = {.method = "GET", .path = "/big/300000", .out_fd = o};
	ok(sbx_http_do(h, &q3, &r, &err) == 0 && r.status == 200, "%s: response to an fd", label);
	ok(r.body == NULL, "%s: streamed response leaves body NULL", label);
	is_int((long long)r.len, 300000, "%s: len counts the streamed bytes", label);
	SBX_AUTOFREE char *got = NULL;
	size_t gl = 0;
	lseek(o, 0, SEEK_SET);
	sbx_read_all_fd(o, 1 << 20, &got, &gl, &err);
	same = gl == 300000;
	for (size_t i = 0; same && i < gl; i++)
		same = got[i] == (char)('a' + i % 26);
	ok(same, "%s: the fd holds the whole body", label);
	sbx_http_resp_clear(&r);
	close(o);

	/* A buffered response over the cap is an error, not a truncation. */
	struct sbx_http_req q4 = {.method = "GET", .path = "/big/100000", .max_body = 1000};
	ok(sbx_http_do(h, &q4, &r, &err) < 0, "%s: body over max_body fails", label);
	ok(strstr(err.msg, "exceeds 1000 bytes") != NULL, "%s: and says so (%s)", label, err.msg);
	ok(r.body == NULL && r.status == 0, "%s: failed response is cleared", label);

	/* The handle still works after an aborted transfer. */
	struct sbx_http_req q5 = {.method = "GET", .path = "/status/200"};
	ok(sbx_http_do(h, &q5, &r, &err) == 0 && r.status == 200, "%s: handle usable after an abort", label);
	sbx_http_resp_clear(&r);
}

struct counter { size_t bytes, calls, abort_after; };

static int count_body(void *ctx, const char *data, size_t len, struct sbx_err *err)
{
	struct counter *c = ctx;
	for (size_t i = 0; i < len; i++)
		if (data[i] != (char)('a' + (c->bytes + i) % 26))
			return sbx_fail(err, SBX_INTERNAL, "test", "byte %zu is wrong", c->bytes + i);
	c->bytes += len;
	if (++c->calls == c->abort_after)
		return sbx_fail(err, SBX_CONFLICT, "test", "stop after %zu pieces", c->calls);
	return 0;
}

static void test_on_body(struct sbx_http *h, const char *label)
{
	struct sbx_err err = {0};
	struct sbx_http_resp r;
	struct counter c = {0};
	struct sbx_http_req q = {.method = "GET", .path = "/big/500000", .on_body = count_body,
				 .on_body_ctx = &c, .max_body = 10};
	ok(sbx_http_do(h, &q, &r, &err) == 0 && r.status == 200, "%s: on_body streams a response", label);
	ok(c.bytes == 500000 && r.len == 500000 && r.body == NULL,
	   "%s: the callback saw all 500000 bytes in order, nothing buffered (max_body not applied)", label);
	sbx_http_resp_clear(&r);
	struct counter c2 = {.abort_after = 1};
	q.on_body_ctx = &c2;
	ok(sbx_http_do(h, &q, &r, &err) < 0 && err.kind == SBX_CONFLICT && strstr(err.msg, "stop after 1"),
	   "%s: a callback's error aborts the request and is returned as is (%s)", label, err.msg);
	struct sbx_http_req q2 = {.method = "GET", .path = "/status/200"};
	ok(sbx_http_do(h, &q2, &r, &err) == 0 && r.status == 200, "%s: handle usable after the abort", label);
	sbx_http_resp_clear(&r);
}

static void test_upgrade(struct sbx_http *h, const char *label)
{
	struct sbx_err err = {0};
	struct sbx_http_resp r;
	int fd = -1;
	const char *hs[] = {"Content-Type: application/json", NULL};
	struct sbx_http_req q = {.method = "POST", .path = "/upgrade", .headers = hs,
				 .body = "{}", .body_len = 2};
	ok(sbx_http_upgrade(h, &q, &fd, &r, &err) == 0, "%s: upgrade succeeds", label);
	is_int(r.status, 101, "%s: upgrade status 101", label);
	ok(fd > 2, "%s: a raw fd is returned", label);
	is_str(r.body, "EARLY", "%s: bytes after the headers are kept in resp->body", label);
	sbx_write_all(fd, "hello stdin", 11);
	shutdown(fd, SHUT_WR);
	SBX_AUTOFREE char *out = NULL;
	size_t ol = 0;
	sbx_read_all_fd(fd, 4096, &out, &ol, &err);
	is_str(out, "HELLO STDIN", "%s: raw stream both ways, half-close ends it", label);
	close(fd);
	sbx_http_resp_clear(&r);

	struct sbx_http_req q2 = {.method = "POST", .path = "/status/409"};
	ok(sbx_http_upgrade(h, &q2, &fd, &r, &err) == 0 && r.status == 409 && fd == -1,
	   "%s: a refused upgrade returns the status and no fd", label);
	is_str(r.body, "status 409", "%s: and the error body", label);
	sbx_http_resp_clear(&r);

	/* The shared handle is unaffected. */
	struct sbx_http_req q3 = {.method = "GET", .path = "/status/200"};
	ok(sbx_http_do(h, &q3, &r, &err) == 0 && r.status == 200, "%s: handle works after upgrade", label);
	sbx_http_resp_clear(&r);
}

/* TLS with client certificates against `openssl s_server -Verify`: a CA,
 * a server certificate for 127.0.0.1 and a client certificate, made here. */
static void test_tls(const char *dir)
{
	struct sbx_err err = {0};
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "(cd %s && K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes' && "
		 "openssl req -x509 $K -keyout ca.key -out ca.crt -subj /CN=sbx-test-ca -days 2 && "
		 "openssl req $K -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 && "
		 "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > srv.ext && "
		 "openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt -days 2 -extfile srv.ext && "
		 "openssl req $K -keyout cli.key -out cli.csr -subj /CN=client && "
		 "printf 'extendedKeyUsage=clientAuth\\n' > cli.ext && "
		 "openssl x509 -req -in cli.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out cli.crt -days 2 -extfile cli.ext"
		 " ) >/dev/null 2>&1", dir);
	if (!ok(system(cmd) == 0, "tls: certificates made with openssl"))
		return;
	int port;
	int lfd = listen_tcp(&port);
	close(lfd);             /* a free port for s_server */
	char accept_arg[64], path[4][300];
	snprintf(accept_arg, sizeof(accept_arg), "127.0.0.1:%d", port);
	const char *names[] = {"ca.crt", "srv.crt", "srv.key", "cli.crt"};
	for (int i = 0; i < 4; i++)
		snprintf(path[i], sizeof(path[i]), "%s/%s", dir, names[i]);
	pid_t srv = fork();
	if (srv == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0); dup2(null, 1); dup2(null, 2);
		execlp("openssl", "openssl", "s_server", "-accept", accept_arg, "-cert", path[1], "-key", path[2],
		       "-CAfile", path[0], "-Verify", "1", "-www", "-quiet", (char *)NULL);
		_exit(127);
	}
	/* Readiness: poll until it accepts (not a timed assertion). */
	int ready = 0;
	for (int i = 0; i < 200 && !ready; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		ready = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(s);
		if (!ready)
			usleep(50000);
	}
	if (ok(ready, "tls: s_server is up")) {
		char base[64], key[300];
		snprintf(base, sizeof(base), "https://127.0.0.1:%d", port);
		snprintf(key, sizeof(key), "%s/cli.key", dir);
		struct sbx_http *h;
		struct sbx_http_resp r;
		struct sbx_http_req q = {.method = "GET", .path = "/", .timeout_ms = 10000};
		struct sbx_http_opts o = {.base_url = base, .allow_private = 1, .ca_file = path[0],
					  .cert_file = path[3], .key_file = key};
		ok(sbx_http_open(&o, &h, &err) == 0, "tls: open with CA and client certificate");
		int rc = sbx_http_do(h, &q, &r, &err);
		ok(rc == 0 && r.status == 200, "tls: mutual TLS request succeeds (%s)", rc ? err.msg : "200");
		sbx_http_resp_clear(&r);
		sbx_http_close(h);

		struct sbx_http_opts o2 = {.base_url = base, .allow_private = 1, .ca_file = path[0]};
		sbx_http_open(&o2, &h, &err);
		rc = sbx_http_do(h, &q, &r, &err);
		ok(rc < 0 || r.status != 200, "tls: without a client certificate the server refuses (%s)",
		   rc ? err.msg : "status");
		sbx_http_resp_clear(&r);
		sbx_http_close(h);

		struct sbx_http_opts o3 = {.base_url = base, .allow_private = 1, .cert_file = path[3], .key_file = key};
		sbx_http_open(&o3, &h, &err);
		ok(sbx_http_do(h, &q, &r, &err) < 0 && err.kind == SBX_AUTHENTICATION,
		   "tls: a server certificate from an unknown CA is refused as authentication (%s)", err.msg);
		sbx_http_close(h);
	}
	kill(srv, SIGTERM);
	waitpid(srv, NULL, 0);
}

int main(void)
{
	struct sbx_err err = {0};
	char dir[] = "/tmp/sbx-http-XXXXXX";
	if (!mkdtemp(dir))
		return 99;
	char sock[256];
	snprintf(sock, sizeof(sock), "%s/d.sock", dir);
	int port;
	int tfd = listen_tcp(&port), ufd = listen_unix(sock);
	if (tfd < 0 || ufd < 0)
		return 99;
	start_server(tfd, ufd);
	close(tfd);
	close(ufd);

	char base[128];
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
	struct sbx_http *h = NULL;

	struct sbx_http_opts o = {.base_url = base};
	ok(sbx_http_open(&o, &h, &err) < 0 && err.kind == SBX_INVALID_REQUEST,
	   "loopback base URL refused without allow_private");

	o.allow_private = 1;
	ok(sbx_http_open(&o, &h, &err) == 0, "open TCP handle");
	test_basic(h, "tcp");
	test_streams(h, "tcp");
	test_on_body(h, "tcp");
	test_upgrade(h, "tcp");

	/* Timeout: the server reads the request and never answers. */
	struct sbx_http_resp r;
	struct sbx_http_req qh = {.method = "GET", .path = "/hang", .timeout_ms = 300};
	ok(sbx_http_do(h, &qh, &r, &err) < 0, "a server that never answers fails");
	is_str(sbx_kind_name(err.kind), "timeout", "and the kind is timeout");
	ok(strstr(err.msg, "/hang") != NULL, "the message names the path (%s)", err.msg);
	sbx_http_close(h);

	/* Unix socket, with a dummy host as Docker does. */
	struct sbx_http_opts ou = {.base_url = "http://docker/v1.41", .unix_socket = sock};
	ok(sbx_http_open(&ou, &h, &err) == 0, "open unix-socket handle (no SSRF check applies)");
	test_basic(h, "unix");
	test_streams(h, "unix");
	test_on_body(h, "unix");
	test_upgrade(h, "unix");
	sbx_http_close(h);

	/* A Host and a header longer than any fixed allowance: the upgrade
	 * request is sized from what it holds (it once counted 1024 bytes for
	 * the method, the host and the fixed lines, and wrote past them). */
	{
		char host[1601], *hdr = sbx_xmalloc(4100);
		memset(host, 'h', 1600);
		host[1600] = '\0';
		char *longbase = sbx_xasprintf("http://%s/v1.41", host);
		snprintf(hdr, 4100, "X-Long: %4000d", 1);
		const char *hs[] = {hdr, hdr, NULL};
		struct sbx_http_opts ol = {.base_url = longbase, .unix_socket = sock};
		ok(sbx_http_open(&ol, &h, &err) == 0, "open a handle whose Host is 1600 bytes");
		struct sbx_http_resp r;
		int ufd = -1;
		struct sbx_http_req q = {.method = "POST", .path = "/upgrade", .headers = hs,
					 .body = "{}", .body_len = 2};
		ok(sbx_http_upgrade(h, &q, &ufd, &r, &err) == 0 && r.status == 101,
		   "an upgrade with a 1600-byte Host and two 4 KB headers is sent whole");
		if (ufd >= 0)
			close(ufd);
		sbx_http_resp_clear(&r);
		sbx_http_close(h);
		free(longbase);
		free(hdr);
	}

	/* Connection refused -> unavailable; userinfo never shows. */
	int dead;
	int dfd = listen_tcp(&dead);
	close(dfd);
	char dbase[160];
	snprintf(dbase, sizeof(dbase), "http://admin:s3cretpw@127.0.0.1:%d/api", dead);
	struct sbx_http_opts od = {.base_url = dbase, .allow_private = 1};
	ok(sbx_http_open(&od, &h, &err) == 0, "open a handle on a closed port");
	struct sbx_http_req qd = {.method = "GET", .path = "/x"};
	ok(sbx_http_do(h, &qd, &r, &err) < 0, "connection refused fails");
	is_str(sbx_kind_name(err.kind), "unavailable", "connection refused is unavailable");
	ok(!strstr(err.msg, "s3cretpw") && !strstr(err.msg, "admin"),
	   "the password and user are not in the message (%s)", err.msg);
	ok(strstr(err.msg, "127.0.0.1") != NULL, "but the host is");
	int ufd2 = -1;
	ok(sbx_http_upgrade(h, &qd, &ufd2, &r, &err) < 0 && err.kind == SBX_UNAVAILABLE && ufd2 == -1,
	   "upgrade to a closed port is unavailable");
	sbx_http_close(h);

	/* A unix socket that does not exist -> unavailable. */
	struct sbx_http_opts on = {.base_url = "http://docker", .unix_socket = "/nonexistent/d.sock"};
	ok(sbx_http_open(&on, &h, &err) == 0, "open a handle on a missing socket");
	ok(sbx_http_do(h, &qd, &r, &err) < 0 && err.kind == SBX_UNAVAILABLE,
	   "a missing unix socket is unavailable");
	sbx_http_close(h);

	/* Only http and https. */
	struct sbx_http_opts of = {.base_url = "file:///etc/passwd", .allow_private = 1};
	ok(sbx_http_open(&of, &h, &err) < 0 && err.kind == SBX_INVALID_REQUEST, "file:// refused");
	struct sbx_http_opts og = {.base_url = "gopher://127.0.0.1:70/", .allow_private = 1};
	ok(sbx_http_open(&og, &h, &err) < 0 && err.kind == SBX_INVALID_REQUEST, "gopher:// refused");
	struct sbx_http_opts oh = {.base_url = "https://127.0.0.1:1/", .allow_private = 1};
	ok(sbx_http_open(&oh, &h, &err) == 0, "https handle");
	ok(sbx_http_upgrade(h, &qd, &ufd2, &r, &err) < 0 && err.kind == SBX_UNSUPPORTED,
	   "upgrade over TLS is unsupported, said clearly");
	sbx_http_close(h);

	test_tls(dir);

	/* Escaping. */
	SBX_AUTOFREE char *e = sbx_http_escape("a b&c=d/\xc3\xa9~_.-");
	is_str(e, "a%20b%26c%3Dd%2F%C3%A9~_.-", "escape percent-encodes reserved and non-ASCII bytes");
	SBX_AUTOFREE char *e2 = sbx_http_escape("{\"label\":[\"x=y\"]}");
	is_str(e2, "%7B%22label%22%3A%5B%22x%3Dy%22%5D%7D", "escape a Docker filter");

	stop_server();
	char rm[300];
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	if (system(rm) != 0)
		printf("# could not remove %s\n", dir);
	return tap_done();
}
