/* http.c - the one HTTP transport (libcurl) behind the remote backends.
 *
 * One CURL easy handle per sbx_http, reused for every request so that the
 * connection (unix socket or TCP/TLS) stays open between calls.  Promises:
 *   - every TCP socket is checked by the SSRF guard on the resolved address
 *     before it is created (CURLOPT_OPENSOCKETFUNCTION), so DNS rebinding
 *     and CURLOPT_RESOLVE tricks cannot reach a refused address; the base
 *     URL is also checked when the handle is opened;
 *   - redirects are never followed, only http and https are spoken, and
 *     proxies from the environment are ignored (a proxy would make the dial
 *     check judge the proxy, not the target);
 *   - error messages name the method and the URL without its userinfo;
 *   - the library never prints: curl's own error text goes into sbx_err. */
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <curl/curl.h>

#include "ssrf.h"
#include "util.h"

#define HTTP_DEFAULT_TIMEOUT_MS 30000
#define HTTP_CONNECT_TIMEOUT_MS 10000
#define HTTP_DEFAULT_MAX_BODY ((size_t)64 << 20)
#define HTTP_MAX_HEADERS ((size_t)256 << 10)

struct sbx_http {
	CURL *curl;
	char *base_url;            /* without a trailing '/' */
	char *shown_url;           /* base_url without userinfo, for messages */
	char *unix_socket;
	char *ca_file, *cert_file, *key_file;
	int allow_private;
	int64_t timeout_ms;
	struct curl_slist *resolve;
	struct curl_slist *connect_to;
	/* Per-request state shared with the callbacks. */
	int guard_refused;         /* the dial hook refused an address */
	struct sbx_err guard_err;
	curl_socket_t keep_fd;     /* upgrade: the socket we take over */
};

/* Buffered or streamed response body, plus the header block. */
struct sink {
	struct sbx_http_resp *resp;
	const struct sbx_http_req *req;
	int aborted;               /* on_body returned -1; cb_err says why */
	struct sbx_err cb_err;
	int out_fd;
	size_t max, cap;
	int overflow;              /* body exceeded max */
	int write_errno;           /* writing to out_fd failed */
	size_t hcap, hlen;
};

struct source {
	const struct sbx_http_req *req;
	size_t off;                /* for an in-memory body */
	int read_errno;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;
static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* The fd fields use 0 as "none" as well as -1 so that a zero-initialised
 * request neither reads stdin nor writes into it. */
static int fd_set_p(int fd) { return fd > 0; }

/* Userinfo stripped: the only form of the URL that may appear in errors. */
static char *redact_url(const char *url)
{
	CURLU *u = curl_url();
	char *out = NULL, *s = NULL;
	if (u && curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK) {
		curl_url_set(u, CURLUPART_USER, NULL, 0);
		curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
		curl_url_set(u, CURLUPART_OPTIONS, NULL, 0);
		curl_url_set(u, CURLUPART_QUERY, NULL, 0);
		curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
		if (curl_url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK)
			out = sbx_xstrdup(s);
	}
	curl_free(s);
	curl_url_cleanup(u);
	return out ? out : sbx_xstrdup("(unparseable URL)");
}

/* The dial hook: runs with the resolved address before a socket exists.
 * Unix sockets never leave the host and skip the address check. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct sbx_http *h = clientp;
	(void)purpose;
	if (a->family != AF_UNIX || !h->unix_socket) {
		if (sbx_ssrf_check_addr(&a->addr, h->allow_private, &h->guard_err) < 0) {
			h->guard_refused = 1;
			return CURL_SOCKET_BAD;
		}
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int close_socket(void *clientp, curl_socket_t fd)
{
	struct sbx_http *h = clientp;
	if (fd == h->keep_fd)
		return 0;       /* sbx_http_upgrade owns it now */
	return close(fd);
}

/* Append data to the NUL-terminated buffer *buf of *used bytes and *cap
 * capacity, growing it to twice what is needed but to no more than `most`
 * bytes (the caller has checked that *used + len + 1 <= most). */
