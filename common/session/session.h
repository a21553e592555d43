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
 * resolve:before-bind, resolve:after-bind.  Inside each destructive window,
 * right before the lock is verified for the backend delete
 * (sbx_session_remove): resolve:before-rebuild-delete,
 * resolve:before-duplicate-delete, resolve:before-cleanup-delete, and the
 * reaper's reap:before-delete, reap:before-retire-delete and
 * reap:before-expire-delete. */
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
	/* A fork (fork.c): the session must have no binding yet (else
	 * conflict), and its sandbox is created from this snapshot, not the
	 * tenant's image; no leftover sandbox of the session is claimed.
	 * NULL: a plain resolve. */
	const char *fork_snapshot;
};

/* Resolve the session's sandbox (see resolve.c for the contract).  *how is
 * "bound", "claimed", "created" or "rebuilt" (static string). */
int sbx_session_resolve(struct sbx_backend *b, struct sbx_redis *r,
			const struct sbx_resolve_req *req, struct sbx_sandbox *out,
			const char **how, struct sbx_err *err);

struct sbx_lock;

/* The one way a lock holder deletes a session's sandbox: test point
 * `point` (fault.h: a test freezes the holder there, inside the window
 * between its decision and the delete), then sbx_lock_verify (token and
 * fence, one round trip, the lock extended to a whole TTL), then the
 * backend's remove.  A holder paused past its TTL, or whose lock a
 * failover lost, therefore never deletes what the next holder may be
 * using.  Returns 0 deleted (*gone: the backend had it no more), -1 with
 * err: conflict "lock ownership lost" (nothing was deleted, and
 * sbx_lock_check fails from now on), Redis's error (nothing was deleted),
 * or the backend's. */
int sbx_session_remove(struct sbx_backend *b, struct sbx_lock *l, const char *id,
		       const char *point, int *gone, struct sbx_err *err);

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
 * "locked", "bound", "binding-unreadable", or "lock-lost": the lock went while the
 * reaper held it, see sbx_session_remove), -1 with err. */
enum sbx_end { SBX_END_KILL, SBX_END_ORPHAN };
/* Retire a bound session whose sandbox has been idle longer than idle_ms
 * (sbx-reap --retire-idle): under the session's lifecycle lock (tried
 * once), only while the binding still names sb, and only if the backend,
 * asked again under the lock, still reports it idle that long; then the
 * sandbox is deleted and the binding, its bound-set member and its fence
 * counter go in one fenced script (sbx_binding_end).  Returns 1 retired,
 * 0 kept (*why: "locked", "rebound", "active", "idle-unknown", "lock-lost"),
 * -1 err.  Test point reap:before-retire-delete. */
int sbx_session_retire(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		       int64_t idle_ms, int *gone, const char **why, struct sbx_err *err);
int sbx_session_end(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		    enum sbx_end how, int *gone, const char **why, struct sbx_err *err);
/* Retention (the tenant's own retain_paused, set by sbx-ctl quota, else
 * the profile's): until when a paused session sandbox is kept, in unix
 * seconds: its pause by sbx (quota.h, sbx_quota_retention), else its last
 * use (a pause by its own idle timer), plus the retention.  One round trip
 * for a paused session sandbox, none for any other.  1 with *until; 0 when it is kept for good
 * (no retention, not paused, no session, no time known); -1 err. */
int sbx_session_retain_until(struct sbx_backend *b, struct sbx_redis *r,
			     const struct sbx_sandbox *sb, int64_t *until, struct sbx_err *err);
/* Hibernation (the profile's hibernate_paused): when a paused session
 * sandbox is hibernated, in unix seconds, by the retention's clock (its
 * pause by sbx, else its last use) plus the profile's hibernate_paused.
 * 1 with *when; 0 when never (no such tier, not paused, hibernated
 * already, no session, no time known); -1 err. */
int sbx_session_hibernate_at(struct sbx_backend *b, struct sbx_redis *r,
			     const struct sbx_sandbox *sb, int64_t *when, struct sbx_err *err);
/* End a paused session sandbox past its retention (sbx-reap), as
 * sbx_session_retire ends an idle one: under the session's lock (tried
 * once), only while the binding still names sb and a fresh look finds it
 * still paused and past its retention; the sandbox is deleted, then the
 * binding, its slots and its fence counter go in one fenced script, and
 * the event is killed why=retention.  1 ended, 0 kept (*why: "locked",
 * "rebound", "not-paused", "retained", "lock-lost"), -1 err.  Test point
 * reap:before-expire-delete. */
int sbx_session_expire(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_sandbox *sb,
		       int *gone, const char **why, struct sbx_err *err);
/* Whose session sandbox sb is (binding.h, sbx_binding_owner), looking a
 * bare handle's metadata up with the backend's get first.  1 / 0. */
int sbx_session_of(struct sbx_backend *b, struct sbx_sandbox *sb, const char **tenant,
		   const char **session);

#endif
