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
 * Skills (skill.c, ledger.c; DESIGN §7):
 *   sbx-snap --tenant T --skill NAME [--clean-scratch] [--seal PATH]
 *            [--flatten-above N]         ledger row first, then the snapshot
 *                                        with the row's planned name, then
 *                                        ready, the image pointer, stale marks
 *   sbx-snap --tenant T --remove-skill NAME [--clean-scratch]
 *   sbx-snap --recover [--tenant T] [--grace D] [--dry-run]
 *   sbx-snap ls|show --tenant T          the ledger rows and the image pointer
 *   sbx-snap rm --tenant T --skill NAME [--force]
 *   sbx-snap flatten --tenant T          flatten the tenant's image
 *
 * Checkpoints (checkpoint.h; issue 32):
 *   sbx-snap checkpoint --tenant T --session S [--label L]
 *                                        the session's sandbox, as the next
 *                                        entry of its history
 *   sbx-snap ls --tenant T --session S   the history, one document per entry
 *
 * Structure: every mode is a small function over library calls, chosen in
 * main. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "checkpoint.h"
#include "cli.h"
#include "cliopt.h"
#include "cliutil.h"
#include "doc.h"
#include "ledger.h"
#include "ledger-recover.h"
#include "pager.h"
#include "skill.h"
#include "util.h"

enum { O_PROFILE, O_NAME, O_ID, O_FORCE, O_TENANT, O_SKILL, O_REMOVE_SKILL, O_CLEAN,
       O_SEAL, O_FLATTEN_ABOVE, O_RECOVER, O_GRACE, O_DRY_RUN, O_SESSION, O_LABEL };
enum { S_TAKE, S_LS, S_SHOW, S_RM, S_FLATTEN, S_CHECKPOINT };

/* With --tenant, ls, show, rm and flatten take no ID: the operand counts
 * below allow both, and check_skill_form() holds each form to its own. */
static const struct sbx_sub subs[] = {
	[S_TAKE] = {"", "", 0, 0, "snapshot each sandbox read on stdin (or --id's); with --tenant "
		    "and --skill or --remove-skill, the tenant's skill image; --recover", NULL},
	[S_LS] = {"ls", "", 0, 0, "one document per snapshot (with --tenant: the ledger)", NULL},
	[S_SHOW] = {"show", "ID", 0, 1, "one snapshot (with --tenant and no ID: the image)", NULL},
	[S_RM] = {"rm", "ID", 0, 1, "delete a snapshot (with --tenant: --skill NAME's row)", NULL},
	[S_FLATTEN] = {"flatten", "ID", 0, 1, "one layer instead of a chain (with --tenant: "
		       "the image)", NULL},
	[S_CHECKPOINT] = {"checkpoint", "", 0, 0, "checkpoint the session's sandbox into its history",
			  "tenant session"},
	{0},
};

