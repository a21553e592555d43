/* session-end.c - when a session sandbox is deleted, and when its binding
 * goes with it: the one session policy of sbx-ctl kill and the reaper
 * (see session.h, sbx_session_end).
 *
 * Promises: a kill never leaves a binding naming the sandbox it deleted
 * (compare-and-delete after the delete, so a binding that moved on to
 * another sandbox meanwhile is kept); an orphan is deleted only under its
 * session's lifecycle lock, after the binding and the bound set were read
 * again under that lock, so a resolve can never bind a sandbox that is
 * being deleted as an orphan. */
#include "session.h"

#include <string.h>

#include "binding.h"
#include "doc.h"
#include "fault.h"
#include "lock.h"
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

/* An orphan of a session: deleted under the session's lock, tried once. */
static int end_orphan(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		      const char *tenant, const char *session, int *gone, const char **why,
		      struct sbx_err *err)
{
	struct sbx_lock *l = NULL;
	struct sbx_err e = {0};
	if (sbx_lock_acquire(r, tenant, strlen(tenant), session, strlen(session), 0, &l, &e) < 0) {
		if (e.kind != SBX_CONFLICT) {
			*err = e;
			return -1;
		}
		*why = "locked";      /* someone is working on the session */
		return 0;
	}
	int rc = sbx_binding_holds(r, l, tenant, session, sb->id, why, err);
	if (rc == 0 && sbx_lock_check(l, &e) < 0) {
		*why = "locked";
		rc = 1;
	}
	if (rc == 0) {
		sbx_fault("reap:before-delete");
		rc = sbx_call(b, remove, err, sb->id, gone) < 0 ? -1 : 2;
	}
	struct sbx_err ignored = {0};
	sbx_lock_release(l, &ignored);
	return rc < 0 ? -1 : rc == 2;
}

int sbx_session_end(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		    enum sbx_end how, int *gone, const char **why, struct sbx_err *err)
{
	const char *tenant, *session;
	int owned = sbx_binding_owner(sb, &tenant, &session);
	*gone = 0;
	*why = NULL;
	if (how == SBX_END_ORPHAN && owned)
		return end_orphan(b, r, sb, tenant, session, gone, why, err);
	if (sbx_call(b, remove, err, sb->id, gone) < 0)
		return -1;
	if (how == SBX_END_KILL && owned && r && sbx_binding_drop_for_sandbox(r, sb, err) < 0)
		return -1;
	return 1;
}
