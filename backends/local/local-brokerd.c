/* local-brokerd.c - the egress broker process of a local (or Docker)
 * sandbox with a network policy: what local-broker.h promises of it.
 * Built into sbx-egress alone (with local-l7.c and local-ca.c, the part
 * that links OpenSSL); the creator's side is local-broker.c.
 *
 * One process per sandbox, one thread per TCP connection and per DNS
 * query (blocking I/O: a connection's name, lookup, dial and relay are a
 * straight line of code, and an idle sandbox costs one sleeping thread).
 * Threads get 128 KiB stacks. */
#include "local-broker.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doc.h"
#include "egress-secrets.h"
#include "fsconfine.h"
#include "helper.h"
#include "local-audit.h"
#include "local-dns.h"
#include "local-egress.h"
#include "local-init.h"
#include "local-l7.h"
#include "local-pid.h"
#include "local-slirp.h"
#include "local-state.h"
#include "netpolicy.h"
#include "util.h"

#define PEEK_MAX 16384
#define PEEK_MS 5000          /* a client that sends nothing is judged unnamed */
#define DIAL_MS 10000
#define MAX_ADDRS 16

/* ---- the broker ------------------------------------------------------- */

struct pref {
	int refs;
	struct sbx_netpolicy p;
};

struct broker {
	char *path;              /* <dir>/netpolicy.json */
	struct sockaddr_in resolver;
	char **allow, **host;
	int udp;
	pthread_mutex_t mu;
	struct pref *cur;
	struct stat seen;
	struct local_l7 *l7;     /* the L7 side (never NULL once running) */
};

static void pref_put(struct broker *b, struct pref *p)
{
	pthread_mutex_lock(&b->mu);
	int last = --p->refs == 0;
	pthread_mutex_unlock(&b->mu);
	if (last) {
		sbx_np_clear(&p->p);
		free(p);
	}
}

static struct pref *load(const char *path)
{
	SBX_AUTOFREE char *text = NULL;
	size_t len;
	struct sbx_err err = {0};
	if (sbx_read_file(path, 1 << 22, &text, &len, &err) < 0)
		return NULL;
	struct pref *p = sbx_xcalloc(1, sizeof(*p));
	if (sbx_np_from_text(text, len, &p->p, &err) < 0) {
		sbx_np_clear(&p->p);
		free(p);
		return NULL;
	}
	p->refs = 1;
	return p;
}

/* The current policy (a reference: pref_put it), re-read when the file
 * was replaced since the last look.  A file that cannot be read keeps the
 * policy before it (sbx-ctl network validates and renames, so that is a
 * crash in the middle at worst). */
static struct pref *pref_get(struct broker *b)
{
	struct stat st;
	pthread_mutex_lock(&b->mu);
	if (stat(b->path, &st) == 0 &&
	    (st.st_ino != b->seen.st_ino || st.st_mtim.tv_sec != b->seen.st_mtim.tv_sec ||
	     st.st_mtim.tv_nsec != b->seen.st_mtim.tv_nsec || st.st_size != b->seen.st_size)) {
		struct pref *n = load(b->path);
		if (n) {
			if (b->cur && --b->cur->refs == 0) {
				sbx_np_clear(&b->cur->p);
				free(b->cur);
			}
			b->cur = n;
			b->seen = st;
		}
	}
	struct pref *p = b->cur;
	p->refs++;
	pthread_mutex_unlock(&b->mu);
	return p;
}

static char *verdict_text(const struct sbx_netpolicy *p, size_t rule)
{
	if (rule == SBX_NP_DEFAULT)
		return sbx_xasprintf("the policy's default (%s)", p->dflt == SBX_NP_ALLOW ? "allow" : "deny");
	SBX_AUTOFREE char *t = sbx_np_rule_text(&p->rules[rule]);
	return sbx_xasprintf("rule %zu (%s)", rule + 1, t);
}

/* ---- DNS --------------------------------------------------------------- */

struct query {
	struct broker *b;
	struct sockaddr_in peer;
	size_t n;
	unsigned char q[1500];
};

/* The broker's answer to query q[0..n) in `out` (4096 bytes): its
 * length, 0 when nothing is to be sent (not even a header). */
static size_t dns_answer(struct broker *b, const unsigned char *q, size_t n, unsigned char *out)
{
	char name[256];
	uint16_t qtype;
	size_t qend, outn;
	if (local_dns_question(q, n, name, &qtype, &qend) < 0) {
		if (n < 12)
			return 0;
		memcpy(out, q, 12);     /* header only: FORMERR */
		out[2] = (unsigned char)(0x80 | (q[2] & 0x79));
		out[3] = 0x80 | DNS_FORMERR;
		memset(out + 4, 0, 8);
		return 12;
	}
	struct pref *p = pref_get(b);
	size_t rule;
	if (qtype != DNS_A && qtype != DNS_AAAA)
		outn = local_dns_reply(q, qend, DNS_REFUSED, out);
	else if (sbx_np_judge_name(&p->p, name, &rule) != SBX_NP_ALLOW)
		outn = local_dns_reply(q, qend, DNS_NXDOMAIN, out);
	else if (qtype == DNS_AAAA)     /* no IPv6 inside: no data, at once */
		outn = local_dns_reply(q, qend, DNS_NOERROR, out);
	else {
		long r = local_dns_ask(&b->resolver, name, DNS_A, out, 4096);
		if (r < 0)
			outn = local_dns_reply(q, qend, DNS_SERVFAIL, out);
		else {
			outn = (size_t)r;
			out[0] = q[0];     /* the sandbox's id back */
			out[1] = q[1];
		}
	}
	pref_put(b, p);
	return outn;
}