#define TAKE SBX_SUB(S_TAKE)
static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"name", 'n', "NAME", "name stored with the new snapshot (take, flatten)", O_NAME,
	 TAKE | SBX_SUB(S_FLATTEN)},
	{"id", 'i', "ID", "snapshot this sandbox instead of reading documents", O_ID, TAKE},
	{"force", 'f', NULL, "rm: also delete the snapshots stacked on it, or an image in use",
	 O_FORCE, SBX_SUB(S_RM)},
	{"tenant", 0, "TENANT", "skills: the tenant whose skill image this is", O_TENANT, SBX_ALL},
	{"skill", 0, "NAME", "skills: snapshot the installer with skill NAME (ledger first)",
	 O_SKILL, TAKE | SBX_SUB(S_RM)},
	{"remove-skill", 0, "NAME", "skills: remove skill NAME from the image, then snapshot",
	 O_REMOVE_SKILL, TAKE},
	{"clean-scratch", 0, NULL, "skills: empty /workspace, /tmp and package caches first",
	 O_CLEAN, TAKE},
	{"seal", 0, "PATH", "skills: the tree to make root-owned and read-only "
	 "(default /opt/sbx/skills/NAME)", O_SEAL, TAKE},
	{"flatten-above", 0, "N", "skills: flatten the new image when it has more than N layers",
	 O_FLATTEN_ABOVE, TAKE},
	{"recover", 0, NULL, "skills: complete or fail half-done ledger rows", O_RECOVER, TAKE},
	{"grace", 0, "DURATION", "--recover: age before a row with no snapshot fails (default 10m)",
	 O_GRACE, TAKE},
	{"dry-run", 0, NULL, "--recover: report what would be done, change nothing", O_DRY_RUN,
	 TAKE},
	{"session", 's', "SESSION", "checkpoint, ls: the session whose checkpoints these are",
	 O_SESSION, SBX_SUB(S_CHECKPOINT) | SBX_SUB(S_LS)},
	{"label", 'l', "LABEL", "checkpoint: a label to rewind to instead of its number", O_LABEL,
	 SBX_SUB(S_CHECKPOINT)},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-snap",
	.synopsis = "[--name NAME] [--id ID] | ls | show ID | rm ID [--force] | flatten ID [--name NAME]\n"
		    "       sbx-snap --tenant T (--skill NAME | --remove-skill NAME) [--clean-scratch] "
		    "[--seal PATH] [--flatten-above N]\n"
		    "       sbx-snap --recover [--tenant T] [--grace D] [--dry-run]\n"
		    "       sbx-snap ls|show --tenant T | rm --tenant T --skill NAME [--force] | "
		    "flatten --tenant T\n"
		    "       sbx-snap checkpoint --tenant T --session S [--label L] | "
		    "ls --tenant T --session S",
	.summary = "Freeze sandboxes into snapshots; list, show, delete and flatten snapshots; "
		   "checkpoint sessions.",
	.opts = opts,
	.subs = subs,
};

struct snap_opts {
	struct sbx_app app;
	const char *name;
	const char *id;
	int force;
	const char *tenant, *skill, *remove_skill, *seal;
	const char *session, *label;
	int clean_scratch, recover, dry_run;
	int64_t flatten_above, grace_ms;
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct snap_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_NAME: o->name = arg; return 0;
	case O_ID: o->id = arg; return 0;
	case O_FORCE: o->force = 1; return 0;
	case O_TENANT: o->tenant = arg; return 0;
	case O_SKILL: o->skill = arg; return 0;
	case O_REMOVE_SKILL: o->remove_skill = arg; return 0;
	case O_CLEAN: o->clean_scratch = 1; return 0;
	case O_SEAL: o->seal = arg; return 0;
	case O_RECOVER: o->recover = 1; return 0;
	case O_DRY_RUN: o->dry_run = 1; return 0;
	case O_SESSION: o->session = arg; return 0;
	case O_LABEL: o->label = arg; return 0;
	case O_GRACE: return sbx_parse_duration_ms(arg, &o->grace_ms, err);
	case O_FLATTEN_ABOVE: {
		char *end;
		long long n = strtoll(arg, &end, 10);
		if (*end || n <= 0)
			return sbx_usage_err(err, "--flatten-above must be a positive number");
		o->flatten_above = n;
		return 0;
	}
	}
	return 0;
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
	json_object *j = json_object_new_object();
	sbx_snapshot_ref_json(&r, j);
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
	sbx_snapshot_ref_json(r, sbx_json_child(doc, "snapshot"));
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc;
}

static int do_ls(struct sbx_backend *b, const char *only, struct sbx_err *err)
{
	struct sbx_snapshot_ref *v;
	size_t n;
	if (sbx_snapshots_all(b, &v, &n, err) < 0)
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
	return sbx_cli_emit_deleted("snapshot", id, gone, err);
}

static int release_for_rm(struct snap_opts *o, const char *id, struct sbx_err *err);

static int do_rm(struct snap_opts *o, struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	struct sbx_snapshot_ref *v = NULL;
	size_t n = 0;
	if (release_for_rm(o, id, err) < 0)
		return -1;
	if (o->force && sbx_snapshots_all(b, &v, &n, err) < 0)
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
	if (sbx_call(b, snapshot_flatten, err, id, o->name, &r) < 0)
		return -1;
	json_object *doc = json_object_new_object();
	json_object *j = sbx_json_child(doc, "snapshot");
	sbx_snapshot_ref_json(&r, j);
	sbx_json_set_str(j, "flattened_from", id);
	sbx_json_set_int(j, "duration_ms", sbx_mono_ms() - t0);
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	ref_clear(&r);
	return rc;
}

/* ---- skills ---- */

