/* redis-conn.c - one hiredis context, as every mode of the connection
 * uses it (redis-int.h): connect with the connection's timeouts,
 * FD_CLOEXEC, AUTH and SELECT; one exchange (ASKING?, a command, WAIT?) in
 * one round trip; what a broken context becomes; and the retry rules the
 * Cluster and Sentinel modes share (which commands may be sent again, which
 * replies mean "not executed", how long and how often to try).
 *
 * Promises: a context that broke is freed at once and never reused (after
 * an I/O error hiredis cannot tell where the stream stands); messages name
 * the server by `where`, never by anything holding a password. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "redis-int.h"
#include "ssrf.h"
#include "util.h"

/* ---- one context ------------------------------------------------------- */

/* After an I/O error hiredis cannot tell where the stream stands, so the
 * context is never reused. */
int sbx_redis__ctx_fail(struct sbx_redis *r, redisContext **c, const char *where,
			struct sbx_err *err)
{
	enum sbx_kind kind = SBX_UNAVAILABLE;
	char detail[128] = "connection lost";
	if (*c) {
		if ((*c)->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK))
			kind = SBX_TIMEOUT, snprintf(detail, sizeof(detail), "no reply within %lld ms",
						     (long long)r->timeout_ms);
		else if ((*c)->errstr[0])
			snprintf(detail, sizeof(detail), "%s", (*c)->errstr);
		redisContext *dead = *c;    /* c may be &r->c itself */
		if (r->c == dead)
			r->c = NULL;
		*c = NULL;
		redisFree(dead);
	}
	return sbx_fail(err, kind, "redis", "redis unavailable at %s: %s", where, detail);
}

int sbx_redis__ctx_usable(const redisContext *c)
{
	if (!c || c->err || c->fd < 0)
		return 0;
	/* Between exchanges nothing is owed on the stream: anything to read
	 * (an EOF from a peer that closed or died, an RST, stray bytes) means
	 * the context can no longer be trusted. */
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
	int n = poll(&pfd, 1, 0);
	if (n == 0)
		return 1;
	if (n < 0)
		return errno == EINTR;
	return 0;
}

static struct timeval tv_of(int64_t ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	return tv;
}

/* One command during the handshake; -1 when the context broke. */
static int handshake(struct sbx_redis *r, redisContext **c, const char *where, int argc,
		     const char **argv, char *detail, size_t dlen, struct sbx_err *err)
{
	r->round_trips++;
	redisReply *rep = redisCommandArgv(*c, argc, argv, NULL);
	if (!rep)
		return sbx_redis__ctx_fail(r, c, where, err);
	int bad = rep->type == REDIS_REPLY_ERROR;
	snprintf(detail, dlen, "%s", bad && rep->str ? rep->str : "");
	detail[strcspn(detail, "\r\n")] = '\0';
	freeReplyObject(rep);
	return bad;
}

int sbx_redis__connect(struct sbx_redis *r, const char *host, int port, const char *path,
		       int db, int auth, const char *where, redisContext **out, struct sbx_err *err)
{
	const struct sbx_redis_addr *a = r->addr;
	struct timeval tv = tv_of(r->timeout_ms);
	redisContext *c = path ? redisConnectUnixWithTimeout(path, tv)
			       : redisConnectWithTimeout(host, port, tv);
	*out = NULL;
	if (!c)
		return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis unavailable at %s: out of memory",
				where);
	if (c->err) {
		char detail[128];
		snprintf(detail, sizeof(detail), "%s", c->errstr);
		redisFree(c);
		return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis unavailable at %s: %s", where,
				detail);
	}
	/* hiredis 0.14 opens its socket without SOCK_CLOEXEC: a command run
	 * by the program (sbx-lease lock -- CMD) must not inherit it. */
	int fl = fcntl(c->fd, F_GETFD);
	if (fl < 0 || fcntl(c->fd, F_SETFD, fl | FD_CLOEXEC) < 0 || redisSetTimeout(c, tv) != REDIS_OK)
		return sbx_redis__ctx_fail(r, &c, where, err);
	char detail[128];
	if (auth && a->password) {
		const char *argv[3] = {"AUTH", a->user ? a->user : a->password, a->password};
		int bad = handshake(r, &c, where, a->user ? 3 : 2, argv, detail, sizeof(detail), err);
		if (bad < 0)
			return -1;
		if (bad) {
			redisFree(c);
			return sbx_fail(err, SBX_AUTHENTICATION, "redis",
					"redis at %s refused the password", where);
		}
	}
	if (db) {
		char dbs[16];
		snprintf(dbs, sizeof(dbs), "%d", db);
		const char *argv[2] = {"SELECT", dbs};
		int bad = handshake(r, &c, where, 2, argv, detail, sizeof(detail), err);
		if (bad < 0)
			return -1;
		if (bad) {
			redisFree(c);
			if (sbx_str_starts(detail, "NOAUTH"))
				return sbx_fail(err, SBX_AUTHENTICATION, "redis",
						"redis at %s needs a password", where);
			return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: SELECT %d: %s",
					where, db, detail);
		}
	}
	*out = c;
	return 0;
}

