/* redis-int.h - what redis.c, redis-conn.c, redis-cluster.c and
 * redis-sentinel.c share, and nothing outside those files includes.
 *
 * A connection (struct sbx_redis) runs in one of three modes, chosen by its
 * URL: one server (redis://, unix://), a Redis Cluster (redis+cluster://
 * seeds, routed by slot in redis-cluster.c) or a master found through
 * Sentinel (redis+sentinel://seeds/NAME, redis-sentinel.c).  Every mode
 * ends in the same primitive: send some commands on one hiredis context and
 * read their replies, counted as one round trip. */
#ifndef SBX_REDIS_INT_H
#define SBX_REDIS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <hiredis/hiredis.h>

#include "redis.h"

enum sbx_redis_mode { SBX_REDIS_SINGLE, SBX_REDIS_CLUSTER, SBX_REDIS_SENTINEL };

struct sbx_redis_seed {
	char *host;
	int port;
};

struct sbx_redis_addr {
	enum sbx_redis_mode mode;
	char *host;          /* single: the server; sentinel: the current master */
	int port;
	char *path;          /* unix socket path (single mode only) */
	int db;
	char *user;          /* ACL user, or NULL */
	char *password;      /* secret; wiped on free */
	struct sbx_redis_seed *seeds;   /* cluster nodes / sentinels named by the URL */
	size_t nseeds;
	char *master;        /* sentinel: the master's name */
	char **nodes;        /* the profile's redis_nodes (CIDRs), NULL-terminated, or NULL */
	int refused;         /* the last lookup met a node sbx_redis__node_allowed refused */
};

/* May `host` (named by `by`: "CLUSTER SLOTS", "a MOVED/ASK redirect", "a
 * sentinel") be connected to and get the password?  Yes for a host the
 * URL names (a seed, by its spelling), else only for an IP address that
 * is not link-local, metadata or otherwise never allowed (ssrf.h's
 * classes) and that is one of the seeds' addresses (a seed name is
 * resolved) or inside one of the profile's redis_nodes CIDRs.  A host
 * name that is not a seed is refused: its address could change between
 * this check and the connection.  0, or -1 with `unavailable` naming the
 * node and why; r->addr->refused is then set.  Nothing is sent either
 * way. */
int sbx_redis__node_allowed(struct sbx_redis *r, const char *host, int port, const char *by,
			    struct sbx_err *err);

/* Open a context to host:port (or the unix socket `path`) with the
 * connection's timeouts, FD_CLOEXEC, AUTH (when `auth`: sentinels are asked
 * without the master's password) and SELECT.  `where` names the server in
 * messages (never a password).  0, or -1 with nothing left open. */
int sbx_redis__connect(struct sbx_redis *r, const char *host, int port, const char *path,
		       int db, int auth, const char *where, redisContext **out,
		       struct sbx_err *err);

/* Send argc/argv (and, when wait_n > 0, a WAIT wait_n wait_ms after it on
 * the same context: one round trip) and read the replies.  *rep gets the
 * command's reply, error replies included; *wrep the WAIT's when asked.
 * -1 only when the context broke (it is then freed and *c set NULL). */
int sbx_redis__exchange(struct sbx_redis *r, redisContext **c, const char *where, int asking,
			int argc, const char **argv, const size_t *lens, int wait_n,
			redisReply **rep, redisReply **wrep, struct sbx_err *err);

/* 1 when a cached context can carry the next exchange: no error, and
 * nothing waiting on its socket (no EOF or reset from a peer that closed
 * or died, no unread bytes).  One poll(2), no round trip.  A context that
 * is not usable is freed by the caller and a new one opened: sending on
 * it would make a command that never reached a server look like one that
 * broke after it was sent. */
int sbx_redis__ctx_usable(const redisContext *c);

/* The error of a broken context (kind unavailable, or timeout when no reply
 * came in time); frees it and sets *c NULL.  Returns -1. */
int sbx_redis__ctx_fail(struct sbx_redis *r, redisContext **c, const char *where,
			struct sbx_err *err);

/* 1 when a command cannot change data (GET, EXISTS, SISMEMBER, SCAN...):
 * such a command is retried after its connection broke; any other is not,
 * since it may have run. */
int sbx_redis__read_only(const char *cmd, size_t len);

/* An error reply that means "not executed, try again later" (TRYAGAIN,
 * CLUSTERDOWN, LOADING, MASTERDOWN, READONLY). */
int sbx_redis__transient(const redisReply *rep);

/* How long one call keeps retrying while a failover runs:
 * $SBX_REDIS_FAILOVER_WAIT (a duration) or 5 s. */
int64_t sbx_redis__failover_ms(void);
void sbx_redis__backoff(int attempt);

/* One SCAN reply: fn for each key, *cursor replaced by the next cursor;
 * the reply is freed.  -1 (err) on a malformed reply or an fn failure. */
int sbx_redis__scan_page(redisReply *rep, char **cursor, sbx_redis_key_fn fn, void *ctx,
			 struct sbx_err *err);

/* Cluster mode (redis-cluster.c). */
int sbx_cluster_open(struct sbx_redis *r, struct sbx_err *err);
void sbx_cluster_free(struct sbx_redis *r);
/* One command to its slot's master (redis-cluster.c's promises).  `resend`:
 * the command may run twice without harm (sbx_script.resend), so it is
 * sent again after its connection broke, like a read-only one. */
int sbx_cluster_exec(struct sbx_redis *r, int argc, const char **argv, const size_t *lens,
		     int wait_n, int resend, redisReply **rep, redisReply **wrep,
		     struct sbx_err *err);
int sbx_cluster_append(struct sbx_redis *r, int argc, const char **argv, const size_t *lens,
		       struct sbx_err *err);
int sbx_cluster_read(struct sbx_redis *r, redisReply **rep, struct sbx_err *err);
int sbx_cluster_scan_all(struct sbx_redis *r, const char *pattern, sbx_redis_key_fn fn,
			 void *ctx, struct sbx_err *err);

/* Sentinel mode (redis-sentinel.c): ask the sentinels for the master, connect
 * to it and refuse it unless ROLE says master.  Sets r->c. */
int sbx_sentinel_connect(struct sbx_redis *r, struct sbx_err *err);

#endif