static void buf_append(char **buf, size_t *used, size_t *cap, size_t most, const char *data,
		       size_t len)
{
	if (*used + len + 1 > *cap) {
		*cap = (*used + len + 1) * 2;
		if (*cap > most)
			*cap = most;
		*buf = sbx_xrealloc(*buf, *cap);
	}
	memcpy(*buf + *used, data, len);
	*used += len;
	(*buf)[*used] = 0;
}

static size_t on_header(char *data, size_t size, size_t n, void *userp)
{
	struct sink *s = userp;
	size_t len = size * n;
	struct sbx_http_resp *r = s->resp;
	/* A new status line (after 100 Continue) starts a new block. */
	if (len >= 5 && memcmp(data, "HTTP/", 5) == 0)
		s->hlen = 0;
	if (s->hlen + len + 1 > HTTP_MAX_HEADERS)
		return 0;       /* absurd header block: abort the transfer */
	buf_append(&r->headers, &s->hlen, &s->hcap, HTTP_MAX_HEADERS, data, len);
	return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *userp)
{
	struct sink *s = userp;
	size_t len = size * n;
	struct sbx_http_resp *r = s->resp;
	if (s->req->on_body) {
		if (s->req->on_body(s->req->on_body_ctx, data, len, &s->cb_err) < 0) {
			s->aborted = 1;
			return 0;
		}
		r->len += len;
		return len;
	}
	if (fd_set_p(s->out_fd)) {
		if (sbx_write_all(s->out_fd, data, len) < 0) {
			s->write_errno = errno;
			return 0;
		}
		r->len += len;
		return len;
	}
	if (r->len + len > s->max) {
		s->overflow = 1;
		return 0;
	}
	buf_append(&r->body, &r->len, &s->cap, s->max + 1, data, len);
	return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *userp)
{
	struct source *src = userp;
	size_t want = size * n;
	if (fd_set_p(src->req->body_fd)) {
		for (;;) {
			ssize_t got = read(src->req->body_fd, buf, want);
			if (got >= 0)
				return (size_t)got;
			if (errno != EINTR) {
				src->read_errno = errno;
				return CURL_READFUNC_ABORT;
			}
		}
	}
	size_t left = src->req->body_len - src->off;
	if (want > left)
		want = left;
	memcpy(buf, (const char *)src->req->body + src->off, want);
	src->off += want;
	return want;
}

/* connect_to entries: "HOST:PORT:TARGET:TPORT" (TARGET a name, an IPv4
 * address or a bracketed IPv6 one); each TARGET passes the URL check as
 * http://TARGET:TPORT/ would. */
static int check_connect_to(const struct sbx_http_opts *o, struct sbx_err *err)
{
	if (!sbx_str_starts(o->base_url, "http://") && !sbx_str_starts(o->base_url, "https://"))
		return sbx_fail(err, SBX_INVALID_REQUEST, "http", "base URL must be http:// or https://");
	for (const char *const *r = o->connect_to; *r; r++) {
		const char *c = strchr(*r, ':');
		c = c ? strchr(c + 1, ':') : NULL;
		if (!c || !c[1])
			return sbx_fail(err, SBX_INVALID_REQUEST, "http", "connect-to entry '%s' is not HOST:PORT:TARGET:TPORT", *r);
		SBX_AUTOFREE char *url = sbx_xasprintf("http://%s/", c + 1);
		if (sbx_ssrf_check_url(url, o->allow_private, err) < 0)
			return -1;
	}
	return 0;
}