static void *dns_main(void *arg)
{
	struct query *qu = arg;
	unsigned char out[4096];
	size_t outn = dns_answer(qu->b, qu->q, qu->n, out);
	if (outn)
		sendto(qu->b->udp, out, outn, 0, (struct sockaddr *)&qu->peer, sizeof(qu->peer));
	free(qu);
	return NULL;
}

/* DNS over TCP to the resolver's address (RFC 7766): length-prefixed
 * queries on one connection, each answered as over UDP, until the client
 * closes or is idle for PEEK_MS. */
static void dns_tcp(struct broker *b, int fd)
{
	unsigned char q[1500], out[4096];
	for (;;) {
		unsigned char len[2];
		size_t got = 0, want = 2;
		unsigned char *dst = len;
		for (int part = 0; part < 2; part++) {
			while (got < want) {
				struct pollfd pf = {.fd = fd, .events = POLLIN};
				ssize_t r = poll(&pf, 1, PEEK_MS) > 0 ? read(fd, dst + got, want - got) : -1;
				if (r <= 0)
					return;
				got += (size_t)r;
			}
			if (part == 0) {
				want = (size_t)(len[0] << 8 | len[1]);
				if (want == 0 || want > sizeof(q))
					return;
				dst = q;
				got = 0;
			}
		}
		size_t outn = dns_answer(b, q, want, out);
		if (!outn)
			return;
		unsigned char hdr[2] = {(unsigned char)(outn >> 8), (unsigned char)outn};
		if (sbx_write_all(fd, hdr, 2) < 0 || sbx_write_all(fd, out, outn) < 0)
			return;
	}
}

/* ---- what a connection says first ------------------------------------- */

enum first { F_RAW, F_TLS, F_HTTP, F_CONNECT };

/* The SNI of a TLS ClientHello in b[0..n), into name (256); 1 found, 0
 * none, -1 incomplete. */
static int tls_sni(const unsigned char *b, size_t n, char *name)
{
	if (n < 5)
		return -1;
	size_t rec = (size_t)(b[3] << 8 | b[4]);
	if (n < 5 + rec)
		return n >= PEEK_MAX ? 0 : -1;
	const unsigned char *p = b + 5, *end = b + 5 + rec;
	if (end - p < 4 || p[0] != 1)
		return 0;
	p += 4 + 2 + 32;                               /* handshake header, version, random */
	if (p >= end || (p += 1 + p[0]) + 2 > end)     /* session id */
		return 0;
	p += 2 + (p[0] << 8 | p[1]);                   /* cipher suites */
	if (p >= end || (p += 1 + p[0]) + 2 > end)     /* compression */
		return 0;
	const unsigned char *ext_end = p + 2 + (p[0] << 8 | p[1]);
	p += 2;
	if (ext_end > end)
		return 0;
	while (p + 4 <= ext_end) {
		unsigned type = (unsigned)(p[0] << 8 | p[1]), len = (unsigned)(p[2] << 8 | p[3]);
		p += 4;
		if (p + len > ext_end)
			return 0;
		if (type == 0 && len >= 5 && p[2] == 0) {   /* server_name, host_name */
			unsigned l = (unsigned)(p[3] << 8 | p[4]);
			if (l == 0 || l > 253 || 5 + l > len)
				return 0;
			memcpy(name, p + 5, l);
			name[l] = '\0';
			return memchr(name, '\0', l) ? 0 : 1;
		}
		p += len;
	}
	return 0;
}

/* An HTTP request head in b[0..n): 1 complete (CONNECT target or Host
 * into name, *cport the CONNECT port), 0 none, -1 incomplete. */
static int http_name(const char *b, size_t n, int *is_connect, char *name, unsigned *cport)
{
	const char *eoh = memmem(b, n, "\r\n\r\n", 4);
	if (!eoh)
		return n >= PEEK_MAX ? 0 : -1;
	*is_connect = n > 8 && memcmp(b, "CONNECT ", 8) == 0;
	const char *v = NULL, *vend = NULL;
	if (*is_connect) {
		v = b + 8;
		vend = memchr(v, ' ', (size_t)(eoh - v));
	} else {
		for (const char *l = memmem(b, n, "\r\n", 2); l && l < eoh; l = memmem(l + 2, (size_t)(eoh - l), "\r\n", 2)) {
			if (eoh - l > 7 && strncasecmp(l + 2, "host:", 5) == 0) {
				v = l + 7;
				while (*v == ' ' || *v == '\t')
					v++;
				vend = memmem(v, (size_t)(eoh + 2 - v), "\r\n", 2);
				break;
			}
		}
	}
	if (!v || !vend || vend <= v || vend - v > 260)
		return 0;
	char hp[264];
	memcpy(hp, v, (size_t)(vend - v));
	hp[vend - v] = '\0';
	while (strlen(hp) && (hp[strlen(hp) - 1] == ' ' || hp[strlen(hp) - 1] == '\t'))
		hp[strlen(hp) - 1] = '\0';
	*cport = 0;
	char *colon = hp[0] == '[' ? strstr(hp, "]:") : strrchr(hp, ':');
	if (colon && (hp[0] == '[' || strchr(hp, ':') == colon)) {
		char *ps = colon + (hp[0] == '[' ? 2 : 1), *e;
		unsigned long pt = strtoul(ps, &e, 10);
		if (*e || pt == 0 || pt > 65535)
			return 0;
		*cport = (unsigned)pt;
		*(hp[0] == '[' ? colon + 1 : colon) = '\0';
	}
	snprintf(name, 256, "%s", hp);
	return 1;
}

