/* reap-ckpt.c - the reaper's checkpoint step: retention of the sessions'
 * histories (checkpoint-gc.h).  For each tenant in scope (--tenant, or
 * every tenant of the index), each session with a history gives up the
 * entries beyond the profile's checkpoints_keep, or all of them once the
 * session has ended (no binding), older than the grace period; then every
 * pending checkpoint of the tenant is deleted, newest first, unless the
 * backend says something still stacks on it or runs on it (kept, "in-use",
 * tried again by the next run).  A dry run plans and changes nothing.
 * Report: reap.checkpoints (see sbx-reap(1)). */
#include "reap-int.h"

#include <stdlib.h>
#include <string.h>

#include "checkpoint-gc.h"
#include "doc.h"
#include "ledger.h"
#include "util.h"

struct ck {
	json_object *unlisted, *del, *kept, *skipped;
	int64_t keep, cutoff_ns;
};

static json_object *ck_entry(const char *tenant, const struct sbx_ckpt_out *o, const char *reason)
{
	json_object *e = json_object_new_object();
	sbx_json_set_str(e, "tenant", tenant);
	sbx_json_set_str(e, "session", o->session);
	if (o->n > 0)
		sbx_json_set_int(e, "n", o->n);
	sbx_json_set_str(e, "snapshot", o->snapshot);
	if (reason)
		sbx_json_set_str(e, "reason", reason);
	return e;
}

/* Step 1 for one session: unlist (or plan) what retention takes out. */
static void ck_session(struct run *run, struct ck *c, const char *tenant, const char *session,
		       struct sbx_ckpt_out **plan, size_t *nplan)
{
	struct sbx_ckpt_out *v = NULL;
	size_t n = 0;
	int ended = 0;
	const char *why = NULL;
	struct sbx_err err = {0};
	int doit = !run->o->dry_run;
	/* The plan first, without the lock: a session with nothing due is
	 * not locked at all. */
	int rc = sbx_checkpoint_unlist(run->r, tenant, session, c->keep, c->cutoff_ns, 0, &v, &n,
				       &ended, &why, &err);
	if (rc == 1 && n && doit) {
		sbx_ckpt_outs_free(v, n);
		v = NULL;
		n = 0;
		rc = lease_keep(run) < 0 ? 0 : sbx_checkpoint_unlist(run->r, tenant, session, c->keep,
				c->cutoff_ns, 1, &v, &n, &ended, &why, &err);
	}
	if (rc < 0) {
		note_failure(run, session, "checkpoints", &err);
		return;
	}
	if (rc == 0) {
		json_object *e = json_object_new_object();
		sbx_json_set_str(e, "tenant", tenant);
		sbx_json_set_str(e, "session", session);
		sbx_json_set_str(e, "reason", why ? why : "lease-lost");
		json_object_array_add(c->skipped, e);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_object_array_add(c->unlisted,
				      ck_entry(tenant, &v[i], ended ? "session-ended" : "beyond-keep"));
		if (!doit) {      /* what a real run would then try to delete */
			*plan = sbx_xrealloc(*plan, (*nplan + 1) * sizeof(**plan));
			(*plan)[(*nplan)++] = v[i];
			memset(&v[i], 0, sizeof(v[i]));
		}
	}
	sbx_ckpt_outs_free(v, n);
}

/* Step 2 for one tenant: delete its pending checkpoints (and, in a dry
 * run, list those with the planned ones), within --max-delete. */
static void ck_collect(struct run *run, struct ck *c, const char *tenant,
		       struct sbx_ckpt_out *plan, size_t nplan)
{
	struct sbx_ckpt_out *v = NULL;
	size_t n = 0;
	struct sbx_err err = {0};
	if (sbx_checkpoint_pending(run->r, tenant, &v, &n, &err) < 0) {
		note_failure(run, NULL, "checkpoints", &err);
		return;
	}
	for (size_t i = 0; i < n + nplan; i++) {
		const struct sbx_ckpt_out *o = i < n ? &v[i] : &plan[i - n];
		int gone = 0, rc;
		if (run->o->max_delete >= 0 && run->deletions >= run->o->max_delete) {
			json_object_array_add(c->skipped, ck_entry(tenant, o, "max-delete"));
		} else if (run->o->dry_run) {
			run->deletions++;
			json_object_array_add(c->del, ck_entry(tenant, o, NULL));
		} else if (lease_keep(run) < 0) {
			json_object_array_add(c->skipped, ck_entry(tenant, o, "lease-lost"));
		} else if ((rc = sbx_checkpoint_collect(run->b, run->r, tenant, o->snapshot, &gone,
							&err)) < 0) {
			note_failure(run, o->snapshot, "snapshot_delete", &err);
		} else if (rc == 0) {
			json_object_array_add(c->kept, ck_entry(tenant, o, "in-use"));
		} else {
			run->deletions++;
			json_object *e = ck_entry(tenant, o, NULL);
			if (gone)
				json_object_object_add(e, "already_gone", json_object_new_boolean(1));
			json_object_array_add(c->del, e);
		}
	}
	sbx_ckpt_outs_free(v, n);
}

