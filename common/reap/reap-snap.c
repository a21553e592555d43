/* reap-snap.c - the reaper's snapshot step: delete the snapshots no ledger
 * row or image pointer references, no listed sandbox runs on, older than
 * the grace period (reap.c runs it, with --all-tenants only). */
#include "reap-int.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "ledger.h"
#include "pager.h"
#include "util.h"

struct snap {
	struct sbx_snapshot_ref ref;
	const char *reason;
};

/* Every snapshot of the backend (pager.h). */
static int snaps_list(struct run *run, struct snap **out, size_t *nout, struct sbx_err *err)
{
	struct sbx_snapshot_ref *refs;
	size_t n;
	*out = NULL;
	*nout = 0;
	if (sbx_snapshots_all(run->b, &refs, &n, err) < 0)
		return -1;
	*out = sbx_xcalloc(n + 1, sizeof(**out));
	for (size_t i = 0; i < n; i++)
		(*out)[i].ref = refs[i];
	*nout = n;
	free(refs);
	return 0;
}

static json_object *snap_entry(const struct snap *s, const char *reason)
{
	json_object *e = json_object_new_object();
	sbx_json_set_str(e, "id", s->ref.id);
	if (s->ref.name)
		sbx_json_set_str(e, "name", s->ref.name);
	if (reason)
		sbx_json_set_str(e, "reason", reason);
	return e;
}

/* A skill snapshot's name ends with -k<keyspace id> (skill.c new_row):
 * NULL when that is ours (or the name has none and legacy names are
 * adopted), else the reason it is not ours to judge. */