int sbx_http_open(const struct sbx_http_opts *o, struct sbx_http **out, struct sbx_err *err)
{
	*out = NULL;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return sbx_fail(err, SBX_INTERNAL, "http", "curl_global_init: %s",
				curl_easy_strerror(global_rc));
	if (!o->base_url || !*o->base_url)
		return sbx_fail(err, SBX_INVALID_REQUEST, "http", "no base URL");
	if (!o->unix_socket && o->connect_to && o->connect_to[0]) {
		if (check_connect_to(o, err) < 0)
			return -1;
	} else if (!o->unix_socket) {
		/* Checked now and again at every dial (the name may change). */
		if (sbx_ssrf_check_url(o->base_url, o->allow_private, err) < 0)
			return -1;
	} else if (!sbx_str_starts(o->base_url, "http://") && !sbx_str_starts(o->base_url, "https://")) {
		return sbx_fail(err, SBX_INVALID_REQUEST, "http",
				"base URL must be http:// or https:// (with a unix socket too)");
	}
	struct sbx_http *h = sbx_xcalloc(1, sizeof(*h));
	h->curl = curl_easy_init();
	if (!h->curl) {
		free(h);
		return sbx_fail(err, SBX_INTERNAL, "http", "curl_easy_init failed");
	}
	h->base_url = sbx_xstrdup(o->base_url);
	size_t n = strlen(h->base_url);
	while (n && h->base_url[n - 1] == '/')
		h->base_url[--n] = 0;
	h->shown_url = redact_url(h->base_url);
	n = strlen(h->shown_url);
	while (n && h->shown_url[n - 1] == '/')
		h->shown_url[--n] = 0;      /* curl adds "/" to a bare host */
	h->unix_socket = o->unix_socket ? sbx_xstrdup(o->unix_socket) : NULL;
	h->ca_file = o->ca_file ? sbx_xstrdup(o->ca_file) : NULL;
	h->cert_file = o->cert_file ? sbx_xstrdup(o->cert_file) : NULL;
	h->key_file = o->key_file ? sbx_xstrdup(o->key_file) : NULL;
	h->allow_private = o->allow_private;
	h->timeout_ms = o->timeout_ms ? o->timeout_ms : HTTP_DEFAULT_TIMEOUT_MS;
	h->keep_fd = CURL_SOCKET_BAD;
	for (const char *const *r = o->resolve; r && *r; r++) {
		struct curl_slist *l = curl_slist_append(h->resolve, *r);
		if (!l) {
			sbx_http_close(h);
			return sbx_fail(err, SBX_INTERNAL, "http", "out of memory");
		}
		h->resolve = l;
	}
	for (const char *const *r = o->connect_to; r && *r; r++) {
		struct curl_slist *l = curl_slist_append(h->connect_to, *r);
		if (!l) {
			sbx_http_close(h);
			return sbx_fail(err, SBX_INTERNAL, "http", "out of memory");
		}
		h->connect_to = l;
	}
	*out = h;
	return 0;
}

void sbx_http_close(struct sbx_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	curl_slist_free_all(h->resolve);
	curl_slist_free_all(h->connect_to);
	free(h->base_url);
	free(h->shown_url);
	free(h->unix_socket);
	free(h->ca_file);
	free(h->cert_file);
	free(h->key_file);
	free(h);
}

void sbx_http_resp_clear(struct sbx_http_resp *r)
{
	if (!r)
		return;
	free(r->body);
	free(r->headers);
	memset(r, 0, sizeof(*r));
}

/* Options common to requests and upgrades; the handle was just reset.
 * A negative timeout means "no overall limit" (long streams); the connect
 * phase is always bounded. */
static int set_common(struct sbx_http *h, CURL *c, const char *url, int64_t timeout_ms,
		      struct sbx_err *err)
{
	CURLcode rc = CURLE_OK;
	long t = (long)(timeout_ms ? timeout_ms : h->timeout_ms);
	long ct = t > 0 && t < HTTP_CONNECT_TIMEOUT_MS ? t : HTTP_CONNECT_TIMEOUT_MS;
#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(c, opt, val); } while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_PROXY, "");
	SET(CURLOPT_OPENSOCKETFUNCTION, open_socket);
	SET(CURLOPT_OPENSOCKETDATA, h);
	SET(CURLOPT_CLOSESOCKETFUNCTION, close_socket);
	SET(CURLOPT_CLOSESOCKETDATA, h);
	SET(CURLOPT_TIMEOUT_MS, t > 0 ? t : 0L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, ct);
	if (h->unix_socket)
		SET(CURLOPT_UNIX_SOCKET_PATH, h->unix_socket);
	if (h->ca_file)
		SET(CURLOPT_CAINFO, h->ca_file);
	if (h->cert_file)
		SET(CURLOPT_SSLCERT, h->cert_file);
	if (h->key_file)
		SET(CURLOPT_SSLKEY, h->key_file);
	if (h->resolve)
		SET(CURLOPT_RESOLVE, h->resolve);
	if (h->connect_to)
		SET(CURLOPT_CONNECT_TO, h->connect_to);
#undef SET
	if (rc != CURLE_OK)
		return sbx_fail(err, SBX_INTERNAL, "http", "curl_easy_setopt: %s", curl_easy_strerror(rc));
	return 0;
}

