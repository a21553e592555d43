/* http.h - the one HTTP transport (libcurl) that remote backends share.
 *
 * Every connection is checked by the SSRF guard at dial time on the
 * resolved address (CURLOPT_OPENSOCKETFUNCTION), so a name that resolves to
 * a public address when the URL was checked and to a metadata address when
 * the socket opens is refused (DNS rebinding).  Unix sockets (Docker) skip
 * the address check: they never leave the host.
 *
 * HTTP error statuses are not transport errors: sbx_http_do returns 0 with
 * resp->status set; callers map statuses with sbx_kind_from_http(). */
#ifndef SBX_HTTP_H
#define SBX_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct sbx_http_opts {
	const char *base_url;      /* "https://api.example.com", or "http://docker" with unix_socket */
	const char *unix_socket;   /* NULL = TCP */
	int allow_private;         /* SSRF: loopback/private allowed */
	const char *ca_file, *cert_file, *key_file;   /* TLS client auth (docker tcp://) */
	int64_t timeout_ms;        /* per request default; 0 = 30 s */
	const char *const *resolve; /* test hook: CURLOPT_RESOLVE entries "host:port:addr" */
	/* CURLOPT_CONNECT_TO entries "HOST:PORT:TARGET:TPORT": the URL, Host
	 * header and TLS name stay HOST while TCP goes to TARGET (Cube's proxy
	 * node).  With entries, sbx_http_open checks each TARGET instead of
	 * resolving the URL's host (a virtual name may not resolve at all);
	 * the dial hook still checks every address the socket gets. */
	const char *const *connect_to;
};
/* sbx_http_open checks base_url with sbx_ssrf_check_url (TCP only) and
 * fails with that error; redirects are never followed, only http/https are
 * spoken, and proxy environment variables are ignored. */

/* A handle owns one libcurl easy handle (and its live connection): use it
 * from one thread at a time. */
struct sbx_http;

int sbx_http_open(const struct sbx_http_opts *o, struct sbx_http **out, struct sbx_err *err);
void sbx_http_close(struct sbx_http *h);

struct sbx_http_req {
	const char *method;        /* "GET", "POST", ... */
	const char *path;          /* appended to base_url; caller escapes query values */
	const char *const *headers;/* NULL-terminated "Name: value" lines, may be NULL */
	const void *body;          /* request body, or NULL */
	size_t body_len;
	int body_fd;               /* > 0: stream the body from this fd instead */
	int out_fd;                /* > 0: stream the response body to this fd */
	size_t max_body;           /* cap on a buffered response; 0 = 64 MiB */
	int64_t timeout_ms;        /* 0 = the handle's default; < 0 = no overall
	                            * limit (long streams; connecting is still
	                            * bounded by 10 s) */
	/* Added: when set, each piece of the response body is handed to
	 * on_body instead of being buffered (out_fd is then ignored); return 0
	 * to go on, or -1 with *err filled to abort: sbx_http_do then fails
	 * with that error.  For demultiplexing streams (Docker exec/logs). */
	int (*on_body)(void *ctx, const char *data, size_t len, struct sbx_err *err);
	void *on_body_ctx;
};
/* body_fd / out_fd: 0 and -1 both mean "none", so a zero-initialised
 * request never reads or writes stdin; dup(0) to stream stdin.  A body_fd
 * on a regular file is sent with Content-Length (from the current offset),
 * any other fd (a pipe) with chunked encoding.  The request method is kept
 * as given with a body (e.g. PUT /archive, POST /build). */

struct sbx_http_resp {
	int status;
	char *body;                /* NUL-terminated, NULL when streamed */
	size_t len;
	char *headers;             /* raw response header block */
};
void sbx_http_resp_clear(struct sbx_http_resp *r);
/* Value of a response header (case-insensitive), malloc'd, or NULL. */
char *sbx_http_header(const struct sbx_http_resp *r, const char *name);

/* 0 with resp filled (any status) / -1 on a transport failure: refused by
 * the SSRF guard at dial time (invalid_request), timeout (timeout),
 * connection/resolution/TLS-handshake/read failure (unavailable), the
 * server's certificate not verified (authentication), a buffered body over
 * max_body (internal), out_fd write failure (internal; EPIPE also sets
 * exit_status SBX_EXIT_IOERR like sbx_doc_write).  Error messages carry the
 * method, the base URL without userinfo and the path (with its query):
 * never put a secret in `path`; send it in a header.  On -1 resp is
 * cleared.  The handle stays usable after any failure. */
int sbx_http_do(struct sbx_http *h, const struct sbx_http_req *req,
		struct sbx_http_resp *resp, struct sbx_err *err);

/* Percent-encode a query value (malloc'd): everything except
 * A-Z a-z 0-9 - . _ ~ becomes %XX. */
char *sbx_http_escape(const char *s);

/* Hijack a connection (Docker exec start with stdin, attach): send `req`
 * with "Connection: Upgrade" and "Upgrade: tcp" on a fresh connection
 * (dialled through the same SSRF hook, unix socket or plain TCP), read the
 * response headers, and
 *   - on 101 or any 2xx: return 0 with *fd = the raw socket (blocking,
 *     CLOEXEC, positioned after the headers; the caller reads and writes
 *     the stream and closes it; shutdown(fd, SHUT_WR) half-closes stdin).
 *     Bytes that arrived after the headers are NOT lost: they are in
 *     resp->body / resp->len and come before anything read from *fd.
 *   - on any other status: return 0 with *fd = -1 and the error body
 *     (Content-Length or to EOF, capped by max_body) in resp->body.
 * req->body (in memory) is sent with Content-Length; body_fd and out_fd are
 * not supported here.  Over https:// this is unsupported (-1, kind
 * unsupported): the raw socket would carry TLS. -1 on transport failures
 * with the same kinds as sbx_http_do; the timeout covers connecting and
 * the response headers, not the stream. */
int sbx_http_upgrade(struct sbx_http *h, const struct sbx_http_req *req, int *fd,
		     struct sbx_http_resp *resp, struct sbx_err *err);

#endif