static void refuse(int fd, enum first kind, const char *why)
{
	if (kind == F_TLS) {
		/* alert record, TLS 1.2 framing, fatal access_denied (49) */
		static const unsigned char alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49};
		(void)!write(fd, alert, sizeof(alert));
	} else if (kind == F_HTTP || kind == F_CONNECT) {
		char body[600], head[200];
		int bn = snprintf(body, sizeof(body), "sbx egress: refused: %s\n", why);
		int hn = snprintf(head, sizeof(head),
				  "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
				  "Content-Length: %d\r\nConnection: close\r\nX-Sbx-Egress: refused\r\n\r\n", bn);
		(void)!write(fd, head, (size_t)hn);
		(void)!write(fd, body, (size_t)bn);
		shutdown(fd, SHUT_WR);
		char sink[512];        /* let the client read it before the close */
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		while (poll(&pf, 1, 1000) > 0 && read(fd, sink, sizeof(sink)) > 0)
			;
	} else {
		struct linger l = {1, 0};   /* RST */
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	close(fd);
}

static int dial(const struct sockaddr_in *to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	struct pollfd pf = {.fd = fd, .events = POLLOUT};
	int e = 0;
	socklen_t el = sizeof(e);
	if (poll(&pf, 1, DIAL_MS) <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, 0);
	return fd;
}

/* Egress is activity (local-idle.h): the `egress` file's mtime is the
 * last relay, touched at most once a second (one utimensat per second
 * per sandbox, however many connections). */
static char *egress_path;
static int64_t egress_last;