/* Map a failed transfer to a kind.  The dial hook's refusal wins over the
 * generic "couldn't connect" that curl reports for it. */
static int transport_fail(struct sbx_http *h, CURLcode rc, const char *method, const char *path,
			  const char *detail, struct sbx_err *err)
{
	const char *what = detail && *detail ? detail : curl_easy_strerror(rc);
	if (h->guard_refused) {
		*err = h->guard_err;
		sbx_err_prefix(err, "%s %s%s: refused at connect", method, h->shown_url, path);
		return -1;
	}
	enum sbx_kind k;
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		k = SBX_TIMEOUT;
		break;
	case CURLE_COULDNT_CONNECT: case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_SEND_ERROR: case CURLE_RECV_ERROR: case CURLE_GOT_NOTHING:
	case CURLE_SSL_CONNECT_ERROR: case CURLE_PARTIAL_FILE:
		k = SBX_UNAVAILABLE;
		break;
	case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CERTPROBLEM: case CURLE_SSL_CACERT_BADFILE:
		k = SBX_AUTHENTICATION;
		break;
	case CURLE_UNSUPPORTED_PROTOCOL: case CURLE_URL_MALFORMAT:
		k = SBX_INVALID_REQUEST;
		break;
	default:
		k = SBX_UNAVAILABLE;
		break;
	}
	return sbx_fail(err, k, "http", "%s %s%s: %s", method, h->shown_url, path, what);
}

static int method_has_empty_body(const char *m)
{
	return !strcmp(m, "POST") || !strcmp(m, "PUT") || !strcmp(m, "PATCH");
}

static int has_header(const char *const *hs, const char *name)
{
	size_t n = strlen(name);
	for (; hs && *hs; hs++)
		if (!strncasecmp(*hs, name, n) && (*hs)[n] == ':')
			return 1;
	return 0;
}

/* The request's URL: the base, then the path (with a '/' between). */
static char *url_of(const struct sbx_http *h, const char *path)
{
	return sbx_xasprintf("%s%s%s", h->base_url, *path && *path != '/' ? "/" : "", path);
}

/* The caller's headers, plus what curl would otherwise get wrong: no
 * form label on an empty POST, no 100-continue round trip. */
static int request_headers(const struct sbx_http_req *req, int has_body, int empty_post,
			   struct curl_slist **out, struct sbx_err *err)
{
	struct curl_slist *hdrs = NULL;
	int ok = 1;
	for (const char *const *l = req->headers; l && *l && ok; l++) {
		struct curl_slist *t = curl_slist_append(hdrs, *l);
		ok = t != NULL;
		hdrs = t ? t : hdrs;
	}
	if (empty_post && !has_header(req->headers, "Content-Type")) {
		/* curl labels an empty POST as a form; Docker (and any server
		 * that checks for JSON) refuses that label on an empty body. */
		struct curl_slist *t = curl_slist_append(hdrs, "Content-Type:");
		ok = ok && t;
		hdrs = t ? t : hdrs;
	}
	if (has_body) {
		/* No 100-continue round trip: small servers (and our tests) do not
		 * answer it, and the body is ours to send anyway. */
		struct curl_slist *t = curl_slist_append(hdrs, "Expect:");
		ok = ok && t;
		hdrs = t ? t : hdrs;
	}
	if (!ok) {
		curl_slist_free_all(hdrs);
		return sbx_fail(err, SBX_INTERNAL, "http", "out of memory");
	}
	*out = hdrs;
	return 0;
}

