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
 * snapshot's read-only layers: nothing writable. */
#include "checkpoint.h"

#include <stdlib.h>
#include <string.h>

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
	struct sbx_resolve_req rr = {
		.tenant = req->tenant, .session = req->session, .create = req->create,
		.lock_wait_ms = req->lock_wait_ms, .fork_snapshot = from->snapshot,
	};
	const char *how;
	if (sbx_session_resolve(b, r, &rr, out, &how, err) < 0) {
		sbx_checkpoint_clear(from);
		return -1;
	}
	return 0;
}
