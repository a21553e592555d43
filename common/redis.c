/* redis.c - the Redis connection: URL parsing, timeouts, AUTH/SELECT,
 * commands, pipelining and scripts (EVALSHA with a NOSCRIPT fallback).
 *
 * Promises: a connection always has a connect timeout and a command timeout
 * (SBX_REDIS_TIMEOUT, default 2 s), so a Redis that is down, unreachable or
 * wedged becomes an error, never a hang.  Messages name the server by its
 * "safe" URL, which never contains the password; the password itself lives
 * only in memory owned here and is wiped on close.  Every reply that is read
 * is counted in r->round_trips per network round trip (benchmarks read it). */
#include "redis.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sha.h"
#include "util.h"

struct sbx_redis_addr {
	char *host;          /* NULL for unix sockets */
	int port;
	char *path;          /* unix socket path */
	int db;
	char *user;          /* ACL user, or NULL */
	char *password;      /* secret; wiped on free */
};

static void addr_free(struct sbx_redis_addr *a)
{
	if (!a)
		return;
	free(a->host);
	free(a->path);
	free(a->user);
	if (a->password)
		sbx_secret_free(a->password);
	free(a);
}

int64_t sbx_redis_default_timeout_ms(void)
{
	return sbx_env_ms("SBX_REDIS_TIMEOUT", 0, 1, 2000);
}

int sbx_redis_check_prefix(const char *prefix, struct sbx_err *err)
{
	size_t n = prefix ? strlen(prefix) : 0;
	if (n == 0 || n > 64)
		return sbx_fail_config(err, "redis", "the key prefix must be 1 to 64 bytes");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)prefix[i];
		if (c <= ' ' || c == 0x7f || c == '{' || c == '}')
			return sbx_fail_config(err, "redis",
					       "the key prefix may not contain braces, spaces or control characters");
	}
	return 0;
}

int sbx_redis_set_prefix(struct sbx_redis *r, const char *prefix, struct sbx_err *err)
{
	if (sbx_redis_check_prefix(prefix, err) < 0)
		return -1;
	free(r->prefix);
	r->prefix = sbx_xstrdup(prefix);
	return 0;
}

/* %XX decoding of a URL component (the password may contain '@' or ':'). */
static char *pct_decode(const char *s, size_t n)
{
	char *out = sbx_xmalloc(n + 1), *o = out;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && sbx_hexval(s[i + 1]) >= 0 && sbx_hexval(s[i + 2]) >= 0) {
			*o++ = (char)(sbx_hexval(s[i + 1]) * 16 + sbx_hexval(s[i + 2]));
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

static int parse_db(const char *s, int *db)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 0 || v > 100000)
		return -1;
	*db = (int)v;
	return 0;
}

/* Parse userinfo "[user][:password]" (the part before '@'). */
static void parse_userinfo(struct sbx_redis_addr *a, const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	if (!colon) {
		/* "redis://secret@host" - treat a lone userinfo as the password. */
		a->password = pct_decode(s, n);
		return;
	}
	if (colon > s)
		a->user = pct_decode(s, (size_t)(colon - s));
	a->password = pct_decode(colon + 1, n - (size_t)(colon - s) - 1);
}

/* Parse `url` into `a` and build the safe form.  Errors never quote the
 * URL itself (it may hold a password), only what was wrong with it. */
