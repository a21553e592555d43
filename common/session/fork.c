/* fork.c - a new session that starts from another one's files (issue 32;
 * sbx-create --tenant T --session S2 --fork S1 [--at N|LABEL]).
 *
 * The source's state is a checkpoint of it: checkpoint `at` of its
 * history, or, without `at`, one taken now (labelled "fork:S2", so the
 * source's history shows where it was forked and its retention keeps the
 * snapshot's lifetime with the others).  The new session is then resolved
 * with that snapshot (sbx_resolve_req.fork_snapshot): under its own
 * lifecycle lock, refused when it has a sandbox already, created from the
 * snapshot and bound as any session's, with every crash promise of
 * resolve.c (a sandbox created and not bound carries the new session's
 * ownership: the reaper removes it).  The two sessions share only the
 * snapshot's read-only layers: nothing writable.
 *
 * Its sandbox is made with what the source session's create was granted
 * (the source binding's grant, grant.h: environment, limits, idle timer,
 * network), its read-only volumes mounted and none of its writable ones;
 * the caller's request counts only when the source's binding records no
 * grant (an older binding, or a source without a sandbox now). */
#include "checkpoint.h"

#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "grant.h"
#include "session.h"
#include "util.h"

int sbx_session_fork(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_fork_req *req,
		     struct sbx_sandbox *out, struct sbx_checkpoint *from, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	memset(from, 0, sizeof(*from));
	if (!req->tenant || !req->session || !req->from)
		return sbx_fail(err, SBX_INVALID_REQUEST, "fork", "a fork needs a tenant, a session and its source");
	if (!strcmp(req->session, req->from))
		return sbx_fail(err, SBX_INVALID_REQUEST, "fork", "a session cannot be forked into itself");
	int rc;
	if (req->at) {
		rc = sbx_checkpoint_find(r, req->tenant, req->from, req->at, from, err);
	} else {
		SBX_AUTOFREE char *label = sbx_xasprintf("fork:%.240s", req->session);
		rc = sbx_checkpoint_take(b, r, req->tenant, req->from, label, from, err);
	}
	if (rc < 0)
		return -1;
	struct sbx_binding src = {0};
	struct sbx_grant_req g = {0};
	int has = sbx_binding_get(r, req->tenant, req->from, &src, err);
	if (has > 0 && src.grant)
		rc = sbx_grant_request(b, r, req->tenant, src.grant, 0, &g, err);
	if (has > 0)
		sbx_binding_clear(&src);
	if (has < 0 || rc < 0) {
		sbx_grant_req_clear(&g);
		sbx_checkpoint_clear(from);
		return -1;
	}
	struct sbx_resolve_req rr = {
		.tenant = req->tenant, .session = req->session,
		.create = g.grant ? &g.cr : req->create,
		.lock_wait_ms = req->lock_wait_ms, .fork_snapshot = from->snapshot,
	};
	const char *how;
	rc = sbx_session_resolve(b, r, &rr, out, &how, err);
	/* Its volumes' users: a failed attach removes the sandbox again
	 * (its binding is dropped with it, as an end of the session). */
	if (rc == 0 && g.nvolumes &&
	    (rc = sbx_vol_attach_all(b, r, req->tenant, g.mounts, g.nvolumes, out->id, err)) < 0)
		sbx_sandbox_clear(out);
	sbx_grant_req_clear(&g);
	if (rc < 0) {
		sbx_checkpoint_clear(from);
		return -1;
	}
	return 0;
}