int sbx_redis__exchange(struct sbx_redis *r, redisContext **c, const char *where, int asking,
			int argc, const char **argv, const size_t *lens, int wait_n,
			redisReply **rep, redisReply **wrep, struct sbx_err *err)
{
	*rep = NULL;
	if (wrep)
		*wrep = NULL;
	char wn[16], wms[24];
	snprintf(wn, sizeof(wn), "%d", wait_n);
	snprintf(wms, sizeof(wms), "%lld", (long long)r->wait_ms);
	const char *wargv[] = {"WAIT", wn, wms};
	if ((asking && redisAppendCommand(*c, "ASKING") != REDIS_OK) ||
	    redisAppendCommandArgv(*c, argc, argv, lens) != REDIS_OK ||
	    (wait_n > 0 && redisAppendCommandArgv(*c, 3, wargv, NULL) != REDIS_OK))
		return sbx_redis__ctx_fail(r, c, where, err);
	r->round_trips++;
	void *x = NULL;
	if (asking) {
		if (redisGetReply(*c, &x) != REDIS_OK || !x)
			return sbx_redis__ctx_fail(r, c, where, err);
		freeReplyObject(x);
	}
	if (redisGetReply(*c, &x) != REDIS_OK || !x)
		return sbx_redis__ctx_fail(r, c, where, err);
	*rep = x;
	if (wait_n > 0) {
		x = NULL;
		if (redisGetReply(*c, &x) != REDIS_OK || !x) {
			freeReplyObject(*rep);
			*rep = NULL;
			return sbx_redis__ctx_fail(r, c, where, err);
		}
		if (wrep)
			*wrep = x;
		else
			freeReplyObject(x);
	}
	return 0;
}

/* ---- which nodes get credentials ----------------------------------------- */

/* An IP literal (no name resolution) into *ss; 0, or -1 when `host` is not one. */
static int ip_literal(const char *host, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		return 0;
	}
	return -1;
}

/* The same address (an IPv4-mapped IPv6 address equals its IPv4 one). */
static int same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	char ta[INET6_ADDRSTRLEN + 8], tb[INET6_ADDRSTRLEN + 8];
	const struct sockaddr *x[2] = {a, b};
	char *t[2] = {ta, tb};
	for (int i = 0; i < 2; i++) {
		const void *p = x[i]->sa_family == AF_INET
					? (const void *)&((const struct sockaddr_in *)x[i])->sin_addr
					: (const void *)&((const struct sockaddr_in6 *)x[i])->sin6_addr;
		if (!inet_ntop(x[i]->sa_family, p, t[i], INET6_ADDRSTRLEN))
			return 0;
		if (sbx_str_starts(t[i], "::ffff:") && strchr(t[i], '.'))
			memmove(t[i], t[i] + 7, strlen(t[i] + 7) + 1);
	}
	return strcmp(ta, tb) == 0;
}

/* Is `sa` the address of a seed (a literal one, or one its name resolves to)? */
static int seed_addr(const struct sbx_redis_addr *a, const struct sockaddr *sa)
{
	for (size_t i = 0; i < a->nseeds; i++) {
		struct sockaddr_storage ss;
		if (ip_literal(a->seeds[i].host, &ss) == 0) {
			if (same_addr((struct sockaddr *)&ss, sa))
				return 1;
			continue;
		}
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
		struct addrinfo *res = NULL;
		if (getaddrinfo(a->seeds[i].host, NULL, &hints, &res) != 0)
			continue;
		int hit = 0;
		for (struct addrinfo *ai = res; ai && !hit; ai = ai->ai_next)
			hit = same_addr(ai->ai_addr, sa);
		freeaddrinfo(res);
		if (hit)
			return 1;
	}
	return 0;
}

