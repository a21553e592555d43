/* keys.h - every Redis key sbx uses, and nothing else builds one (DESIGN §8).
 *
 *   <prefix>:{<tenant>}:sess:<session>:binding   JSON, SET NX, no TTL
 *   <prefix>:{<tenant>}:sess:<session>:lock      lifecycle lock token, PX
 *   <prefix>:{<tenant>}:sess:<session>:fence     fencing counter (INCR per acquire)
 *   <prefix>:{<tenant>}:sess:<session>:turn      turn lease hash {refs, rebuild}
 *   <prefix>:{<tenant>}:sess:<session>:checkpoints  list: the session's history
 *                                                of checkpoints, JSON (checkpoint.h)
 *   <prefix>:{<tenant>}:bound                    set of bound sandbox ids
 *   <prefix>:{<tenant>}:checkpoints-gc           hash snapshot id -> JSON: checkpoints
 *                                                taken out of a history whose snapshot
 *                                                is still to delete (checkpoint-gc.h)
 *   <prefix>:{<tenant>}:skill:<name>             ledger hash of one skill
 *   <prefix>:{<tenant>}:image                    current skill image hash
 *   <prefix>:{<tenant>}:ledger                   index of the tenant's skill rows
 *   <prefix>:{<tenant>}:events                   the tenant's event stream (events.h)
 *   <prefix>:{<tenant>}:audit                    ... its audit stream (events.h)
 *   <prefix>:{<tenant>}:usage                    hash session -> slot state (quota.h)
 *   <prefix>:{<tenant>}:quota                    hash: the tenant's own quota (quota.h)
 *   <prefix>:{<tenant>}:paused                   hash session -> unix time of its pause (quota.h)
 *   <prefix>:{<tenant>}:vols                     set of the tenant's volume names (volume.h)
 *   <prefix>:{<tenant>}:vol:<name>               hash: one volume's record
 *   <prefix>:{<tenant>}:vol:<name>:users         set of sandbox ids mounting it
 *   <prefix>:{<tenant>}:webhooks                 hash: sbx-serve's webhooks of the
 *                                                tenant, id -> JSON (serve-events.c)
 *   <prefix>:tenants                             set of tenants (--all-tenants)
 *   <prefix>:webhooks                            set of tenants with webhooks
 *   <prefix>:reap:lease                          one reaper at a time
 *   <prefix>:reap:lease:<host>                   ... per host, for host-local backends
 *   <prefix>:keyspace                            this keyspace's random id (keyspace.h)
 *
 * Ids (tenant, session, skill name) are length-counted byte strings.  Each
 * is escaped: every byte outside [A-Za-z0-9._-] becomes %XX (upper-case
 * hex), so an escaped id never contains ':', '{', '}', glob characters,
 * whitespace or NUL, escaping is injective, and all keys of a tenant share
 * the hash tag {<escaped tenant>} (one cluster slot, so multi-key scripts
 * stay atomic).  Ids must be 1..SBX_ID_MAX bytes; anything else is an
 * invalid_request error.  The prefix is checked when Redis is opened
 * (sbx_redis_check_prefix) and is used verbatim. */
#ifndef SBX_KEYS_H
#define SBX_KEYS_H

#include <stddef.h>

#include "err.h"

#define SBX_ID_MAX 1024   /* bytes, before escaping (3x after) */

enum sbx_sess_key {
	SBX_KEY_BINDING,
	SBX_KEY_LOCK,
	SBX_KEY_FENCE,
	SBX_KEY_TURN,
	SBX_KEY_CHECKPOINTS,
};

enum sbx_tenant_key {
	SBX_KEY_BOUND,
	SBX_KEY_IMAGE,
	SBX_KEY_LEDGER,
	SBX_KEY_EVENTS,
	SBX_KEY_AUDIT,
	SBX_KEY_AUDIT_HEAD,
	SBX_KEY_USAGE,
	SBX_KEY_QUOTA,
	SBX_KEY_PAUSED,
	SBX_KEY_VOLUMES,
	SBX_KEY_WEBHOOKS,
	SBX_KEY_CHECKPOINTS_GC,
};

/* 0, or -1 with invalid_request naming `what` ("tenant", "session"): empty,
 * longer than SBX_ID_MAX, a NUL inside, or not UTF-8. */
int sbx_id_check(const char *what, const char *id, size_t len, struct sbx_err *err);
/* A tenant id (NULL: empty) and, when `id` is not NULL, a second id named
 * `what` ("session", "skill"), both by sbx_id_check. */
int sbx_ids_check(const char *tenant, const char *what, const char *id, struct sbx_err *err);

/* Escape / unescape one id.  sbx_key_unescape returns NULL for text that
 * sbx_key_escape could not have produced; *len receives the byte count. */
char *sbx_key_escape(const char *id, size_t len);
char *sbx_key_unescape(const char *s, size_t n, size_t *len);

/* The keys.  All return malloc'd strings; the ids must have passed
 * sbx_id_check (callers validate once, at the boundary). */
char *sbx_key_session(const char *prefix, const char *tenant, size_t tlen,
		      const char *session, size_t slen, enum sbx_sess_key which);
char *sbx_key_tenant(const char *prefix, const char *tenant, size_t tlen,
		     enum sbx_tenant_key which);
char *sbx_key_skill(const char *prefix, const char *tenant, size_t tlen,
		    const char *name, size_t nlen);
/* A volume's record (users 0) or the set of sandboxes using it (users 1). */
char *sbx_key_volume(const char *prefix, const char *tenant, size_t tlen,
		     const char *name, size_t nlen, int users);
char *sbx_key_tenants(const char *prefix);
char *sbx_key_webhook_tenants(const char *prefix);
/* host: NULL, or a host id (host.h: plain characters only) for the lease
 * of a host-local backend's reaper, one per keyspace and host. */
char *sbx_key_reap_lease(const char *prefix, const char *host);
char *sbx_key_keyspace(const char *prefix);

/* Escape the glob characters * ? [ ] ^ \ so that `s` matches only itself
 * in SCAN MATCH. */
char *sbx_key_glob_escape(const char *s);
/* SCAN MATCH pattern for every key of kind `which` of the tenant's sessions:
 * <glob-escaped prefix>:{<tenant>}:sess:*:binding (etc.). */
char *sbx_key_session_pattern(const char *prefix, const char *tenant, size_t tlen,
			      enum sbx_sess_key which);
/* From a key produced by sbx_key_session (any kind), the unescaped session
 * id (malloc'd, *slen set), or NULL when `key` is not such a key of this
 * prefix and tenant. */
char *sbx_key_session_of(const char *key, const char *prefix, const char *tenant,
			 size_t tlen, size_t *slen);
/* The hash tag of a key (the text between the first '{' and the next '}'),
 * as Redis Cluster computes it; malloc'd, or NULL when there is none. */
char *sbx_key_hash_tag(const char *key);

#endif