static int parse_url(const char *url, struct sbx_redis_addr *a, char **safe, struct sbx_err *err)
{
	if (sbx_str_starts(url, "unix://")) {
		const char *p = url + 7;
		const char *slash = strchr(p, '/');
		const char *at = strchr(p, '@');
		if (at && slash && at < slash) {
			parse_userinfo(a, p, (size_t)(at - p));
			p = at + 1;
		}
		if (*p != '/')
			return sbx_fail_config(err, "redis", "unix:// URL needs an absolute socket path");
		const char *q = strchr(p, '?');
		a->path = q ? strndup(p, (size_t)(q - p)) : sbx_xstrdup(p);
		if (q) {
			if (!sbx_str_starts(q, "?db=") || parse_db(q + 4, &a->db) < 0)
				return sbx_fail_config(err, "redis", "unix:// URL: only ?db=N is understood");
		}
		*safe = a->db ? sbx_xasprintf("unix://%s?db=%d", a->path, a->db)
			      : sbx_xasprintf("unix://%s", a->path);
		return 0;
	}
	if (!sbx_str_starts(url, "redis://"))
		return sbx_fail_config(err, "redis", "the Redis URL must start with redis:// or unix://");
	const char *p = url + 8;
	const char *end = p + strcspn(p, "/?");
	const char *at = NULL;
	for (const char *s = p; s < end; s++)
		if (*s == '@')
			at = s;        /* the last '@' ends the userinfo */
	if (at) {
		parse_userinfo(a, p, (size_t)(at - p));
		p = at + 1;
	}
	a->port = 6379;
	const char *hend;
	if (*p == '[') {
		hend = memchr(p, ']', (size_t)(end - p));
		if (!hend)
			return sbx_fail_config(err, "redis", "redis:// URL: unterminated IPv6 address");
		a->host = strndup(p + 1, (size_t)(hend - p - 1));
		hend++;
	} else {
		hend = p;
		while (hend < end && *hend != ':')
			hend++;
		a->host = strndup(p, (size_t)(hend - p));
	}
	if (!a->host || !*a->host)
		return sbx_fail_config(err, "redis", "redis:// URL has no host");
	if (hend < end && *hend == ':') {
		char *pe;
		long port = strtol(hend + 1, &pe, 10);
		if (pe != end || port <= 0 || port > 65535)
			return sbx_fail_config(err, "redis", "redis:// URL has a bad port");
		a->port = (int)port;
	} else if (hend != end) {
		return sbx_fail_config(err, "redis", "redis:// URL has a bad host");
	}
	if (*end == '/' && end[1]) {
		if (parse_db(end + 1, &a->db) < 0)
			return sbx_fail_config(err, "redis", "redis:// URL has a bad database number");
	} else if (*end == '?') {
		return sbx_fail_config(err, "redis", "redis:// URL: query parameters are not understood");
	}
	int v6 = strchr(a->host, ':') != NULL;
	*safe = sbx_xasprintf("redis://%s%s%s:%d/%d", v6 ? "[" : "", a->host, v6 ? "]" : "",
			      a->port, a->db);
	return 0;
}

/* Turn the context's failure into an error and close it: after an I/O
 * error hiredis cannot tell where the stream stands, so the connection is
 * never reused. */
static int conn_fail(struct sbx_redis *r, const char *what, struct sbx_err *err)
{
	enum sbx_kind kind = SBX_UNAVAILABLE;
	char detail[128] = "connection lost";
	if (r->c) {
		if (r->c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK))
			kind = SBX_TIMEOUT, snprintf(detail, sizeof(detail), "no reply within %lld ms",
						     (long long)r->timeout_ms);
		else if (r->c->errstr[0])
			snprintf(detail, sizeof(detail), "%s", r->c->errstr);
		redisFree(r->c);
		r->c = NULL;
	}
	return sbx_fail(err, kind, "redis", "redis %s at %s: %s", what, r->safe_url, detail);
}

static struct timeval tv_of(int64_t ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	return tv;
}

/* Connect, set the command timeout, AUTH and SELECT.  On failure the
 * context is freed and the error names only the safe URL. */