/* The length of a body read from fd: what is left of a regular file, -1
 * (chunked) for a pipe. */
static curl_off_t body_fd_len(int fd)
{
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t pos = lseek(fd, 0, SEEK_CUR);
		if (pos >= 0 && pos <= st.st_size)
			return (curl_off_t)(st.st_size - pos);
	}
	return -1;
}

/* Method, body and callbacks on the handle. */
static CURLcode request_setopts(CURL *c, const struct sbx_http_req *req, const char *method,
				int has_body, int empty_post, struct curl_slist *hdrs,
				struct sink *sink, struct source *src)
{
	CURLcode rc = CURLE_OK;
#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(c, opt, val); } while (0)
	SET(CURLOPT_HTTPHEADER, hdrs);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, sink);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, sink);
	if (has_body) {
		/* Upload mode with the caller's method: a known length goes out as
		 * Content-Length, an unknown one (pipe) as chunked encoding. */
		curl_off_t len = fd_set_p(req->body_fd) ? body_fd_len(req->body_fd)
							: (curl_off_t)req->body_len;
		SET(CURLOPT_UPLOAD, 1L);
		SET(CURLOPT_READFUNCTION, on_read);
		SET(CURLOPT_READDATA, src);
		SET(CURLOPT_INFILESIZE_LARGE, len);
		SET(CURLOPT_CUSTOMREQUEST, method);
	} else if (strcmp(method, "GET") == 0) {
		SET(CURLOPT_HTTPGET, 1L);
	} else if (strcmp(method, "HEAD") == 0) {
		SET(CURLOPT_NOBODY, 1L);
	} else {
		/* POST/PUT/PATCH without a body: send an explicit empty body
		 * (Content-Length: 0) for servers that insist on a length. */
		if (empty_post) {
			SET(CURLOPT_POSTFIELDS, "");
			SET(CURLOPT_POSTFIELDSIZE, 0L);
		}
		SET(CURLOPT_CUSTOMREQUEST, method);
	}
#undef SET
	return rc;
}

/* Why a transfer failed: our own callbacks' reasons first, then curl's. */
static int perform_fail(struct sbx_http *h, CURLcode rc, const char *method, const char *path,
			const char *ebuf, const struct sink *sink, const struct source *src,
			struct sbx_err *err)
{
	if (sink->aborted) {
		*err = sink->cb_err;
		return -1;
	}
	if (sink->overflow)
		return sbx_fail(err, SBX_INTERNAL, "http", "%s %s%s: response body exceeds %zu bytes",
				method, h->shown_url, path, sink->max);
	if (sink->write_errno) {
		errno = sink->write_errno;
		int ret = sbx_fail_errno(err, SBX_INTERNAL, "http", "%s %s%s: writing the response",
					 method, h->shown_url, path);
		if (sink->write_errno == EPIPE)
			err->exit_status = SBX_EXIT_IOERR;
		return ret;
	}
	if (src->read_errno) {
		errno = src->read_errno;
		return sbx_fail_errno(err, SBX_INTERNAL, "http", "%s %s%s: reading the request body",
				      method, h->shown_url, path);
	}
	return transport_fail(h, rc, method, path, ebuf, err);
}

int sbx_http_do(struct sbx_http *h, const struct sbx_http_req *req,
		struct sbx_http_resp *resp, struct sbx_err *err)
{
	CURL *c = h->curl;
	const char *method = req->method ? req->method : "GET";
	const char *path = req->path ? req->path : "";
	memset(resp, 0, sizeof(*resp));
	h->guard_refused = 0;
	h->keep_fd = CURL_SOCKET_BAD;

	SBX_AUTOFREE char *url = url_of(h, path);
	curl_easy_reset(c);     /* keeps the connection and DNS caches */
	if (set_common(h, c, url, req->timeout_ms, err) < 0)
		return -1;

