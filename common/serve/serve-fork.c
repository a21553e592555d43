/* serve-fork.c - E2B's fork: POST /sandboxes/{id}/fork {count, timeout}.
 *
 * The source's files are frozen once into a snapshot (the backend's
 * snapshot_create: on local a pre-copy and a short freeze; the source
 * keeps running, its id and end time untouched), and `count` sandboxes are
 * made from it by create itself (serve_create_sandbox), each with the
 * source's user metadata and what the source's create was granted (its
 * record's fork_recipe: egress, allowOut/denyOut, inbound, envVars, the
 * timeout policy), so a fork never has more than its source had.  A source
 * made before records kept a recipe forks without internet access.
 *
 * 201 with one result per fork, {sandbox} or {error: {code, message}},
 * each fork succeeding or failing on its own (the key's sandbox limit
 * counts each one); a failure before any fork (the snapshot) is the
 * request's status.
 *
 * What E2B's fork has and this one has not: memory and processes (a fork
 * boots its source's files; E2B's resumes a memory snapshot), and volumes
 * (a fork mounts none of its source's, so it shares nothing writable with
 * it).  The snapshot is the key's own: listed by GET /snapshots, usable as
 * a templateID, deletable once no fork runs from it. */
#include "serve-int.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "util.h"

#define FORK_MAX 16              /* forks per request */

/* Create's body for each fork: the recipe (or no internet), the
 * snapshot, the timeout, the source's user metadata. */
static json_object *fork_body(const struct serve_rec *rec, const char *snap, int64_t timeout,
			      json_object *metadata)
{
	json_object *in = NULL;
	if (!rec->fork_recipe || json_object_deep_copy(rec->fork_recipe, &in, NULL) < 0) {
		in = json_object_new_object();
		sbx_json_set_bool(in, "allow_internet_access", 0);
	}
	sbx_json_set_str(in, "templateID", snap);
	sbx_json_set_int(in, "timeout", timeout);
	json_object_object_add(in, "metadata", json_object_get(metadata));
	return in;
}

static json_object *fork_error(const struct sbx_err *err)
{
	json_object *e = json_object_new_object();
	sbx_json_set_int(e, "code", serve_status_of(err));
	sbx_json_set_str(e, "message", err->msg);
	json_object *res = json_object_new_object();
	json_object_object_add(res, "error", e);
	return res;
}

int serve_fork(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
	       struct sbx_sandbox *src, const struct serve_rec *rec, json_object *in)
{
	json_object_object_foreach(in, k, v) {
		if (strcmp(k, "count") != 0 && strcmp(k, "timeout") != 0 && v)
			return serve_reply_error(o, 400, "sbx-serve does not implement fork's '%.64s'", k);
	}
	int64_t count = sbx_json_int(in, "count", 1);
	int64_t timeout = sbx_json_int(in, "timeout", 15);
	if (count < 1 || count > FORK_MAX)
		return serve_reply_error(o, 400, "count must be 1 to %d", FORK_MAX);
	if (timeout < 1)
		return serve_reply_error(o, 400, "Timeout must be greater than 0");
	struct sbx_snapshot_ref ref = {0};
	struct sbx_err err = {0};
	if (sbx_call(b, snapshot_create, &err, src, NULL, &ref) < 0)
		return serve_reply_err(o, &err);
	if (serve_snap_note(r->serve_dir, ref.id, src->id, r->team, &err) < 0) {
		int gone;
		struct sbx_err e2 = {0};
		sbx_call(b, snapshot_delete, &e2, ref.id, &gone);
		free(ref.id);
		free(ref.name);
		free(ref.parent);
		return serve_reply_err(o, &err);
	}
	json_object *d = json_object_new_object();
	sbx_json_set_str(d, "snapshot", ref.id);
	serve_event(r->cfg, r->team, src->id, "snapshot", "command", d);
	json_object *metadata = serve_user_metadata(src);
	json_object *body = fork_body(rec, ref.id, timeout, metadata);
	json_object_put(metadata);
	json_object *results = json_object_new_array();
	for (int64_t i = 0; i < count; i++) {
		json_object *out = NULL;
		struct sbx_err fe = {0};
		if (serve_create_sandbox(r, body, 1, &out, &fe) == 0) {
			json_object *res = json_object_new_object();
			json_object_object_add(res, "sandbox", out);
			json_object_array_add(results, res);
		} else {
			json_object_array_add(results, fork_error(&fe));
		}
	}
	json_object_put(body);
	free(ref.id);
	free(ref.name);
	free(ref.parent);
	return serve_reply_json(o, 201, results);
}