static int do_connect(struct sbx_redis *r, struct sbx_err *err)
{
	struct sbx_redis_addr *a = r->addr;
	struct timeval tv = tv_of(r->timeout_ms);
	r->c = a->path ? redisConnectUnixWithTimeout(a->path, tv)
		       : redisConnectWithTimeout(a->host, a->port, tv);
	if (!r->c)
		return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis unavailable at %s: out of memory",
				r->safe_url);
	if (r->c->err) {
		char detail[128];
		snprintf(detail, sizeof(detail), "%s", r->c->errstr);
		redisFree(r->c);
		r->c = NULL;
		return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis unavailable at %s: %s",
				r->safe_url, detail);
	}
	/* hiredis 0.14 opens its socket without SOCK_CLOEXEC: a command run
	 * by the program (sbx-lease lock -- CMD) must not inherit it. */
	int fl = fcntl(r->c->fd, F_GETFD);
	if (fl < 0 || fcntl(r->c->fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return conn_fail(r, "unavailable", err);
	if (redisSetTimeout(r->c, tv) != REDIS_OK)
		return conn_fail(r, "unavailable", err);

	redisReply *rep = NULL;
	if (a->password) {
		const char *argv[3] = {"AUTH", a->user ? a->user : a->password, a->password};
		int argc = a->user ? 3 : 2;
		r->round_trips++;
		rep = redisCommandArgv(r->c, argc, argv, NULL);
		if (!rep)
			return conn_fail(r, "unavailable", err);
		int bad = rep->type == REDIS_REPLY_ERROR;
		freeReplyObject(rep);
		if (bad) {
			redisFree(r->c);
			r->c = NULL;
			return sbx_fail(err, SBX_AUTHENTICATION, "redis",
					"redis at %s refused the password", r->safe_url);
		}
	}
	if (a->db) {
		char db[16];
		snprintf(db, sizeof(db), "%d", a->db);
		const char *argv[2] = {"SELECT", db};
		r->round_trips++;
		rep = redisCommandArgv(r->c, 2, argv, NULL);
		if (!rep)
			return conn_fail(r, "unavailable", err);
		int bad = rep->type == REDIS_REPLY_ERROR;
		char detail[128] = "";
		if (bad)
			snprintf(detail, sizeof(detail), "%s", rep->str ? rep->str : "");
		freeReplyObject(rep);
		if (bad) {
			redisFree(r->c);
			r->c = NULL;
			if (sbx_str_starts(detail, "NOAUTH"))
				return sbx_fail(err, SBX_AUTHENTICATION, "redis",
						"redis at %s needs a password", r->safe_url);
			return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: SELECT %d: %s",
					r->safe_url, a->db, detail);
		}
	}
	return 0;
}

static int redis_open_addr(struct sbx_redis_addr *a, char *safe, int64_t timeout_ms,
			   const char *prefix, struct sbx_redis **out, struct sbx_err *err)
{
	struct sbx_redis *r = sbx_xcalloc(1, sizeof(*r));
	r->addr = a;
	r->safe_url = safe;
	r->timeout_ms = timeout_ms > 0 ? timeout_ms : sbx_redis_default_timeout_ms();
	r->prefix = sbx_xstrdup(prefix ? prefix : "sbx");
	if (do_connect(r, err) < 0) {
		sbx_redis_close(r);
		return -1;
	}
	*out = r;
	return 0;
}

int sbx_redis_open_url(const char *url, const char *password_file, int64_t timeout_ms,
		       struct sbx_redis **out, struct sbx_err *err)
{
	*out = NULL;
	if (!url || !*url)
		return sbx_fail_config(err, "redis",
				       "no Redis configured: set SBX_REDIS_URL or the profile's redis_url");
	struct sbx_redis_addr *a = sbx_xcalloc(1, sizeof(*a));
	char *safe = NULL;
	if (parse_url(url, a, &safe, err) < 0) {
		addr_free(a);
		free(safe);
		return -1;
	}
	if (!a->password && password_file && *password_file) {
		char *pw = NULL;
		size_t len = 0;
		if (sbx_read_file(password_file, 4096, &pw, &len, err) < 0) {
			addr_free(a);
			free(safe);
			sbx_err_prefix(err, "redis_password_file");
			err->exit_status = SBX_EXIT_CONFIG;
			return -1;
		}
		/* A trailing newline is an editor's, not the password's. */
		while (len && (pw[len - 1] == '\n' || pw[len - 1] == '\r'))
			pw[--len] = '\0';
		a->password = pw;
	}
	return redis_open_addr(a, safe, timeout_ms, NULL, out, err);
}