	struct sink sink = {.resp = resp, .req = req, .out_fd = req->out_fd,
			    .max = req->max_body ? req->max_body : HTTP_DEFAULT_MAX_BODY};
	struct source src = {.req = req};
	int has_body = fd_set_p(req->body_fd) || req->body;
	int empty_post = !has_body && method_has_empty_body(method);
	struct curl_slist *hdrs = NULL;
	if (request_headers(req, has_body, empty_post, &hdrs, err) < 0)
		return -1;
	CURLcode rc = request_setopts(c, req, method, has_body, empty_post, hdrs, &sink, &src);
	if (rc != CURLE_OK) {
		curl_slist_free_all(hdrs);
		return sbx_fail(err, SBX_INTERNAL, "http", "curl_easy_setopt: %s", curl_easy_strerror(rc));
	}
	char ebuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);

	rc = curl_easy_perform(c);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(hdrs);

	if (rc != CURLE_OK) {
		int ret = perform_fail(h, rc, method, path, ebuf, &sink, &src, err);
		sbx_http_resp_clear(resp);
		return ret;
	}
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	resp->status = (int)status;
	int streamed = req->on_body || fd_set_p(req->out_fd);
	if (!streamed && !resp->body)
		resp->body = sbx_xstrdup("");
	if (streamed) {
		free(resp->body);
		resp->body = NULL;
	}
	if (!resp->headers)
		resp->headers = sbx_xstrdup("");
	return 0;
}

char *sbx_http_header(const struct sbx_http_resp *r, const char *name)
{
	if (!r || !r->headers || !name)
		return NULL;
	size_t nl = strlen(name);
	for (const char *p = r->headers; *p; ) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
			const char *v = p + nl + 1, *e = p + len;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && isspace((unsigned char)e[-1]))
				e--;
			return strndup(v, (size_t)(e - v)) ?: sbx_xstrdup("");
		}
		p += len + (eol ? 1 : 0);
	}
	return NULL;
}

char *sbx_http_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = s ? strlen(s) : 0;
	char *out = sbx_xmalloc(n * 3 + 1), *o = out;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			*o++ = (char)ch;
		} else {
			*o++ = '%';
			*o++ = hex[ch >> 4];
			*o++ = hex[ch & 15];
		}
	}
	*o = 0;
	return out;
}

/* ---- upgrade (hijack) ------------------------------------------------ */

/* Wait for fd to become readable within the deadline (monotonic ms; <= 0:
 * none).  0 ready / -1 with timeout or the poll error. */
static int wait_readable(int fd, int64_t deadline, struct sbx_err *err)
{
	for (;;) {
		int ms = -1;
		if (deadline > 0) {
			int64_t left = deadline - sbx_mono_ms();
			if (left <= 0)
				return sbx_fail(err, SBX_TIMEOUT, "http", "timed out waiting for the response");
			ms = left > 1000000 ? 1000000 : (int)left;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return sbx_fail_errno(err, SBX_UNAVAILABLE, "http", "poll");
	}
}

static int recv_some(int fd, char *buf, size_t n, int64_t deadline, size_t *got, struct sbx_err *err)
{
	for (;;) {
		if (wait_readable(fd, deadline, err) < 0)
			return -1;
		ssize_t r = recv(fd, buf, n, 0);
		if (r >= 0) {
			*got = (size_t)r;
			return 0;
		}
		if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			return sbx_fail_errno(err, SBX_UNAVAILABLE, "http", "recv");
	}
}

static int send_all(int fd, const char *buf, size_t n, struct sbx_err *err)
{
	while (n) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct pollfd p = {.fd = fd, .events = POLLOUT};
				poll(&p, 1, 1000);
				continue;
			}
			return sbx_fail_errno(err, SBX_UNAVAILABLE, "http", "send");
		}
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The Host header for a raw request: the base URL's host[:port]. */
static char *host_header(const char *base)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, *out;
	if (u && curl_url_set(u, CURLUPART_URL, base, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK)
		curl_url_get(u, CURLUPART_HOST, &host, 0);
	if (u)
		curl_url_get(u, CURLUPART_PORT, &port, 0);
	out = port ? sbx_xasprintf("%s:%s", host ? host : "localhost", port)
		   : sbx_xstrdup(host ? host : "localhost");
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return out;
}