static int open_both(struct snap_opts *o, json_object *handle, struct sbx_backend **b,
		     struct sbx_redis **r, struct sbx_err *err)
{
	if (sbx_app_backend(&o->app, handle, b, err) < 0)
		return -1;
	return sbx_app_redis(&o->app, r, err);
}

/* One installer sandbox: the whole ledger protocol (skill.c). */
static int skill_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct snap_opts *o = ctx;
	struct sbx_backend *b;
	struct sbx_redis *r;
	json_object *h = sbx_json_obj(doc, "sandbox");
	if (!h)
		return sbx_fail(err, SBX_INVALID_REQUEST, "snapshot", "the document has no sandbox");
	if (open_both(o, h, &b, &r, err) < 0)
		return -1;
	struct sbx_sandbox sb = {0};
	if (sbx_sandbox_from_json(h, &sb, err) < 0)
		return -1;
	struct sbx_skill_snap_req q = {
		.tenant = o->tenant, .skill = o->skill ? o->skill : o->remove_skill,
		.remove = o->remove_skill != NULL, .clean_scratch = o->clean_scratch,
		.seal = o->seal, .flatten_above = o->flatten_above, .grace_ms = o->grace_ms,
	};
	int64_t t0 = sbx_mono_ms();
	int rc = sbx_skill_snapshot(b, r, &sb, &q, doc, err);
	sbx_sandbox_clear(&sb);
	json_object *s = sbx_json_obj(doc, "snapshot");
	if (s)
		sbx_json_set_int(s, "duration_ms", sbx_mono_ms() - t0);
	if (rc == 0 && s && sbx_json_str(s, "warning"))
		sbx_cli_warn(cmd.name, "%s", sbx_json_str(s, "warning"));
	return rc;
}

static int do_recover(struct snap_opts *o, struct sbx_err *err)
{
	struct sbx_backend *b;
	struct sbx_redis *r;
	if (open_both(o, NULL, &b, &r, err) < 0)
		return -1;
	json_object *doc = json_object_new_object();
	json_object *rep = sbx_json_child(doc, "recover");
	if (o->tenant)
		sbx_json_set_str(rep, "tenant", o->tenant);
	sbx_json_set_bool(rep, "dry_run", o->dry_run);
	int rc = sbx_ledger_recover(b, r, o->tenant, o->grace_ms, o->dry_run, rep, err);
	/* Then what crashed snapshots left in the image store. */
	struct sbx_store_gc st;
	struct sbx_err gerr = {0};
	if (sbx_call(b, store_gc, &gerr, o->dry_run, &st) == 0)
		sbx_store_gc_json(&st, sbx_json_child(rep, "images"));
	else if (gerr.kind != SBX_UNSUPPORTED && rc == 0) {
		*err = gerr;
		rc = -1;
	}
	struct sbx_err werr = {0};
	if (sbx_emit(doc, &werr) < 0 && rc == 0) {
		*err = werr;
		rc = -1;
	}
	json_object_put(doc);
	return rc;
}

/* ls --tenant: one {"skill": row} per ledger row, then {"image": ...}.
 * show --tenant: one document with everything, and a warning on stderr
 * when the image is not usable by this profile. */
static int do_tenant_view(struct snap_opts *o, int show, struct sbx_err *err)
{
	struct sbx_backend *b;
	struct sbx_redis *r;
	if (open_both(o, NULL, &b, &r, err) < 0)
		return -1;
	json_object *st = json_object_new_object();
	int w = sbx_skill_status(b, r, o->tenant, st, err);
	if (w < 0) {
		json_object_put(st);
		return -1;
	}
	int rc = 0;
	if (w)
		sbx_cli_warn(cmd.name, "%s", sbx_json_str(st, "warning"));
	if (show) {
		json_object *doc = json_object_new_object();
		json_object_object_add(doc, "skills", json_object_get(st));
		rc = sbx_emit(doc, err);
		json_object_put(doc);
	} else {
		json_object *rows = NULL;
		json_object_object_get_ex(st, "skills", &rows);
		size_t n = rows ? json_object_array_length(rows) : 0;
		for (size_t i = 0; i < n && rc == 0; i++) {
			json_object *doc = json_object_new_object();
			sbx_json_set_str(doc, "tenant", o->tenant);
			json_object_object_add(doc, "skill",
					       json_object_get(json_object_array_get_idx(rows, i)));
			rc = sbx_emit(doc, err);
			json_object_put(doc);
		}
		json_object *im = sbx_json_obj(st, "image");
		if (rc == 0 && im) {
			json_object *doc = json_object_new_object();
			sbx_json_set_str(doc, "tenant", o->tenant);
			json_object_object_add(doc, "image", json_object_get(im));
			if (w)
				sbx_json_set_str(doc, "warning", sbx_json_str(st, "warning"));
			rc = sbx_emit(doc, err);
			json_object_put(doc);
		}
	}
	json_object_put(st);
	return rc;
}

