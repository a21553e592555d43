/* session-end.c - when a session sandbox is deleted, and when its binding
 * goes with it: the one session policy of sbx-ctl kill and the reaper
 * (see session.h, sbx_session_end).
 *
 * Promises: a kill never leaves a binding naming the sandbox it deleted
 * (compare-and-delete after the delete, so a binding that moved on to
 * another sandbox meanwhile is kept); an orphan is deleted only under its
 * session's lifecycle lock, after the binding and the bound set were read
 * again under that lock, so a resolve can never bind a sandbox that is
 * being deleted as an orphan.  Every delete under a lock goes through
 * sbx_session_remove, which asks Redis for the lock's token and fence right
 * before it: a holder frozen past its TTL deletes nothing. */
#include "session.h"

#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "binding.h"
#include "doc.h"
#include "events.h"
#include "fault.h"
#include "keys.h"
#include "lock.h"
#include "quota.h"
#include "util.h"

int sbx_session_of(struct sbx_backend *b, struct sbx_sandbox *sb, const char **tenant,
		   const char **session)
{
	if (sbx_binding_owner(sb, tenant, session))
		return 1;
	if (sb->tenant || sbx_json_str(sb->metadata, SBX_MD_TENANT) || !b->ops->get)
		return 0;
	/* A bare handle (--id) does not say whose it is: ask the backend. */
	struct sbx_sandbox full = {0};
	struct sbx_err ignored = {0};
	if (b->ops->get(b, sb->id, &full, &ignored) == 0) {
		json_object_put(sb->metadata);
		sb->metadata = json_object_get(full.metadata);
	}
	sbx_sandbox_clear(&full);
	return sbx_binding_owner(sb, tenant, session);
}

int sbx_session_remove(struct sbx_backend *b, struct sbx_lock *l, const char *id,
		       const char *point, int *gone, struct sbx_err *err)
{
	char what[160];
	snprintf(what, sizeof(what), "deleting sandbox %s", id);
	*gone = 0;
	sbx_fault(point);
	if (sbx_lock_verify(l, what, err) < 0)
		return -1;
	return sbx_call(b, remove, err, id, gone);
}

/* The event of a delete (events.h), unless the backend had it no more:
 * then whoever removed it said so, or it ended on its own. */
static void killed(struct sbx_redis *r, const struct sbx_sandbox *sb, int gone, const char *why)
{
	if (!gone)
		sbx_event_sandbox(r, sb, "killed", NULL, why, NULL);
}

/* Kept rather than failed: a reaper that lost the session's lock leaves
 * the sandbox to whoever holds it now (the next run judges it again).
 * 1 when that is why sbx_session_remove failed (*why set), else 0. */
static int lost_lock(struct sbx_lock *l, const char **why)
{
	struct sbx_err e = {0};
	if (sbx_lock_check(l, &e) == 0)
		return 0;
	*why = "lock-lost";
	return 1;
}

/* The session's lock, tried once: 1 taken, 0 busy (*why "locked": someone
 * is working on the session), -1 err. */
static int lock_once(struct sbx_redis *r, const char *tenant, const char *session,
		     struct sbx_lock **l, const char **why, struct sbx_err *err)
{
	struct sbx_err e = {0};
	if (sbx_lock_acquire(r, tenant, strlen(tenant), session, strlen(session), 0, l, &e) == 0)
		return 1;
	if (e.kind != SBX_CONFLICT) {
		*err = e;
		return -1;
	}
	*why = "locked";
	return 0;
}