/* Connect only (a separate easy handle, through the same dial hook) and
 * take the socket over, blocking; the shared handle's connection stays. */
static int upgrade_connect(struct sbx_http *h, const char *method, const char *path,
			   int64_t timeout_ms, int *out, struct sbx_err *err)
{
	CURL *c = curl_easy_init();
	if (!c)
		return sbx_fail(err, SBX_INTERNAL, "http", "curl_easy_init failed");
	h->guard_refused = 0;
	h->keep_fd = CURL_SOCKET_BAD;
	SBX_AUTOFREE char *url = url_of(h, path);
	if (set_common(h, c, url, timeout_ms, err) < 0) {
		curl_easy_cleanup(c);
		return -1;
	}
	char ebuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	CURLcode rc = curl_easy_perform(c);
	curl_socket_t sock = CURL_SOCKET_BAD;
	if (rc == CURLE_OK)
		rc = curl_easy_getinfo(c, CURLINFO_ACTIVESOCKET, &sock);
	if (rc != CURLE_OK || sock == CURL_SOCKET_BAD) {
		int ret = transport_fail(h, rc != CURLE_OK ? rc : CURLE_COULDNT_CONNECT,
					 method, path, ebuf, err);
		curl_easy_cleanup(c);
		return ret;
	}
	h->keep_fd = sock;          /* close_socket() leaves it to us */
	curl_easy_cleanup(c);
	h->keep_fd = CURL_SOCKET_BAD;
	int fl = fcntl(sock, F_GETFL);
	if (fl >= 0)
		fcntl(sock, F_SETFL, fl & ~O_NONBLOCK);
	fcntl(sock, F_SETFD, FD_CLOEXEC);
	*out = sock;
	return 0;
}

/* The request head, then the body (if any). */
static int upgrade_send(struct sbx_http *h, int s, const struct sbx_http_req *req,
			const char *method, const char *path, struct sbx_err *err)
{
	SBX_AUTOFREE char *host = host_header(h->base_url);
	/* The size is the sum of what goes in (the fixed text is under 128
	 * bytes, a length under 24): no write can pass it, whatever the
	 * lengths of the method, host, path and headers. */
	size_t cap = 160 + strlen(method) + strlen(host) + strlen(path), len = 0;
	for (const char *const *l = req->headers; l && *l; l++)
		cap += strlen(*l) + 2;
	SBX_AUTOFREE char *head = sbx_xmalloc(cap);
	int n = snprintf(head, cap,
			 "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: sbx\r\n"
			 "Connection: Upgrade\r\nUpgrade: tcp\r\n",
			 method, *path == '/' ? "" : "/", path, host);
	len = n > 0 ? (size_t)n : 0;
	for (const char *const *l = req->headers; l && *l; l++) {
		size_t ll = strlen(*l);
		memcpy(head + len, *l, ll);
		memcpy(head + len + ll, "\r\n", 2);
		len += ll + 2;
	}
	n = snprintf(head + len, cap - len, "Content-Length: %zu\r\n\r\n",
		     req->body ? req->body_len : 0);
	len += n > 0 ? (size_t)n : 0;
	if (send_all(s, head, len, err) < 0 ||
	    (req->body && req->body_len && send_all(s, req->body, req->body_len, err) < 0)) {
		sbx_err_prefix(err, "%s %s%s: sending the request", method, h->shown_url, path);
		return -1;
	}
	return 0;
}

/* Read until the end of the header block into resp (status, headers);
 * whatever followed it is resp's body so far. */
