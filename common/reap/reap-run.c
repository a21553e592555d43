/* reap-run.c - what the steps of a reaper run share (reap-int.h): the
 * failures it notes, the lease it holds, the keyspace verdict on each
 * object it lists. */
#include "reap-int.h"

#include <string.h>

#include "doc.h"
#include "host.h"
#include "keys.h"
#include "util.h"

#define LEASE_TTL_DEFAULT_MS 60000

void note_failure(struct run *run, const char *id, const char *what,
		  const struct sbx_err *e)
{
	json_object *f = json_object_new_object();
	if (id)
		sbx_json_set_str(f, "id", id);
	if (what)
		sbx_json_set_str(f, "what", what);
	json_object *je = json_object_new_object();
	sbx_json_set_str(je, "kind", sbx_kind_name(e->kind));
	sbx_json_set_str(je, "message", e->msg);
	json_object_object_add(f, "error", je);
	json_object_array_add(run->failed, f);
	if (run->nfailed++ == 0)
		run->first = *e;
}

/* ------------------------------------------------------------------ */
/* The lease: a token key (tokenkey.h), renewed by its own thread while
 * the run holds it. */

/* 1 taken, 0 held by someone else, -1 error. */
int lease_take(struct run *run, struct sbx_err *err)
{
	int64_t ttl = sbx_env_ms("SBX_REAP_LEASE_TTL", 0, 1, LEASE_TTL_DEFAULT_MS);
	/* A host-local backend's reaper sees only its host's sandboxes: one
	 * lease per host, so reapers on two hosts both run (host.h). */
	SBX_AUTOFREE char *host = NULL;
	if ((sbx_backend_caps(run->b) & SBX_CAP_HOST_LOCAL) &&
	    !(host = sbx_host_id(err)))
		return -1;
	if (sbx_tokenkey_init(&run->lease, run->r, sbx_key_reap_lease(run->r->prefix, host), ttl,
			      "reaper lease", err) < 0)
		return -1;
	int taken = sbx_tokenkey_take(&run->lease, err);
	if (taken == 1 && sbx_tokenkey_hold(&run->lease, err) < 0)
		taken = -1;
	run->lease_taken = taken == 1;
	return taken;
}

/* 0 while the lease is ours (or in a dry run, which takes none); -1 once
 * it was lost, recorded as one failure of the run (not one per object
 * that could not be deleted after it): the caller stops deleting. */
int lease_keep(struct run *run)
{
	struct sbx_err err = {0};
	if (!run->lease_taken || sbx_tokenkey_check(&run->lease, &err) == 0)
		return 0;
	if (!run->lease_noted++)
		note_failure(run, NULL, "lease", &err);
	return -1;
}

/* A failed release leaves the lease to expire by itself. */
void lease_release(struct run *run)
{
	struct sbx_err ignored = {0};
	if (run->lease_taken)
		sbx_tokenkey_release(&run->lease, &ignored);
	else if (run->lease.key)
		sbx_tokenkey_clear(&run->lease);
	run->lease_taken = 0;
}

/* Count an object (`what`: "sandboxes" or "snapshots") under its keyspace
 * id in reap.keyspaces: what a dry run shows an admin choosing the id to
 * adopt. */
static void count_keyspace(struct run *run, const char *ks, const char *what)
{
	const char *k = ks ? ks : "none";
	json_object *per = sbx_json_obj(run->keyspaces, k);
	if (!per) {
		per = json_object_new_object();
		sbx_json_set_int(per, "sandboxes", 0);
		sbx_json_set_int(per, "snapshots", 0);
		json_object_object_add(run->keyspaces, k, per);
	}
	json_object *n = NULL;
	json_object_object_get_ex(per, what, &n);
	sbx_json_set_int(per, what, (n ? json_object_get_int64(n) : 0) + 1);
}

/* Whether an object that carries keyspace id `ks` (NULL: none) is ours to
 * judge: NULL when it is, else the reason to keep it.  When our keyspace
 * has no id (Redis lost its data, or never made anything), nothing that
 * carries one is judged - force or not: only --adopt-keyspace (run_phases)
 * names which id is ours, and every other id stays another keyspace's. */
const char *keyspace_verdict(struct run *run, const char *ks, const char *what)
{
	count_keyspace(run, ks, what);
	if (!ks)
		return run->o->adopt_legacy ? NULL : "no-keyspace";
	if (!run->keyspace[0]) {
		run->unknown_keyspace++;
		return "keyspace-unknown";
	}
	return strcmp(ks, run->keyspace) ? "other-keyspace" : NULL;
}

/* A report entry for an item: id, tenant, session, purpose, state, and
 * the reason when given. */
json_object *entry(const struct item *it, const char *reason)
{
	json_object *e = json_object_new_object();
	sbx_json_set_str(e, "id", it->sb.id);
	if (it->tenant)
		json_object_object_add(e, "tenant",
				       json_object_new_string_len(it->tenant, (int)it->tlen));
	if (it->session)
		json_object_object_add(e, "session",
				       json_object_new_string_len(it->session, (int)it->slen));
	if (it->installer)
		sbx_json_set_str(e, "purpose", SBX_PURPOSE_SKILL_INSTALL);
	sbx_json_set_str(e, "state", sbx_sandbox_state(&it->sb));
	if (reason)
		sbx_json_set_str(e, "reason", reason);
	return e;
}
