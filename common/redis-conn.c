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
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "redis-int.h"
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

/* ---- retry rules --------------------------------------------------------- */

int sbx_redis__read_only(const char *cmd, size_t len)
{
	static const char *const ro[] = {
		"GET", "EXISTS", "SISMEMBER", "SCARD", "SMEMBERS", "HGETALL", "HGET", "HMGET",
		"SCAN", "SSCAN", "TYPE", "TTL", "PTTL", "PING", "MGET", "STRLEN", "DBSIZE",
		"CLUSTER", "ROLE", "INFO", "MEMORY", "WAIT",
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
	int64_t ms = 50LL << (attempt < 4 ? attempt : 4);    /* 50 ms .. 800 ms */
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
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