static void egress_seen(void)
{
	int64_t now = sbx_mono_ms(), last = __atomic_load_n(&egress_last, __ATOMIC_RELAXED);
	if (egress_path && now - last >= 1000 &&
	    __atomic_compare_exchange_n(&egress_last, &last, now, 0, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		utimensat(AT_FDCWD, egress_path, NULL, 0);
}

/* Both directions until both ends are done; a half close is passed on.
 * *out, *in: the bytes relayed from a to c and back.  status not NULL:
 * the status of the answer the first bytes from c begin (plain HTTP),
 * 0 when they are no HTTP status line. */
static void relay(int a, int c, uint64_t *out, uint64_t *in, int *status)
{
	char buf[65536];
	int open_a = 1, open_c = 1;
	while (open_a || open_c) {
		struct pollfd pf[2] = {{.fd = open_a ? a : -1, .events = POLLIN},
				       {.fd = open_c ? c : -1, .events = POLLIN}};
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (int i = 0; i < 2; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int from = i ? c : a, to = i ? a : c;
			ssize_t n = read(from, buf, sizeof(buf));
			if (n <= 0) {
				if (n < 0 && errno != ECONNRESET)
					return;
				if (n < 0) {
					struct linger l = {1, 0};
					setsockopt(to, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
					return;
				}
				shutdown(to, SHUT_WR);
				*(i ? &open_c : &open_a) = 0;
				continue;
			}
			if (sbx_write_all(to, buf, (size_t)n) < 0)
				return;
			if (i && status && *in == 0 && n >= 12 && memcmp(buf, "HTTP/1.", 7) == 0 &&
			    buf[8] == ' ' && isdigit((unsigned char)buf[9]) &&
			    isdigit((unsigned char)buf[10]) && isdigit((unsigned char)buf[11]))
				*status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
			*(i ? in : out) += (uint64_t)n;
			egress_seen();
		}
	}
}

struct conn {
	struct broker *b;
	int fd;
};

static int is_ipv4(const char *s, struct in_addr *a) { return inet_pton(AF_INET, s, a) == 1; }

/* What the client sends first, up to PEEK_MAX bytes or PEEK_MS: its
 * kind, and the name it carries (*named) with a CONNECT's port. */
static enum first peek(int fd, unsigned char *buf, size_t *np, char *name, int *named,
		       unsigned *cport)
{
	enum first kind = F_RAW;
	size_t n = 0;
	int64_t deadline = sbx_mono_ms() + PEEK_MS;
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - sbx_mono_ms();
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			break;
		ssize_t r = read(fd, buf + n, PEEK_MAX - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		int st;
		if (buf[0] == 0x16) {
			kind = F_TLS;
			st = tls_sni(buf, n, name);
		} else if (isupper(buf[0])) {
			size_t k = 0;
			while (k < n && k < 16 && isupper(buf[k]))
				k++;
			if (k < n && buf[k] != ' ') {
				st = 0;
			} else {
				int isc = 0;
				st = http_name((const char *)buf, n, &isc, name, cport);
				kind = isc ? F_CONNECT : F_HTTP;
				if (k == n)
					st = -1;
			}
		} else {
			st = 0;
		}
		if (st >= 0) {
			*named = st == 1;
			break;
		}
		if (n == PEEK_MAX)
			break;
	}
	if (kind == F_HTTP && !*named && n && !memmem(buf, n, "\r\n\r\n", 4))
		kind = F_RAW;
	*np = n;
	return kind;
}

/* A verdict's place in a connection's record: rule_txt (400 bytes) the
 * verdict's text of the address dialled (or last judged), *used that
 * address. */
struct pick {
	char rule_txt[400];
	struct in_addr used;
};

/* The first of `addrs` that is neither always refused nor refused by the
 * policy (request rq, NULL: the connection), dialled: its socket, or -1
 * with the reason of the last refusal in `why` (*denied: a refusal, not a
 * failed connect); pk->used and pk->rule_txt (pick) as it goes. */
static int pick_and_dial(struct broker *b, const struct sbx_netpolicy *p, const char *name,
			 const struct in_addr *addrs, int na, unsigned port,
			 const struct sbx_np_req *rq, int *denied, char *why, size_t wl,
			 struct pick *pk)
{
	*denied = 0;
	int sfd = -1;
	for (int i = 0; i < na && sfd < 0; i++) {
		struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					 .sin_addr = addrs[i]};
		char at[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &addrs[i], at, sizeof(at));
		pk->used = addrs[i];
		const char *cls;
		size_t rule;
		if (local_egress_refused((struct sockaddr *)&to, b->allow, b->host, &cls)) {
			snprintf(why, wl, "%s%s%s:%u is never reachable from a sandbox (%s)",
				 name ? name : "", name ? " at " : "", at, port, cls);
			*denied = 1;
			continue;
		}
		int v = sbx_np_judge_req(p, name, (struct sockaddr *)&to, port, rq, &rule);
		SBX_AUTOFREE char *vt = verdict_text(p, rule);
		snprintf(pk->rule_txt, sizeof(pk->rule_txt), "%s", vt);
		if (v != SBX_NP_ALLOW) {
			snprintf(why, wl, "%s%s%s:%u by %s", name ? name : "", name ? " at " : "", at, port, vt);
			*denied = 1;
			continue;
		}
		if ((sfd = dial(&to)) < 0) {
			snprintf(why, wl, "%s:%u: connect failed", at, port);
			*denied = 0;
		}
	}
	return sfd;
}

/* The name's addresses from the broker's resolver: how many (<= max), 0
 * when it does not resolve. */
static int resolve(struct broker *b, const char *name, struct in_addr *addrs, int max)
{
	unsigned char ans[4096];
	long an = local_dns_ask(&b->resolver, name, DNS_A, ans, sizeof(ans));
	int na = an < 0 ? -1 : local_dns_a_records(ans, (size_t)an, addrs, max);
	return na < 0 ? 0 : na;
}

/* The request line of a plain HTTP request in buf: the record's http
 * entry {method, host, path} (the path without its query's values: a
 * query is "?k=&k2=").  A spliced connection's first request only; a
 * connection read request by request has its entry from local-l7.c's
 * facts (l7_entry). */
static json_object *http_entry(const unsigned char *buf, size_t n, const char *host)
{
	const char *b = (const char *)buf, *sp = memchr(b, ' ', n < 16 ? n : 16);
	if (!sp)
		return NULL;
	const char *p = sp + 1, *e = memchr(p, ' ', n - (size_t)(p - b));
	if (!e || e - p > 512)
		return NULL;
	json_object *h = json_object_new_object();
	json_object_object_add(h, "method", json_object_new_string_len(b, (int)(sp - b)));
	sbx_json_set_str(h, "host", host);
	char path[600];
	size_t k = 0;
	int in_value = 0;
	for (const char *c = p; c < e && k + 2 < sizeof(path); c++) {
		if (*c == '?' || *c == '&')
			in_value = 0;
		else if (*c == '=' && memchr(p, '?', (size_t)(c - p)))
			in_value = 2;
		if (in_value == 1)
			continue;
		path[k++] = *c;
		if (in_value == 2)
			in_value = 1;
	}
	path[k] = '\0';
	sbx_json_set_str(h, "path", path);
	return h;
}

/* Send what the client said first (a CONNECT's head answered, not
 * passed on), then relay both ways; both sockets closed.  *out, *in: the
 * bytes passed each way; *status (not NULL): a plain HTTP answer's. */
static void splice_conn(int fd, int sfd, enum first kind, unsigned char *buf, size_t n,
			uint64_t *out, uint64_t *in, int *status)
{
	int one = 1;
	setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int ok_so_far = 1;
	if (kind == F_CONNECT) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		const char *eoh = memmem(buf, n, "\r\n\r\n", 4);
		size_t head = (size_t)(eoh + 4 - (const char *)buf);
		ok_so_far = sbx_write_all(fd, ok, sizeof(ok) - 1) == 0 &&
			    (n <= head || sbx_write_all(sfd, buf + head, n - head) == 0);
		*out += n > head ? n - head : 0;
	} else if (n) {
		ok_so_far = sbx_write_all(sfd, buf, n) == 0;
		*out += n;
	}
	if (ok_so_far)
		relay(fd, sfd, out, in, status);
	close(sfd);
	close(fd);
}

/* The record of one connection (local-audit.h), filled as it goes: the
 * name the client sent (NULL: none), and a plain HTTP request's line. */
static json_object *conn_record(unsigned port, const struct in_addr *to, enum first kind,
				const char *name, const unsigned char *buf, size_t n)
{
	json_object *r = json_object_new_object();
	sbx_json_set_str(r, "kind", "egress");
	json_object *d = sbx_json_child(r, "data");
	char at[40], a[INET_ADDRSTRLEN];
	sbx_time_iso(sbx_now_ms() / 1000, at, sizeof(at));
	sbx_json_set_str(d, "start", at);
	inet_ntop(AF_INET, to, a, sizeof(a));
	sbx_json_set_str(d, "address", a);
	sbx_json_set_int(d, "port", port);
	if (name) {
		sbx_json_set_str(d, "name", name);
		if (kind == F_TLS)
			sbx_json_set_str(d, "sni", name);
	}
	json_object *http = json_object_new_array();
	json_object_object_add(d, "http", http);
	json_object *h = kind == F_HTTP && name ? http_entry(buf, n, name) : NULL;
	if (h)
		json_object_array_add(http, h);
	return r;
}

static void conn_verdict(json_object *rec, const char *verdict, const char *why)
{
	json_object *d = sbx_json_obj(rec, "data");
	sbx_json_set_str(d, "verdict", verdict);
	if (why && *why)
		sbx_json_set_str(d, verdict[0] == 'a' ? "rule" : "reason", why);
}

/* Refuse the connection and end its record with the reason. */
static void conn_refuse(int fd, enum first kind, const char *why, json_object *rec)
{
	refuse(fd, kind, why);
	conn_verdict(rec, "deny", why);
}

struct l7_ctx {
	struct broker *b;
	const struct sbx_netpolicy *p;
	struct pick pk;          /* the address dialled, for the record */
};

/* local_l7_dial_fn: the request judged by name first (nothing leaves for
 * a refused one), then resolved and dialled as a connection is, each
 * address judged with the request. */
static int l7_dial(void *ctx, const char *name, unsigned port, const struct sbx_np_req *rq,
		   struct local_l7_fact *f)
{
	struct l7_ctx *x = ctx;
	size_t rule;
	f->verdict = sbx_np_judge_req(x->p, name, NULL, port, rq, &rule);
	f->rule = rule;
	if (f->verdict == SBX_NP_DENY) {
		SBX_AUTOFREE char *v = verdict_text(x->p, rule);
		snprintf(x->pk.rule_txt, sizeof(x->pk.rule_txt), "%s", v);
		snprintf(f->why, sizeof(f->why), "%s %s:%u%s by %s", rq->method, name, port, rq->path, v);
		return -1;
	}
	struct in_addr addrs[MAX_ADDRS];
	int na = resolve(x->b, name, addrs, MAX_ADDRS), denied = 0;
	if (na == 0) {
		snprintf(f->why, sizeof(f->why), "%s does not resolve", name);
		return -1;
	}
	int sfd = pick_and_dial(x->b, x->p, name, addrs, na, port, rq, &denied, f->why, sizeof(f->why),
				&x->pk);
	if (sfd < 0 && denied)
		f->verdict = SBX_NP_DENY;
	if (sfd >= 0) {
		int one = 1;
		setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return sfd;
}

/* The record's http entry of a request local_l7_serve read: method,
 * host, path (query values dropped), status (the server's or the
 * broker's own answer's), the secrets' names, the verdict (allow, deny,
 * or error: not judged, e.g. a malformed head) with the rule that
 * decided (rule_txt, "" when no rule did: a secret refused) and the
 * reason of a refusal.  The path is cut at 256 bytes. */
static json_object *l7_entry(const struct local_l7_fact *f, const char *rule_txt)
{
	json_object *h = json_object_new_object();
	if (f->method[0]) {
		sbx_json_set_str(h, "method", f->method);
		/* at most 256 bytes: the record stays under LOCAL_AUDIT_RECORD_MAX */
		char path[257];
		snprintf(path, sizeof(path), "%s", f->path);
		sbx_json_set_str(h, "path", path);
	}
	sbx_json_set_str(h, "host", f->host);
	if (f->status)
		sbx_json_set_int(h, "status", f->status);
	if (f->secret[0])
		sbx_json_set_str(h, "secret", f->secret);
	sbx_json_set_str(h, "verdict", f->verdict == SBX_NP_ALLOW ? "allow"
				       : f->verdict == SBX_NP_DENY ? "deny" : "error");
	if (*rule_txt)
		sbx_json_set_str(h, "rule", rule_txt);
	if (f->why[0])
		sbx_json_set_str(h, "reason", f->why);
	return h;
}

/* A named connection whose rules or secrets need it is read request by
 * request (local-l7.h) and judged per request, not here; a CONNECT to
 * such a name is refused (a tunnel would carry requests nobody judges:
 * the sandbox connects to it directly).  1 when it took (and closed) fd,
 * its record `rec` filled: the request's http entry, the connection's
 * verdict (allow when the request went to the server), the address
 * dialled and the bytes each way. */
static int l7_take(struct broker *b, const struct sbx_netpolicy *p, int fd, enum first kind,
		   const unsigned char *buf, size_t n, const char *name, unsigned port,
		   json_object *rec, uint64_t *out, uint64_t *in)
{
	if ((kind == F_TLS || kind == F_HTTP) && local_l7_wants(b->l7, p, kind == F_TLS, name, port)) {
		json_object *d = sbx_json_obj(rec, "data"), *http = json_object_new_array();
		struct l7_ctx x = {b, p, {"", {0}}};
		struct local_l7_fact f;
		local_l7_serve(b->l7, fd, kind == F_TLS, buf, n, name, port, l7_dial, &x, &f);
		/* the entry conn_record made of a plain request line, replaced */
		json_object_array_add(http, l7_entry(&f, x.pk.rule_txt));
		json_object_object_add(d, "http", http);
		if (x.pk.used.s_addr) {
			char ua[INET_ADDRSTRLEN];
			sbx_json_set_str(d, "address", inet_ntop(AF_INET, &x.pk.used, ua, sizeof(ua)));
		}
		int sent = f.verdict == SBX_NP_ALLOW && f.bytes_out;
		conn_verdict(rec, sent ? "allow" : "deny", sent ? x.pk.rule_txt : f.why);
		*out = f.bytes_out;
		*in = f.bytes_in;
		return 1;
	}
	if (kind == F_CONNECT && local_l7_wants(b->l7, p, 1, name, port)) {
		char cw[400];
		snprintf(cw, sizeof(cw), "%s:%u is read request by request (L7 rules or secrets): "
			 "connect to it directly, not through CONNECT", name, port);
		conn_refuse(fd, kind, cw, rec);
		return 1;
	}
	return 0;
}

static void *conn_main(void *arg)
{
	struct conn *cn = arg;
	struct broker *b = cn->b;
	int fd = cn->fd;
	free(cn);
	struct sockaddr_in orig;
	socklen_t ol = sizeof(orig);
	if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &orig, &ol) < 0) {
		refuse(fd, F_RAW, "");
		return NULL;
	}
	unsigned port = ntohs(orig.sin_port);
	struct in_addr res_at;
	inet_pton(AF_INET, LOCAL_SANDBOX_RESOLVER, &res_at);
	if (port == 53 && orig.sin_addr.s_addr == res_at.s_addr) {
		dns_tcp(b, fd);
		close(fd);
		return NULL;
	}
	int64_t t0 = sbx_mono_ms();
	struct pref *pr = pref_get(b);
	const struct sbx_netpolicy *p = &pr->p;
	unsigned char *buf = sbx_xmalloc(PEEK_MAX);
	size_t n = 0;
	enum first kind = F_RAW;
	char name[264] = "";
	int named = 0;
	unsigned cport = 0;
	uint64_t out_b = 0, in_b = 0;
	/* Read what the client says first, when a domain rule could decide. */
	if (sbx_np_wants_name(p, port))
		kind = peek(fd, buf, &n, name, &named, &cport);
	if (kind == F_CONNECT && cport)
		port = cport;
	json_object *rec = conn_record(port, &orig.sin_addr, kind, named ? name : NULL, buf, n);
	json_object *d = sbx_json_obj(rec, "data");
	if (local_audit_begin() < 0) {
		/* audit: required, and no room for the record: no connection. */
		refuse(fd, kind, "its audit record cannot be written (audit: required)");
		free(buf);
		pref_put(b, pr);
		json_object_put(rec);
		return NULL;
	}
	/* An IP literal where a name goes is no name: the address is judged
	 * (a CONNECT to one is to that address). */
	struct in_addr lit;
	if (named && is_ipv4(name, &lit)) {
		named = 0;
		if (kind == F_CONNECT)
			orig.sin_addr = lit;
	} else if (named && sbx_np_name_norm(name) < 0) {
		named = 0;
	}
	if (kind == F_CONNECT && !named && !cport) {
		conn_refuse(fd, kind, "CONNECT needs HOST:PORT", rec);
		goto out;
	}
	if (named && l7_take(b, p, fd, kind, buf, n, name, port, rec, &out_b, &in_b))
		goto out;

	struct in_addr addrs[MAX_ADDRS];
	int na = 0;
	char why[600] = "";
	if (named) {
		size_t rule;
		/* Refused by name before any lookup, so nothing about it leaves:
		 * a domain rule that denies it, or no domain rule for it and a
		 * default deny (as a lookup from inside: sbx_np_judge_name). */
		if (sbx_np_judge(p, name, NULL, port, &rule) == SBX_NP_DENY) {
			SBX_AUTOFREE char *v = verdict_text(p, rule);
			snprintf(why, sizeof(why), "%s:%u by %s", name, port, v);
			conn_refuse(fd, kind, why, rec);
			goto out;
		}
		na = resolve(b, name, addrs, MAX_ADDRS);
		if (na <= 0) {
			snprintf(why, sizeof(why), "%s does not resolve", name);
			conn_refuse(fd, kind, why, rec);
			goto out;
		}
	} else {
		addrs[0] = orig.sin_addr;
		na = 1;
	}
	int denied;
	struct pick pk = {"", addrs[0]};
	int sfd = pick_and_dial(b, p, named ? name : NULL, addrs, na, port, NULL, &denied, why,
				sizeof(why), &pk);
	char ua[INET_ADDRSTRLEN];
	sbx_json_set_str(d, "address", inet_ntop(AF_INET, &pk.used, ua, sizeof(ua)));
	if (sfd < 0) {
		conn_refuse(fd, kind, why, rec);
		goto out;
	}
	conn_verdict(rec, "allow", pk.rule_txt);
	pref_put(b, pr);
	pr = NULL;
	int status = 0;
	json_object *http = NULL, *h0 = NULL;
	if (json_object_object_get_ex(d, "http", &http) && json_object_array_length(http))
		h0 = json_object_array_get_idx(http, 0);
	splice_conn(fd, sfd, kind, buf, n, &out_b, &in_b, h0 ? &status : NULL);
	if (h0 && status)
		sbx_json_set_int(h0, "status", status);
out:
	sbx_json_set_int(d, "bytes_out", (int64_t)out_b);
	sbx_json_set_int(d, "bytes_in", (int64_t)in_b);
	sbx_json_set_int(d, "duration_ms", sbx_mono_ms() - t0);
	local_audit_end(rec);
	free(buf);
	if (pr)
		pref_put(b, pr);
	return NULL;
}