static const char *snap_keyspace(struct run *run, const char *name)
{
	size_t n = strlen(name), k = SBX_KEYSPACE_LEN + 2;   /* "-k" + id */
	int tagged = n > k && name[n - k] == '-' && name[n - k + 1] == 'k';
	for (size_t i = n - k + 2; tagged && i < n; i++)
		tagged = (name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f');
	return keyspace_verdict(run, tagged ? name + n - SBX_KEYSPACE_LEN : NULL, "snapshots");
}

static int snap_foreign(const char *reason)
{
	return !strcmp(reason, "other-keyspace") || !strcmp(reason, "no-keyspace") ||
	       !strcmp(reason, "keyspace-unknown") || !strcmp(reason, "not-a-skill-snapshot");
}

/* Why snapshot x is kept (NULL: a candidate to delete).  A snapshot not
 * made by the skill pipeline was never meant to be named by a ledger row:
 * never ours to judge (reference: ReconcileSnapshots logs such snapshots,
 * never deletes). */
static const char *snap_reason(struct run *run, struct sbx_sset *referenced,
			       const struct snap *x)
{
	const struct sbx_snapshot_ref *r = &x->ref;
	const char *why;
	if (sbx_sset_has(referenced, r->id, strlen(r->id)) ||
	    (r->name && sbx_sset_has(referenced, r->name, strlen(r->name))))
		return "referenced";
	if (sbx_sset_has(&run->templates_in_use, r->id, strlen(r->id)))
		return "in-use";
	if (!r->name || !sbx_str_starts(r->name, SKILL_SNAPSHOT_PREFIX))
		return "not-a-skill-snapshot";
	if ((why = snap_keyspace(run, r->name)))
		return why;
	if (r->created_at <= 0)
		return "age-unknown";
	if (run->now_ms - r->created_at * 1000 < run->o->grace_ms)
		return "young";
	return NULL;
}

/* Every snapshot id or planned name a ledger row or image pointer names,
 * as a set; -1 (noted, or "skipped" when unsupported) when unreadable. */
static int snap_references(struct run *run, json_object *sr, struct sbx_sset *referenced)
{
	struct sbx_err err = {0};
	char **refs = NULL;
	size_t nrefs = 0;
	if (sbx_ledger_referenced(run->r, NULL, &refs, &nrefs, &err) < 0) {
		if (err.kind == SBX_UNSUPPORTED) {
			sbx_json_set_str(sr, "skipped", err.msg);
			return -1;
		}
		sbx_err_prefix(&err, "reading the snapshot references (no snapshot was deleted)");
		note_failure(run, NULL, "snapshots", &err);
		return -1;
	}
	for (size_t i = 0; i < nrefs; i++)
		sbx_sset_add(referenced, refs[i], strlen(refs[i]));
	sbx_ledger_ids_free(refs, nrefs);
	return 0;
}

/* Delete the candidates (x->reason NULL) unless refused, capped or the
 * lease was lost; a snapshot the backend refuses as in use is kept. */
static void snap_act(struct run *run, struct snap *s, size_t n, const char *refused,
		     json_object *kept, json_object *del, json_object *skipped)
{
	for (size_t i = 0; i < n; i++) {
		struct snap *x = &s[i];
		struct sbx_err err = {0};
		int gone = 0;
		if (x->reason) {
			json_object_array_add(kept, snap_entry(x, x->reason));
		} else if (refused) {
			json_object_array_add(skipped, snap_entry(x, "refused"));
		} else if (run->o->max_delete >= 0 && run->deletions >= run->o->max_delete) {
			json_object_array_add(skipped, snap_entry(x, "max-delete"));
		} else if (run->o->dry_run) {
			run->deletions++;
			json_object_array_add(del, snap_entry(x, NULL));
		} else if (lease_keep(run) < 0) {
			json_object_array_add(skipped, snap_entry(x, "lease-lost"));
		} else if (sbx_call(run->b, snapshot_delete, &err, x->ref.id, &gone) < 0) {
			/* Something stacks on it or runs on it (the backend knows
			 * better than our listing of managed sandboxes). */
			if (err.kind == SBX_CONFLICT)
				json_object_array_add(kept, snap_entry(x, "in-use"));
			else
				note_failure(run, x->ref.id, "snapshot_delete", &err);
		} else {
			run->deletions++;
			json_object_array_add(del, snap_entry(x, NULL));
		}
	}
}

/* Delete snapshots that no ledger row or image pointer references (by id
 * or by planned name), that no listed sandbox runs on, and that are older
 * than the grace period.  Only with --all-tenants: snapshots are shared by
 * every tenant, and the references of all of them are needed to judge
 * one.  The mostly-unreferenced guard applies as for sandboxes. */
void do_snapshots(struct run *run)
{
	json_object *sr = json_object_new_object();
	run->snapshots = sr;
	if (!run->o->all_tenants) {
		sbx_json_set_str(sr, "skipped",
				 "snapshots are shared by all tenants: reaped only with --all-tenants");
		return;
	}
	if (!run->b->ops->snapshot_list || !run->b->ops->snapshot_delete ||
	    !(sbx_backend_caps(run->b) & SBX_CAP_SNAPSHOTS)) {
		sbx_json_set_str(sr, "skipped", "the backend has no snapshots");
		return;
	}
	struct sbx_sset referenced = {0};
	if (snap_references(run, sr, &referenced) < 0)
		return;
	struct sbx_err err = {0};
	struct snap *s = NULL;
	size_t n = 0;
	if (snaps_list(run, &s, &n, &err) < 0) {
		sbx_err_prefix(&err, "listing snapshots (no snapshot was deleted)");
		note_failure(run, NULL, "snapshots", &err);
		n = 0;
	}
	long cand = 0, own = 0;
	for (size_t i = 0; i < n; i++) {
		struct snap *x = &s[i];
		x->reason = snap_reason(run, &referenced, x);
		cand += !x->reason;
		own += !x->reason || !snap_foreign(x->reason);
	}
	const char *refused = NULL;
	if (!run->o->force && cand > SBX_REAP_REFUSE_MIN && cand * 2 > own) {
		refused = "most snapshots are referenced by no ledger row or image pointer; "
			  "a Redis that lost its data looks like this. Nothing was deleted; "
			  "check Redis, then rerun with --force";
		sbx_json_set_str(sr, "refused", refused);
	}
	json_object *kept = json_object_new_array(), *del = json_object_new_array(),
		    *skipped = json_object_new_array();
	snap_act(run, s, n, refused, kept, del, skipped);
	json_object_object_add(sr, "seen", json_object_new_int64((int64_t)n));
	json_object_object_add(sr, "kept", kept);
	json_object_object_add(sr, run->o->dry_run ? "would_delete" : "deleted", del);
	json_object_object_add(sr, "skipped", skipped);
	for (size_t i = 0; i < n; i++) {
		free(s[i].ref.id);
		free(s[i].ref.name);
		free(s[i].ref.parent);
	}
	free(s);
	sbx_sset_free(&referenced);
}

