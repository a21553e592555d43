/* binding.h - session bindings: which sandbox a (tenant, session) owns.
 *
 * A binding is one JSON string at <prefix>:{T}:sess:S:binding, written with
 * SET NX and no TTL (a paused sandbox's binding must outlive any TTL):
 *
 *   {"version":1,"backend":"local","tenant":"T","session":"S",
 *    "sandbox_id":"...","template":"...","created_at":"2026-...Z",
 *    "fence":7,"profile":"default"[,"stale_at":"2026-...Z"][,"grant":{...}]}
 *
 * Decoding is strict: a wrong version, a missing field, or a tenant/session
 * that differs from the key's is an error (fail closed), never "absent".
 *
 * The tenant's bound set <prefix>:{T}:bound holds exactly the sandbox ids of
 * its bindings: every script that creates or deletes a binding updates the
 * set in the same script (one slot, atomic).  The reaper trusts it.
 *
 * Writes made under the lifecycle lock pass the lock (token + fence); the
 * scripts refuse them when the lock no longer holds the token or the fence
 * counter moved on (conflict "lock ownership lost"). */
#ifndef SBX_BINDING_H
#define SBX_BINDING_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "err.h"
#include "lock.h"
#include "redis.h"

#define SBX_BINDING_VERSION 1

struct sbx_binding {
	int version;
	char *backend;
	char *tenant;
	char *session;
	char *sandbox_id;
	char *template_id;
	char *profile;
	int64_t created_at;      /* unix seconds */
	int64_t fence;           /* the fence of the lock holder that wrote it */
	int64_t stale_at;        /* unix seconds; 0 = not stale */
	char *host;              /* host-local backends: the host id holding the
				  * sandbox (host.h); NULL otherwise (optional field) */
	json_object *grant;      /* what the session's create was granted (grant.h),
				  * owned; NULL: none recorded (optional field) */
};

void sbx_binding_clear(struct sbx_binding *b);
/* The document shape of a binding (sbx-lease show), added to `o`
 * (replacing): {sandbox_id, backend, profile, template, fence, created_at,
 * stale_at (when stale)}, times in ISO-8601.  Not the stored form
 * (sbx_binding_encode), which keeps unix seconds and the owner's ids. */
void sbx_binding_json(const struct sbx_binding *b, json_object *o);
/* JSON text (malloc'd). */
char *sbx_binding_encode(const struct sbx_binding *b);
/* Strict decode; tenant/session must equal the expected ones. */
int sbx_binding_decode(const char *raw, size_t len, const char *tenant, const char *session,
		       struct sbx_binding *out, struct sbx_err *err);

/* Read without the lock: 1 and *out / 0 when absent / -1 (malformed too). */
int sbx_binding_get(struct sbx_redis *r, const char *tenant, const char *session,
		    struct sbx_binding *out, struct sbx_err *err);

/* Under the lock: bind b (SET NX, no TTL) and add its sandbox to the bound
 * set, in one script.  b->fence is set to the lock's fence.  Returns 1 when
 * bound, 0 when a binding already existed (decoded into *existing, which may
 * be NULL), -1 on error (conflict when the lock was lost: nothing written). */
int sbx_binding_create(struct sbx_redis *r, struct sbx_lock *lock, struct sbx_binding *b,
		       struct sbx_binding *existing, struct sbx_err *err);
/* Under the lock: replace the session's binding, if it names `from_id`,
 * by b (its sandbox_id the new one; b->fence set to the lock's), and swap
 * the ids in the bound set, in one fenced script (sbx_session_rewind).
 * 1 moved, 0 the binding names another sandbox or none, -1 error
 * (conflict when the lock was lost: nothing written). */
int sbx_binding_move(struct sbx_redis *r, struct sbx_lock *lock, const char *from_id,
		     struct sbx_binding *b, struct sbx_err *err);
/* Delete the session's binding if it names sandbox_id, and remove the id
 * from the bound set, in one script.  lock may be NULL (no fencing: used
 * by sbx-ctl kill).  1 deleted, 0 no match, -1 error. */
