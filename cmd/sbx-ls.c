/* sbx-ls - list or show sandboxes.
 *
 *   sbx-ls [--all] [--label K=V]... [--state S]... [--id ID] [--tenant T]
 *   sbx-ls --tenant T --usage
 *
 * Writes one {"sandbox": handle} document per sandbox, so that the output
 * feeds any other program (`sbx-ls --all | sbx-ctl kill`).  Without --all
 * or --state only live sandboxes (running, paused, stopped, transitioning)
 * are listed.  --usage writes instead one document of the tenant's quota
 * slots against its quota (quota.h).  Reads no documents. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "cliopt.h"
#include "cliutil.h"
#include "doc.h"
#include "keys.h"
#include "metadata.h"
#include "pager.h"
#include "quota.h"
#include "session.h"
#include "util.h"

enum { O_PROFILE, O_ALL, O_LABEL, O_STATE, O_ID, O_TENANT, O_USAGE };

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"all", 'a', NULL, "include dead and terminal sandboxes", O_ALL, SBX_ALL},
	{"label", 'l', "KEY=VALUE", "only sandboxes with this metadata pair (repeatable)", O_LABEL, SBX_ALL},
	{"state", 0, "STATE", "only sandboxes in this state (repeatable)", O_STATE, SBX_ALL},
	{"id", 0, "ID", "show this one sandbox (not found is an error)", O_ID, SBX_ALL},
	{"tenant", 0, "TENANT", "only this tenant's sandboxes", O_TENANT, SBX_ALL},
	{"usage", 0, NULL, "show the tenant's use against its quota instead (needs --tenant)", O_USAGE,
	 SBX_ALL},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-ls",
	.synopsis = "[OPTIONS]",
	.summary = "List sandboxes by metadata and state, one document each.",
	.opts = opts,
};

#define LS_WORDS_MAX 8

struct ls_opts {
	struct sbx_app app;
	int all;
	json_object *labels;
	unsigned states;         /* asked of the backend: generic bits */
	/* --state given: what is listed is exactly the states named, generic
	 * ones (`exact`, for handles without a word of their own) and
	 * backends' own words (a local "dead" is not "terminal"). */
	int picked;
	unsigned exact;
	const char *words[LS_WORDS_MAX];
	size_t nwords;
	const char *id;
	const char *tenant;
	int usage;
};

/* --state NAME: a generic state, or a state word of a compiled-in backend
 * (asked of the backend as the generic state it counts as). */
static int add_state(struct ls_opts *o, const char *arg, struct sbx_err *err)
{
	enum sbx_state s = sbx_state_from_name(arg);
	o->picked = 1;
	if (s != SBX_STATE_UNKNOWN || strcmp(arg, "unknown") == 0) {
		o->exact |= 1u << s;
	} else if (sbx_state_word_find(arg, &s)) {
		if (o->nwords == LS_WORDS_MAX)
			return sbx_usage_err(err, "at most %d backend states", LS_WORDS_MAX);
		o->words[o->nwords++] = arg;
	} else {
		return sbx_usage_err(err, "unknown state '%s' (running, paused, transitioning, "
				     "terminal, or a backend's own: sbx(7))", arg);
	}
	o->states |= 1u << s;
	return 0;
}

static int state_picked(const struct ls_opts *o, const struct sbx_sandbox *sb)
{
	if (!o->picked)
		return 1;
	if (!sb->state_word)
		return (o->exact & (1u << sb->state)) != 0;
	for (size_t i = 0; i < o->nwords; i++)
		if (strcmp(o->words[i], sb->state_word) == 0)
			return 1;
	return 0;
}

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct ls_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_ALL: o->all = 1; return 0;
	case O_LABEL: return sbx_cli_pair_add(o->labels, arg, "--label", err);
	case O_STATE: return add_state(o, arg, err);
	case O_ID: o->id = arg; return 0;
	case O_TENANT:
		if (sbx_id_check("tenant", arg, strlen(arg), err) < 0)
			return -1;
		o->tenant = arg;
		json_object_object_add(o->labels, SBX_MD_TENANT, json_object_new_string(arg));
		return 0;
	case O_USAGE: o->usage = 1; return 0;
	}
	return 0;
}

/* {"sandbox": handle}, with "retain_until" beside it when the sandbox is
 * a paused session's and its tenant or profile has a retention
 * (session.h: one round trip for each such sandbox). */
