/* local-l7.c - see local-l7.h.  One request per connection, blocking I/O
 * on the broker's thread of that connection (with LOCAL_L7_IO_MS socket
 * timeouts: a peer that stops sending ends its connection, never a
 * thread's life). */
#include "local-l7.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "doc.h"
#include "egress-secrets.h"
#include "local-ca.h"
#include "util.h"

#define LOCAL_L7_IO_MS 60000
#define MAX_HEADERS 100

struct secret {
	char *name, *value;
	struct sbx_netpolicy to;   /* allow rules of its names: who may get it */
	char *header, *format, *basic, *query;
	int override;              /* its header replaces the sandbox's (E2B's transform) */
};

struct local_l7 {
	struct local_ca *ca;       /* NULL: no interception (a plain HTTP read only) */
	SSL_CTX *srv, *cli;
	struct secret *sec;
	size_t nsec;
};

/* ---- set-up ------------------------------------------------------------ */

static int alpn_h11(SSL *s, const unsigned char **out, unsigned char *outlen,
		    const unsigned char *in, unsigned inlen, void *arg)
{
	(void)s;
	(void)arg;
	static const unsigned char h11[] = "\x08http/1.1";
	unsigned char *o;
	if (SSL_select_next_proto(&o, outlen, h11, sizeof(h11) - 1, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
		*out = o;
		return SSL_TLSEXT_ERR_OK;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

static char *opt_dup(json_object *o, const char *k)
{
	const char *s = sbx_json_str(o, k);
	return s ? sbx_xstrdup(s) : NULL;
}

static int load_secrets(struct local_l7 *l, json_object *arr, struct sbx_err *err)
{
	size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	l->sec = sbx_xcalloc(n + 1, sizeof(*l->sec));
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(arr, i), *to = NULL;
		struct secret *s = &l->sec[l->nsec++];
		s->name = opt_dup(e, "name");
		s->value = opt_dup(e, "value");
		s->header = opt_dup(e, "header");
		s->format = opt_dup(e, "format");
		s->basic = opt_dup(e, "basic");
		s->query = opt_dup(e, "query");
		s->override = sbx_json_bool(e, "override", 0);
		json_object_object_get_ex(e, "to", &to);
		for (size_t k = 0; to && k < json_object_array_length(to); k++)
			if (sbx_np_add(&s->to, SBX_NP_ALLOW, json_object_get_string(json_object_array_get_idx(to, k)), err) < 0)
				return -1;
		sbx_np_finish(&s->to);
		if (!s->name || !s->value)
			return sbx_fail(err, SBX_INVALID_REQUEST, "egress", "secret %zu has no name or value", i);
	}
	return 0;
}

struct local_l7 *local_l7_new(const char *text, size_t len, const char *sandbox_dir,
			      struct sbx_err *err)
{
	struct local_l7 *l = sbx_xcalloc(1, sizeof(*l));
	json_object *doc = len ? json_tokener_parse(text) : NULL;
	if (len && !doc) {
		sbx_fail(err, SBX_INVALID_REQUEST, "egress", "the keys document is not JSON");
		free(l);
		return NULL;
	}
	const char *dir = sbx_json_str(doc, "ca"), *prof = sbx_json_str(doc, "profile");
	const char *up = sbx_json_str(doc, "upstream_ca");
	json_object *sec = NULL;
	int rc = 0;
	if (doc)
		json_object_object_get_ex(doc, "secrets", &sec);
	if (load_secrets(l, sec, err) < 0)
		rc = -1;
	if (rc == 0 && dir) {
		if (!(l->ca = local_ca_open(dir, prof ? prof : "default", err)))
			rc = -1;
	}
	if (rc == 0 && l->ca) {
		SBX_AUTOFREE char *pem = local_ca_cert_pem(l->ca);
		SBX_AUTOFREE char *at = sbx_xasprintf("%s/egress-ca.crt", sandbox_dir);
		l->srv = SSL_CTX_new(TLS_server_method());
		l->cli = SSL_CTX_new(TLS_client_method());
		if (!pem || sbx_write_file_atomic(at, pem, strlen(pem), 0644, 0, err) < 0)
			rc = -1;
		else if (!l->srv || !l->cli)
			rc = sbx_fail(err, SBX_INTERNAL, "egress", "OpenSSL: no TLS context");
	}
	if (rc == 0 && l->ca) {
		SSL_CTX_set_min_proto_version(l->srv, TLS1_2_VERSION);
		SSL_CTX_set_alpn_select_cb(l->srv, alpn_h11, NULL);
		SSL_CTX_set_min_proto_version(l->cli, TLS1_2_VERSION);
		SSL_CTX_set_verify(l->cli, SSL_VERIFY_PEER, NULL);
		SSL_CTX_set_options(l->cli, SSL_OP_IGNORE_UNEXPECTED_EOF);
		SSL_CTX_set_options(l->srv, SSL_OP_IGNORE_UNEXPECTED_EOF);
		static const unsigned char h11[] = "\x08http/1.1";
		SSL_CTX_set_alpn_protos(l->cli, h11, sizeof(h11) - 1);
		if (up ? SSL_CTX_load_verify_locations(l->cli, up, NULL) != 1
		       : SSL_CTX_set_default_verify_paths(l->cli) != 1)
			rc = sbx_fail(err, SBX_INVALID_REQUEST, "egress", "cannot load the upstream CAs %s",
				      up ? up : "of the host");
	}
	if (doc) {   /* the values are copied into l->sec: wipe the document's */
		for (size_t i = 0; sec && i < json_object_array_length(sec); i++) {
			json_object *v;
			if (json_object_object_get_ex(json_object_array_get_idx(sec, i), "value", &v))
				explicit_bzero((char *)json_object_get_string(v), strlen(json_object_get_string(v)));
		}
		json_object_put(doc);
	}
	if (rc < 0) {
		/* the broker exits: nothing to free that outlives it */
		return NULL;
	}
	return l;
}

static int bound(const struct secret *s, const char *name)
{
	size_t r;
	return sbx_np_judge_name(&s->to, name, &r) == SBX_NP_ALLOW && r != SBX_NP_DEFAULT;
}

int local_l7_wants(const struct local_l7 *l, const struct sbx_netpolicy *p, int tls,
		   const char *name, unsigned port)
{
	if (sbx_np_l7(p, name, port))
		return 1;
	if (!tls)
		return l->nsec > 0;
	for (size_t i = 0; i < l->nsec; i++)
		if (bound(&l->sec[i], name))
			return 1;
	return 0;
}

/* ---- I/O ----------------------------------------------------------------- */

struct io {
	int fd;
	SSL *ssl;
};

static ssize_t io_read(struct io *c, void *b, size_t n)
{
	if (!c->ssl) {
		ssize_t r;
		do
			r = read(c->fd, b, n);
		while (r < 0 && errno == EINTR);
		return r;
	}
	int r = SSL_read(c->ssl, b, n > 1 << 30 ? 1 << 30 : (int)n);
	if (r > 0)
		return r;
	return SSL_get_error(c->ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
}

static int io_write(struct io *c, const void *b, size_t n)
{
	if (!c->ssl)
		return sbx_write_all(c->fd, b, n);
	while (n) {
		int r = SSL_write(c->ssl, b, n > 1 << 30 ? 1 << 30 : (int)n);
		if (r <= 0)
			return -1;
		b = (const char *)b + r;
		n -= (size_t)r;
	}
	return 0;
}

static void timeouts(int fd)
{
	struct timeval tv = {LOCAL_L7_IO_MS / 1000, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The broker's own answer: `code`, the reason in the body; f->status. */
static void answer(struct io *c, struct local_l7_fact *f, int code, const char *reason)
{
	const char *text = code == 400 ? "Bad Request" : code == 403 ? "Forbidden"
			 : code == 421 ? "Misdirected Request" : code == 431 ? "Request Header Fields Too Large"
			 : code == 501 ? "Not Implemented" : "Bad Gateway";
	char body[512], head[256];
	int bn = snprintf(body, sizeof(body), "sbx egress: %s: %s\n", code == 403 ? "refused" : "error",
			  reason);
	if (bn >= (int)sizeof(body))
		bn = (int)sizeof(body) - 1;
	int hn = snprintf(head, sizeof(head),
			  "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
			  "Connection: close\r\nX-Sbx-Egress: refused\r\n\r\n", code, text, bn);
	(void)!(io_write(c, head, (size_t)hn) == 0 && io_write(c, body, (size_t)bn) == 0);
	f->status = code;
	if (!f->why[0])
		snprintf(f->why, sizeof(f->why), "%s", reason);
}

/* TLS with the client: the ClientHello already read is first[0..n), the
 * rest comes from fd.  The SSL, or NULL. */
static SSL *accept_tls(struct local_l7 *l, int fd, const unsigned char *first, size_t n,
		       const char *name)
{
	SSL *s = SSL_new(l->srv);
	BIO *mem = BIO_new(BIO_s_mem()), *sock = BIO_new_socket(fd, BIO_NOCLOSE);
	if (!s || !mem || !sock || local_ca_use_leaf(l->ca, s, name) < 0 ||
	    BIO_write(mem, first, (int)n) != (int)n) {
		BIO_free(mem);
		BIO_free(sock);
		SSL_free(s);
		return NULL;
	}
	BIO_set_mem_eof_return(mem, -1);
	SSL_set_bio(s, mem, sock);
	int swapped = 0;
	for (;;) {
		int r = SSL_accept(s);
		if (r == 1 && swapped)
			return s;
		int e = r == 1 ? SSL_ERROR_WANT_READ : SSL_get_error(s, r);
		if (e == SSL_ERROR_WANT_READ && !swapped && BIO_ctrl_pending(mem) == 0) {
			BIO *rs = BIO_new_socket(fd, BIO_NOCLOSE);
			if (!rs)
				break;
			SSL_set0_rbio(s, rs);    /* frees mem */
			swapped = 1;
			if (r == 1)
				return s;
			continue;
		}
		break;
	}
	SSL_free(s);
	return NULL;
}

/* ---- the request head ---------------------------------------------------- */

struct hdr {
	const char *n, *v;
	size_t nl, vl;
};

struct head {
	char method[20];
	const char *target;
	size_t tl;
	const char *version;       /* "HTTP/1.1" or "HTTP/1.0" */
	struct hdr h[MAX_HEADERS];
	size_t nh;
	long long clen;            /* -1: none */
};

static int tchar(int c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Parse b[0..n) (ends in CRLF CRLF): 0, else the status to answer with and
 * the reason in why. */
static int parse_head(char *b, size_t n, struct head *h, const char **why)
{
	memset(h, 0, sizeof(*h));
	h->clen = -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];
		if ((c == '\r' && (i + 1 >= n || b[i + 1] != '\n')) || (c == '\n' && (i == 0 || b[i - 1] != '\r')) ||
		    (c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f) {
			*why = "a bare CR or LF, or a control character, in the request head";
			return 400;
		}
	}
	char *eol = memmem(b, n, "\r\n", 2);
	char *sp1 = memchr(b, ' ', (size_t)(eol - b));
	char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || sp1 - b > 16 || sp1 == b || sp2 == sp1 + 1 ||
	    (eol - sp2 - 1 != 8) || (strncmp(sp2 + 1, "HTTP/1.1", 8) && strncmp(sp2 + 1, "HTTP/1.0", 8)) ||
	    memchr(sp2 + 1, ' ', (size_t)(eol - sp2 - 1))) {
		*why = "not an HTTP/1.x request line";
		return 400;
	}
	for (char *m = b; m < sp1; m++)
		if (!tchar((unsigned char)*m)) {
			*why = "a method that is not a token";
			return 400;
		}
	memcpy(h->method, b, (size_t)(sp1 - b));
	h->target = sp1 + 1;
	h->tl = (size_t)(sp2 - sp1 - 1);
	h->version = sp2 + 1;
	if (h->target[0] != '/') {
		*why = "the target must be a path (origin form)";
		return 400;
	}
	for (char *l = eol + 2; l < b + n - 2;) {
		char *e = memmem(l, (size_t)(b + n - l), "\r\n", 2);
		if (*l == ' ' || *l == '\t') {
			*why = "a folded header line";
			return 400;
		}
		char *colon = memchr(l, ':', (size_t)(e - l));
		if (!colon || colon == l) {
			*why = "a header line without a name";
			return 400;
		}
		for (char *k = l; k < colon; k++)
			if (!tchar((unsigned char)*k)) {
				*why = "a header name that is not a token";
				return 400;
			}
		if (h->nh == MAX_HEADERS) {
			*why = "more than 100 header lines";
			return 431;
		}
		char *v = colon + 1, *ve = e;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		struct hdr *x = &h->h[h->nh++];
		*x = (struct hdr){l, v, (size_t)(colon - l), (size_t)(ve - v)};
		if (x->nl == 17 && !strncasecmp(l, "transfer-encoding", 17)) {
			*why = "a request body in Transfer-Encoding (only Content-Length passes an intercepted "
			       "destination)";
			return 501;
		}
		if (x->nl == 14 && !strncasecmp(l, "content-length", 14)) {
			if (h->clen >= 0 || x->vl == 0 || x->vl > 15) {
				*why = "a second or malformed Content-Length";
				return 400;
			}
			h->clen = 0;
			for (size_t k = 0; k < x->vl; k++) {
				if (!isdigit((unsigned char)v[k])) {
					*why = "a malformed Content-Length";
					return 400;
				}
				h->clen = h->clen * 10 + (v[k] - '0');
			}
		}
		l = e + 2;
	}
	return 0;
}

static const struct hdr *find(const struct head *h, const char *name)
{
	size_t nl = strlen(name);
	const struct hdr *found = NULL;
	for (size_t i = 0; i < h->nh; i++)
		if (h->h[i].nl == nl && !strncasecmp(h->h[i].n, name, nl)) {
			if (found)
				return (const struct hdr *)-1;   /* twice */
			found = &h->h[i];
		}
	return found;
}

/* The target for the record: the path, and of the query its keys only. */
static void fact_path(struct local_l7_fact *f, const char *t, size_t tl)
{
	size_t o = 0, cap = sizeof(f->path) - 1;
	int in_value = 0, in_query = 0;
	for (size_t i = 0; i < tl && o < cap; i++) {
		char c = t[i];
		if (c == '#')
			break;
		if (!in_query && c == '?')
			in_query = 1;
		else if (in_query && c == '=')
			in_value = 1, f->path[o++] = c;
		else if (in_query && c == '&')
			in_value = 0;
		if (in_value && c != '=')
			continue;
		if (c != '=')
			f->path[o++] = c;
	}
	f->path[o] = '\0';
}

/* ---- secrets ------------------------------------------------------------- */

struct buf {
	char *b;
	size_t n, cap;
};

static void put(struct buf *o, const void *p, size_t n)
{
	if (o->n + n + 1 > o->cap) {
		o->cap = (o->n + n + 1) * 2;
		o->b = sbx_xrealloc(o->b, o->cap);
	}
	memcpy(o->b + o->n, p, n);
	o->n += n;
	o->b[o->n] = '\0';
}

static void wipe(struct buf *o)
{
	if (o->b)
		explicit_bzero(o->b, o->cap);
	free(o->b);
	o->b = NULL;
	o->n = o->cap = 0;
}

static struct secret *secret_named(struct local_l7 *l, const char *n, size_t nl)
{
	for (size_t i = 0; i < l->nsec; i++)
		if (strlen(l->sec[i].name) == nl && !strncmp(l->sec[i].name, n, nl))
			return &l->sec[i];
	return NULL;
}

enum where { IN_HEADER, IN_QUERY, IN_PATH };

static void note_secret(struct local_l7_fact *f, const char *name)
{
	if (strstr(f->secret, name))
		return;
	size_t n = strlen(f->secret);
	snprintf(f->secret + n, sizeof(f->secret) - n, "%s%s", n ? "," : "", name);
}

/* Copy s[0..n) into o with the placeholders of known secrets replaced by
 * their values where they may go (`where`, a TLS request to a bound
 * name); -1 with f->why (and f->secret) when a placeholder may not go. */
static int subst(struct local_l7 *l, struct local_l7_fact *f, const char *s, size_t n,
		 enum where where, struct buf *o)
{
	size_t i = 0;
	while (i < n) {
		const char *p = memmem(s + i, n - i, "sbx-secret", 10);
		if (!p) {
			put(o, s + i, n - i);
			break;
		}
		size_t at = (size_t)(p - s), k = at + 10;
		if (k < n && s[k] == ':')
			k += 1;
		else if (k + 2 < n && s[k] == '%' && s[k + 1] == '3' && (s[k + 2] == 'A' || s[k + 2] == 'a'))
			k += 3;
		else {
			put(o, s + i, k - i);
			i = k;
			continue;
		}
		size_t ns = k;
		while (k < n && (isalnum((unsigned char)s[k]) || s[k] == '_'))
			k++;
		struct secret *sec = secret_named(l, s + ns, k - ns);
		if (!sec) {                 /* not one of ours: text like any other */
			put(o, s + i, k - i);
			i = k;
			continue;
		}
		note_secret(f, sec->name);
		int form_ok = where == IN_QUERY ? sec->query != NULL : where == IN_HEADER ? !sec->query : 0;
		if (!f->tls || !bound(sec, f->host) || !form_ok) {
			snprintf(f->why, sizeof(f->why), "secret %s %s", sec->name,
				 !bound(sec, f->host) ? "is not bound to this destination"
				 : !f->tls ? "goes over HTTPS only"
				 : sec->query ? "goes in the query only" : "goes in a header only");
			return -1;
		}
		put(o, s + i, at - i);
		if (where == IN_QUERY) {
			for (const char *v = sec->value; *v; v++) {
				char e[4];
				int plain = isalnum((unsigned char)*v) || strchr("-._~", *v);
				snprintf(e, sizeof(e), plain ? "%c" : "%%%02X", (unsigned char)*v);
				put(o, e, strlen(e));
			}
		} else {
			put(o, sec->value, strlen(sec->value));
		}
		i = k;
	}
	return 0;
}

/* A header value: placeholders replaced, and inside a Basic credential
 * (decoded, replaced, encoded again). */
static int subst_header(struct local_l7 *l, struct local_l7_fact *f, const struct hdr *x,
			struct buf *o)
{
	if (x->nl == 13 && !strncasecmp(x->n, "authorization", 13) && x->vl > 6 &&
	    !strncasecmp(x->v, "basic ", 6)) {
		const char *b64 = x->v + 6;
		size_t bl = x->vl - 6;
		unsigned char *dec = sbx_xmalloc(bl + 4);
		int dn = bl % 4 == 0 ? EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)bl) : -1;
		if (dn >= 0) {
			while (bl && b64[bl - 1] == '=' && dn > 0)   /* DecodeBlock counts the padding */
				bl--, dn--;
			struct buf d = {0};
			int rc = subst(l, f, (const char *)dec, (size_t)dn, IN_HEADER, &d);
			explicit_bzero(dec, bl + 4);
			free(dec);
			if (rc < 0) {
				wipe(&d);
				return -1;
			}
			unsigned char *enc = sbx_xmalloc(4 * (d.n / 3 + 1) + 8);
			int en = EVP_EncodeBlock(enc, (const unsigned char *)(d.b ? d.b : ""), (int)d.n);
			put(o, "Basic ", 6);
			put(o, enc, (size_t)en);
			explicit_bzero(enc, (size_t)en);
			free(enc);
			wipe(&d);
			return 0;
		}
		free(dec);
	}
	return subst(l, f, x->v, x->vl, IN_HEADER, o);
}

static int hop(const struct hdr *x)
{
	static const char *const drop[] = {"connection", "keep-alive", "proxy-connection", "upgrade",
					   "te", "trailer", "proxy-authorization"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(drop); i++)
		if (x->nl == strlen(drop[i]) && !strncasecmp(x->n, drop[i], x->nl))
			return 1;
	return 0;
}

/* 1 when header x is replaced by an overriding secret bound to the host
 * (a TLS request only: nothing is injected in clear). */
static int overridden(struct local_l7 *l, const struct local_l7_fact *f, const struct hdr *x)
{
	for (size_t i = 0; f->tls && i < l->nsec; i++) {
		const struct secret *s = &l->sec[i];
		if (s->override && s->header && strlen(s->header) == x->nl &&
		    !strncasecmp(s->header, x->n, x->nl) && bound(s, f->host))
			return 1;
	}
	return 0;
}

/* The head to send upstream: the request line (placeholders replaced in
 * the query), the end-to-end headers (replaced), the secrets' own headers
 * the request lacks, "Connection: close".  -1 with f->why: 403. */
static int rewrite(struct local_l7 *l, struct local_l7_fact *f, const struct head *h, struct buf *o)
{
	put(o, h->method, strlen(h->method));
	put(o, " ", 1);
	const char *q = memchr(h->target, '?', h->tl);
	size_t pl = q ? (size_t)(q - h->target) : h->tl;
	if (subst(l, f, h->target, pl, IN_PATH, o) < 0 ||
	    (q && subst(l, f, q, h->tl - pl, IN_QUERY, o) < 0))
		return -1;
	put(o, " ", 1);
	put(o, h->version, 8);
	put(o, "\r\n", 2);
	for (size_t i = 0; i < h->nh; i++) {
		const struct hdr *x = &h->h[i];
		if (hop(x) || overridden(l, f, x))
			continue;
		put(o, x->n, x->nl);
		put(o, ": ", 2);
		if (subst_header(l, f, x, o) < 0)
			return -1;
		put(o, "\r\n", 2);
	}
	for (size_t i = 0; f->tls && i < l->nsec; i++) {
		struct secret *s = &l->sec[i];
		if (!bound(s, f->host) || s->query)
			continue;
		const char *hn = s->header ? s->header : "Authorization";
		if (!s->override && find(h, hn))
			continue;
		note_secret(f, s->name);
		put(o, hn, strlen(hn));
		put(o, ": ", 2);
		if (s->header) {
			const char *fmt = s->format ? s->format : "{}", *b = strstr(fmt, "{}");
			put(o, fmt, (size_t)(b - fmt));
			put(o, s->value, strlen(s->value));
			put(o, b + 2, strlen(b + 2));
		} else {
			struct buf c = {0};
			put(&c, s->basic, strlen(s->basic));
			put(&c, ":", 1);
			put(&c, s->value, strlen(s->value));
			unsigned char *enc = sbx_xmalloc(4 * (c.n / 3 + 1) + 8);
			int en = EVP_EncodeBlock(enc, (const unsigned char *)c.b, (int)c.n);
			put(o, "Basic ", 6);
			put(o, enc, (size_t)en);
			explicit_bzero(enc, (size_t)en);
			free(enc);
			wipe(&c);
		}
		put(o, "\r\n", 2);
	}
	put(o, "Connection: close\r\n\r\n", 21);
	return 0;
}

/* ---- one request ------------------------------------------------------- */

/* Host equals the name the connection was judged by (and the port, when
 * it names one). */
static int host_ok(const struct hdr *x, const char *name, unsigned port)
{
	char v[300];
	if (!x || x == (const struct hdr *)-1 || x->vl >= sizeof(v))
		return 0;
	memcpy(v, x->v, x->vl);
	v[x->vl] = '\0';
	char *c = strrchr(v, ':');
	if (c) {
		char *e;
		unsigned long p = strtoul(c + 1, &e, 10);
		if (*e || p != port)
			return 0;
		*c = '\0';
	}
	size_t n = strlen(v);
	if (n && v[n - 1] == '.')
		v[n - 1] = '\0';
	return !strcasecmp(v, name);
}

static SSL *connect_tls(struct local_l7 *l, int sfd, const char *name, char *why, size_t wl)
{
	SSL *s = SSL_new(l->cli);
	if (!s || SSL_set_tlsext_host_name(s, name) != 1 || SSL_set1_host(s, name) != 1 ||
	    SSL_set_fd(s, sfd) != 1) {
		snprintf(why, wl, "OpenSSL cannot make a connection");
		SSL_free(s);
		return NULL;
	}
	if (SSL_connect(s) != 1) {
		long v = SSL_get_verify_result(s);
		snprintf(why, wl, "the TLS connection to %s failed: %s", name,
			 v != X509_V_OK ? X509_verify_cert_error_string(v) : "handshake");
		SSL_free(s);
		return NULL;
	}
	return s;
}

/* To the server: the rewritten head `out`, then exactly `clen` bytes of
 * body (the first `extra` of them, or more, already read after the head);
 * then the server's response to the client, to its end.  f->status from
 * the response's status line. */
static void pass(struct io *c, struct io *u, struct buf *out, const char *extra, size_t en,
		 long long clen, struct local_l7_fact *f)
{
	long long left = clen > 0 ? clen : 0;
	if ((long long)en > left)
		en = (size_t)left;
	if (io_write(u, out->b, out->n) < 0 || (en && io_write(u, extra, en) < 0))
		return;
	f->bytes_out = out->n + en;
	wipe(out);
	left -= (long long)en;
	char *b = sbx_xmalloc(65536);
	while (left > 0) {
		ssize_t r = io_read(c, b, left < 65536 ? (size_t)left : 65536);
		if (r <= 0 || io_write(u, b, (size_t)r) < 0)
			break;
		f->bytes_out += (unsigned long long)r;
		left -= r;
	}
	char st[16];
	size_t sn = 0;
	while (left == 0) {
		ssize_t r = io_read(u, b, 65536);
		if (r <= 0)
			break;
		for (ssize_t k = 0; k < r && sn < sizeof(st) - 1; k++)
			st[sn++] = b[k];
		if (io_write(c, b, (size_t)r) < 0)
			break;
		f->bytes_in += (unsigned long long)r;
	}
	free(b);
	st[sn] = '\0';
	if (sn >= 12 && !strncmp(st, "HTTP/1.", 7))
		f->status = atoi(st + 9);
}

void local_l7_serve(struct local_l7 *l, int fd, int tls, const unsigned char *first, size_t n,
		    const char *name, unsigned port, local_l7_dial_fn dial, void *ctx,
		    struct local_l7_fact *f)
{
	*f = (struct local_l7_fact){.tls = tls, .port = port, .rule = SBX_NP_DEFAULT};
	/* Before the first goto done: a cleanup variable a goto jumps over
	 * is freed uninitialised at the function's end. */
	SBX_AUTOFREE char *path = NULL;
	int refused = 0, relayed = 0;
	snprintf(f->host, sizeof(f->host), "%s", name);
	timeouts(fd);
	struct io c = {.fd = fd}, u = {.fd = -1};
	char *head = sbx_xmalloc(LOCAL_L7_HEAD_MAX + 1);
	struct buf out = {0};
	size_t hn = 0;
	if (tls) {
		if (!l->ca) {
			static const unsigned char alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49};
			(void)!write(fd, alert, sizeof(alert));
			snprintf(f->why, sizeof(f->why), "an L7 rule covers %s but the sandbox was created "
				 "without interception", name);
			goto done;
		}
		if (!(c.ssl = accept_tls(l, fd, first, n, name))) {
			snprintf(f->why, sizeof(f->why), "TLS with the sandbox failed");
			goto done;
		}
	} else {
		hn = n < LOCAL_L7_HEAD_MAX ? n : LOCAL_L7_HEAD_MAX;
		memcpy(head, first, hn);
	}
	size_t eoh;
	for (;;) {
		char *e = memmem(head, hn, "\r\n\r\n", 4);
		if (e) {
			eoh = (size_t)(e - head) + 4;
			break;
		}
		if (hn >= LOCAL_L7_HEAD_MAX) {
			answer(&c, f, 431, "the request head is over 16 KiB");
			goto done;
		}
		ssize_t r = io_read(&c, head + hn, LOCAL_L7_HEAD_MAX - hn);
		if (r <= 0) {
			snprintf(f->why, sizeof(f->why), "the request head ended early");
			goto done;
		}
		hn += (size_t)r;
	}
	struct head h;
	const char *why = NULL;
	int code = parse_head(head, eoh, &h, &why);
	if (code == 0 && !host_ok(find(&h, "host"), name, port)) {
		code = 421;
		why = "the Host header is not the name of the connection";
	}
	if (h.method[0]) {
		snprintf(f->method, sizeof(f->method), "%s", h.method);
		fact_path(f, h.target, h.tl);
	}
	if (code) {
		answer(&c, f, code, why);
		goto done;
	}
	if (rewrite(l, f, &h, &out) < 0) {
		f->verdict = SBX_NP_DENY;
		answer(&c, f, 403, f->why);
		goto done;
	}
	char *q = memchr(h.target, '?', h.tl);
	path = strndup(h.target, q ? (size_t)(q - h.target) : h.tl);
	struct sbx_np_req rq = {tls ? SBX_NP_HTTPS : SBX_NP_HTTP, h.method, path};
	int sfd = dial(ctx, name, port, &rq, f);
	if (sfd < 0) {
		answer(&c, f, f->verdict == SBX_NP_DENY ? 403 : 502, f->why);
		goto done;
	}
	u.fd = sfd;
	timeouts(sfd);
	if (tls && !(u.ssl = connect_tls(l, sfd, name, f->why, sizeof(f->why)))) {
		answer(&c, f, 502, f->why);
		goto done;
	}
	relayed = 1;
	pass(&c, &u, &out, head + eoh, hn - eoh, h.clen, f);
done:
	refused = !relayed && f->status >= 400;
	wipe(&out);
	explicit_bzero(head, LOCAL_L7_HEAD_MAX);
	free(head);
	if (u.ssl) {
		SSL_shutdown(u.ssl);
		SSL_free(u.ssl);
	}
	if (u.fd >= 0)
		close(u.fd);
	if (c.ssl) {
		SSL_shutdown(c.ssl);
		SSL_free(c.ssl);
	}
	if (refused) {
		/* Let the client read the answer: what it still sends is read and
		 * dropped (a second, at most 1 MiB), so that the close is no reset
		 * that would take the answer with it. */
		shutdown(fd, SHUT_WR);
		char sink[4096];
		size_t got = 0;
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ssize_t r;
		while (got < (1 << 20) && poll(&pf, 1, 1000) > 0 && (r = read(fd, sink, sizeof(sink))) > 0)
			got += (size_t)r;
	}
	close(fd);
}
