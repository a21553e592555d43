/* reap.c - the reaper: reconcile the backend against Redis and delete only
 * what nobody owns (see reap.h for the contract, docs/reaper.md for the
 * operator's view).
 *
 * Promises:
 *   - Nothing is deleted unless the whole listing was read: a page error, a
 *     repeated page token or an item that does not match the filter ends
 *     the run before the first delete.
 *   - A session sandbox is deleted only under its session's lifecycle lock,
 *     after re-reading the binding and the bound set under that lock.
 *     Resolve binds under the same lock, so "reaper deletes X" and "resolve
 *     binds X" are serialised: either the binding is visible to the
 *     re-check (X is kept) or the delete finishes before the resolve can
 *     list X (it creates or claims another).  That rule is the session
 *     policy's (session.h, sbx_session_end with SBX_END_ORPHAN), shared
 *     with sbx-ctl kill; the bound sets are read through binding.c.
 *   - A tenant whose session sandboxes are mostly deletable is refused
 *     (unless forced): that is what an empty or restored-from-old Redis
 *     looks like, and deleting every sandbox of a tenant is not something
 *     a cron job should decide alone.  The same rule guards snapshots.
 *   - One reaper at a time (a lease: a token key, tokenkey.h); the
 *     lease is an efficiency and clarity measure: correctness of each
 *     delete rests on the session lock, not on the lease.
 *   - Redis round trips are O(sandboxes / SBX_CENSUS_BATCH) for the reconcile,
 *     whatever the number of bindings, plus a constant number per deleted
 *     session sandbox (lock, re-check, release). */
#include "reap-int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "binding.h"
#include "doc.h"
#include "events.h"
#include "keys.h"
#include "keyspace.h"
#include "ledger.h"
#include "lease.h"
#include "ledger-recover.h"
#include "host.h"
#include "pager.h"
#include "quota.h"
#include "session.h"
#include "sset.h"
#include "tokenkey.h"
#include "util.h"
#include "volume.h"

/* ------------------------------------------------------------------ */
/* The run's state is in reap-int.h; its failures, lease and keyspace
 * verdict in reap-run.c. */

/* Index of the tenant, added when new. */
static int tenant_get(struct run *run, const char *name, size_t len)
{
	struct sbx_sset_slot *sl = sbx_sset_get(&run->tenant_idx, name, len);
	if (sl)
		return (int)sl->v;
	sbx_sset_add(&run->tenant_idx, name, len);
	sbx_sset_get(&run->tenant_idx, name, len)->v = (long)run->ntenants;
	run->tenants = sbx_xrealloc(run->tenants, (run->ntenants + 1) * sizeof(*run->tenants));
	struct tenant *t = &run->tenants[run->ntenants];
	memset(t, 0, sizeof(*t));
	t->name = sbx_xmalloc(len + 1);
	memcpy(t->name, name, len);
	t->name[len] = '\0';
	t->len = len;
	return (int)run->ntenants++;
}

/* ------------------------------------------------------------------ */
/* Listing, every page, fail closed (pager.h). */

static const char *meta(const struct sbx_sandbox *sb, const char *key)
{
	return sb->metadata ? sbx_json_str(sb->metadata, key) : NULL;
}

/* Our keyspace id into run->keyspace: read (never minted), or, when it has
 * none and the admin named one, adopted (written, except in a dry run). */
static int our_keyspace(struct run *run, struct sbx_err *err)
{
	const char *adopt = run->o->adopt_keyspace;
	if (sbx_keyspace_read(run->r, run->keyspace, err) < 0) {
		sbx_err_prefix(err, "reading the keyspace id (nothing was deleted)");
		return -1;
	}
	if (!adopt)
		return 0;
	if (!sbx_keyspace_valid(adopt))
		return sbx_fail(err, SBX_INVALID_REQUEST, "reap",
				"--adopt-keyspace '%s' is not a keyspace id (%d hex digits)", adopt,
				SBX_KEYSPACE_LEN);
	if (run->keyspace[0] && strcmp(run->keyspace, adopt))
		return sbx_fail(err, SBX_CONFLICT, "reap",
				"this keyspace already has the id %s; --adopt-keyspace %s names "
				"another keyspace's sandboxes (nothing was deleted)", run->keyspace, adopt);
	if (!run->keyspace[0] && !run->o->dry_run &&
	    sbx_keyspace_adopt(run->r, adopt, err) < 0) {
		sbx_err_prefix(err, "adopting the keyspace id (nothing was deleted)");
		return -1;
	}
	memcpy(run->keyspace, adopt, SBX_KEYSPACE_LEN + 1);
	sbx_json_set_str(run->rep, "adopted_keyspace", adopt);
	return 0;
}