/* An orphan of a session: deleted under the session's lock, tried once. */
static int end_orphan(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		      const char *tenant, const char *session, int *gone, const char **why,
		      struct sbx_err *err)
{
	struct sbx_lock *l = NULL;
	int got = lock_once(r, tenant, session, &l, why, err);
	if (got <= 0)
		return got;
	int rc = sbx_binding_holds(r, l, tenant, session, sb->id, why, err);
	if (rc == 0) {
		if (sbx_session_remove(b, l, sb->id, "reap:before-delete", gone, err) == 0)
			rc = 2, killed(r, sb, *gone, "orphan");
		else
			rc = lost_lock(l, why) ? 1 : -1;
	}
	struct sbx_err ignored = {0};
	sbx_lock_release(l, &ignored);
	return rc < 0 ? -1 : rc == 2;
}

/* The clock of the paused tiers (retention, hibernation): when a paused
 * session sandbox's pause began, in unix seconds: sbx's own pause (the
 * quota's paused time), else its last use (a pause by its own idle
 * timer); *own is the tenant's own retention (-1: none).  1 with *at; 0
 * when not a paused session sandbox or no time is known; -1 err. */
static int paused_since(const struct sbx_sandbox *sb, struct sbx_redis *r, int64_t *at,
			int64_t *own, struct sbx_err *err)
{
	const char *tenant, *session;
	*at = 0;
	*own = -1;
	if (sb->state != SBX_STATE_PAUSED || !sbx_binding_owner(sb, &tenant, &session))
		return 0;
	if (sbx_ids_check(tenant, "session", session, err) < 0 ||
	    sbx_quota_retention(r, tenant, session, at, own, err) < 0)
		return -1;
	if (*at <= 0)
		*at = sb->active_at;
	return *at > 0;
}

int sbx_session_retain_until(struct sbx_backend *b, struct sbx_redis *r,
			     const struct sbx_sandbox *sb, int64_t *until, struct sbx_err *err)
{
	int64_t keep = b->profile ? b->profile->retain_paused_ms : 0, at, own;
	*until = 0;
	int rc = paused_since(sb, r, &at, &own, err);
	if (rc <= 0)
		return rc;
	if (own >= 0)
		keep = own;             /* the tenant's own tier (sbx-ctl quota) */
	if (keep <= 0)
		return 0;
	*until = at + (keep + 999) / 1000;
	return 1;
}

int sbx_session_hibernate_at(struct sbx_backend *b, struct sbx_redis *r,
			     const struct sbx_sandbox *sb, int64_t *when, struct sbx_err *err)
{
	int64_t after = b->profile ? b->profile->hibernate_paused_ms : 0, at, own;
	*when = 0;
	if (after <= 0 || !strcmp(sbx_sandbox_state(sb), "hibernated"))
		return 0;
	int rc = paused_since(sb, r, &at, &own, err);
	if (rc <= 0)
		return rc;
	*when = at + (after + 999) / 1000;
	return 1;
}

/* Under the lock: 1 with a fresh look at sb in *now when the lock's
 * binding still names it, 0 with *why "rebound" when not. */
static int fresh_bound(struct sbx_backend *b, struct sbx_lock *l, const struct sbx_sandbox *sb,
		       const char *tenant, const char *session, struct sbx_sandbox *now,
		       const char **why, struct sbx_err *err)
{
	struct sbx_binding bd = {0};
	struct sbx_err de = {0};
	int same = l->binding_raw && sbx_binding_decode(l->binding_raw, l->binding_len, tenant,
							session, &bd, &de) == 0 &&
		   !strcmp(bd.sandbox_id, sb->id);
	sbx_binding_clear(&bd);
	if (!same) {
		*why = "rebound";
		return 0;
	}
	return sbx_call(b, get, err, sb->id, now) < 0 ? -1 : 1;
}

/* What makes a reaper end a bound session's sandbox (sbx_session_retire,
 * sbx_session_expire): the check by a fresh look under the lock, the
 * fault point before the delete, and the killed event's why. */
struct end_rule {
	int64_t idle_ms;                 /* retire: idle at least this long */
	int expire;                      /* expire: paused past its retention */
	const char *fault, *event;
};

/* Under the lock: 1 when the rule still holds by a fresh look, 0 (with
 * *why) when not. */
