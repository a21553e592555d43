/* sbx-audit - print a tenant's session record (audit.h), one NDJSON line
 * per record, or check its chain.
 *
 *   sbx-audit --tenant T [--session S] [--since TIME|ID] [--kind K] [--follow]
 *   sbx-audit verify --tenant T
 *
 * Before reading nothing is taken from sandboxes' spools: a broker's
 * records reach the stream when a program with Redis next acts on the
 * sandbox (sbx-exec, sbx-fs, sbx-proc, a kill) or the reaper passes.
 * verify prints one document {ok, records, first, last, broken} and exits
 * 1 (kind failed) when the chain is broken.  Reads no documents. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "audit.h"
#include "cli.h"
#include "cliopt.h"
#include "doc.h"
#include "util.h"

enum { O_PROFILE, O_TENANT, O_SESSION, O_SINCE, O_KIND, O_FOLLOW };
enum { S_READ, S_VERIFY };

static const struct sbx_sub subs[] = {
	{"", "", 0, 0, "print the tenant's records as NDJSON", NULL},
	{"verify", "", 0, 0, "check the chain: a removed or altered record breaks it", "tenant"},
	{0},
};

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"tenant", 0, "TENANT", "the tenant whose record to read (required)", O_TENANT, SBX_ALL},
	{"session", 0, "SESSION", "only this session's records", O_SESSION, SBX_SUB(S_READ)},
	{"since", 0, "TIME|ID", "records from this time (ISO-8601 UTC, or a duration ago: 10m) "
	 "or after this entry id", O_SINCE, SBX_SUB(S_READ)},
	{"kind", 0, "KIND", "only records of this kind (exec, process, file, egress, lifecycle, "
	 "dropped)", O_KIND, SBX_SUB(S_READ)},
	{"follow", 'f', NULL, "then wait for new records, until killed", O_FOLLOW, SBX_SUB(S_READ)},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-audit",
	.synopsis = "[verify] --tenant TENANT [OPTIONS]",
	.summary = "Print or verify a tenant's session record (exec, files, egress, lifecycle).",
	.opts = opts,
	.subs = subs,
};

struct au_opts {
	struct sbx_app app;
	struct sbx_event_query q;
	int sub;
	char since[48];
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct au_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_TENANT: o->q.tenant = arg; return 0;
	case O_SESSION: o->q.session = arg; return 0;
	case O_SINCE:
		if (sbx_event_id_ok(arg))
			snprintf(o->since, sizeof(o->since), "%s", arg);
		else if (sbx_audit_since(arg, o->since, sizeof(o->since)) < 0)
			return sbx_usage_err(err, "--since wants a time (ISO-8601 UTC, or a duration "
					     "ago) or a stream entry id (MS or MS-SEQ)");
		o->q.since = o->since;
		return 0;
	case O_KIND: o->q.kind = arg; return 0;
	case O_FOLLOW: o->q.follow = 1; return 0;
	}
	return 0;
}

static int on_record(json_object *rec, void *ctx, struct sbx_err *err)
{
	(void)ctx;
	return sbx_emit(rec, err) < 0 ? -1 : 0;
}

/* The one "document" of the run (1: nothing more to write). */
static int run(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct au_opts *o = ctx;
	struct sbx_redis *r;
	(void)doc;
	if (sbx_app_redis(&o->app, &r, err) < 0)
		return -1;
	if (o->sub == S_READ)
		return sbx_events_read(r, &o->q, on_record, o, err) < 0 ? -1 : 1;
	json_object *rep;
	if (sbx_audit_verify(r, o->q.tenant, &rep, err) < 0)
		return -1;
	int ok = sbx_json_bool(rep, "ok", 0);
	int rc = sbx_emit(rep, err);
	json_object_put(rep);
	if (rc < 0)
		return -1;
	if (!ok)
		return sbx_fail(err, SBX_FAILED, "verify", "the audit record of tenant %s is broken",
				o->q.tenant);
	return 1;
}

int main(int argc, char **argv)
{
	struct au_opts o = {.q.stream = SBX_STREAM_AUDIT};
	struct sbx_err err = {0};
	struct sbx_args a;
	if (sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	o.sub = a.sub;
	if (!o.q.tenant) {
		sbx_usage_err(&err, "--tenant is required");
		return sbx_cli_report(cmd.name, &err);
	}
	json_object *seed = json_object_new_object();
	int st = sbx_cli_run_docs(cmd.name, seed, run, &o);
	json_object_put(seed);
	sbx_app_close(&o.app);
	return st;
}