int sbx_redis_open(const struct sbx_profile *p, struct sbx_redis **out, struct sbx_err *err)
{
	*out = NULL;
	const char *prefix = p && p->prefix ? p->prefix : "sbx";
	if (sbx_redis_check_prefix(prefix, err) < 0)
		return -1;
	/* config.c folded $SBX_REDIS_URL into the profile already. */
	const char *url = p ? p->redis_url : NULL;
	if (sbx_redis_open_url(url, p ? p->redis_password_file : NULL, 0, out, err) < 0)
		return -1;
	free((*out)->prefix);
	(*out)->prefix = sbx_xstrdup(prefix);
	return 0;
}

int sbx_redis_dup(const struct sbx_redis *r, struct sbx_redis **out, struct sbx_err *err)
{
	struct sbx_redis_addr *a = sbx_xcalloc(1, sizeof(*a));
	const struct sbx_redis_addr *s = r->addr;
	a->host = s->host ? sbx_xstrdup(s->host) : NULL;
	a->path = s->path ? sbx_xstrdup(s->path) : NULL;
	a->user = s->user ? sbx_xstrdup(s->user) : NULL;
	a->password = s->password ? sbx_xstrdup(s->password) : NULL;
	a->port = s->port;
	a->db = s->db;
	return redis_open_addr(a, sbx_xstrdup(r->safe_url), r->timeout_ms, r->prefix, out, err);
}

void sbx_redis_close(struct sbx_redis *r)
{
	if (!r)
		return;
	if (r->c)
		redisFree(r->c);
	addr_free(r->addr);
	free(r->safe_url);
	free(r->prefix);
	free(r);
}

/* An error reply becomes an `internal` error naming the command (never its
 * arguments: they may be values).  NOAUTH/WRONGPASS are authentication. */
static int reply_error(struct sbx_redis *r, const char *cmd, redisReply *rep, struct sbx_err *err)
{
	enum sbx_kind kind = SBX_INTERNAL;
	const char *s = rep->str ? rep->str : "";
	if (sbx_str_starts(s, "NOAUTH") || sbx_str_starts(s, "WRONGPASS"))
		kind = SBX_AUTHENTICATION;
	else if (sbx_str_starts(s, "LOADING") || sbx_str_starts(s, "BUSY") ||
		 sbx_str_starts(s, "MASTERDOWN") || sbx_str_starts(s, "TRYAGAIN"))
		kind = SBX_UNAVAILABLE;
	char line[200];
	snprintf(line, sizeof(line), "%s", s);
	line[strcspn(line, "\r\n")] = '\0';
	sbx_fail(err, kind, "redis", "redis %s at %s: %s", cmd, r->safe_url, line);
	freeReplyObject(rep);
	return -1;
}

static int not_connected(struct sbx_redis *r, struct sbx_err *err)
{
	return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis unavailable at %s: connection lost",
			r->safe_url);
}

int sbx_redis_cmd(struct sbx_redis *r, redisReply **reply, struct sbx_err *err,
		  int argc, const char **argv, const size_t *lens)
{
	*reply = NULL;
	if (!r->c)
		return not_connected(r, err);
	r->round_trips++;
	redisReply *rep = redisCommandArgv(r->c, argc, argv, lens);
	if (!rep)
		return conn_fail(r, "unavailable", err);
	if (rep->type == REDIS_REPLY_ERROR)
		return reply_error(r, argv[0], rep, err);
	*reply = rep;
	return 0;
}