static int emit_sandbox(struct ls_opts *o, struct sbx_backend *b, const struct sbx_sandbox *sb,
			struct sbx_err *err)
{
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "sandbox", sbx_sandbox_to_json(sb));
	struct sbx_redis *r;
	int64_t until = 0;
	if (sb->state == SBX_STATE_PAUSED && sbx_json_str(sb->metadata, SBX_MD_SESSION)) {
		/* The listing is the backend's; retain_until, which Redis
		 * knows, is an annotation: without Redis it is left out, with a
		 * warning, and the listing goes on. */
		struct sbx_err e = {0};
		int rc = sbx_app_redis(&o->app, &r, &e) < 0 ? -1
		       : sbx_session_retain_until(b, r, sb, &until, &e);
		if (rc > 0) {
			char when[32];
			sbx_time_iso(until, when, sizeof(when));
			sbx_json_set_str(doc, "retain_until", when);
		} else if (rc < 0) {
			sbx_cli_warn(cmd.name, "%s: no retain_until: %s: %s", sb->id,
				     sbx_kind_name(e.kind), e.msg);
		}
	}
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc;
}

struct listed {
	struct ls_opts *o;
	struct sbx_backend *b;
};

static int emit_listed(struct sbx_sandbox *sb, void *ctx, struct sbx_err *err)
{
	struct listed *l = ctx;
	return state_picked(l->o, sb) ? emit_sandbox(l->o, l->b, sb, err) : 0;
}

/* --usage: {"tenant": T, "usage": {running, sandboxes, pending}}. */
static int ls_usage(struct ls_opts *o, struct sbx_err *err)
{
	struct sbx_redis *r;
	struct sbx_usage u;
	if (sbx_app_use(&o->app, NULL, err) < 0 || sbx_app_redis(&o->app, &r, err) < 0 ||
	    sbx_quota_usage(r, &o->app.profile->quota, o->app.profile->retain_paused_ms, o->tenant, &u,
			    err) < 0)
		return -1;
	json_object *doc = json_object_new_object();
	sbx_json_set_str(doc, "tenant", o->tenant);
	json_object_object_add(doc, "usage", sbx_usage_json(&u));
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc < 0 ? -1 : 1;
}

static int ls_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct ls_opts *o = ctx;
	(void)doc;
	if (o->usage)
		return ls_usage(o, err);
	struct sbx_backend *b;
	if (sbx_app_backend(&o->app, NULL, &b, err) < 0)
		return -1;
	if (o->id) {
		struct sbx_sandbox sb;
		if (sbx_call(b, get, err, o->id, &sb) < 0)
			return -1;
		int rc = emit_sandbox(o, b, &sb, err);
		sbx_sandbox_clear(&sb);
		return rc < 0 ? -1 : 1;
	}
	struct sbx_list_filter f = {
		.metadata = json_object_object_length(o->labels) ? o->labels : NULL,
		.states = o->states,
	};
	if (!f.states && !o->all)
		f.states = 1u << SBX_STATE_RUNNING | 1u << SBX_STATE_PAUSED |
			   1u << SBX_STATE_TRANSITIONING;   /* live, a backend's own live states too */
	/* Every page (pager.h): a backend that loops is an error, not a
	 * listing that looks complete. */
	struct listed l = {o, b};
	if (sbx_list_each(b, &f, emit_listed, &l, NULL, err) < 0)
		return -1;
	return 1;
}

int main(int argc, char **argv)
{
	struct ls_opts o = {0};
	struct sbx_err err = {0};
	o.labels = json_object_new_object();
	struct sbx_args a;
	int i = sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err);
	if (i == 0 && o.usage && !o.tenant)
		i = sbx_usage_err(&err, "--usage needs --tenant");
	if (i == 0 && o.usage && (o.id || o.all || o.states || json_object_object_length(o.labels) > 1))
		i = sbx_usage_err(&err, "--usage goes with --tenant only");
	if (i < 0) {
		json_object_put(o.labels);
		return sbx_cli_report(cmd.name, &err);
	}
	json_object *seed = json_object_new_object();
	int st = sbx_cli_run_docs(cmd.name, seed, ls_one, &o);
	json_object_put(seed);
	json_object_put(o.labels);
	sbx_app_close(&o.app);
	return st;
}
