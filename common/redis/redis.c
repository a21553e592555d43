/* redis.c - the Redis connection: URL parsing, timeouts, AUTH/SELECT,
 * commands, pipelining and scripts (EVALSHA with a NOSCRIPT fallback), in
 * each of the three modes (one server, Cluster, Sentinel: redis-int.h); the
 * slot routing lives in redis-cluster.c, the master discovery in
 * redis-sentinel.c, one context and the retry rules in redis-conn.c.
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
#include <strings.h>
#include <time.h>

#include "redis-int.h"
#include "sha.h"
#include "util.h"

static void addr_free(struct sbx_redis_addr *a)
{
	if (!a)
		return;
	free(a->host);
	free(a->path);
	free(a->user);
	if (a->password)
		sbx_secret_free(a->password);
	for (size_t i = 0; i < a->nseeds; i++)
		free(a->seeds[i].host);
	free(a->seeds);
	free(a->master);
	sbx_strv_free(a->nodes);
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

/* "host[:port]" or "[v6][:port]" between p and end (dflt_port when none). */
static int parse_hostport(const char *p, const char *end, int dflt_port, char **host, int *port,
			  const char *scheme, struct sbx_err *err)
{
	const char *hend;
	*port = dflt_port;
	if (p < end && *p == '[') {
		hend = memchr(p, ']', (size_t)(end - p));
		if (!hend)
			return sbx_fail_config(err, "redis", "%s URL: unterminated IPv6 address", scheme);
		*host = strndup(p + 1, (size_t)(hend - p - 1));
		hend++;
	} else {
		hend = p;
		while (hend < end && *hend != ':')
			hend++;
		*host = strndup(p, (size_t)(hend - p));
	}
	if (!*host || !**host)
		return sbx_fail_config(err, "redis", "%s URL has no host", scheme);
	if (hend < end && *hend == ':') {
		char *pe;
		long v = strtol(hend + 1, &pe, 10);
		if (pe != end || v <= 0 || v > 65535)
			return sbx_fail_config(err, "redis", "%s URL has a bad port", scheme);
		*port = (int)v;
	} else if (hend != end) {
		return sbx_fail_config(err, "redis", "%s URL has a bad host", scheme);
	}
	return 0;
}

