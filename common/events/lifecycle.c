/* lifecycle.c - see lifecycle.h. */
#include "lifecycle.h"

#include "doc.h"
#include "events.h"
#include "metadata.h"
#include "quota.h"

static const struct sbx_quota no_quota = {.running = -1, .sandboxes = -1};

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

/* A paused session sandbox keeps its slot in the sandboxes quota and
 * frees its running one (quota.h); a failed mark is counted like a lost
 * event, the pause stands. */
int sbx_lifecycle_pause(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			struct sbx_err *err)
{
	if (commanded(sbx_call(b, pause, err, sb), r, sb, "paused") < 0)
		return -1;
	const char *t, *s;
	struct sbx_err e = {0};
	if (r && session_of(sb, &t, &s) && sbx_quota_mark(r, t, s, "paused", &e) < 0)
		sbx_events_lost(&e);
	return 0;
}

/* A session sandbox takes a running slot before it is thawed: over the
 * quota it stays paused (capacity, nothing done); a thaw that fails gives
 * the slot back. */
int sbx_lifecycle_resume(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			 struct sbx_err *err)
{
	const char *t, *s;
	int slot = 0;
	if (r && session_of(sb, &t, &s)) {
		slot = sbx_quota_resume(r, b->profile ? &b->profile->quota : &no_quota, t, s, err);
		if (slot < 0)
			return -1;
	}
	if (commanded(sbx_call(b, connect, err, sb), r, sb, "resumed") < 0) {
		struct sbx_err e = {0};
		if (slot > 0)
			sbx_quota_mark(r, t, s, "paused", &e);
		return -1;
	}
	return 0;
}

int sbx_lifecycle_timeout(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
			  struct sbx_timeout_policy *t, struct sbx_err *err)
{
	if (sbx_call(b, set_timeout, err, sb, t) < 0)
		return -1;
	json_object *d = json_object_new_object();
	sbx_json_set_int(d, "seconds", t->seconds);
	sbx_json_set_str(d, "on_timeout", t->on_timeout_pause ? "pause" : "kill");
	if (t->auto_resume >= 0)
		sbx_json_set_bool(d, "auto_resume", t->auto_resume);
	sbx_event_sandbox(r, sb, "timeout", NULL, "command", d);
	json_object_put(d);
	return 0;
}
