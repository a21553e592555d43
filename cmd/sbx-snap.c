/* sbx-snap - snapshots: take, list, show, delete, flatten.
 *
 *   sbx-snap [--name NAME] [--id ID]     snapshot each sandbox read on stdin
 *                                        (or the one --id names); adds
 *                                        "snapshot": {id, name, parent, layers,
 *                                        size_bytes, duration_ms}
 *   sbx-snap ls                          one {"snapshot": ...} per snapshot
 *   sbx-snap show ID
 *   sbx-snap rm ID [--force]             --force: also the snapshots stacked on it
 *   sbx-snap flatten ID [--name NAME]    one layer instead of a chain
 *
 * Structure: every mode is a small function over library calls, chosen in
 * main.  The skills mode (--tenant/--skill: ledger first, then snapshot,
 * then record and mark sessions stale) is meant to be added as one more
 * mode beside take_one, reusing snap_take and snap_json. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "doc.h"
#include "local-image.h"
#include "util.h"

enum { O_PROFILE, O_NAME, O_ID, O_FORCE };

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE},
	{"name", 'n', "NAME", "name stored with the new snapshot (take, flatten)", O_NAME},
	{"id", 'i', "ID", "snapshot this sandbox instead of reading documents", O_ID},
	{"force", 'f', NULL, "rm: also delete the snapshots stacked on it", O_FORCE},
	{0},
};

static const char *const subcommands[] = {"ls", "show", "rm", "flatten", NULL};

static const struct sbx_cmd cmd = {
	.name = "sbx-snap",
	.synopsis = "[--name NAME] [--id ID] | ls | show ID | rm ID [--force] | flatten ID [--name NAME]",
	.summary = "Freeze sandboxes into snapshots; list, show, delete and flatten snapshots.",
	.opts = opts,
	.subcommands = subcommands,
};

struct snap_opts {
	struct sbx_app app;
	const char *name;
	const char *id;
	int force;
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct snap_opts *o = ctx;
	(void)err;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_NAME: o->name = arg; return 0;
	case O_ID: o->id = arg; return 0;
	case O_FORCE: o->force = 1; return 0;
	}
	return 0;
}

/* The document form of a snapshot. */
static json_object *snap_json(const struct sbx_snapshot_ref *r)
{
	json_object *o = json_object_new_object();
	char when[32];
	sbx_json_set_str(o, "id", r->id);
	sbx_json_set_str(o, "name", r->name ? r->name : r->id);
	if (r->parent)
		sbx_json_set_str(o, "parent", r->parent);
	if (r->layers >= 0)
		sbx_json_set_int(o, "layers", r->layers);
	if (r->size_bytes >= 0)
		sbx_json_set_int(o, "size_bytes", r->size_bytes);
	if (r->created_at > 0) {
		sbx_time_iso(r->created_at, when, sizeof(when));
		sbx_json_set_str(o, "created_at", when);
	}
	return o;
}

static void ref_clear(struct sbx_snapshot_ref *r)
{
	free(r->id);
	free(r->name);
	free(r->parent);
	memset(r, 0, sizeof(*r));
}

/* Take one snapshot of the sandbox in `doc` and add it under "snapshot". */
static int snap_take(struct sbx_backend *b, json_object *doc, const char *name,
		     struct sbx_err *err)
{
	struct sbx_sandbox sb = {0};
	json_object *h = sbx_json_obj(doc, "sandbox");
	if (!h)
		return sbx_fail(err, SBX_INVALID_REQUEST, "snapshot", "the document has no sandbox");
	if (sbx_sandbox_from_json(h, &sb, err) < 0)
		return -1;
	struct sbx_snapshot_ref r = {0};
	int64_t t0 = sbx_mono_ms();
	int rc = sbx_call(b, snapshot_create, err, &sb, name, &r);
	sbx_sandbox_clear(&sb);
	if (rc < 0)
		return -1;
	json_object *j = snap_json(&r);
	sbx_json_set_int(j, "duration_ms", sbx_mono_ms() - t0);
	json_object_object_add(doc, "snapshot", j);
	ref_clear(&r);
	return 0;
}

static int take_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct snap_opts *o = ctx;
	struct sbx_backend *b;
	if (sbx_app_backend(&o->app, sbx_json_obj(doc, "sandbox"), &b, err) < 0)
		return -1;
	return snap_take(b, doc, o->name, err);
}

static int emit_ref(const struct sbx_snapshot_ref *r, struct sbx_err *err)
{
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "snapshot", snap_json(r));
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc;
}

/* Every snapshot, following page tokens (a repeated token is an error, so
 * a confused backend cannot loop us forever). */
static int list_all(struct sbx_backend *b, struct sbx_snapshot_ref **out, size_t *n,
		    struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	char *token = NULL;
	for (;;) {
		struct sbx_snapshot_ref *v = NULL;
		size_t k = 0;
		char *next = NULL;
		if (sbx_call(b, snapshot_list, err, token, &v, &k, &next) < 0) {
			free(token);
			return -1;
		}
		*out = sbx_xrealloc(*out, (*n + k + 1) * sizeof(**out));
		memcpy(*out + *n, v, k * sizeof(*v));
		*n += k;
		free(v);
		if (!next) {
			free(token);
			return 0;
		}
		if (token && strcmp(token, next) == 0) {
			free(token);
			free(next);
			return sbx_fail(err, SBX_INTERNAL, "snapshot_list", "repeated page token");
		}
		free(token);
		token = next;
	}
}

