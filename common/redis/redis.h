/* redis.h - the Redis connection every program shares.
 *
 * SBX_REDIS_URL: redis://[:password@]host[:port][/db] or unix:///path/to/sock
 * for one server, redis+cluster://[:password@]host:port[,host:port...] for a
 * Redis Cluster (the seeds; the slot map is loaded from them), or
 * redis+sentinel://[:password@]host:port[,host:port...]/MASTERNAME for a
 * master behind Sentinel (the password is the master's; the sentinels are
 * asked without one).  A password may also come from the profile's
 * redis_password_file; it never appears in messages.  Connect and command timeouts are always set, so a
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
struct sbx_redis_cluster;

struct sbx_redis {
	redisContext *c;         /* NULL once the connection broke */
	int64_t timeout_ms;
	long long round_trips;   /* network round trips (a pipeline counts once) */
	/* Added by the sessions work (compatible extension): */
	char *prefix;            /* key prefix (profile `prefix`, default "sbx") */
	char *safe_url;          /* the URL without any password, for messages */
	struct sbx_redis_addr *addr;  /* private: how to connect again (sbx_redis_dup) */
	int unflushed;           /* appended commands not yet sent */
	/* Added by the scale work (issue 17): */
	int mode;                /* private: enum sbx_redis_mode (redis-int.h) */
	struct sbx_redis_cluster *cl;  /* private: the slot map and node connections */
	int wait_replicas;       /* durable scripts: replicas that must acknowledge */
	int64_t wait_ms;         /* ... within this long (WAIT's timeout) */
	long long redirects;     /* MOVED/ASK followed (tests and benchmarks read it) */
	/* Added by the events work (issue 30): */
	int64_t events_maxlen;   /* the profile's events_maxlen (events.h); 0 = off */
	/* Added by the audit work (issue 29): */
	int64_t audit_maxlen;    /* the profile's audit_maxlen (audit.h); 0 = off */
	int64_t audit_max_age_ms;  /* the profile's audit_max_age; 0 = by length only */
};

/* Cluster and Sentinel semantics (man sbx(7), FAILOVER):
 *   - Every command must keep its keys in one hash slot; one that does not
 *     is refused before it is sent (`internal`), in every mode, so a
 *     single-node test run catches what a cluster would refuse.
 *   - Cluster: commands go to the slot's master (slot map from CLUSTER
 *     SLOTS at open, +1 round trip); MOVED refreshes the map and retries,
 *     ASK retries once at the named node after ASKING; pipelines are split
 *     per node and sent to all nodes before any reply is read.
 *   - A command that was not sent (the node refused the connection) or was
 *     refused unexecuted (TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN,
 *     READONLY) is retried, with the map (or the sentinels) asked again,
 *     for up to $SBX_REDIS_FAILOVER_WAIT (default 5 s).  A command whose
 *     connection broke after it was sent is retried only if it is read-only
 *     or a script marked `resend`: a write may have run, so it fails
 *     `unavailable` (retryable) instead.  A cached connection the server
 *     closed (it died) is opened again before a command is sent on it.
 *   - Durable scripts (struct sbx_script.durable: the lock's fence, binding
 *     writes) are followed by WAIT on the same connection, in the same
 *     round trip; fewer than wait_replicas acknowledgements within wait_ms
 *     is `unavailable`, and the write does not count.  wait_replicas is
 *     $SBX_REDIS_WAIT (default 1 for cluster and sentinel URLs, 0 for one
 *     server), wait_ms $SBX_REDIS_WAIT_TIMEOUT (default 1 s). */
typedef int (*sbx_redis_key_fn)(const char *key, size_t len, void *ctx, struct sbx_err *err);

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
	int durable;             /* acknowledged by wait_replicas replicas before it counts */
	/* Safe to run twice (a token-checked release or renewal: the second
	 * run finds the key gone, or holding another token, and changes
	 * nothing), so it is resent, to the new master after a failover, when
	 * its connection broke after it was sent.  Other writes are not. */
	int resend;
};
int sbx_redis_eval(struct sbx_redis *r, struct sbx_script *s, redisReply **reply,
		   int nkeys, const char **keys, int nargs, const char **args,
		   struct sbx_err *err);

/* SCAN MATCH `pattern` (COUNT count) to the end of the cursor, fn(key) for
 * each key (SCAN may return one twice).  On a cluster a pattern with a
 * fixed hash tag (a tenant's) scans that slot's master only, and the node
 * importing the slot while it migrates (its keys then sit on two nodes);
 * any other pattern scans every master.  A node that cannot be reached is
 * waited for within $SBX_REDIS_FAILOVER_WAIT, the scan then starts again. */
int sbx_redis_scan(struct sbx_redis *r, const char *pattern, int count, sbx_redis_key_fn fn,
		   void *ctx, struct sbx_err *err);
/* SCAN MATCH `pattern` on every master that can hold its keys (one server:
 * that server), every cursor to its end; fn(key) for each key (a key may
 * come twice while a slot migrates or after a retry).  Stops at the first
 * fn failure.  (sbx_redis_scan is the same on a cluster; this one keeps
 * COUNT 1000.) */
int sbx_redis_scan_all(struct sbx_redis *r, const char *pattern, sbx_redis_key_fn fn,
		       void *ctx, struct sbx_err *err);
/* The number of masters (1 for one server or Sentinel). */
int sbx_redis_masters(const struct sbx_redis *r);

/* Redis Cluster's slot of a key: CRC16 (XMODEM) of its hash tag (the bytes
 * between the first '{' and the next '}', when not empty), else of the
 * whole key, mod 16384. */
unsigned sbx_redis_key_slot(const char *key, size_t len);
/* The one slot every key of the command lives in, -1 when it names no key,
 * or -2 (`internal`, naming the command and the two slots) when its keys
 * span slots.  SCAN counts the hash tag of its MATCH pattern as its key. */
int sbx_redis_command_slot(int argc, const char **argv, const size_t *lens,
			   struct sbx_err *err);

#endif