/* Checkpoints a crash cut short (sbx_checkpoint_adopt): the snapshots
 * found are unlisted ("interrupted") and join this run's deletions. */
static void ck_planned(struct run *run, struct ck *c, const char *tenant,
		       struct sbx_ckpt_out **plan, size_t *nplan)
{
	struct sbx_ckpt_out *v = NULL;
	size_t n = 0, busy = 0;
	struct sbx_err err = {0};
	int doit = !run->o->dry_run;
	if (doit && lease_keep(run) < 0)
		return;
	if (sbx_checkpoint_adopt(run->b, run->r, tenant, c->cutoff_ns, doit, &v, &n, &busy,
				 &err) < 0) {
		note_failure(run, NULL, "checkpoints", &err);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_object_array_add(c->unlisted, ck_entry(tenant, &v[i], "interrupted"));
		if (!doit) {
			*plan = sbx_xrealloc(*plan, (*nplan + 1) * sizeof(**plan));
			(*plan)[(*nplan)++] = v[i];
			memset(&v[i], 0, sizeof(v[i]));
		}
	}
	if (busy) {
		json_object *e = json_object_new_object();
		sbx_json_set_str(e, "tenant", tenant);
		sbx_json_set_str(e, "reason", "checkpoint-running");
		sbx_json_set_int(e, "planned", (int64_t)busy);
		json_object_array_add(c->skipped, e);
	}
	sbx_ckpt_outs_free(v, n);
}

static void ck_tenant(struct run *run, struct ck *c, const char *tenant)
{
	char **ss = NULL;
	size_t ns = 0;
	struct sbx_err err = {0};
	struct sbx_ckpt_out *plan = NULL;
	size_t nplan = 0;
	if (sbx_checkpoint_sessions(run->r, tenant, &ss, &ns, &err) < 0) {
		note_failure(run, NULL, "checkpoints", &err);
		ns = 0;
	}
	for (size_t i = 0; i < ns; i++) {
		ck_session(run, c, tenant, ss[i], &plan, &nplan);
		free(ss[i]);
	}
	free(ss);
	ck_planned(run, c, tenant, &plan, &nplan);
	ck_collect(run, c, tenant, plan, nplan);
	sbx_ckpt_outs_free(plan, nplan);
}

/* The tenants in scope: --tenant's, or the tenant index's. */
void do_checkpoints(struct run *run)
{
	json_object *cr = json_object_new_object();
	run->checkpoints = cr;
	if (!run->b->ops->snapshot_delete || !(sbx_backend_caps(run->b) & SBX_CAP_SNAPSHOTS)) {
		sbx_json_set_str(cr, "skipped", "the backend has no snapshots");
		return;
	}
	struct ck c = {
		.unlisted = json_object_new_array(), .del = json_object_new_array(),
		.kept = json_object_new_array(), .skipped = json_object_new_array(),
		.keep = run->b->profile ? run->b->profile->checkpoints_keep
					: SBX_CHECKPOINTS_KEEP_DEFAULT,
		.cutoff_ns = (run->now_ms - run->o->grace_ms) * 1000000LL,
	};
	char **ts = NULL;
	size_t nt = 0;
	struct sbx_err err = {0};
	if (run->o->tenant) {
		ts = sbx_xcalloc(1, sizeof(*ts));
		ts[nt++] = sbx_xstrdup(run->o->tenant);
	} else if (sbx_ledger_tenants(run->r, &ts, &nt, &err) < 0) {
		note_failure(run, NULL, "checkpoints", &err);
	}
	for (size_t i = 0; i < nt; i++)
		ck_tenant(run, &c, ts[i]);
	sbx_ledger_ids_free(ts, nt);
	sbx_json_set_int(cr, "keep", c.keep);
	json_object_object_add(cr, run->o->dry_run ? "would_unlist" : "unlisted", c.unlisted);
	json_object_object_add(cr, run->o->dry_run ? "would_delete" : "deleted", c.del);
	json_object_object_add(cr, "kept", c.kept);
	json_object_object_add(cr, "skipped", c.skipped);
}