static void spawn(void *(*fn)(void *), void *arg)
{
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 128 * 1024);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	if (pthread_create(&t, &at, fn, arg) != 0) {
		if (fn == conn_main) {
			struct conn *c = arg;
			refuse(c->fd, F_RAW, "");
		}
		free(arg);
	}
	pthread_attr_destroy(&at);
}

/* Every capability gone, for good (the sockets exist). */
static int drop_caps(void)
{
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -1;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	if (syscall(SYS_capset, &h, d) < 0)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* The keys document on stdin (local_broker_start; empty when the sandbox
 * needs no interception), at most 1 MiB, read whole, wiped after use;
 * stdin is /dev/null after. */
static struct local_l7 *l7_from_stdin(const char *dir, int rfd)
{
	size_t cap = 1 << 20, n = 0;
	char *doc = sbx_xmalloc(cap + 1);
	for (;;) {
		ssize_t r = read(0, doc + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (n += (size_t)r) == cap)
			break;
	}
	doc[n] = '\0';
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, 0);
		close(nul);
	}
	struct sbx_err err = {0};
	struct local_l7 *l = local_l7_new(doc, n, dir, &err);
	explicit_bzero(doc, cap + 1);
	free(doc);
	if (!l)
		dprintf(rfd, "%s", err.msg);
	return l;
}

