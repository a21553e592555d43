/* reap.h - reconcile the backend against Redis and delete only what nobody
 * owns (DESIGN §9; the program is sbx-reap).
 *
 * One run: take the reaper lease, list every managed sandbox (every page,
 * a repeated page token is an error), diff it against the tenants' bound
 * sets, and delete what is unbound, older than the grace period and not
 * under a held lifecycle lock; then let the ledger finish half-done skill
 * rows, delete snapshots nothing references, and (idle-kill backends) kill
 * idle sandboxes.  The run fails closed: a listing that fails or cannot be
 * trusted deletes nothing, and a tenant whose sandboxes are mostly unbound
 * (what a Redis that lost its data looks like) is refused unless forced.
 * Every session sandbox is re-checked under that session's lifecycle lock
 * right before it is deleted, so a resolve can never bind a sandbox that
 * the reaper is deleting (see reap.c and docs/reaper.md for the argument).
 *
 * Scope: only sandboxes and skill snapshots of this Redis keyspace
 * (keyspace.h) are judged; another keyspace's (another Redis, or another
 * prefix, on the same backend) are kept as "other-keyspace", and those that
 * carry no keyspace id as "no-keyspace" unless adopt_legacy.  A keyspace
 * that has no id (flushed, or never used) judges nothing that carries one
 * ("keyspace-unknown", and the run fails), even with force: the admin
 * names the id to adopt (adopt_keyspace), which a dry run lists with its
 * counts (reap.keyspaces); everything of every other id stays
 * "other-keyspace".
 *
 * The library never prints: the outcome is one JSON report document. */
#ifndef SBX_REAP_H
#define SBX_REAP_H

#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"
#include "err.h"
#include "redis.h"

#define SBX_REAP_GRACE_DEFAULT_MS (10 * 60 * 1000)
/* A tenant is refused when more than this many of its session sandboxes
 * would be deleted AND they are more than half of them (unless forced). */
#define SBX_REAP_REFUSE_MIN 3

struct sbx_reap_opts {
	const char *tenant;      /* exactly one of tenant / all_tenants */
	int all_tenants;
	int64_t grace_ms;        /* age below which nothing is deleted */
	int dry_run;             /* plan only: report would_delete, delete nothing */
	long long max_delete;    /* deletions per run (sandboxes + snapshots); < 0: no cap */
	int force;               /* override the mostly-unbound refusal (never the
				  * keyspace scope: see adopt_keyspace) */
	int adopt_legacy;        /* also judge sandboxes and skill snapshots that carry
				  * no keyspace id (made before ids existed) */
	const char *adopt_keyspace;  /* our keyspace has no id (its Redis lost its data):
				  * take this one (written, unless dry_run) and judge
				  * what carries it; NULL: judge nothing that carries one */
	int64_t retire_idle_ms;  /* > 0: end bound sessions whose sandbox has been idle
				  * longer (sandbox, binding and fence; reap.retired) */
};

/* Run one reconcile.  *report is always set ({"reap": {...}}, the caller
 * owns it), also on failure, so that the caller can print what was done
 * before the failure.
 *
 * Returns 0 when the world is consistent: nothing failed and nothing was
 * refused (a run that skipped because another reaper holds the lease also
 * returns 0, with reap.skipped set).  Returns -1 with `err` when a listing
 * failed or could not be trusted (then nothing at all was deleted), when a
 * tenant or the snapshot set was refused (kind conflict), when the lease
 * was lost mid-run (the remaining deletions are skipped), or when any
 * single delete or recovery step failed (the first such error; the others
 * are in reap.failed).
 *
 * Test points: the paging faults of pager.h (SBX_FAULT=list:...), and
 * SBX_FAULT/SBX_STOP=reap:before-delete, reap:before-retire-delete and
 * reap:before-expire-delete
 * (inside the session lock, before its token and fence are verified for
 * the delete: session.h, sbx_session_remove). */
int sbx_reap_run(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_reap_opts *o,
		 json_object **report, struct sbx_err *err);


#endif
