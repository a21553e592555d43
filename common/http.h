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
};

struct sbx_http;

int sbx_http_open(const struct sbx_http_opts *o, struct sbx_http **out, struct sbx_err *err);
void sbx_http_close(struct sbx_http *h);

struct sbx_http_req {
	const char *method;        /* "GET", "POST", ... */
	const char *path;          /* appended to base_url; caller escapes query values */
	const char *const *headers;/* NULL-terminated "Name: value" lines, may be NULL */
	const void *body;          /* request body, or NULL */
	size_t body_len;
	int body_fd;               /* >= 0: stream the body from this fd instead */
	int out_fd;                /* >= 0: stream the response body to this fd */
	size_t max_body;           /* cap on a buffered response; 0 = 64 MiB */
	int64_t timeout_ms;        /* 0 = the handle's default */
};

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
 * the SSRF guard (invalid_request), timeout (timeout), connection failure
 * (unavailable). */
int sbx_http_do(struct sbx_http *h, const struct sbx_http_req *req,
		struct sbx_http_resp *resp, struct sbx_err *err);

/* Percent-encode a query value (malloc'd). */
char *sbx_http_escape(const char *s);

#endif