/* The CA into the sandbox's trust, through its root (confined: a link in
 * the image never leads out): SBX_EGRESS_CA_IN, and the image's bundle
 * with the CA after it at SBX_EGRESS_BUNDLE_IN (made when the image has
 * none).  Before the sandbox's first exec: no process of it has read a
 * bundle yet. */
static int trust_install(pid_t init, const char *dir, struct sbx_err *err)
{
	SBX_AUTOFREE char *cap = sbx_xasprintf("%s/egress-ca.crt", dir);
	SBX_AUTOFREE char *pem = NULL, *old = NULL;
	size_t pl, ol = 0;
	if (sbx_read_file(cap, 1 << 16, &pem, &pl, err) < 0)
		return -1;
	char root[64];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)init);
	SBX_AUTOCLOSE int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "egress", "open the sandbox's root");
	struct sbx_fsc c;
	if (sbx_fsc_init(&c, rfd, SBX_FSC_DENY_SPECIAL, err) < 0)
		return -1;
	struct sbx_err e2 = {0};
	if (sbx_fsc_read(&c, SBX_EGRESS_BUNDLE_IN, 8 << 20, &old, &ol, &e2) < 0)
		ol = 0;
	SBX_AUTOFREE char *bundle = sbx_xasprintf("%.*s%s%s", (int)ol, old ? old : "",
						  ol && old[ol - 1] != '\n' ? "\n" : "", pem);
	if (sbx_fsc_mkdir(&c, "/usr/local/share/ca-certificates", 0755, err) < 0 ||
	    sbx_fsc_mkdir(&c, "/etc/ssl/certs", 0755, err) < 0 ||
	    sbx_fsc_write_atomic(&c, SBX_EGRESS_CA_IN, pem, pl, 0644, err) < 0 ||
	    sbx_fsc_write_atomic(&c, SBX_EGRESS_BUNDLE_IN, bundle, strlen(bundle), 0644, err) < 0) {
		sbx_err_prefix(err, "adding the egress CA to the sandbox's trust");
		return -1;
	}
	return 0;
}