static int upgrade_head(struct sbx_http *h, int s, const char *method, const char *path,
			int64_t deadline, struct sbx_http_resp *resp, struct sbx_err *err)
{
	size_t bcap = 4096, blen = 0;
	SBX_AUTOFREE char *buf = sbx_xmalloc(bcap + 1);
	char *end = NULL;
	while (!end) {
		if (blen == bcap) {
			if (bcap >= HTTP_MAX_HEADERS)
				return sbx_fail(err, SBX_UNAVAILABLE, "http",
						"%s %s%s: response headers too large",
						method, h->shown_url, path);
			bcap *= 2;
			buf = sbx_xrealloc(buf, bcap + 1);
		}
		size_t got;
		if (recv_some(s, buf + blen, bcap - blen, deadline, &got, err) < 0) {
			sbx_err_prefix(err, "%s %s%s", method, h->shown_url, path);
			return -1;
		}
		if (got == 0)
			return sbx_fail(err, SBX_UNAVAILABLE, "http",
					"%s %s%s: connection closed before the response headers",
					method, h->shown_url, path);
		blen += got;
		buf[blen] = 0;
		end = strstr(buf, "\r\n\r\n");
	}
	size_t hlen = (size_t)(end - buf) + 4;
	int status = 0;
	if (sscanf(buf, "HTTP/%*d.%*d %d", &status) != 1 || status < 100 || status > 999)
		return sbx_fail(err, SBX_UNAVAILABLE, "http", "%s %s%s: malformed status line",
				method, h->shown_url, path);
	resp->status = status;
	resp->headers = strndup(buf, hlen) ?: sbx_xstrdup("");
	resp->len = blen - hlen;
	resp->body = sbx_xmalloc(resp->len + 1);
	memcpy(resp->body, buf + hlen, resp->len);
	resp->body[resp->len] = 0;
	return 0;
}

/* Not upgraded: collect the (error) body by Content-Length, or to EOF,
 * capped.  What arrived is kept: the status is what matters. */
static void upgrade_error_body(int s, const struct sbx_http_req *req, int64_t deadline,
			       struct sbx_http_resp *resp)
{
	struct sbx_err ignored = {0};
	SBX_AUTOFREE char *cl = sbx_http_header(resp, "Content-Length");
	size_t want = cl ? strtoull(cl, NULL, 10) : HTTP_DEFAULT_MAX_BODY;
	size_t max = req->max_body ? req->max_body : HTTP_DEFAULT_MAX_BODY;
	if (want > max)
		want = max;
	while (resp->len < want) {
		char tmp[8192];
		size_t got, n = want - resp->len < sizeof(tmp) ? want - resp->len : sizeof(tmp);
		if (recv_some(s, tmp, n, deadline, &got, &ignored) < 0 || got == 0)
			break;
		resp->body = sbx_xrealloc(resp->body, resp->len + got + 1);
		memcpy(resp->body + resp->len, tmp, got);
		resp->len += got;
		resp->body[resp->len] = 0;
	}
}

int sbx_http_upgrade(struct sbx_http *h, const struct sbx_http_req *req, int *fd,
		     struct sbx_http_resp *resp, struct sbx_err *err)
{
	const char *method = req->method ? req->method : "POST";
	const char *path = req->path ? req->path : "";
	*fd = -1;
	memset(resp, 0, sizeof(*resp));
	if (sbx_str_starts(h->base_url, "https://"))
		return sbx_fail(err, SBX_UNSUPPORTED, "http",
				"%s %s%s: connection upgrade over TLS is not supported",
				method, h->shown_url, path);
	if (fd_set_p(req->body_fd))
		return sbx_fail(err, SBX_INVALID_REQUEST, "http",
				"upgrade requests take an in-memory body only");
	int64_t t = req->timeout_ms ? req->timeout_ms : h->timeout_ms;
	int64_t deadline = t > 0 ? sbx_mono_ms() + t : 0;
	SBX_AUTOCLOSE int s = -1;
	if (upgrade_connect(h, method, path, t, &s, err) < 0 ||
	    upgrade_send(h, s, req, method, path, err) < 0 ||
	    upgrade_head(h, s, method, path, deadline, resp, err) < 0)
		return -1;
	if (resp->status == 101 || (resp->status >= 200 && resp->status < 300)) {
		*fd = s;
		s = -1;             /* the caller owns the raw stream now */
		return 0;
	}
	upgrade_error_body(s, req, deadline, resp);
	return 0;
}
