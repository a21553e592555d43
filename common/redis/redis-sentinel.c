/* redis-sentinel.c - find the master of a redis+sentinel:// URL.
 *
 * Promises: the connection is made only to a server that says, itself, that
 * it is a master (ROLE), at the address a sentinel gives for the master's
 * name; a sentinel that still names a demoted master (it has not seen the
 * failover yet) is passed over for the next, and when none names a master
 * the lookup is tried again, with backoff, for the failover budget
 * (sbx_redis__failover_ms), then fails `unavailable`.  A master name no
 * sentinel knows is a configuration error.  The sentinels are asked
 * without the master's password: it is never sent to them, nor to a
 * master address the configuration does not allow (redis-int.h,
 * sbx_redis__node_allowed): such an answer fails the lookup at once,
 * `unavailable`, after the other sentinels were asked. */
#include <stdlib.h>
#include <string.h>

#include "redis-int.h"
#include "util.h"

/* Ask one sentinel: 1 with host/port set, 0 when it does not know the
 * name, -1 (err) when it cannot be asked. */
static int ask_sentinel(struct sbx_redis *r, const struct sbx_redis_seed *s, char **host,
			int *port, struct sbx_err *err)
{
	SBX_AUTOFREE char *where = sbx_xasprintf("sentinel %s:%d (%s)", s->host, s->port,
						 r->safe_url);
	redisContext *c = NULL;
	if (sbx_redis__connect(r, s->host, s->port, NULL, 0, 0, where, &c, err) < 0)
		return -1;
	const char *argv[] = {"SENTINEL", "get-master-addr-by-name", r->addr->master};
	redisReply *rep;
	if (sbx_redis__exchange(r, &c, where, 0, 3, argv, NULL, 0, &rep, NULL, err) < 0)
		return -1;
	redisFree(c);
	int rc = 0;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
	    rep->element[0]->type == REDIS_REPLY_STRING && rep->element[1]->type == REDIS_REPLY_STRING) {
		char *end;
		long p = strtol(rep->element[1]->str, &end, 10);
		if (!*end && p > 0 && p <= 65535) {
			*host = sbx_xstrdup(rep->element[0]->str);
			*port = (int)p;
			rc = 1;
		}
	} else if (rep->type == REDIS_REPLY_ERROR) {
		rc = sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: %s", where, rep->str);
	}
	freeReplyObject(rep);
	return rc;
}

/* Connect to host:port and keep the context only if ROLE says master.
 * The address a sentinel gives is checked first (sbx_redis__node_allowed):
 * the password goes only to a node the configuration allows. */
static int connect_master(struct sbx_redis *r, const char *host, int port, struct sbx_err *err)
{
	SBX_AUTOFREE char *where = sbx_xasprintf("%s:%d (%s)", host, port, r->safe_url);
	redisContext *c = NULL;
	if (sbx_redis__node_allowed(r, host, port, "a sentinel", err) < 0)
		return -1;
	if (sbx_redis__connect(r, host, port, NULL, r->addr->db, 1, where, &c, err) < 0)
		return -1;
	const char *argv[] = {"ROLE"};
	redisReply *rep;
	if (sbx_redis__exchange(r, &c, where, 0, 1, argv, NULL, 0, &rep, NULL, err) < 0)
		return -1;
	int master = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
		     rep->element[0]->type == REDIS_REPLY_STRING &&
		     strcmp(rep->element[0]->str, "master") == 0;
	freeReplyObject(rep);
	if (!master) {
		redisFree(c);
		return sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: the sentinels name a "
				"server that is not a master (ROLE); refused", where);
	}
	free(r->addr->host);
	r->addr->host = sbx_xstrdup(host);
	r->addr->port = port;
	r->c = c;
	return 0;
}

int sbx_sentinel_connect(struct sbx_redis *r, struct sbx_err *err)
{
	int64_t deadline = sbx_mono_ms() + sbx_redis__failover_ms();
	if (r->c) {
		redisFree(r->c);
		r->c = NULL;
	}
	r->addr->refused = 0;
	for (int attempt = 0;; attempt++) {
		int known = 0;
		for (size_t i = 0; i < r->addr->nseeds; i++) {
			char *host = NULL;
			int port = 0;
			int rc = ask_sentinel(r, &r->addr->seeds[i], &host, &port, err);
			if (rc > 0) {
				known = 1;
				rc = connect_master(r, host, port, err);
				free(host);
				if (rc == 0)
					return 0;
			} else if (rc == 0) {
				sbx_fail(err, SBX_UNAVAILABLE, "redis", "redis at %s: sentinel %s:%d "
					 "knows no master named '%s'", r->safe_url,
					 r->addr->seeds[i].host, r->addr->seeds[i].port, r->addr->master);
			} else {
				known = 1;      /* unreachable: it may know */
			}
		}
		if (!known) {
			err->exit_status = SBX_EXIT_CONFIG;
			return -1;
		}
		if (r->addr->refused || sbx_mono_ms() >= deadline)
			return -1;
		sbx_redis__backoff(attempt);
	}
}
