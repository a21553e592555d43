/* rewind.c - a session rewound to one of its checkpoints (checkpoint.h,
 * sbx_session_rewind).
 *
 * Promise: the session is never without a bound sandbox and never bound
 * to two.  The order is the reason: the new sandbox is created first
 * (owned like the old one, so a crash here leaves an unbound sandbox of
 * the session that the reaper deletes), then the binding moves to it in
 * one fenced script (the old id leaves the bound set as the new one
 * enters), then the old sandbox is deleted after the lock is verified (a
 * crash before leaves the old one unbound: the reaper's too).  Every step
 * is under the session's lifecycle lock, so no resolve, rebuild or
 * checkpoint of the session runs in between.  Processes and memory are
 * not brought back: the new sandbox starts from the checkpoint's files. */
#include "checkpoint.h"

#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "doc.h"
#include "events.h"
#include "fault.h"
#include "grant.h"
#include "keys.h"
#include "keyspace.h"
#include "lease.h"
#include "lock.h"
#include "metadata.h"
#include "session.h"
#include "util.h"

static void event(struct sbx_redis *r, const struct sbx_rewind_req *q, const char *type,
		  const char *sandbox, const char *why)
{
	struct sbx_event ev = {.type = type, .tenant = q->tenant, .session = q->session,
			       .sandbox = sandbox, .why = why};
	sbx_event_emit(r, &ev);
}

/* No other turn may be in flight: a rewind under a running turn would
 * pull its sandbox away mid-command.  The caller's own reference
 * (in_turn) is allowed.  A lease that cannot be read refuses too. */
static int check_turn(struct sbx_redis *r, const struct sbx_rewind_req *q, struct sbx_err *err)
{
	struct sbx_turn t;
	if (sbx_turn_state(r, q->tenant, q->session, &t, err) < 0)
		return -1;
	if (t.refs > (q->in_turn ? 1 : 0))
		return sbx_fail(err, SBX_CONFLICT, "rewind",
				"a turn is in flight on session %s (%lld lease reference%s): rewind "
				"between turns, or from the turn that holds the lease with --in-turn",
				q->session, t.refs, t.refs == 1 ? "" : "s");
	return 0;
}

/* The new sandbox's metadata: the old one's (labels, ownership), with the
 * ownership keys set again as a resolve sets them. */
static int owned_like(struct sbx_redis *r, const struct sbx_backend *b,
		      const struct sbx_rewind_req *q, const struct sbx_sandbox *old,
		      json_object **md, struct sbx_err *err)
{
	char ks[SBX_KEYSPACE_LEN + 1], run[17];
	if (sbx_keyspace_id(r, ks, err) < 0 || sbx_random_hex(run, 8, err) < 0)
		return -1;
	*md = json_object_new_object();
	if (old->metadata) {
		json_object_object_foreach(old->metadata, k, v)
			json_object_object_add(*md, k, json_object_get(v));
	}
	sbx_json_set_str(*md, SBX_MD_MANAGED, "1");
	sbx_json_set_str(*md, SBX_MD_TENANT, q->tenant);
	sbx_json_set_str(*md, SBX_MD_SESSION, q->session);
	sbx_json_set_str(*md, SBX_MD_PROFILE,
			 b->profile && b->profile->name ? b->profile->name : "default");
	sbx_json_set_str(*md, SBX_MD_KEYSPACE, ks);
	sbx_json_set_str(*md, SBX_MD_CREATED_BY, run);
	sbx_json_set_str(*md, SBX_MD_BINDING_VERSION, "1");
	return 0;
}

/* The binding moved nowhere: the new sandbox is ours alone, deleted if
 * the lock still holds (else the reaper's). */
static void drop_new(struct sbx_backend *b, struct sbx_lock *l, const char *id)
{
	struct sbx_err e = {0};
	int gone = 0;
	if (!l->tk.lost)
		sbx_session_remove(b, l, id, "rewind:before-cleanup-delete", &gone, &e);
}