static int do_ls(struct sbx_backend *b, const char *only, struct sbx_err *err)
{
	struct sbx_snapshot_ref *v;
	size_t n;
	if (list_all(b, &v, &n, err) < 0)
		return -1;
	int rc = 0, found = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (only && strcmp(v[i].id, only) != 0)
			continue;
		found = 1;
		rc = emit_ref(&v[i], err);
	}
	sbx_snapshot_refs_free(v, n);
	if (rc == 0 && only && !found)
		return sbx_fail(err, SBX_NOT_FOUND, "snapshot", "no snapshot '%s'", only);
	return rc;
}

static int rm_emit(const char *id, int gone, struct sbx_err *err)
{
	json_object *doc = json_object_new_object();
	json_object *s = sbx_json_child(doc, "snapshot");
	sbx_json_set_str(s, "id", id);
	sbx_json_set_bool(s, "deleted", !gone);
	sbx_json_set_bool(s, "gone", gone);
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc;
}

/* Delete `id`; with force, first the snapshots whose parent chain leads to
 * it, deepest first.  A sandbox still using any of them stops it with
 * conflict (nothing above that one has been deleted yet). */
static int rm_tree(struct sbx_backend *b, const char *id, int force,
		   const struct sbx_snapshot_ref *v, size_t n, int depth, struct sbx_err *err)
{
	if (force && depth < 1000)
		for (size_t i = 0; i < n; i++)
			if (v[i].parent && strcmp(v[i].parent, id) == 0 &&
			    rm_tree(b, v[i].id, force, v, n, depth + 1, err) < 0)
				return -1;
	int gone = 0;
	if (sbx_call(b, snapshot_delete, err, id, &gone) < 0)
		return -1;
	return rm_emit(id, gone, err);
}

static int do_rm(struct snap_opts *o, struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	struct sbx_snapshot_ref *v = NULL;
	size_t n = 0;
	if (o->force && list_all(b, &v, &n, err) < 0)
		return -1;
	int rc = rm_tree(b, id, o->force, v, n, 0, err);
	sbx_snapshot_refs_free(v, n);
	return rc;
}

static int do_flatten(struct snap_opts *o, struct sbx_backend *b, const char *id,
		      struct sbx_err *err)
{
	struct sbx_snapshot_ref r = {0};
	int64_t t0 = sbx_mono_ms();
	if (sbx_snapshot_flatten(b, id, o->name, &r, err) < 0)
		return -1;
	json_object *doc = json_object_new_object();
	json_object *j = snap_json(&r);
	sbx_json_set_str(j, "flattened_from", id);
	sbx_json_set_int(j, "duration_ms", sbx_mono_ms() - t0);
	json_object_object_add(doc, "snapshot", j);
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	ref_clear(&r);
	return rc;
}

static int fail_usage(struct sbx_err *err, const char *msg)
{
	sbx_usage_err(err, "%s", msg);
	return sbx_cli_report(cmd.name, err);
}

int main(int argc, char **argv)
{
	struct snap_opts o = {0};
	struct sbx_err err = {0};
	int i = sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &err);
	if (i < 0)
		return sbx_cli_report(cmd.name, &err);
	const char *sub = i < argc ? argv[i] : NULL;
	int nargs = argc - i - 1;
	const char *arg = nargs >= 1 ? argv[i + 1] : NULL;

	if (!sub) {
		if (o.force)
			return fail_usage(&err, "--force belongs to rm");
		json_object *seed = NULL;
		if (o.id) {
			seed = json_object_new_object();
			sbx_json_set_str(sbx_json_child(seed, "sandbox"), "id", o.id);
		}
		int st = sbx_cli_run_docs(cmd.name, seed, take_one, &o);
		json_object_put(seed);
		sbx_app_close(&o.app);
		return st;
	}
	int is_ls = !strcmp(sub, "ls");
	if (!is_ls && strcmp(sub, "show") && strcmp(sub, "rm") && strcmp(sub, "flatten")) {
		sbx_usage_err(&err, "unknown command '%s'", sub);
		return sbx_cli_report(cmd.name, &err);
	}
	if (nargs != (is_ls ? 0 : 1))
		return fail_usage(&err, is_ls ? "ls takes no arguments" : "this command takes one ID");
	if (o.id)
		return fail_usage(&err, "--id is for taking a snapshot");
	if (o.force && strcmp(sub, "rm"))
		return fail_usage(&err, "--force belongs to rm");
	if (o.name && strcmp(sub, "flatten"))
		return fail_usage(&err, "--name is for taking or flattening a snapshot");

	struct sbx_backend *b;
	int rc = sbx_app_backend(&o.app, NULL, &b, &err);
	if (rc == 0) {
		if (is_ls || !strcmp(sub, "show"))
			rc = do_ls(b, arg, &err);
		else if (!strcmp(sub, "rm"))
			rc = do_rm(&o, b, arg, &err);
		else
			rc = do_flatten(&o, b, arg, &err);
	}
	int st = 0;
	if (rc < 0)
		st = sbx_err_exit_status(&err) == SBX_EXIT_IOERR && !err.msg[0]
			     ? SBX_EXIT_IOERR
			     : sbx_cli_fail(cmd.name, NULL, &err);
	sbx_app_close(&o.app);
	return st;
}
