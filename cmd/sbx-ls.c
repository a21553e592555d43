/* sbx-ls - list or show sandboxes.
 *
 *   sbx-ls [--all] [--label K=V]... [--state S]... [--id ID]
 *
 * Writes one {"sandbox": handle} document per sandbox, so that the output
 * feeds any other program (`sbx-ls --all | sbx-ctl kill`).  Without --all
 * or --state only live sandboxes (running, paused, stopped, transitioning)
 * are listed.  Reads no documents. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "cliopt.h"
#include "cliutil.h"
#include "doc.h"
#include "pager.h"
#include "util.h"

enum { O_PROFILE, O_ALL, O_LABEL, O_STATE, O_ID };

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"all", 'a', NULL, "include dead and terminal sandboxes", O_ALL, SBX_ALL},
	{"label", 'l', "KEY=VALUE", "only sandboxes with this metadata pair (repeatable)", O_LABEL, SBX_ALL},
	{"state", 0, "STATE", "only sandboxes in this state (repeatable)", O_STATE, SBX_ALL},
	{"id", 0, "ID", "show this one sandbox (not found is an error)", O_ID, SBX_ALL},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-ls",
	.synopsis = "[OPTIONS]",
	.summary = "List sandboxes by metadata and state, one document each.",
	.opts = opts,
};

struct ls_opts {
	struct sbx_app app;
	int all;
	json_object *labels;
	unsigned states;
	const char *id;
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct ls_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_ALL: o->all = 1; return 0;
	case O_LABEL: return sbx_cli_pair_add(o->labels, arg, "--label", err);
	case O_STATE: {
		enum sbx_state s = sbx_state_from_name(arg);
		if (s == SBX_STATE_UNKNOWN && strcmp(arg, "unknown") != 0)
			return sbx_usage_err(err, "unknown state '%s' (running, paused, stopped, "
					     "transitioning, terminal, dead)", arg);
		o->states |= 1u << s;
		return 0;
	}
	case O_ID: o->id = arg; return 0;
	}
	return 0;
}

static int emit_sandbox(const struct sbx_sandbox *sb, struct sbx_err *err)
{
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "sandbox", sbx_sandbox_to_json(sb));
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc;
}

static int emit_listed(struct sbx_sandbox *sb, void *ctx, struct sbx_err *err)
{
	(void)ctx;
	return emit_sandbox(sb, err);
}

static int ls_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct ls_opts *o = ctx;
	(void)doc;
	struct sbx_backend *b;
	if (sbx_app_backend(&o->app, NULL, &b, err) < 0)
		return -1;
	if (o->id) {
		struct sbx_sandbox sb;
		if (sbx_call(b, get, err, o->id, &sb) < 0)
			return -1;
		int rc = emit_sandbox(&sb, err);
		sbx_sandbox_clear(&sb);
		return rc < 0 ? -1 : 1;
	}
	struct sbx_list_filter f = {
		.metadata = json_object_object_length(o->labels) ? o->labels : NULL,
		.states = o->states,
	};
	if (!f.states && !o->all)
		f.states = 1u << SBX_STATE_RUNNING | 1u << SBX_STATE_PAUSED |
			   1u << SBX_STATE_STOPPED | 1u << SBX_STATE_TRANSITIONING;
	/* Every page (pager.h): a backend that loops is an error, not a
	 * listing that looks complete. */
	if (sbx_list_each(b, &f, emit_listed, NULL, NULL, err) < 0)
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
