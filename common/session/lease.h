/* lease.h - turn leases: "a user's turn is in flight in this session".
 *
 * <prefix>:{T}:sess:S:turn is a hash {refs, rebuild} with a TTL
 * ($SBX_TURN_TTL_MS, default 30 min) that bounds a lease leaked by a crash.
 * begin increments refs and, only when refs becomes 1, sets rebuild = 1
 * (the turn's one rebuild ticket; a nested begin does not reset it); end
 * decrements and deletes the hash at 0; consume sets rebuild = 0 and never
 * creates the key.  The scripts are those of the reference (§3.9).
 *
 * A stale binding is rebuilt only when no turn is active, or on the first
 * resolve of the active turn (which consumes the ticket); when the lease
 * cannot be read the sandbox is kept. */
#ifndef SBX_LEASE_H
#define SBX_LEASE_H

#include <stdint.h>

#include "backend.h"
#include "err.h"
#include "redis.h"

struct sbx_turn {
	int active;            /* refs > 0 */
	int rebuild;           /* the ticket is unspent ("1") */
	long long refs;
	int64_t ttl_ms;        /* -2 no key, -1 no TTL */
};

/* $SBX_TURN_TTL_MS, else 30 minutes. */
int64_t sbx_turn_ttl_ms(void);

/* Begin / end a turn; *refs (may be NULL) gets the count after. */
int sbx_turn_begin(struct sbx_redis *r, const char *tenant, const char *session,
		   long long *refs, struct sbx_err *err);
int sbx_turn_end(struct sbx_redis *r, const char *tenant, const char *session,
		 long long *refs, struct sbx_err *err);
/* TurnState: HGETALL; an active lease gets its TTL refreshed (best effort).
 * A Redis failure (down, WRONGTYPE) is -1: callers keep the sandbox. */
int sbx_turn_state(struct sbx_redis *r, const char *tenant, const char *session,
		   struct sbx_turn *out, struct sbx_err *err);
/* ConsumeTurnRebuild: 1 when a lease existed (ticket now spent), 0 if none. */
int sbx_turn_consume(struct sbx_redis *r, const char *tenant, const char *session,
		     struct sbx_err *err);
/* What resolve needs, in one round trip and atomically: the state as it was
 * (active, rebuild) and then the ticket consumed, exactly as TurnState
 * followed by ConsumeTurnRebuild. */
int sbx_turn_observe(struct sbx_redis *r, const char *tenant, const char *session,
		     struct sbx_turn *out, struct sbx_err *err);

/* Tell the backend of the session's sandbox that a turn lease is held
 * (refs > 0: until now + the lease's TTL) or ended (refs 0), so that its
 * idle timer does not pause a sandbox in the middle of a turn (the
 * vtable's hold).  A backend without hold: 0, nothing done. */
int sbx_turn_hold(struct sbx_backend *b, const char *sandbox_id, long long refs,
		  struct sbx_err *err);

/* The idle witness of leases (backend.h, struct sbx_idle_seen) over `r`:
 * awake(tenant, session) is 1 while the session's turn lease is held
 * (refs > 0), 0 when not, -1 when Redis cannot answer (the sandbox is
 * kept).  It only reads (HGET): a reaper's look never renews a lease, so a
 * leaked one still keeps the sandbox no longer than its TTL.  Set it on a
 * backend with `b->idle_seen = &seen` for as long as `r` lives. */
struct sbx_idle_seen sbx_turn_idle_seen(struct sbx_redis *r);

#endif
