/* redis.h - the Redis connection every program shares.
 *
 * SBX_REDIS_URL: redis://[:password@]host[:port][/db] or unix:///path/to/sock
 * (a password may also come from the profile's redis_password_file; it never
 * appears in messages).  Connect and command timeouts are always set, so a
 * Redis that is down or wedged is an `unavailable` (or `timeout`) error,
 * never a hang.  hiredis 0.14: RESP2 only, no TLS.
 *
 * URL forms: redis://[[user]:password@]host[:port][/db] (IPv6 as [::1]),
 * unix:///path/to/sock[?db=N], unix://:password@/path[?db=N].  A password
 * in the URL wins over redis_password_file.  Any connection failure, I/O
 * error or refused AUTH leaves the connection closed; later calls fail fast
 * with `unavailable` (no reconnect: a CLI run is short).
 *
 * hiredis writes with write(2): the process must ignore SIGPIPE (every
 * program does, in cli.c) or a server that goes away kills it.
 *
 * Scripts are sent by EVALSHA and fall back to EVAL on NOSCRIPT, so a
 * flushed or restarted server costs one extra round trip, never an error. */
#ifndef SBX_REDIS_H
#define SBX_REDIS_H

#include <stddef.h>
#include <stdint.h>
#include <hiredis/hiredis.h>

#include "config.h"
#include "err.h"

struct sbx_redis_addr;

struct sbx_redis {
	redisContext *c;         /* NULL once the connection broke */
	int64_t timeout_ms;
	long long round_trips;   /* network round trips (a pipeline counts once) */
	/* Added by the sessions work (compatible extension): */
	char *prefix;            /* key prefix (profile `prefix`, default "sbx") */
	char *safe_url;          /* the URL without any password, for messages */
	struct sbx_redis_addr *addr;  /* private: how to connect again (sbx_redis_dup) */
	int unflushed;           /* appended commands not yet sent */
};

/* Connect with the profile's redis_url ($SBX_REDIS_URL overrides it).
 * No URL at all is a configuration error (exit 78). */
int sbx_redis_open(const struct sbx_profile *p, struct sbx_redis **out, struct sbx_err *err);
/* Connect to an explicit URL (tests). */
int sbx_redis_open_url(const char *url, const char *password_file, int64_t timeout_ms,
		       struct sbx_redis **out, struct sbx_err *err);
void sbx_redis_close(struct sbx_redis *r);
/* A second, independent connection to the same server, db and prefix (a
 * background thread must not share a hiredis context). */
int sbx_redis_dup(const struct sbx_redis *r, struct sbx_redis **out, struct sbx_err *err);
/* The prefix must be non-empty, at most 64 bytes, without '{', '}',
 * whitespace or control characters (it is not escaped in keys).
 * Configuration error (exit 78) otherwise. */
int sbx_redis_check_prefix(const char *prefix, struct sbx_err *err);
/* Replace the prefix (tests); the string is copied.  Checked as above. */
int sbx_redis_set_prefix(struct sbx_redis *r, const char *prefix, struct sbx_err *err);
/* The connect and command timeout: $SBX_REDIS_TIMEOUT (a duration: 500ms,
 * 2s; a bare number is seconds) or 2 s. */
int64_t sbx_redis_default_timeout_ms(void);

/* One command from an argv (binary-safe lengths; lens NULL = strlen).
 * A Redis error reply is an `internal` error naming the command; a
 * connection or timeout failure is `unavailable`/`timeout`.  The caller
 * frees the reply with freeReplyObject. */
int sbx_redis_cmd(struct sbx_redis *r, redisReply **reply, struct sbx_err *err,
		  int argc, const char **argv, const size_t *lens);
/* printf-style convenience for fixed commands: sbx_redis_cmdf(r, &rep, err, "GET %s", key). */
int sbx_redis_cmdf(struct sbx_redis *r, redisReply **reply, struct sbx_err *err,
		   const char *fmt, ...);

/* Pipelining: append any number of commands, then read their replies in
 * order.  Each reply must be freed. */
int sbx_redis_append(struct sbx_redis *r, int argc, const char **argv, const size_t *lens,
		     struct sbx_err *err);
int sbx_redis_read(struct sbx_redis *r, redisReply **reply, struct sbx_err *err);

/* A Lua script, run by EVALSHA with a NOSCRIPT fallback to EVAL. */
struct sbx_script {
	const char *src;
	char sha[41];            /* computed on first use */
};
int sbx_redis_eval(struct sbx_redis *r, struct sbx_script *s, redisReply **reply,
		   int nkeys, const char **keys, int nargs, const char **args,
		   struct sbx_err *err);

#endif