static char *hostport_str(const char *host, int port)
{
	int v6 = strchr(host, ':') != NULL;
	return sbx_xasprintf("%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

/* The userinfo of an authority ("[user:]password@"), if any; returns where
 * the host part begins.  The last '@' before `end` ends the userinfo. */
static const char *skip_userinfo(struct sbx_redis_addr *a, const char *p, const char *end)
{
	const char *at = NULL;
	for (const char *s = p; s < end; s++)
		if (*s == '@')
			at = s;
	if (!at)
		return p;
	parse_userinfo(a, p, (size_t)(at - p));
	return at + 1;
}

/* redis+cluster://[auth@]h:p[,h:p...] and redis+sentinel://[auth@]h:p[,...]/NAME */
static int parse_multi(const char *url, struct sbx_redis_addr *a, char **safe, struct sbx_err *err)
{
	int sentinel = sbx_str_starts(url, "redis+sentinel://");
	const char *scheme = sentinel ? "redis+sentinel://" : "redis+cluster://";
	const char *p = url + strlen(scheme);
	const char *end = p + strcspn(p, "/?");
	a->mode = sentinel ? SBX_REDIS_SENTINEL : SBX_REDIS_CLUSTER;
	p = skip_userinfo(a, p, end);
	SBX_AUTOFREE char *list = NULL;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;
		struct sbx_redis_seed sd = {0};
		if (a->nseeds >= 64 || parse_hostport(p, e, sentinel ? 26379 : 6379, &sd.host, &sd.port,
						      scheme, err) < 0) {
			free(sd.host);
			return a->nseeds >= 64 ? sbx_fail_config(err, "redis", "%s URL: at most 64 "
								 "hosts", scheme) : -1;
		}
		a->seeds = sbx_xrealloc(a->seeds, (a->nseeds + 1) * sizeof(*a->seeds));
		a->seeds[a->nseeds++] = sd;
		SBX_AUTOFREE char *hp = hostport_str(sd.host, sd.port);
		char *nl = sbx_xasprintf("%s%s%s", list ? list : "", list ? "," : "", hp);
		free(list);
		list = nl;
		p = comma ? comma + 1 : end;
	}
	if (!a->nseeds)
		return sbx_fail_config(err, "redis", "%s URL names no host", scheme);
	if (*end == '?')
		return sbx_fail_config(err, "redis", "%s URL: query parameters are not understood",
				       scheme);
	if (sentinel) {
		const char *name = *end == '/' ? end + 1 : "";
		if (!*name || strlen(name) > 128 || strpbrk(name, "/ \t\r\n"))
			return sbx_fail_config(err, "redis", "redis+sentinel:// URL needs the master's "
					       "name: redis+sentinel://host:port[,...]/NAME");
		a->master = sbx_xstrdup(name);
		*safe = sbx_xasprintf("%s%s/%s", scheme, list, name);
	} else {
		if (*end == '/' && end[1] && strcmp(end + 1, "0") != 0)
			return sbx_fail_config(err, "redis", "redis+cluster:// URL: a cluster has only "
					       "database 0");
		*safe = sbx_xasprintf("%s%s", scheme, list);
	}
	return 0;
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
	if (sbx_str_starts(url, "redis+cluster://") || sbx_str_starts(url, "redis+sentinel://"))
		return parse_multi(url, a, safe, err);
	if (!sbx_str_starts(url, "redis://"))
		return sbx_fail_config(err, "redis", "the Redis URL must start with redis://, "
				       "redis+cluster://, redis+sentinel:// or unix://");
	const char *p = url + 8;
	const char *end = p + strcspn(p, "/?");
	p = skip_userinfo(a, p, end);
	if (parse_hostport(p, end, 6379, &a->host, &a->port, "redis://", err) < 0)
		return -1;
	if (*end == '/' && end[1]) {
		if (parse_db(end + 1, &a->db) < 0)
			return sbx_fail_config(err, "redis", "redis:// URL has a bad database number");
	} else if (*end == '?') {
		return sbx_fail_config(err, "redis", "redis:// URL: query parameters are not understood");
	}
	SBX_AUTOFREE char *hp = hostport_str(a->host, a->port);
	*safe = sbx_xasprintf("redis://%s/%d", hp, a->db);
	return 0;
}

/* ---- opening ------------------------------------------------------------- */

/* A copy of a NULL-terminated list (NULL stays NULL). */
static char **strv_dup(char *const *v)
{
	if (!v)
		return NULL;
	size_t n = 0;
	while (v[n])
		n++;
	char **c = sbx_xcalloc(n + 1, sizeof(*c));
	for (size_t i = 0; i < n; i++)
		c[i] = sbx_xstrdup(v[i]);
	return c;
}

static void wait_config(struct sbx_redis *r)
{
	const char *e = getenv("SBX_REDIS_WAIT");
	r->wait_replicas = r->mode == SBX_REDIS_SINGLE ? 0 : 1;
	if (e && *e) {
		char *end;
		long v = strtol(e, &end, 10);
		if (!*end && v >= 0 && v <= 16)
			r->wait_replicas = (int)v;
	}
	r->wait_ms = sbx_env_ms("SBX_REDIS_WAIT_TIMEOUT", 0, 1, 1000);
}

static int redis_open_addr(struct sbx_redis_addr *a, char *safe, int64_t timeout_ms,
			   const char *prefix, struct sbx_redis **out, struct sbx_err *err)
{
	struct sbx_redis *r = sbx_xcalloc(1, sizeof(*r));
	r->addr = a;
	r->mode = a->mode;
	r->safe_url = safe;
	r->timeout_ms = timeout_ms > 0 ? timeout_ms : sbx_redis_default_timeout_ms();
	r->prefix = sbx_xstrdup(prefix ? prefix : "sbx");
	r->events_maxlen = SBX_EVENTS_MAXLEN_DEFAULT;
	r->audit_maxlen = SBX_AUDIT_MAXLEN_DEFAULT;
	wait_config(r);
	int rc;
	if (r->mode == SBX_REDIS_CLUSTER)
		rc = sbx_cluster_open(r, err);
	else if (r->mode == SBX_REDIS_SENTINEL)
		rc = sbx_sentinel_connect(r, err);
	else
		rc = sbx_redis__connect(r, a->host, a->port, a->path, a->db, 1, r->safe_url, &r->c,
					err);
	if (rc < 0) {
		sbx_redis_close(r);
		return -1;
	}
	*out = r;
	return 0;
}

/* sbx_redis_open_url, with the profile's redis_nodes (copied; may be NULL). */
static int open_url_nodes(const char *url, const char *password_file, char *const *nodes,
			  int64_t timeout_ms, struct sbx_redis **out, struct sbx_err *err)
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
	a->nodes = strv_dup(nodes);
	return redis_open_addr(a, safe, timeout_ms, NULL, out, err);
}