static int rewind_locked(struct sbx_backend *b, struct sbx_redis *r, struct sbx_lock *l,
			 const struct sbx_rewind_req *q, struct sbx_sandbox *out,
			 struct sbx_checkpoint *used, char **old_id, struct sbx_err *err)
{
	struct sbx_binding bd;
	struct sbx_sandbox old;
	if (sbx_session_bound(b, l, q->tenant, q->session, &bd, &old, err) < 0)
		return -1;
	int rc = check_turn(r, q, err);
	if (rc == 0)
		rc = sbx_checkpoint_find(r, q->tenant, q->session, q->to, used, err);
	/* What the session's create was granted (its binding's), else the
	 * profile's defaults; its volumes mounted again. */
	struct sbx_grant_req g = {0};
	if (rc == 0)
		rc = sbx_grant_request(b, r, q->tenant, bd.grant, 1, &g, err);
	g.cr.template_id = used->snapshot;
	if (rc == 0)
		rc = owned_like(r, b, q, &old, &g.cr.metadata, err);
	struct sbx_sandbox nsb = {0};
	if (rc == 0) {
		rc = sbx_backend_create(b, &g.cr, &nsb, err);
		json_object_put(g.cr.metadata);
		g.cr.metadata = NULL;
	}
	/* Its volumes' users: a failed attach removes the sandbox again. */
	if (rc == 0 && g.nvolumes &&
	    (rc = sbx_vol_attach_all(b, r, q->tenant, g.mounts, g.nvolumes, nsb.id, err)) < 0)
		sbx_sandbox_clear(&nsb);
	sbx_grant_req_clear(&g);
	if (rc == 0) {
		event(r, q, "created", nsb.id, "rewind");
		sbx_fault("rewind:created");
		char *from = bd.sandbox_id, *tpl = bd.template_id;
		bd.sandbox_id = nsb.id;
		bd.template_id = used->snapshot;
		bd.created_at = nsb.created_at > 0 ? nsb.created_at : sbx_now_ms() / 1000;
		bd.stale_at = 0;
		rc = sbx_binding_move(r, l, from, &bd, err);
		bd.sandbox_id = from;
		bd.template_id = tpl;
		if (rc == 0)
			rc = sbx_fail(err, SBX_CONFLICT, "rewind",
				      "the session's binding changed during the rewind");
		if (rc < 0)
			drop_new(b, l, nsb.id);
	}
	if (rc > 0) {
		sbx_fault("rewind:bound");
		/* Rewound.  A failed delete leaves the old sandbox unbound, for
		 * the reaper: the session is not harmed by it. */
		int gone = 0;
		struct sbx_err e = {0};
		if (sbx_session_remove(b, l, old.id, "rewind:before-delete", &gone, &e) == 0 && !gone)
			event(r, q, "killed", old.id, "rewind");
		*old_id = sbx_xstrdup(old.id);
		if (!nsb.tenant)
			nsb.tenant = sbx_xstrdup(q->tenant);
		if (!nsb.session)
			nsb.session = sbx_xstrdup(q->session);
		*out = nsb;
		rc = 0;
	} else {
		sbx_sandbox_clear(&nsb);
		sbx_checkpoint_clear(used);
		rc = -1;
	}
	sbx_sandbox_clear(&old);
	sbx_binding_clear(&bd);
	return rc;
}

int sbx_session_rewind(struct sbx_backend *b, struct sbx_redis *r,
		       const struct sbx_rewind_req *q, struct sbx_sandbox *out,
		       struct sbx_checkpoint *used, char **old_id, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	memset(used, 0, sizeof(*used));
	*old_id = NULL;
	if (sbx_ids_check(q->tenant, "session", q->session, err) < 0)
		return -1;
	if (!q->to || !*q->to)
		return sbx_fail(err, SBX_INVALID_REQUEST, "rewind", "no checkpoint to rewind to");
	struct sbx_lock *l;
	if (sbx_lock_acquire(r, q->tenant, strlen(q->tenant), q->session, strlen(q->session),
			     sbx_lock_wait_ms(90000), &l, err) < 0)
		return -1;
	int rc = rewind_locked(b, r, l, q, out, used, old_id, err);
	struct sbx_err rel = {0};
	if (sbx_lock_release(l, &rel) < 0 && rc == 0 && rel.kind == SBX_CONFLICT) {
		/* The move was fenced and held; nobody can vouch for after. */
		sbx_sandbox_clear(out);
		sbx_checkpoint_clear(used);
		free(*old_id);
		*old_id = NULL;
		*err = rel;
		return -1;
	}
	return rc;
}
