/* lifecycle.c - see lifecycle.h. */
#include "lifecycle.h"

#include "doc.h"
#include "events.h"
#include "metadata.h"
#include "quota.h"
#include "util.h"

static const struct sbx_quota no_quota = SBX_QUOTA_NONE_INIT;

/* The session of a sandbox (as sbx_binding_owner reads it): 1 when it has
 * a tenant and a session, so a quota slot (quota.h) may be its. */
static int session_of(const struct sbx_sandbox *sb, const char **t, const char **s)
{
	*t = sb->tenant && *sb->tenant ? sb->tenant : sbx_json_str(sb->metadata, SBX_MD_TENANT);
	*s = sb->session && *sb->session ? sb->session : sbx_json_str(sb->metadata, SBX_MD_SESSION);
	return *t && **t && *s && **s;
}

/* The backend's call went through (rc 0): the event of a command. */
static int commanded(int rc, struct sbx_redis *r, struct sbx_sandbox *sb, const char *type)
{
	if (rc < 0)
		return -1;
	sbx_event_sandbox(r, sb, type, NULL, "command", NULL);
	return 0;
}

/* A paused session sandbox keeps its slot in the sandboxes quota, frees
 * its running one and holds the bytes its backend measured, against the
 * paused_bytes quota (quota.h).  Measure, check and mark come before the
 * backend's pause, so a pause the quota refuses leaves the sandbox
 * running; a pause that then fails puts the slot back (*slot > 0: the
 * caller's sbx_quota_restore with *t, *s and *before).  What the sandbox
 * writes between the measure and the freeze is not counted (the freeze
 * follows at once; measuring a frozen sandbox would mean a freeze and a
 * thaw for a refused pause).  No quota (r NULL, not a session): *slot 0. */
static int quota_pause(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
		       const char **t, const char **s, char **before, int *slot, struct sbx_err *err)
{
	*slot = 0;
	if (!r || !session_of(sb, t, s))
		return 0;
	int64_t bytes = -1;
	if (b->ops->paused_bytes && b->ops->paused_bytes(b, sb, &bytes, err) < 0)
		return -1;
	*slot = sbx_quota_pause(r, b->profile ? &b->profile->quota : &no_quota, *t, *s, bytes,
				before, err);
	return *slot < 0 ? -1 : 0;
}

int sbx_lifecycle_pause(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			struct sbx_err *err)
{
	const char *t = NULL, *s = NULL;
	SBX_AUTOFREE char *before = NULL;
	int slot;
	if (quota_pause(b, r, sb, &t, &s, &before, &slot, err) < 0)
		return -1;
	if (commanded(sbx_call(b, pause, err, sb), r, sb, "paused") < 0) {
		if (slot > 0)
			sbx_quota_restore(r, t, s, before);
		return -1;
	}
	return 0;
}

/* A running session sandbox takes the paused side of its quota as a
 * pause does; a paused one has it already. */
int sbx_lifecycle_hibernate(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			    unsigned flags, const char *why, struct sbx_err *err)
{
	const char *t = NULL, *s = NULL;
	SBX_AUTOFREE char *before = NULL;
	int slot = 0;
	if (sbx_backend_hibernate_check(b, err) < 0 ||
	    (sb->state == SBX_STATE_RUNNING && quota_pause(b, r, sb, &t, &s, &before, &slot, err) < 0))
		return -1;
	if (sbx_call(b, hibernate, err, sb, flags) < 0) {
		if (slot > 0)
			sbx_quota_restore(r, t, s, before);
		return -1;
	}
	sbx_event_sandbox(r, sb, "hibernated", NULL, why, NULL);
	return 0;
}

/* A session sandbox takes a running slot before it is thawed: over the
 * quota it stays paused (capacity, nothing done); a thaw that fails gives
 * the slot back. */
int sbx_lifecycle_resume(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			 struct sbx_err *err)
{
	const char *t, *s;
	SBX_AUTOFREE char *before = NULL;
	int slot = 0;
	if (r && session_of(sb, &t, &s)) {
		slot = sbx_quota_resume(r, b->profile ? &b->profile->quota : &no_quota, t, s,
					&before, err);
		if (slot < 0)
			return -1;
	}
	if (commanded(sbx_call(b, connect, err, sb), r, sb, "resumed") < 0) {
		if (slot > 0)
			sbx_quota_restore(r, t, s, before);
		return -1;
	}
	return 0;
}

int sbx_lifecycle_timeout(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			  struct sbx_timeout_policy *t, struct sbx_err *err)
{
	if (t->on_timeout_hibernate && sbx_backend_hibernate_check(b, err) < 0)
		return sbx_err_prefix(err, "--on-timeout hibernate"), -1;
	if (sbx_call(b, set_timeout, err, sb, t) < 0)
		return -1;
	json_object *d = json_object_new_object();
	sbx_json_set_int(d, "seconds", t->seconds);
	sbx_json_set_str(d, "on_timeout", sbx_on_timeout_word(t->on_timeout_pause, t->on_timeout_hibernate));
	if (t->auto_resume >= 0)
		sbx_json_set_bool(d, "auto_resume", t->auto_resume);
	sbx_event_sandbox(r, sb, "timeout", NULL, "command", d);
	json_object_put(d);
	return 0;
}