int sbx_redis_open_url(const char *url, const char *password_file, int64_t timeout_ms,
		       struct sbx_redis **out, struct sbx_err *err)
{
	return open_url_nodes(url, password_file, NULL, timeout_ms, out, err);
}

int sbx_redis_open(const struct sbx_profile *p, struct sbx_redis **out, struct sbx_err *err)
{
	*out = NULL;
	const char *prefix = p && p->prefix ? p->prefix : "sbx";
	if (sbx_redis_check_prefix(prefix, err) < 0)
		return -1;
	/* config.c folded $SBX_REDIS_URL into the profile already. */
	const char *url = p ? p->redis_url : NULL;
	if (open_url_nodes(url, p ? p->redis_password_file : NULL, p ? p->redis_nodes : NULL, 0,
			   out, err) < 0)
		return -1;
	free((*out)->prefix);
	(*out)->prefix = sbx_xstrdup(prefix);
	(*out)->events_maxlen = p ? p->events_maxlen : SBX_EVENTS_MAXLEN_DEFAULT;
	(*out)->audit_maxlen = p ? p->audit_maxlen : SBX_AUDIT_MAXLEN_DEFAULT;
	(*out)->audit_max_age_ms = p ? p->audit_max_age_ms : 0;
	return 0;
}

int sbx_redis_dup(const struct sbx_redis *r, struct sbx_redis **out, struct sbx_err *err)
{
	struct sbx_redis_addr *a = sbx_xcalloc(1, sizeof(*a));
	const struct sbx_redis_addr *s = r->addr;
	a->mode = s->mode;
	a->host = s->host ? sbx_xstrdup(s->host) : NULL;
	a->path = s->path ? sbx_xstrdup(s->path) : NULL;
	a->user = s->user ? sbx_xstrdup(s->user) : NULL;
	a->password = s->password ? sbx_xstrdup(s->password) : NULL;
	a->master = s->master ? sbx_xstrdup(s->master) : NULL;
	a->port = s->port;
	a->db = s->db;
	a->seeds = sbx_xcalloc(s->nseeds + 1, sizeof(*a->seeds));
	for (size_t i = 0; i < s->nseeds; i++)
		a->seeds[i] = (struct sbx_redis_seed){sbx_xstrdup(s->seeds[i].host), s->seeds[i].port};
	a->nseeds = s->nseeds;
	a->nodes = strv_dup(s->nodes);
	if (redis_open_addr(a, sbx_xstrdup(r->safe_url), r->timeout_ms, r->prefix, out, err) < 0)
		return -1;
	(*out)->wait_replicas = r->wait_replicas;
	(*out)->wait_ms = r->wait_ms;
	(*out)->events_maxlen = r->events_maxlen;
	(*out)->audit_maxlen = r->audit_maxlen;
	(*out)->audit_max_age_ms = r->audit_max_age_ms;
	return 0;
}

void sbx_redis_close(struct sbx_redis *r)
{
	if (!r)
		return;
	if (r->mode == SBX_REDIS_CLUSTER)
		sbx_cluster_free(r);     /* frees every node's context, r->c among them */
	else if (r->c)
		redisFree(r->c);
	addr_free(r->addr);
	free(r->safe_url);
	free(r->prefix);
	free(r);
}