static int still_due(struct sbx_backend *b, struct sbx_redis *r, struct sbx_lock *l,
		     const struct sbx_sandbox *sb, const char *tenant, const char *session,
		     const struct end_rule *rule, const char **why, struct sbx_err *err)
{
	struct sbx_sandbox now = {0};
	int rc = fresh_bound(b, l, sb, tenant, session, &now, why, err);
	if (rc <= 0)
		return rc;
	if (!rule->expire) {
		int64_t at = now.active_at;
		sbx_sandbox_clear(&now);
		*why = at <= 0 ? "idle-unknown" : sbx_now_ms() - at * 1000 < rule->idle_ms ? "active" : NULL;
		return *why ? 0 : 1;
	}
	if (!now.tenant && !now.metadata)
		now.metadata = json_object_get(sb->metadata);
	int64_t until = 0;
	rc = now.state != SBX_STATE_PAUSED ? 0 : sbx_session_retain_until(b, r, &now, &until, err);
	sbx_sandbox_clear(&now);
	if (rc < 0)
		return -1;
	*why = rc == 0 ? "not-paused" : until > sbx_now_ms() / 1000 ? "retained" : NULL;
	return *why ? 0 : 1;
}

/* The session's lock tried once, the rule checked again under it, then
 * sandbox first, binding second: a crash between leaves a binding to a
 * gone sandbox, which the next resolve drops. */
static int end_due(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		   const struct end_rule *rule, int *gone, const char **why, struct sbx_err *err)
{
	const char *tenant, *session;
	*gone = 0;
	*why = NULL;
	sbx_audit_drain(r, b, sb);      /* the record outlives the sandbox */
	if (!sbx_binding_owner(sb, &tenant, &session)) {
		*why = "not-a-session";
		return 0;
	}
	struct sbx_lock *l = NULL;
	int got = lock_once(r, tenant, session, &l, why, err);
	if (got <= 0)
		return got;
	int rc = still_due(b, r, l, sb, tenant, session, rule, why, err);
	if (rc == 1 && sbx_session_remove(b, l, sb->id, rule->fault, gone, err) < 0)
		rc = lost_lock(l, why) ? 0 : -1;
	if (rc == 1 && sbx_binding_end(r, l, tenant, session, sb->id, err) < 0)
		rc = -1;
	if (rc == 1)
		killed(r, sb, *gone, rule->event);
	struct sbx_err ignored = {0};
	sbx_lock_release(l, &ignored);
	return rc;
}

int sbx_session_retire(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		       int64_t idle_ms, int *gone, const char **why, struct sbx_err *err)
{
	const struct end_rule rule = {.idle_ms = idle_ms, .fault = "reap:before-retire-delete",
				      .event = "retired"};
	return end_due(b, r, sb, &rule, gone, why, err);
}

int sbx_session_expire(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		       int *gone, const char **why, struct sbx_err *err)
{
	const struct end_rule rule = {.expire = 1, .fault = "reap:before-expire-delete",
				      .event = "retention"};
	return end_due(b, r, sb, &rule, gone, why, err);
}

int sbx_session_end(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		    enum sbx_end how, int *gone, const char **why, struct sbx_err *err)
{
	const char *tenant, *session;
	int owned = sbx_binding_owner(sb, &tenant, &session);
	*gone = 0;
	*why = NULL;
	sbx_audit_drain(r, b, sb);      /* the record outlives the sandbox */
	if (how == SBX_END_ORPHAN && owned)
		return end_orphan(b, r, sb, tenant, session, gone, why, err);
	if (sbx_call(b, remove, err, sb->id, gone) < 0)
		return -1;
	if (how == SBX_END_KILL && owned && r && sbx_binding_drop_for_sandbox(r, sb, err) < 0)
		return -1;
	killed(r, sb, *gone, how == SBX_END_KILL ? "command" : "orphan");
	return 1;
}