int sbx_redis__node_allowed(struct sbx_redis *r, const char *host, int port, const char *by,
			    struct sbx_err *err)
{
	struct sbx_redis_addr *a = r->addr;
	for (size_t i = 0; i < a->nseeds; i++)
		if (strcasecmp(a->seeds[i].host, host) == 0)
			return 0;
	struct sockaddr_storage ss;
	const char *cls = NULL, *why;
	if (ip_literal(host, &ss) < 0) {
		why = "a host name the URL does not name";
	} else if (sbx_ssrf_classify((struct sockaddr *)&ss, &cls) == SBX_SSRF_NEVER) {
		why = "an address that is never allowed";
	} else {
		if (seed_addr(a, (struct sockaddr *)&ss))
			return 0;
		for (char **c = a->nodes; c && *c; c++)
			if (sbx_cidr_contains(*c, (struct sockaddr *)&ss))
				return 0;
		why = "neither a seed's address nor inside the profile's redis_nodes";
		cls = NULL;
	}
	a->refused = 1;
	int v6 = strchr(host, ':') != NULL;
	return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: %s names node %s%.64s%s:%d, "
			"%s%s%s%s; refused, no credentials sent", r->safe_url, by, v6 ? "[" : "", host,
			v6 ? "]" : "", port, why, cls ? " (" : "", cls ? cls : "", cls ? ")" : "");
}

/* ---- retry rules --------------------------------------------------------- */

int sbx_redis__read_only(const char *cmd, size_t len)
{
	static const char *const ro[] = {
		"GET", "EXISTS", "SISMEMBER", "SCARD", "SMEMBERS", "HGETALL", "HGET", "HMGET",
		"SCAN", "SSCAN", "TYPE", "TTL", "PTTL", "PING", "MGET", "STRLEN", "DBSIZE",
		"CLUSTER", "ROLE", "INFO", "MEMORY", "WAIT", "XRANGE", "XREVRANGE", "XREAD", "XLEN",
		"XPENDING",
	};
	for (size_t i = 0; i < SBX_ARRAY_LEN(ro); i++)
		if (strlen(ro[i]) == len && strncasecmp(ro[i], cmd, len) == 0)
			return 1;
	return 0;
}

int sbx_redis__transient(const redisReply *rep)
{
	static const char *const t[] = {"TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN",
					"READONLY"};
	if (!rep || rep->type != REDIS_REPLY_ERROR || !rep->str)
		return 0;
	for (size_t i = 0; i < SBX_ARRAY_LEN(t); i++)
		if (sbx_str_starts(rep->str, t[i]))
			return 1;
	return 0;
}

int64_t sbx_redis__failover_ms(void)
{
	return sbx_env_ms("SBX_REDIS_FAILOVER_WAIT", 0, 0, 5000);
}

void sbx_redis__backoff(int attempt)
{
	sbx_sleep_ms(50LL << (attempt < 4 ? attempt : 4));    /* 50 ms .. 800 ms */
}

/* ---- SCAN ---------------------------------------------------------------- */

int sbx_redis__scan_page(redisReply *rep, char **cursor, sbx_redis_key_fn fn, void *ctx,
			 struct sbx_err *err)
{
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
	    rep->element[0]->type != REDIS_REPLY_STRING ||
	    rep->element[1]->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(rep);
		return sbx_fail(err, SBX_INTERNAL, "redis", "unexpected SCAN reply");
	}
	free(*cursor);
	*cursor = sbx_xstrdup(rep->element[0]->str);
	redisReply *ks = rep->element[1];
	for (size_t i = 0; i < ks->elements; i++) {
		if (ks->element[i]->type == REDIS_REPLY_STRING &&
		    fn(ks->element[i]->str, ks->element[i]->len, ctx, err) < 0) {
			freeReplyObject(rep);
			return -1;
		}
	}
	freeReplyObject(rep);
	return 0;
}