/* ---- commands ------------------------------------------------------------ */

/* An error reply becomes an `internal` error naming the command (never its
 * arguments: they may be values).  NOAUTH/WRONGPASS are authentication;
 * replies that mean "not now" are unavailable. */
static int reply_error(struct sbx_redis *r, const char *cmd, redisReply *rep, struct sbx_err *err)
{
	enum sbx_kind kind = SBX_INTERNAL;
	const char *s = rep->str ? rep->str : "";
	if (sbx_str_starts(s, "NOAUTH") || sbx_str_starts(s, "WRONGPASS"))
		kind = SBX_AUTHENTICATION;
	else if (sbx_str_starts(s, "BUSY") || sbx_redis__transient(rep))
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

/* One server or Sentinel: one context.  A single server is never
 * reconnected (a CLI run is short, and the old behaviour is relied on); a
 * Sentinel master is looked up again after a broken connection, a cached
 * connection the master closed (sbx_redis__ctx_usable) or a
 * READONLY/LOADING refusal, within the failover budget.  A command broken
 * after it was sent is resent only when read-only or `resend`. */
static int one_exec(struct sbx_redis *r, int argc, const char **argv, const size_t *lens,
		    int wait_n, int resend, redisReply **rep, redisReply **wrep,
		    struct sbx_err *err)
{
	int64_t deadline = sbx_mono_ms() + sbx_redis__failover_ms();
	int ro = resend || sbx_redis__read_only(argv[0], lens ? lens[0] : strlen(argv[0]));
	for (int attempt = 0;; attempt++) {
		int late = attempt > 0 && sbx_mono_ms() >= deadline;
		if (r->c && r->mode == SBX_REDIS_SENTINEL && !sbx_redis__ctx_usable(r->c)) {
			redisFree(r->c);
			r->c = NULL;
		}
		if (!r->c) {
			if (r->mode != SBX_REDIS_SENTINEL)
				return not_connected(r, err);
			if (sbx_sentinel_connect(r, err) < 0) {
				if (late || r->addr->refused)
					return -1;
				sbx_redis__backoff(attempt);
				continue;
			}
		}
		if (sbx_redis__exchange(r, &r->c, r->safe_url, 0, argc, argv, lens, wait_n, rep, wrep,
					err) < 0) {
			if (r->mode != SBX_REDIS_SENTINEL || !ro || late)
				return -1;
			sbx_redis__backoff(attempt);
			continue;
		}
		if (r->mode == SBX_REDIS_SENTINEL && sbx_redis__transient(*rep) && !late) {
			/* A demoted master answers READONLY: find the new one. */
			freeReplyObject(*rep);
			if (wrep && *wrep)
				freeReplyObject(*wrep);
			redisFree(r->c);
			r->c = NULL;
			sbx_redis__backoff(attempt);
			continue;
		}
		return 0;
	}
}

/* Route one command by mode, after the one-slot check. */
static int exec_cmd(struct sbx_redis *r, int argc, const char **argv, const size_t *lens,
		    int wait_n, int resend, redisReply **rep, redisReply **wrep,
		    struct sbx_err *err)
{
	*rep = NULL;
	if (wrep)
		*wrep = NULL;
	if (sbx_redis_command_slot(argc, argv, lens, err) == -2)
		return -1;
	if (r->mode == SBX_REDIS_CLUSTER)
		return sbx_cluster_exec(r, argc, argv, lens, wait_n, resend, rep, wrep, err);
	return one_exec(r, argc, argv, lens, wait_n, resend, rep, wrep, err);
}

/* The command's name for messages (argv[0] may not be NUL-terminated). */
static void cmd_name(char *out, size_t n, const char *argv0, const size_t *lens)
{
	size_t l = lens ? lens[0] : strlen(argv0);
	snprintf(out, n, "%.*s", (int)(l < n - 1 ? l : n - 1), argv0);
}

int sbx_redis_cmd(struct sbx_redis *r, redisReply **reply, struct sbx_err *err,
		  int argc, const char **argv, const size_t *lens)
{
	*reply = NULL;
	redisReply *rep;
	if (exec_cmd(r, argc, argv, lens, 0, 0, &rep, NULL, err) < 0)
		return -1;
	if (rep->type == REDIS_REPLY_ERROR) {
		char cmd[32];
		cmd_name(cmd, sizeof(cmd), argv[0], lens);
		return reply_error(r, cmd, rep, err);
	}
	*reply = rep;
	return 0;
}

/* Split hiredis's RESP encoding of a formatted command back into an argv,
 * so that cmdf takes the same (routed, checked) path as sbx_redis_cmd.
 * Returns argc, or -1 when the text is not the array hiredis writes. */
static int resp_split(const char *s, size_t n, const char ***argv, size_t **lens)
{
	const char *p = s, *end = s + n;
	if (p >= end || *p != '*')
		return -1;
	long argc = strtol(p + 1, (char **)&p, 10);
	if (argc <= 0 || argc > 1024 || p + 2 > end)
		return -1;
	p += 2;
	*argv = sbx_xcalloc((size_t)argc, sizeof(**argv));
	*lens = sbx_xcalloc((size_t)argc, sizeof(**lens));
	for (long i = 0; i < argc; i++) {
		if (p >= end || *p != '$')
			return -1;
		long l = strtol(p + 1, (char **)&p, 10);
		if (l < 0 || p + 2 + l + 2 > end)
			return -1;
		p += 2;
		(*argv)[i] = p;
		(*lens)[i] = (size_t)l;
		p += l + 2;
	}
	return (int)argc;
}

int sbx_redis_cmdf(struct sbx_redis *r, redisReply **reply, struct sbx_err *err,
		   const char *fmt, ...)
{
	*reply = NULL;
	char *resp = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = redisvFormatCommand(&resp, fmt, ap);
	va_end(ap);
	SBX_AUTOFREE const char **argv = NULL;
	SBX_AUTOFREE size_t *lens = NULL;
	int argc = n > 0 ? resp_split(resp, (size_t)n, &argv, &lens) : -1;
	int rc = argc > 0 ? sbx_redis_cmd(r, reply, err, argc, argv, lens)
			  : sbx_fail(err, SBX_INTERNAL, "redis", "cannot format a Redis command");
	free(resp);
	return rc;
}

int sbx_redis_append(struct sbx_redis *r, int argc, const char **argv, const size_t *lens,
		     struct sbx_err *err)
{
	if (sbx_redis_command_slot(argc, argv, lens, err) == -2)
		return -1;
	if (r->mode == SBX_REDIS_CLUSTER)
		return sbx_cluster_append(r, argc, argv, lens, err);
	if (r->c && r->mode == SBX_REDIS_SENTINEL && !r->unflushed && !sbx_redis__ctx_usable(r->c)) {
		redisFree(r->c);         /* the master closed it: look it up again */
		r->c = NULL;
	}
	if (!r->c) {
		/* A Sentinel master is looked up again, but only between
		 * pipelines: replies already owed were lost with the context. */
		if (r->mode != SBX_REDIS_SENTINEL || r->unflushed)
			return not_connected(r, err);
		if (sbx_sentinel_connect(r, err) < 0)
			return -1;
	}
	if (redisAppendCommandArgv(r->c, argc, argv, lens) != REDIS_OK)
		return sbx_redis__ctx_fail(r, &r->c, r->safe_url, err);
	r->unflushed = 1;
	return 0;
}

/* Error replies inside a pipeline are returned as replies (type
 * REDIS_REPLY_ERROR), not as failures: the caller knows which command each
 * reply answers.  Only a broken connection fails. */
int sbx_redis_read(struct sbx_redis *r, redisReply **reply, struct sbx_err *err)
{
	*reply = NULL;
	if (r->mode == SBX_REDIS_CLUSTER)
		return sbx_cluster_read(r, reply, err);
	if (!r->c)
		return not_connected(r, err);
	if (r->unflushed) {
		r->round_trips++;    /* the whole pipeline goes out in one write */
		r->unflushed = 0;
	}
	void *rep = NULL;
	if (redisGetReply(r->c, &rep) != REDIS_OK || !rep)
		return sbx_redis__ctx_fail(r, &r->c, r->safe_url, err);
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

/* The WAIT after a durable script: fewer acknowledgements than asked means
 * the write may vanish with a failover, so it does not count. */
static int check_wait(struct sbx_redis *r, redisReply *rep, redisReply *wrep, struct sbx_err *err)
{
	if (!wrep)
		return 0;
	long long got = wrep->type == REDIS_REPLY_INTEGER ? wrep->integer : -1;
	freeReplyObject(wrep);
	if (rep->type == REDIS_REPLY_ERROR || got >= r->wait_replicas)
		return 0;
	freeReplyObject(rep);
	return sbx_fail(err, SBX_UNAVAILABLE, "redis",
			"redis at %s: a write reached %lld of the %d replicas it needs within "
			"%lld ms (SBX_REDIS_WAIT); it does not count", r->safe_url, got < 0 ? 0 : got,
			r->wait_replicas, (long long)r->wait_ms);
}

/* EVALSHA first; a NOSCRIPT reply (script cache flushed, new server, a
 * node that never saw it) is retried once as EVAL, which also loads the
 * script for next time.  An error raised by the script is an `internal`
 * error carrying Redis's text (e.g. WRONGTYPE), so callers can tell a
 * script failure from a broken connection by kind.  A durable script is
 * followed by WAIT in the same round trip (check_wait).  A `resend`
 * script is sent again when its connection broke after it was sent. */
int sbx_redis_eval(struct sbx_redis *r, struct sbx_script *s, redisReply **reply,
		   int nkeys, const char **keys, int nargs, const char **args,
		   struct sbx_err *err)
{
	*reply = NULL;
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
	int wait_n = s->durable ? r->wait_replicas : 0;
	redisReply *rep, *wrep;
	if (exec_cmd(r, argc, argv, NULL, wait_n, s->resend, &rep, &wrep, err) < 0)
		return -1;
	if (rep->type == REDIS_REPLY_ERROR && rep->str && sbx_str_starts(rep->str, "NOSCRIPT")) {
		freeReplyObject(rep);
		if (wrep)
			freeReplyObject(wrep);
		argv[0] = "EVAL";
		argv[1] = s->src;
		if (exec_cmd(r, argc, argv, NULL, wait_n, s->resend, &rep, &wrep, err) < 0)
			return -1;
	}
	if (check_wait(r, rep, wrep, err) < 0)
		return -1;
	if (rep->type == REDIS_REPLY_ERROR)
		return reply_error(r, "script", rep, err);
	*reply = rep;
	return 0;
}

/* ---- keyspace-wide ------------------------------------------------------- */


int sbx_redis_scan(struct sbx_redis *r, const char *pattern, int count, sbx_redis_key_fn fn,
		   void *ctx, struct sbx_err *err)
{
	/* On a cluster, the nodes of the pattern's slot (its master, and the
	 * importing node while the slot migrates: its keys then sit on two
	 * nodes), or every master for a pattern without a fixed hash tag. */
	if (r->mode == SBX_REDIS_CLUSTER)
		return sbx_cluster_scan_all(r, pattern, fn, ctx, err);
	char cnt[16];
	snprintf(cnt, sizeof(cnt), "%d", count > 0 ? count : 1000);
	SBX_AUTOFREE char *cursor = sbx_xstrdup("0");
	do {
		const char *argv[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", cnt};
		redisReply *rep;
		if (sbx_redis_cmd(r, &rep, err, 6, argv, NULL) < 0 ||
		    sbx_redis__scan_page(rep, &cursor, fn, ctx, err) < 0)
			return -1;
	} while (strcmp(cursor, "0") != 0);
	return 0;
}

int sbx_redis_scan_all(struct sbx_redis *r, const char *pattern, sbx_redis_key_fn fn,
		       void *ctx, struct sbx_err *err)
{
	return sbx_redis_scan(r, pattern, 1000, fn, ctx, err);
}