static int fail_ready(int rfd, const char *what)
{
	dprintf(rfd, "%s: %s", what, strerror(errno));
	return 1;
}

int local_broker_main(int argc, char **argv)
{
	if (argc < 6)
		return 64;
	int rfd = atoi(argv[4]);
	struct broker b = {.path = sbx_xasprintf("%s/" LOCAL_POLICY_FILE, argv[1])};
	egress_path = sbx_xasprintf("%s/egress", argv[1]);
	egress_last = sbx_mono_ms() - 1000;
	/* Made at the epoch: no byte has flowed yet (local-idle.h). */
	int efd = open(egress_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (efd >= 0) {
		futimens(efd, (struct timespec[2]){{0, 0}, {0, 0}});
		close(efd);
	}
	pthread_mutex_init(&b.mu, NULL);
	b.resolver.sin_family = AF_INET;
	b.resolver.sin_port = htons(53);
	if (inet_pton(AF_INET, argv[5], &b.resolver.sin_addr) != 1) {
		dprintf(rfd, "resolver %s is not an IPv4 address", argv[5]);
		return 1;
	}
	b.allow = &argv[6];
	if (!(b.host = local_egress_host_cidrs()))
		return fail_ready(rfd, "getifaddrs");
	if (!(b.cur = load(b.path))) {
		dprintf(rfd, "cannot read the policy %s", b.path);
		return 1;
	}
	stat(b.path, &b.seen);
	signal(SIGPIPE, SIG_IGN);
	if (!(b.l7 = l7_from_stdin(argv[1], rfd)))
		return 1;

	/* The sockets, made inside the sandbox's namespace. */
	pid_t init = (pid_t)atoi(argv[2]);
	unsigned long long start = strtoull(argv[3], NULL, 10);
	struct sbx_err err = {0};
	SBX_AUTOCLOSE int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	SBX_AUTOCLOSE int pidfd = (int)syscall(SYS_pidfd_open, init, 0);
	if (self < 0 || pidfd < 0 || local_pid_start(init) != start) {
		dprintf(rfd, "the init is gone");
		return 1;
	}
	SBX_AUTOCLOSE int ns = local_init_open(pidfd, init, "ns/net", O_RDONLY | O_CLOEXEC, "sandbox",
					       "egress", &err);
	if (ns < 0) {
		dprintf(rfd, "%s", err.msg);
		return 1;
	}
	SBX_AUTOFREE char *capath = sbx_xasprintf("%s/egress-ca.crt", argv[1]);
	if (access(capath, F_OK) == 0 && trust_install(init, argv[1], &err) < 0) {
		dprintf(rfd, "%s", err.msg);
		return 1;
	}
	if (setns(ns, CLONE_NEWNET) < 0)
		return fail_ready(rfd, "setns");
	struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(LOCAL_EGRESS_BROKER_PORT)};
	inet_pton(AF_INET, LOCAL_SANDBOX_RESOLVER, &at.sin_addr);
	int one = 1;
	int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (tcp < 0 || setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(tcp, (struct sockaddr *)&at, sizeof(at)) < 0 || listen(tcp, 128) < 0)
		return fail_ready(rfd, "the TCP socket");
	at.sin_port = htons(53);
	b.udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (b.udp < 0 || bind(b.udp, (struct sockaddr *)&at, sizeof(at)) < 0)
		return fail_ready(rfd, "the DNS socket");
	if (setns(self, CLONE_NEWNET) < 0)
		return fail_ready(rfd, "setns back");
	if (drop_caps() < 0)
		return fail_ready(rfd, "dropping capabilities");
	/* The writer thread after the drop: capabilities are per thread. */
	local_audit_start(argv[1]);
	(void)!write(rfd, "R", 1);
	close(rfd);

	/* The init's pidfd turns readable when it exits: the broker ends
	 * with its sandbox (a local one's cgroup.kill ends it earlier; a
	 * container's broker lives outside the container). */
	for (;;) {
		struct pollfd pf[3] = {{.fd = tcp, .events = POLLIN}, {.fd = b.udp, .events = POLLIN},
				       {.fd = pidfd, .events = POLLIN}};
		if (poll(pf, 3, -1) < 0)
			continue;
		if (pf[2].revents)
			return 0;
		if (pf[0].revents & POLLIN) {
			int c = accept4(tcp, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				struct conn *cn = sbx_xmalloc(sizeof(*cn));
				cn->b = &b;
				cn->fd = c;
				spawn(conn_main, cn);
			}
		}
		if (pf[1].revents & POLLIN) {
			struct query *q = sbx_xmalloc(sizeof(*q));
			socklen_t pl = sizeof(q->peer);
			ssize_t r = recvfrom(b.udp, q->q, sizeof(q->q), 0, (struct sockaddr *)&q->peer, &pl);
			if (r <= 0) {
				free(q);
				continue;
			}
			q->b = &b;
			q->n = (size_t)r;
			spawn(dns_main, q);
		}
	}
}