int sbx_binding_delete_if_match(struct sbx_redis *r, struct sbx_lock *lock, const char *tenant,
				const char *session, const char *sandbox_id, struct sbx_err *err);
/* The same when the session is over (sandbox deleted for good: sbx-ctl
 * kill, sbx-reap --retire-idle): the session's fence counter is deleted in
 * the same script, so an ended session leaves no key behind (binding.c says
 * why fencing stays whole). */
int sbx_binding_end(struct sbx_redis *r, struct sbx_lock *lock, const char *tenant,
				const char *session, const char *sandbox_id, struct sbx_err *err);
/* Under the lock: set stale_at = now on the binding if it still names
 * b->sandbox_id and is not stale yet.  1 marked, 0 not (changed or already
 * stale), -1 error. */
int sbx_binding_mark_stale(struct sbx_redis *r, struct sbx_lock *lock,
			   const struct sbx_binding *b, int64_t now, struct sbx_err *err);

/* Whose session sandbox `sb` is: tenant and session from the handle, else
 * from its sbx.tenant / sbx.session metadata (borrowed from sb).  1 when
 * both are there, 0 when it is no session's. */
int sbx_binding_owner(const struct sbx_sandbox *sb, const char **tenant, const char **session);

/* After `sb` was deleted (session.h, sbx_session_end): if it is a session
 * sandbox and the session's binding names it, delete the binding and drop
 * the id from the bound set (compare-and-delete; no lock needed).  Returns
 * 1 when a binding was removed, 0 when there was none for it, -1 on a
 * Redis error. */
int sbx_binding_drop_for_sandbox(struct sbx_redis *r, const struct sbx_sandbox *sb,
				 struct sbx_err *err);

/* Under the session's lock: whether its binding (as the lock read it) or
 * the tenant's bound set names sandbox `id`.  1 with *why ("bound", or
 * "binding-unreadable": a binding that cannot be decoded keeps every
 * sandbox, fail closed), 0 when neither does, -1 on a Redis error. */
int sbx_binding_holds(struct sbx_redis *r, struct sbx_lock *lock, const char *tenant,
		      const char *session, const char *id, const char **why, struct sbx_err *err);

/* The reaper's view of the bound sets, in O(probes / SBX_CENSUS_BATCH)
 * round trips whatever the number of bindings: each tenant's bound-set
 * size (SCARD, into members) and, per probe, whether its sandbox id is in
 * its tenant's bound set (SISMEMBER) and whether its session's lock is
 * held (EXISTS).  A reply of the wrong type (a bound set that is not a
 * set) fails the call with internal; the connection stays usable. */
#define SBX_CENSUS_BATCH 512
struct sbx_bound_tenant {
	const char *name;
	size_t len;
	long members;              /* out */
};
struct sbx_bound_probe {
	size_t t;                  /* index into the tenants */
	const char *session;
	size_t slen;
	const char *id;
	int bound, locked;         /* out */
};
int sbx_bound_census(struct sbx_redis *r, struct sbx_bound_tenant *ts, size_t nt,
		     struct sbx_bound_probe *ps, size_t np, struct sbx_err *err);

/* Every session of the tenant that has a binding (SCAN MATCH with the
 * glob-escaped tenant, COUNT 200).  fn gets the session id (unescaped from
 * the key) and returns 0 to go on or -1 to stop with its error. */
typedef int (*sbx_binding_fn)(const char *session, size_t slen, void *ctx, struct sbx_err *err);
int sbx_bindings_each(struct sbx_redis *r, const char *tenant, sbx_binding_fn fn, void *ctx,
		      struct sbx_err *err);

/* Mark every binding of the tenant stale (after a new skill image).  Each
 * session is marked under its own lifecycle lock, with a 2 s acquire cap;
 * a session that fails (busy lock, malformed binding) is counted in
 * *failed and the loop goes on.  Returns 0 when all went well, -1 with the
 * first failure otherwise (the counts are filled either way). */
int sbx_bindings_mark_stale(struct sbx_redis *r, const char *tenant, int64_t now,
			    long *marked, long *failed, struct sbx_err *err);

#endif