/* Read every page of the managed sandboxes (of o->tenant when given) into
 * run->items.  Page tokens are remembered; a token seen before means the
 * backend is looping and the listing cannot be trusted.  Every item is
 * checked against the filter on our side too: a backend that ignored the
 * filter would otherwise hand us sandboxes we must not judge. */
static int take_item(struct sbx_sandbox *sb, void *ctx, struct sbx_err *err)
{
	(void)err;
	struct run *run = ctx;
	run->items = sbx_xrealloc(run->items, (run->nitems + 1) * sizeof(*run->items));
	struct item *it = &run->items[run->nitems++];
	memset(it, 0, sizeof(*it));
	it->sb = *sb;
	it->t = -1;
	memset(sb, 0, sizeof(*sb));
	return 0;
}

static int list_all(struct run *run, struct sbx_err *err)
{
	json_object *md = json_object_new_object();
	sbx_json_set_str(md, SBX_MD_MANAGED, "1");
	if (run->o->tenant)
		sbx_json_set_str(md, SBX_MD_TENANT, run->o->tenant);
	struct sbx_list_filter f = {.metadata = md, .states = 0};
	long pages = 0;
	int rc = sbx_list_each(run->b, &f, take_item, run, &pages, err);
	json_object_put(md);
	if (rc < 0) {
		sbx_err_prefix(err, "nothing was deleted");
		return -1;
	}
	json_object_object_add(run->rep, "pages", json_object_new_int64(pages));

	for (size_t i = 0; i < run->nitems; i++) {
		struct item *it = &run->items[i];
		const char *m = meta(&it->sb, SBX_MD_MANAGED);
		const char *t = meta(&it->sb, SBX_MD_TENANT);
		if (!it->sb.id || !*it->sb.id)
			return sbx_fail(err, SBX_INTERNAL, "list",
					"the backend listed a sandbox without an id (nothing was deleted)");
		if (!m || strcmp(m, "1") != 0 ||
		    (run->o->tenant && (!t || strcmp(t, run->o->tenant) != 0)))
			return sbx_fail(err, SBX_INTERNAL, "list",
					"the backend listed sandbox %s that does not match the metadata "
					"filter; it cannot be trusted (nothing was deleted)", it->sb.id);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Classification. */

/* Pull tenant/session/purpose out of each item, count per tenant, and
 * give the first verdicts that need no Redis: no tenant, bad ids, young. */
static void classify_local(struct run *run)
{
	struct sbx_err ignored = {0};
	for (size_t i = 0; i < run->nitems; i++) {
		struct item *it = &run->items[i];
		const char *purpose = meta(&it->sb, SBX_MD_PURPOSE);
		it->tenant = meta(&it->sb, SBX_MD_TENANT);
		it->session = meta(&it->sb, SBX_MD_SESSION);
		it->tlen = it->tenant ? strlen(it->tenant) : 0;
		it->slen = it->session ? strlen(it->session) : 0;
		if (it->session && !*it->session)
			it->session = NULL;
		it->installer = purpose && strcmp(purpose, SBX_PURPOSE_SKILL_INSTALL) == 0 && !it->session;
		if (it->sb.template_id)
			sbx_sset_add(&run->templates_in_use, it->sb.template_id,
				 strlen(it->sb.template_id));
		/* Only what our keyspace owns is ours to judge: another profile
		 * may share this backend with its own Redis or prefix.  A sandbox
		 * from before keyspace ids is left alone unless adopted. */
		const char *ks = meta(&it->sb, SBX_MD_KEYSPACE);
		const char *why = keyspace_verdict(run, ks, "sandboxes");
		if (why) {
			it->reason = why;
			continue;
		}
		it->ours = 1;
		if (!it->tenant || sbx_id_check("tenant", it->tenant, it->tlen, &ignored) < 0) {
			/* No tenant: nothing in Redis can vouch for it either way. */
			it->reason = it->tenant ? "invalid-metadata" : "no-tenant";
			continue;
		}
		it->t = tenant_get(run, it->tenant, it->tlen);
		struct tenant *t = &run->tenants[it->t];
		t->listed++;
		if (!it->installer && !it->session) {
			it->reason = "not-a-session";
			continue;
		}
		if (it->session) {
			t->sessions++;
			if (sbx_id_check("session", it->session, it->slen, &ignored) < 0) {
				it->reason = "invalid-metadata";
				continue;
			}
		}
		if (it->sb.created_at <= 0)
			it->reason = "age-unknown";
		else if (run->now_ms - it->sb.created_at * 1000 < run->o->grace_ms)
			it->reason = "young";
	}
}

/* Whether an item's membership and lock are worth asking Redis about: a
 * session sandbox not kept for a reason Redis cannot change. */
static int probed(const struct item *it)
{
	return it->t >= 0 && it->session &&
	       (!it->reason || !strcmp(it->reason, "young") || !strcmp(it->reason, "age-unknown"));
}

/* The bound sets' view of the listed session sandboxes (binding.h,
 * sbx_bound_census): a member is kept as "bound"; an unbound one whose
 * lock is held is kept as "locked" (a resolve may be about to bind it).
 *
 * Why membership checks and not SMEMBERS/SSCAN of the bound sets: the
 * verdict needs only the listed ids, so the cost is O(listed / batch)
 * round trips whatever the number of bindings (a bound set of 100k
 * members cost 105 round trips and 0.85 s with SSCAN, see
 * docs/bench/reap.md, against 1 here), and "dangling" bindings (whose
 * sandbox the backend does not list) still fall out as SCARD - bound. */
static int classify_redis(struct run *run, struct sbx_err *err)
{
	SBX_AUTOFREE struct sbx_bound_tenant *ts = sbx_xcalloc(run->ntenants + 1, sizeof(*ts));
	SBX_AUTOFREE struct sbx_bound_probe *ps = sbx_xcalloc(run->nitems + 1, sizeof(*ps));
	SBX_AUTOFREE size_t *of = sbx_xcalloc(run->nitems + 1, sizeof(*of));
	size_t np = 0;
	for (size_t ti = 0; ti < run->ntenants; ti++)
		ts[ti] = (struct sbx_bound_tenant){run->tenants[ti].name, run->tenants[ti].len, 0};
	for (size_t i = 0; i < run->nitems; i++) {
		struct item *it = &run->items[i];
		if (!probed(it))
			continue;
		ps[np] = (struct sbx_bound_probe){.t = (size_t)it->t, .session = it->session,
						  .slen = it->slen, .id = it->sb.id};
		of[np++] = i;
	}
	if (sbx_bound_census(run->r, ts, run->ntenants, ps, np, err) < 0)
		return -1;
	for (size_t ti = 0; ti < run->ntenants; ti++)
		run->tenants[ti].members = ts[ti].members;
	for (size_t q = 0; q < np; q++) {
		struct item *it = &run->items[of[q]];
		if (ps[q].bound) {
			run->tenants[it->t].bound++;
			it->reason = "bound";    /* stronger than "young" */
		} else if (ps[q].locked && !it->reason) {
			it->reason = "locked";
		}
	}
	return 0;
}

/* Mostly-unbound guard: a tenant with more than SBX_REAP_REFUSE_MIN
 * deletable session sandboxes that are also more than half of its session
 * sandboxes is refused.  Installer sandboxes do not count (they are never
 * bound) but are held back with the rest of a refused tenant. */
static void refuse_tenants(struct run *run, json_object *refused)
{
	for (size_t i = 0; i < run->nitems; i++) {
		struct item *it = &run->items[i];
		if (!it->reason && it->session)
			run->tenants[it->t].candidates++;
	}
	for (size_t ti = 0; ti < run->ntenants; ti++) {
		struct tenant *t = &run->tenants[ti];
		if (run->o->force || t->candidates <= SBX_REAP_REFUSE_MIN ||
		    t->candidates * 2 <= t->sessions)
			continue;
		t->refused = sbx_xasprintf(
			"%ld of its %ld session sandboxes are unbound and old enough to delete "
			"(bound set has %ld members); a Redis that lost its data looks like this. "
			"Nothing of this tenant was deleted; check Redis, then rerun with --force",
			t->candidates, t->sessions, t->members);
		json_object_object_add(refused, t->name, json_object_new_string(t->refused));
	}
}

static int cmp_items(const void *a, const void *b)
{
	const struct item *x = *(struct item *const *)a, *y = *(struct item *const *)b;
	if (x->sb.created_at != y->sb.created_at)
		return x->sb.created_at < y->sb.created_at ? -1 : 1;
	return strcmp(x->sb.id, y->sb.id);
}

/* ------------------------------------------------------------------ */
/* Deleting. */

/* Act on the orphans, oldest first: skip refused tenants, stop at the
 * cap, and (for real) delete each after its re-check. */
static void act(struct run *run)
{
	struct item **order = sbx_xcalloc(run->nitems + 1, sizeof(*order));
	size_t n = 0;
	for (size_t i = 0; i < run->nitems; i++) {
		struct item *it = &run->items[i];
		if (it->reason)
			json_object_array_add(run->kept, entry(it, it->reason));
		else
			order[n++] = it;
	}
	qsort(order, n, sizeof(*order), cmp_items);
	for (size_t i = 0; i < n; i++) {
		struct item *it = order[i];
		if (run->tenants[it->t].refused) {
			json_object_array_add(run->skipped, entry(it, "tenant-refused"));
			continue;
		}
		if (run->o->max_delete >= 0 && run->deletions >= run->o->max_delete) {
			json_object_array_add(run->skipped, entry(it, "max-delete"));
			continue;
		}
		if (run->o->dry_run) {
			run->deletions++;
			json_object_array_add(run->would, entry(it, NULL));
			continue;
		}
		struct sbx_err err = {0};
		if (lease_keep(run) < 0) {
			json_object_array_add(run->skipped, entry(it, "lease-lost"));
			continue;
		}
		/* Under the session's lock, after a re-check (session.h). */
		int gone = 0;
		const char *reason = NULL;
		int rc = sbx_session_end(run->b, run->r, &it->sb, SBX_END_ORPHAN, &gone, &reason,
					 &err);
		if (rc < 0) {
			note_failure(run, it->sb.id, "delete", &err);
		} else if (rc == 0) {
			json_object_array_add(run->kept, entry(it, reason));
		} else {
			run->deletions++;
			json_object *e = entry(it, NULL);
			if (gone)
				json_object_object_add(e, "already_gone", json_object_new_boolean(1));
			json_object_array_add(run->deleted, e);
		}
	}
	free(order);
}

/* The outcome of one end of a session's sandbox (retire, expire), whose
 * entry is e: a failure noted, a refusal skipped with its why (a lost
 * reap lease when there is none), an end counted and listed.  1 when it
 * ended. */
static int settle(struct run *run, const struct item *it, json_object *e, json_object *list,
		  int rc, const char *why, const char *op, struct sbx_err *err)
{
	if (rc <= 0) {
		json_object_put(e);
		if (rc < 0)
			note_failure(run, it->sb.id, op, err);
		else
			json_object_array_add(run->skipped, entry(it, why ? why : "lease-lost"));
		return 0;
	}
	run->deletions++;
	json_object_array_add(list, e);
	return 1;
}

/* --retire-idle: bound sessions whose sandbox the backend reports idle
 * longer than the limit are ended, each under its session's lock after a
 * fresh look (session.h, sbx_session_retire); oldest activity first, within
 * the same --max-delete cap as the orphans, never in a refused tenant. */
static void do_retire(struct run *run)
{
	int64_t limit = run->o->retire_idle_ms;
	if (limit <= 0)
		return;
	run->retired = json_object_new_array();
	for (size_t i = 0; i < run->nitems; i++) {
		struct item *it = &run->items[i];
		if (!it->reason || strcmp(it->reason, "bound") || !it->session || it->t < 0 ||
		    it->sb.active_at <= 0 || run->now_ms - it->sb.active_at * 1000 < limit ||
		    run->tenants[it->t].refused)
			continue;
		if (run->o->max_delete >= 0 && run->deletions >= run->o->max_delete) {
			json_object_array_add(run->skipped, entry(it, "max-delete"));
			continue;
		}
		json_object *e = entry(it, NULL);
		sbx_json_set_int(e, "idle_s", run->now_ms / 1000 - it->sb.active_at);
		if (run->o->dry_run) {
			run->deletions++;
			json_object_array_add(run->retired, e);
			continue;
		}
		struct sbx_err err = {0};
		int gone = 0;
		const char *why = NULL;
		int rc = lease_keep(run) < 0 ? 0 : sbx_session_retire(run->b, run->r, &it->sb, limit,
								       &gone, &why, &err);
		if (settle(run, it, e, run->retired, rc, why, "retire", &err))
			it->reason = "retired";     /* not again by retention */
	}
}

/* Retention (the profile's retain_paused): bound sessions whose sandbox
 * is paused past its retain_until are ended, each under its session's
 * lock after a fresh look (session.h, sbx_session_expire), within the
 * same --max-delete cap, never in a refused tenant.  A dry run lists them
 * (would_expire) with their retain_until and deletes nothing. */
static void do_expire(struct run *run)
{
	run->expired = json_object_new_array();
	for (size_t i = 0; i < run->nitems; i++) {
		struct item *it = &run->items[i];
		int64_t until = 0;
		struct sbx_err err = {0};
		if (!it->reason || strcmp(it->reason, "bound") || !it->session || it->t < 0 ||
		    it->sb.state != SBX_STATE_PAUSED || run->tenants[it->t].refused)
			continue;
		int rc = sbx_session_retain_until(run->b, run->r, &it->sb, &until, &err);
		if (rc < 0)
			note_failure(run, it->sb.id, "retention", &err);
		if (rc <= 0 || until > run->now_ms / 1000)
			continue;
		if (run->o->max_delete >= 0 && run->deletions >= run->o->max_delete) {
			json_object_array_add(run->skipped, entry(it, "max-delete"));
			continue;
		}
		json_object *e = entry(it, NULL);
		char when[32];
		sbx_time_iso(until, when, sizeof(when));
		sbx_json_set_str(e, "retain_until", when);
		if (run->o->dry_run) {
			run->deletions++;
			json_object_array_add(run->expired, e);
			continue;
		}
		int gone = 0;
		const char *why = NULL;
		rc = lease_keep(run) < 0 ? 0 : sbx_session_expire(run->b, run->r, &it->sb, &gone, &why,
								  &err);
		if (settle(run, it, e, run->expired, rc, why, "retention", &err))
			it->reason = "expired";     /* not hibernated after */
	}
}

/* ------------------------------------------------------------------ */
/* Ledger, snapshots, idle sandboxes. */

static void do_ledger(struct run *run)
{
	json_object *lr = json_object_new_object();
	run->ledger = lr;
	struct sbx_err err = {0};
	if (sbx_ledger_recover(run->b, run->r, run->o->tenant, run->o->grace_ms, run->o->dry_run,
			       lr, &err) < 0) {
		if (err.kind == SBX_UNSUPPORTED) {
			sbx_json_set_str(lr, "skipped", err.msg);
			return;
		}
		note_failure(run, NULL, "ledger", &err);
	}
}

/* The backend's own image store: work directories of crashed snapshots
 * and imports, layers no record names (the backend's store_gc).  Owned by no tenant,
 * so every run collects them; a live snapshot's work is never touched. */
static void do_images(struct run *run)
{
	json_object *ir = json_object_new_object();
	run->images = ir;
	struct sbx_store_gc st;
	struct sbx_err err = {0};
	if (sbx_call(run->b, store_gc, &err, run->o->dry_run, &st) < 0) {
		if (err.kind == SBX_UNSUPPORTED) {
			sbx_json_set_str(ir, "skipped", err.msg);
			return;
		}
		note_failure(run, NULL, "images", &err);
		return;
	}
	sbx_store_gc_json(&st, ir);
}

/* The idle timer's own pauses and resumes on use (the vtable's
 * idle_notes) become events here: the timer runs below every program's
 * Redis (sbx-init has none), and the reaper is the host-side program that
 * looks at every sandbox.  So they are written when the reaper next runs,
 * in the order they happened, with `at` (the detail) saying when, and a
 * session's quota slot follows (quota.h sbx_quota_follow).  Not in
 * a dry run (taking them forgets them).  A failure is the run's, for that
 * sandbox only. */
static void do_idle_notes(struct run *run)
{
	if ((!run->b->ops->idle_notes && !run->b->ops->audit_dir) || run->o->dry_run)
		return;
	for (size_t i = 0; i < run->nitems; i++) {
		struct sbx_sandbox *sb = &run->items[i].sb;
		if (!meta(sb, SBX_MD_TENANT))
			continue;
		sbx_audit_drain(run->r, run->b, sb);   /* its broker's records (audit.h) */
		struct sbx_idle_note *nt = NULL;
		size_t n = 0;
		struct sbx_err err = {0};
		if (!run->b->ops->idle_notes)
			continue;
		if (run->b->ops->idle_notes(run->b, sb->id, &nt, &n, &err) < 0) {
			if (err.kind != SBX_NOT_FOUND)
				note_failure(run, sb->id, "idle_notes", &err);
			continue;
		}
		for (size_t k = 0; k < n; k++) {
			json_object *d = json_object_new_object();
			char at[40];
			sbx_time_iso(nt[k].at_ms / 1000, at, sizeof(at));
			sbx_json_set_str(d, "at", at);
			sbx_json_set_int(d, "at_ms", nt[k].at_ms);
			if (!nt[k].resumed && nt[k].awake_by[0])
				sbx_json_set_str(d, "awake_by", nt[k].awake_by);
			sbx_event_sandbox(run->r, sb, nt[k].resumed ? "resumed" : "paused", NULL,
					  nt[k].resumed ? "use" : "idle", d);
			json_object_put(d);
			if (meta(sb, SBX_MD_SESSION))
				sbx_quota_follow(run->r, meta(sb, SBX_MD_TENANT), meta(sb, SBX_MD_SESSION),
						 !nt[k].resumed, nt[k].at_ms / 1000);
		}
		free(nt);
	}
}

/* Backends whose idle timer is this sweep (reap_idle): the reaper is what
 * has Redis, so it is here, once for every such backend, that a held turn
 * lease keeps a session sandbox awake: the sweep asks the backend's
 * idle_seen, this run's Redis for the call (lease.h sbx_turn_idle_seen). */
static void do_idle(struct run *run)
{
	if (!run->b->ops->reap_idle)
		return;
	json_object *arr = json_object_new_array();
	run->idle = arr;
	struct sbx_err err = {0};
	if (lease_keep(run) < 0)
		return;
	struct sbx_idle_seen seen = sbx_turn_idle_seen(run->r);
	const struct sbx_idle_seen *was = run->b->idle_seen;
	run->b->idle_seen = &seen;
	if (run->b->ops->reap_idle(run->b, run->o->dry_run, arr, &err) < 0)
		note_failure(run, NULL, "reap_idle", &err);
	run->b->idle_seen = was;
	/* What the sweep deleted the reaper killed for idleness: the event
	 * of each one of a tenant (the run's listing has its metadata). */
	for (size_t i = 0; !run->o->dry_run && i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		const char *id = sbx_json_str(e, "id");
		if (!id || !sbx_json_bool(e, "deleted", 0))
			continue;
		for (size_t k = 0; k < run->nitems; k++) {
			struct sbx_sandbox *sb = &run->items[k].sb;
			if (!sb->id || strcmp(sb->id, id) || !meta(sb, SBX_MD_TENANT))
				continue;
			json_object *d = json_object_new_object();
			sbx_json_set_int(d, "idle_seconds", sbx_json_int(e, "idle_seconds", 0));
			sbx_event_sandbox(run->r, sb, "killed", NULL, "idle", d);
			json_object_put(d);
			break;
		}
	}
}

/* ------------------------------------------------------------------ */

static void run_free(struct run *run)
{
	for (size_t i = 0; i < run->nitems; i++) {
		sbx_sandbox_clear(&run->items[i].sb);
	}
	free(run->items);
	for (size_t i = 0; i < run->ntenants; i++) {
		free(run->tenants[i].name);
		free(run->tenants[i].refused);
	}
	free(run->tenants);
	free(run->hibernate_off);
	sbx_sset_free(&run->tenant_idx);
	sbx_sset_free(&run->templates_in_use);
}

/* The report's tenant summary: names, and per tenant the counts. */
static void report_tenants(struct run *run)
{
	json_object *names = json_object_new_array(), *per = json_object_new_object();
	for (size_t i = 0; i < run->ntenants; i++) {
		struct tenant *t = &run->tenants[i];
		json_object_array_add(names, json_object_new_string_len(t->name, (int)t->len));
		json_object *o = json_object_new_object();
		sbx_json_set_int(o, "listed", t->listed);
		sbx_json_set_int(o, "sessions", t->sessions);
		sbx_json_set_int(o, "bound", t->bound);
		sbx_json_set_int(o, "bound_set", t->members);
		/* Bindings whose sandbox the backend does not list. */
		sbx_json_set_int(o, "dangling", t->members - t->bound);
		sbx_json_set_int(o, "unbound_old", t->candidates);
		json_object_object_add(per, t->name, o);
	}
	json_object_object_add(run->rep, "tenants", names);
	json_object_object_add(run->rep, "per_tenant", per);
}

/* The report's head: when, and with which options. */
static void report_open(struct run *run, json_object **report)
{
	const struct sbx_reap_opts *o = run->o;
	*report = json_object_new_object();
	run->rep = json_object_new_object();
	json_object_object_add(*report, "reap", run->rep);
	char iso[32];
	sbx_time_iso(run->now_ms / 1000, iso, sizeof(iso));
	sbx_json_set_str(run->rep, "started_at", iso);
	sbx_json_set_bool(run->rep, "dry_run", o->dry_run);
	sbx_json_set_int(run->rep, "grace_ms", o->grace_ms);
	if (o->max_delete >= 0)
		sbx_json_set_int(run->rep, "max_delete", o->max_delete);
	if (o->tenant)
		sbx_json_set_str(run->rep, "tenant", o->tenant);
	if (o->adopt_legacy)
		sbx_json_set_bool(run->rep, "adopt_legacy", 1);
	if (o->retire_idle_ms > 0)
		sbx_json_set_int(run->rep, "retire_idle_ms", o->retire_idle_ms);
}

/* Volumes are never deleted by the reaper (they outlive every sandbox
 * and their tenant's sessions): it only lists, under "volumes", those of
 * tenants sbx knows nothing else of, for an operator to look at.  A
 * failure to read them is noted there and fails nothing else. */
static void do_volumes(struct run *run)
{
	json_object *v = json_object_new_object(), *orph = json_object_new_array();
	struct sbx_err err = {0};
	if (run->o->tenant) {
		json_object_put(orph);
		json_object_put(v);
		return;                /* a one-tenant run looks at that tenant only */
	}
	if (sbx_vol_orphans(run->r, orph, &err) < 0)
		sbx_json_set_str(v, "skipped", err.msg);
	json_object_object_add(v, "orphaned", orph);
	json_object_object_add(run->rep, "volumes", v);
}

/* The steps of a run that holds the lease, timed per phase (benchmarks,
 * and a slow backend or Redis shows up here first).  -1 when the listing
 * or Redis could not be read: then nothing at all was deleted. */
static int run_phases(struct run *run, json_object *refused, struct sbx_err *err)
{
	json_object *timing = json_object_new_object();
	json_object_object_add(run->rep, "timing_ms", timing);
	int64_t t = sbx_mono_ms();
#define PHASE(name) do { int64_t t_ = sbx_mono_ms(); \
	sbx_json_set_int(timing, name, t_ - t); t = t_; } while (0)
	if (our_keyspace(run, err) < 0)
		return -1;
	if (list_all(run, err) < 0)
		return -1;
	PHASE("list");
	classify_local(run);
	do_idle_notes(run);
	if (classify_redis(run, err) < 0) {
		sbx_err_prefix(err, "reading Redis (nothing was deleted)");
		return -1;
	}
	PHASE("redis");
	refuse_tenants(run, refused);
	act(run);
	PHASE("delete");
	do_retire(run);
	if (run->retired)
		PHASE("retire");
	do_expire(run);
	if (run->expired)
		PHASE("retention");
	do_hibernate(run);
	if (run->hibernated)
		PHASE("hibernate");
	do_checkpoints(run);
	PHASE("checkpoints");
	do_ledger(run);
	PHASE("ledger");
	do_snapshots(run);
	PHASE("snapshots");
	do_images(run);
	PHASE("images");
	do_volumes(run);
	do_idle(run);
	if (run->idle)
		PHASE("idle");
#undef PHASE
	return 0;
}

/* The report's body: what was seen, kept, deleted, failed, refused. */
static void report_close(struct run *run, json_object *refused)
{
	report_tenants(run);
	sbx_json_set_int(run->rep, "seen", (int64_t)run->nitems);
	json_object_object_add(run->rep, "kept", run->kept);
	if (run->o->dry_run) {
		json_object_object_add(run->rep, "would_delete", run->would);
		json_object_put(run->deleted);
	} else {
		json_object_object_add(run->rep, "deleted", run->deleted);
		json_object_put(run->would);
	}
	json_object_object_add(run->rep, "failed", run->failed);
	json_object_object_add(run->rep, "skipped", run->skipped);
	json_object_object_add(run->rep, "refused", refused);
	json_object_object_add(run->rep, "ledger",
			       run->ledger ? run->ledger : json_object_new_object());
	json_object_object_add(run->rep, "snapshots",
			       run->snapshots ? run->snapshots : json_object_new_object());
	if (run->idle)
		json_object_object_add(run->rep, "idle", run->idle);
	if (run->retired)
		json_object_object_add(run->rep, run->o->dry_run ? "would_retire" : "retired",
				       run->retired);
	if (run->expired)
		json_object_object_add(run->rep, run->o->dry_run ? "would_expire" : "expired",
				       run->expired);
	if (run->images)
		json_object_object_add(run->rep, "images", run->images);
	if (run->checkpoints)
		json_object_object_add(run->rep, "checkpoints", run->checkpoints);
	if (run->hibernated)
		json_object_object_add(run->rep, run->o->dry_run ? "would_hibernate" : "hibernated",
				       run->hibernated);
	if (run->hibernate_off)
		sbx_json_set_str(run->rep, "hibernate_unavailable", run->hibernate_off);
	if (run->keyspace[0])
		sbx_json_set_str(run->rep, "keyspace", run->keyspace);
	json_object_object_add(run->rep, "keyspaces", run->keyspaces);
	run->keyspaces = NULL;
}

/* Whether the world is consistent after a run whose steps went through:
 * no failure, no object of an unknown keyspace, nothing refused. */
static int verdict(struct run *run, json_object *refused, struct sbx_err *err)
{
	if (run->nfailed) {
		*err = run->first;
		if (run->nfailed > 1)
			sbx_err_prefix(err, "%d operations failed; first", run->nfailed);
		return -1;
	}
	if (run->unknown_keyspace) {
		SBX_AUTOFREE char *kk = sbx_key_keyspace(run->r->prefix);
		return sbx_fail(err, SBX_CONFLICT, "reap",
				"this Redis keyspace has no id (%s) but %ld sandboxes or snapshots "
				"carry one: it lost its data, or they belong to another keyspace. "
				"Nothing of theirs was deleted (--force never crosses keyspaces); "
				"if this Redis lost its data, pick its id from a --dry-run's "
				"reap.keyspaces and rerun with --adopt-keyspace ID", kk,
				run->unknown_keyspace);
	}
	int snaps = json_object_object_get_ex(sbx_json_obj(run->rep, "snapshots"), "refused", NULL);
	if (json_object_object_length(refused) || snaps)
		return sbx_fail(err, SBX_CONFLICT, "reap",
				"refused to reap %d tenant(s)%s: most of their sandboxes look "
				"unowned (see reap.refused); rerun with --force once Redis is checked",
				json_object_object_length(refused), snaps ? " and the snapshots" : "");
	return 0;
}

int sbx_reap_run(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_reap_opts *o,
		 json_object **report, struct sbx_err *err)
{
	struct run run = {.b = b, .r = r, .o = o, .now_ms = sbx_now_ms()};
	int64_t t0 = sbx_mono_ms();
	long long rt0 = r->round_trips;
	report_open(&run, report);
	/* A dry run changes nothing, so it takes no lease: it never makes the
	 * real (cron) reaper skip. */
	int rc = 0, taken = o->dry_run ? 1 : lease_take(&run, err);
	if (taken < 0)
		rc = -1;
	else if (taken == 0)
		sbx_json_set_str(run.rep, "skipped", "another reaper holds the lease");
	if (taken == 1) {
		run.kept = json_object_new_array();
		run.deleted = json_object_new_array();
		run.failed = json_object_new_array();
		run.skipped = json_object_new_array();
		run.would = json_object_new_array();
		run.keyspaces = json_object_new_object();
		json_object *refused = json_object_new_object();
		rc = run_phases(&run, refused, err);
		lease_release(&run);
		report_close(&run, refused);
		if (rc == 0)
			rc = verdict(&run, refused, err);
	}
	lease_release(&run);
	sbx_json_set_int(run.rep, "duration_ms", sbx_mono_ms() - t0);
	sbx_json_set_int(run.rep, "redis_round_trips", r->round_trips - rt0);
	run_free(&run);
	return rc;
}