/* rm --tenant --skill NAME, or (flatten) flatten --tenant: one library
 * call that fills one document, written only when the call succeeded. */
static int do_tenant_change(struct snap_opts *o, int flatten, struct sbx_err *err)
{
	struct sbx_backend *b;
	struct sbx_redis *r;
	if (open_both(o, NULL, &b, &r, err) < 0)
		return -1;
	json_object *doc = json_object_new_object();
	int rc;
	if (flatten) {
		sbx_json_set_str(doc, "tenant", o->tenant);
		rc = sbx_skill_flatten(b, r, o->tenant, doc, err);
	} else {
		rc = sbx_skill_rm(b, r, o->tenant, o->skill, o->force, doc, err);
	}
	if (rc == 0)
		rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc;
}

/* Plain rm of a snapshot a tenant's image uses: refused without --force,
 * and with it the pointer is cleared first.  Without Redis configured
 * there is no pointer to protect. */
static int release_for_rm(struct snap_opts *o, const char *id, struct sbx_err *err)
{
	struct sbx_redis *r;
	/* The profile holds $SBX_REDIS_URL too (config.c folded it in). */
	const char *url = o->app.profile ? o->app.profile->redis_url : NULL;
	if (!url || !*url)
		return 0;
	if (sbx_app_redis(&o->app, &r, err) < 0)
		return -1;
	return sbx_skill_release_snapshot(r, id, o->force, NULL, err) < 0 ? -1 : 0;
}

/* ---- checkpoints ---- */

static json_object *ckpt_doc(const struct snap_opts *o, const struct sbx_checkpoint *c)
{
	json_object *doc = json_object_new_object();
	sbx_json_set_str(doc, "tenant", o->tenant);
	sbx_json_set_str(doc, "session", o->session);
	sbx_checkpoint_json(c, sbx_json_child(doc, "checkpoint"));
	return doc;
}

/* checkpoint: one document with the new entry.  ls --session: one per
 * entry, oldest first. */
static int do_checkpoint(struct snap_opts *o, int list, struct sbx_err *err)
{
	struct sbx_backend *b;
	struct sbx_redis *r;
	if (list ? sbx_app_use(&o->app, NULL, err) < 0 || sbx_app_redis(&o->app, &r, err) < 0
		 : open_both(o, NULL, &b, &r, err) < 0)
		return -1;
	struct sbx_checkpoint *v;
	size_t n;
	int64_t t0 = sbx_mono_ms();
	if (list) {
		if (sbx_checkpoint_list(r, o->tenant, o->session, &v, &n, err) < 0)
			return -1;
	} else {
		v = sbx_xmalloc(sizeof(*v));
		n = 1;
		if (sbx_checkpoint_take(b, r, o->tenant, o->session, o->label, v, err) < 0) {
			free(v);
			return -1;
		}
	}
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		json_object *doc = ckpt_doc(o, &v[i]);
		if (!list)
			sbx_json_set_int(sbx_json_obj(doc, "checkpoint"), "duration_ms",
					 sbx_mono_ms() - t0);
		rc = sbx_emit(doc, err);
		json_object_put(doc);
	}
	sbx_checkpoints_free(v, n);
	return rc;
}

/* The end of main for a mode that writes its own documents: a failure
 * (rc < 0) is reported with an error document, except a closed stdout
 * (exit 74, quietly: there is no reader).  Closes what the mode opened. */
static int finish(struct snap_opts *o, int rc, struct sbx_err *err)
{
	int st = sbx_cli_finish(cmd.name, rc, err);
	sbx_app_close(&o->app);
	return st;
}

