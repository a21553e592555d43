/* session.h - one session = one sandbox, across turns, processes, hosts
 * and crashes (DESIGN §6).  Implemented in resolve.c on top of binding.c,
 * lock.c, lease.c and image.c.
 *
 * Test hooks (environment): SBX_FAULT=<point> kills the process with
 * SIGKILL at a named point (fault.h); SBX_STOP=<point> stops it with
 * SIGSTOP there instead (for fencing tests: the holder is frozen while its
 * lock expires).  Points, in order: resolve:after-lock,
 * resolve:during-rebuild (old sandbox deleted, binding not yet),
 * resolve:before-create (claim found nothing), resolve:after-backend-create,
 * resolve:before-bind, resolve:after-bind. */
#ifndef SBX_SESSION_H
#define SBX_SESSION_H

#include <stdint.h>

#include "backend.h"
#include "metadata.h"
#include "redis.h"

struct sbx_resolve_req {
	const char *tenant;
	const char *session;                 /* NULL with skill_image */
	int skill_image;                     /* installer: start from the tenant's image, no binding */
	const struct sbx_create_req *create; /* options for a sandbox that must be created (may be NULL) */
	/* Added by the sessions work: how long to wait for the session's
	 * lifecycle lock.  0 = $SBX_LOCK_WAIT, else 90 s; < 0 = try once
	 * (busy is a conflict, exit 75). */
	int64_t lock_wait_ms;
};

/* Resolve the session's sandbox (see resolve.c for the contract).  *how is
 * "bound", "claimed", "created" or "rebuilt" (static string). */
int sbx_session_resolve(struct sbx_backend *b, struct sbx_redis *r,
			const struct sbx_resolve_req *req, struct sbx_sandbox *out,
			const char **how, struct sbx_err *err);

/* When a session sandbox ends (session-end.c), the one policy of sbx-ctl
 * kill and the reaper:
 *   SBX_END_KILL    the sandbox is deleted (one already gone is success);
 *                   then, if it is a session's (sbx_session_of) and r is
 *                   given, the session's binding goes if it still names it
 *                   (compare-and-delete, no lock: a kill never waits for a
 *                   turn, and a binding that moved on is kept);
 *   SBX_END_ORPHAN  a session's sandbox is deleted only under the session's
 *                   lifecycle lock (tried once) and only when neither the
 *                   binding nor the bound set names it, so the binding is
 *                   never dropped; a sandbox of no session (an installer)
 *                   is simply deleted.  SBX_FAULT point reap:before-delete
 *                   sits inside the lock, right before the delete.
 * Returns 1 deleted (*gone: the backend had it no more), 0 kept (*why:
 * "locked", "bound" or "binding-unreadable"), -1 with err. */
enum sbx_end { SBX_END_KILL, SBX_END_ORPHAN };
int sbx_session_end(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		    enum sbx_end how, int *gone, const char **why, struct sbx_err *err);
/* Whose session sandbox sb is (binding.h, sbx_binding_owner), looking a
 * bare handle's metadata up with the backend's get first.  1 / 0. */
int sbx_session_of(struct sbx_backend *b, struct sbx_sandbox *sb, const char **tenant,
		   const char **session);

#endif