int sbx_redis_cmdf(struct sbx_redis *r, redisReply **reply, struct sbx_err *err,
		   const char *fmt, ...)
{
	*reply = NULL;
	if (!r->c)
		return not_connected(r, err);
	char cmd[32];
	snprintf(cmd, sizeof(cmd), "%.*s", (int)strcspn(fmt, " "), fmt);
	va_list ap;
	va_start(ap, fmt);
	r->round_trips++;
	redisReply *rep = redisvCommand(r->c, fmt, ap);
	va_end(ap);
	if (!rep)
		return conn_fail(r, "unavailable", err);
	if (rep->type == REDIS_REPLY_ERROR)
		return reply_error(r, cmd, rep, err);
	*reply = rep;
	return 0;
}

int sbx_redis_append(struct sbx_redis *r, int argc, const char **argv, const size_t *lens,
		     struct sbx_err *err)
{
	if (!r->c)
		return not_connected(r, err);
	if (redisAppendCommandArgv(r->c, argc, argv, lens) != REDIS_OK)
		return conn_fail(r, "unavailable", err);
	r->unflushed = 1;
	return 0;
}

/* Error replies inside a pipeline are returned as replies (type
 * REDIS_REPLY_ERROR), not as failures: the caller knows which command each
 * reply answers.  Only a broken connection fails. */
int sbx_redis_read(struct sbx_redis *r, redisReply **reply, struct sbx_err *err)
{
	*reply = NULL;
	if (!r->c)
		return not_connected(r, err);
	if (r->unflushed) {
		r->round_trips++;    /* the whole pipeline goes out in one write */
		r->unflushed = 0;
	}
	void *rep = NULL;
	if (redisGetReply(r->c, &rep) != REDIS_OK || !rep)
		return conn_fail(r, "unavailable", err);
	*reply = rep;
	return 0;
}

static void script_sha(struct sbx_script *s)
{
	if (s->sha[0])
		return;
	unsigned char md[SBX_SHA1_LEN];
	sbx_sha1(s->src, strlen(s->src), md);
	for (unsigned i = 0; i < SBX_SHA1_LEN; i++)
		sprintf(s->sha + 2 * i, "%02x", md[i]);
	s->sha[40] = '\0';
}

/* EVALSHA first; a NOSCRIPT reply (script cache flushed, new server) is
 * retried once as EVAL, which also loads the script for next time.  An
 * error raised by the script is an `internal` error carrying Redis's text
 * (e.g. WRONGTYPE), so callers can tell a script failure from a broken
 * connection by kind. */
int sbx_redis_eval(struct sbx_redis *r, struct sbx_script *s, redisReply **reply,
		   int nkeys, const char **keys, int nargs, const char **args,
		   struct sbx_err *err)
{
	*reply = NULL;
	if (!r->c)
		return not_connected(r, err);
	script_sha(s);
	int argc = 3 + nkeys + nargs;
	SBX_AUTOFREE const char **argv = sbx_xcalloc((size_t)argc, sizeof(*argv));
	char nk[16];
	snprintf(nk, sizeof(nk), "%d", nkeys);
	argv[0] = "EVALSHA";
	argv[1] = s->sha;
	argv[2] = nk;
	for (int i = 0; i < nkeys; i++)
		argv[3 + i] = keys[i];
	for (int i = 0; i < nargs; i++)
		argv[3 + nkeys + i] = args[i];
	r->round_trips++;
	redisReply *rep = redisCommandArgv(r->c, argc, argv, NULL);
	if (!rep)
		return conn_fail(r, "unavailable", err);
	if (rep->type == REDIS_REPLY_ERROR && rep->str && sbx_str_starts(rep->str, "NOSCRIPT")) {
		freeReplyObject(rep);
		argv[0] = "EVAL";
		argv[1] = s->src;
		r->round_trips++;
		rep = redisCommandArgv(r->c, argc, argv, NULL);
		if (!rep)
			return conn_fail(r, "unavailable", err);
	}
	if (rep->type == REDIS_REPLY_ERROR)
		return reply_error(r, "script", rep, err);
	*reply = rep;
	return 0;
}
