/* quota.h - a tenant's quota: how many of its session sandboxes may run,
 * how many may exist, and how many bytes the paused ones may hold (DESIGN
 * issue 30).
 *
 * The count is a hash per tenant, <prefix>:{T}:usage, one field per
 * session that holds a slot:
 *
 *   "running" | "paused [<bytes>]"  a bound session (binding.c's scripts
 *                                write and delete these in the script that
 *                                binds or unbinds, so binding and slot
 *                                agree); <bytes>: what its backend measured
 *                                at sbx's pause (sbx_quota_pause)
 *   "pending <lockkey> <token>"  a resolve, holding that session lock, is
 *                                making the sandbox (sbx_quota_reserve)
 *
 * A pending slot counts as running while its lock still holds its token;
 * every script that counts drops the pending slots whose lock is gone, so
 * a resolve killed with -9 holds its slot until its lock expires (the
 * lock's TTL), never longer.  All keys share the tenant's hash slot, so
 * each check-and-take is one atomic script: N processes racing for the
 * last slot get exactly one.
 *
 * Limits: the tenant's own hash <prefix>:{T}:quota (fields running,
 * sandboxes, paused_bytes; -1 = no limit), written by sbx-ctl quota, wins field by field
 * over the profile's "quota" object (config.h); neither = no limit. */
#ifndef SBX_QUOTA_H
#define SBX_QUOTA_H

#include <stdint.h>
#include <json-c/json.h>

#include "config.h"
#include "err.h"
#include "lock.h"
#include "redis.h"

/* Under the session's lock, before any backend work: take a pending slot
 * for the session, or fail with capacity (reason SBX_R_QUOTA, exit 75)
 * naming the quota that is full ("quota sandboxes=20 of tenant T is
 * reached (20 in use)"); nothing is written then.  A slot the session
 * already had (a stale entry: it has no binding) is replaced. */
int sbx_quota_reserve(struct sbx_redis *r, struct sbx_lock *lock, const struct sbx_quota *q,
		      const char *tenant, const char *session, struct sbx_err *err);
/* Give back the session's pending slot if it is still ours (the resolve
 * failed before its bind); a bound slot is left alone.  Best effort: a
 * slot not given back is freed when the lock expires. */
void sbx_quota_unreserve(struct sbx_redis *r, struct sbx_lock *lock, const char *tenant,
			 const char *session);
/* Before a bound, paused sandbox is resumed: its slot becomes running if
 * the running quota allows (capacity otherwise, nothing changed).  A
 * session without a slot (bound before quotas, or no session) is not
 * checked.  1 switched (*before: the paused slot it was, malloc'd, for
 * sbx_quota_restore when the thaw fails), 0 nothing to do, -1 err. */
int sbx_quota_resume(struct sbx_redis *r, const struct sbx_quota *q, const char *tenant,
		     const char *session, char **before, struct sbx_err *err);
/* Before the backend pauses a session's sandbox (sbx-ctl pause): its
 * slot becomes "paused <bytes>" if the paused_bytes quota allows the
 * bytes the pause will hold (`bytes` as the backend measured them; -1:
 * it cannot measure, refused with unsupported when a paused_bytes limit
 * is in force, else counted as 0), capacity otherwise ("quota
 * paused_bytes=B"), nothing changed.  Check and mark are one script.
 * 1 marked (*before: the slot's value before, malloc'd, for
 * sbx_quota_restore), 0 no bound slot (nothing checked), -1 err. */
int sbx_quota_pause(struct sbx_redis *r, const struct sbx_quota *q, const char *tenant,
		    const char *session, int64_t bytes, char **before, struct sbx_err *err);
/* The backend's pause or thaw failed: the slot sbx_quota_pause or
 * sbx_quota_resume switched is put back as it was (`before`, their
 * *before; NULL: nothing), a paused one with its bytes.  Best effort. */
void sbx_quota_restore(struct sbx_redis *r, const char *tenant, const char *session,
		       const char *before);

/* The sandbox's idle timer paused it (`paused` 1, at unix second
 * `at_s`) or a use resumed it (0) on its own, below Redis: the reaper
 * learns it (the vtable's idle_notes) and the slot follows, unchecked,
 * since it has happened (a paused slot without bytes; a resume on use is
 * never refused, and may leave the tenant past its running quota until
 * something pauses).  A slot already so, or none, is left alone.  Best
 * effort, like sbx_quota_restore. */
void sbx_quota_follow(struct sbx_redis *r, const char *tenant, const char *session, int paused,
		      int64_t at_s);

/* Retention, in one round trip: *paused_at, when the session's sandbox
 * was paused by sbx (sbx-ctl pause), as the <prefix>:{T}:paused hash
 * keeps it (unix seconds, 0 = none; a resume, a new binding and an
 * unbinding drop it), and *retain_ms, the tenant's own retention (its
 * quota hash's retain_paused: 0 = kept for good, -1 = none: the
 * profile's applies).  0 / -1 err. */
int sbx_quota_retention(struct sbx_redis *r, const char *tenant, const char *session,
			int64_t *paused_at, int64_t *retain_ms, struct sbx_err *err);

/* What a tenant uses and may use (sbx-ls --usage): running counts the
 * pending slots; limit is the effective quota (-1 = none) and which_*
 * says where each limit comes from ("tenant", "profile", "none"). */
struct sbx_usage {
	int64_t running, sandboxes, pending, paused_bytes;
	struct sbx_quota limit;
	const char *from_running, *from_sandboxes, *from_paused_bytes;
	int64_t retain_ms;         /* the retention in force; <= 0: kept for good */
	const char *from_retain;
};
/* retain_ms: the profile's retain_paused (0 = none). */
int sbx_quota_usage(struct sbx_redis *r, const struct sbx_quota *q, int64_t retain_ms,
		    const char *tenant, struct sbx_usage *u, struct sbx_err *err);
/* Its document: {"running": {"used", "limit" (null = none), "from"},
 * "sandboxes": {...}, "paused_bytes": {...}, "pending": N, "retain_paused": {"seconds" (null:
 * kept for good), "from"}}. */
json_object *sbx_usage_json(const struct sbx_usage *u);

/* sbx-ctl quota: set the tenant's own limits, and its retention
 * (retain_ms: 0 = kept for good).  A value that is SBX_QUOTA_KEEP is left
 * as it is, SBX_QUOTA_PROFILE removes the tenant's value (the profile's
 * applies again), -1 means no limit, >= 0 a limit. */
#define SBX_QUOTA_KEEP (-3)
#define SBX_QUOTA_PROFILE (-2)
int sbx_quota_set(struct sbx_redis *r, const char *tenant, const struct sbx_quota *set,
		  int64_t retain_ms, struct sbx_err *err);

#endif