/* What the masks cannot say: the skill forms (--tenant, --skill,
 * --remove-skill, --recover) against each other, and the ID that the
 * plain commands need and the --tenant ones refuse.  *skill is set when a
 * skill form was asked for. */
static int check_form(struct snap_opts *o, const struct sbx_args *a, int *skill,
		      struct sbx_err *err)
{
	int sub = a->sub;
	if (sub == S_CHECKPOINT || o->session) {
		*skill = 0;
		if (o->skill || o->remove_skill || o->clean_scratch || o->seal || o->flatten_above ||
		    o->recover || o->grace_ms || o->dry_run || o->id || o->name || a->argc)
			return sbx_usage_err(err, "checkpoint and ls --session take only --tenant, "
					     "--session and (checkpoint) --label");
		return o->tenant ? 0 : sbx_usage_err(err, "--session needs --tenant");
	}
	*skill = o->tenant || o->skill || o->remove_skill || o->clean_scratch || o->seal ||
		 o->flatten_above || o->recover || o->grace_ms || o->dry_run;
	if (!*skill)
		return sub != S_TAKE && sub != S_LS && a->argc != 1 ?
			sbx_usage_err(err, "this command takes one ID") : 0;
	if (o->recover)
		return o->skill || o->remove_skill || o->id || o->name || o->clean_scratch ||
		       o->seal || o->flatten_above ?
			sbx_usage_err(err, "--recover takes only --tenant, --grace and --dry-run") : 0;
	if (o->grace_ms || o->dry_run)
		return sbx_usage_err(err, "--grace and --dry-run belong to --recover");
	if (!o->tenant)
		return sbx_usage_err(err, "skill options need --tenant");
	if (sub == S_TAKE) {
		if (!o->skill == !o->remove_skill)
			return sbx_usage_err(err, "give exactly one of --skill and --remove-skill");
		if (o->name)
			return sbx_usage_err(err, "--name does not apply to skill snapshots");
		if (o->remove_skill && o->seal)
			return sbx_usage_err(err, "--seal applies to --skill");
		return 0;
	}
	if (a->argc != 0)
		return sbx_usage_err(err, "with --tenant, commands take no ID");
	if (o->name)
		return sbx_usage_err(err, "--name belongs to taking or flattening a snapshot");
	if (sub == S_RM && !o->skill)
		return sbx_usage_err(err, "rm --tenant needs --skill NAME");
	return 0;
}

/* The plain commands, on the profile's backend. */
static int run_plain(struct snap_opts *o, const struct sbx_args *a, struct sbx_err *err)
{
	struct sbx_backend *b;
	if (sbx_app_backend(&o->app, NULL, &b, err) < 0)
		return -1;
	switch (a->sub) {
	case S_LS: return do_ls(b, NULL, err);
	case S_SHOW: return do_ls(b, a->argv[0], err);
	case S_RM: return do_rm(o, b, a->argv[0], err);
	default: return do_flatten(o, b, a->argv[0], err);
	}
}

/* The --tenant commands. */
static int run_tenant(struct snap_opts *o, int sub, struct sbx_err *err)
{
	switch (sub) {
	case S_LS: return do_tenant_view(o, 0, err);
	case S_SHOW: return do_tenant_view(o, 1, err);
	case S_RM: return do_tenant_change(o, 0, err);
	default: return do_tenant_change(o, 1, err);
	}
}

int main(int argc, char **argv)
{
	struct snap_opts o = {0};
	struct sbx_err err = {0};
	struct sbx_args a;
	int skill;
	if (sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err) < 0 ||
	    check_form(&o, &a, &skill, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	if (!o.grace_ms)
		o.grace_ms = SBX_LEDGER_GRACE_DEFAULT_MS;
	if (a.sub == S_TAKE && !o.recover) {
		json_object *seed = sbx_cli_id_seed(o.id);
		int st = sbx_cli_run_docs(cmd.name, seed, skill ? skill_one : take_one, &o);
		json_object_put(seed);
		sbx_app_close(&o.app);
		return st;
	}
	if (a.sub == S_CHECKPOINT || o.session)
		return finish(&o, do_checkpoint(&o, a.sub == S_LS, &err), &err);
	int rc = o.recover ? do_recover(&o, &err) :
		 skill ? run_tenant(&o, a.sub, &err) : run_plain(&o, &a, &err);
	return finish(&o, rc, &err);
}
