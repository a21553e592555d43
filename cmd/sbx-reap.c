/* sbx-reap - reconcile the backend against Redis and delete only what
 * nobody owns.
 *
 *   sbx-reap (--tenant T | --all-tenants) [--grace DURATION] [--dry-run]
 *            [--max-delete N] [--metrics-file PATH] [--force] [--adopt-legacy]
 *            [--adopt-keyspace ID]
 *            [--retire-idle DURATION]
 *            [--profile P]
 *
 * Reads no documents.  Writes exactly one report document {"reap": {...}}
 * (with an "error" key added when the run failed or refused something) and
 * exits 0 only when the world is consistent.  The work is in common/reap/reap.c. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "cliopt.h"
#include "doc.h"
#include "keys.h"
#include "keyspace.h"
#include "reap.h"
#include "reap-metrics.h"
#include "util.h"

enum { O_PROFILE, O_TENANT, O_ALL, O_GRACE, O_DRY, O_MAX, O_METRICS, O_FORCE, O_ADOPT, O_ADOPT_KS, O_RETIRE };

static const struct sbx_opt opts[] = {
	{"tenant", 0, "TENANT", "reap this tenant's sandboxes only", O_TENANT, SBX_ALL},
	{"all-tenants", 0, NULL, "reap every tenant's sandboxes, and unreferenced snapshots", O_ALL, SBX_ALL},
	{"grace", 0, "DURATION", "never delete anything younger than this (default 10m)", O_GRACE, SBX_ALL},
	{"dry-run", 'n', NULL, "report what would be deleted; delete nothing", O_DRY, SBX_ALL},
	{"max-delete", 0, "N", "delete at most N objects in this run", O_MAX, SBX_ALL},
	{"metrics-file", 0, "PATH", "also write Prometheus text metrics here (atomically)", O_METRICS, SBX_ALL},
	{"force", 0, NULL, "delete even when a tenant looks like Redis lost its data", O_FORCE, SBX_ALL},
	{"retire-idle", 0, "DURATION", "end bound sessions whose sandbox has been idle longer", O_RETIRE, SBX_ALL},
	{"adopt-legacy", 0, NULL, "also judge sandboxes and snapshots that carry no keyspace id", O_ADOPT, SBX_ALL},
	{"adopt-keyspace", 0, "ID", "this keyspace lost its id: take ID (see a dry run's reap.keyspaces)", O_ADOPT_KS, SBX_ALL},
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-reap",
	.synopsis = "(--tenant TENANT | --all-tenants) [OPTIONS]",
	.summary = "Delete sandboxes and snapshots that nobody owns any more.",
	.opts = opts,
};

struct reap_cli {
	struct sbx_app app;
	struct sbx_reap_opts o;
	const char *metrics;
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct reap_cli *c = ctx;
	switch (key) {
	case O_PROFILE: c->app.profile_flag = arg; return 0;
	case O_TENANT:
		if (sbx_id_check("tenant", arg, strlen(arg), err) < 0)
			return sbx_usage_err(err, "--tenant: %s", err->msg);
		c->o.tenant = arg;
		return 0;
	case O_ALL: c->o.all_tenants = 1; return 0;
	case O_GRACE:
		if (sbx_parse_duration_ms(arg, &c->o.grace_ms, err) < 0)
			return sbx_usage_err(err, "--grace: %s", err->msg);
		return 0;
	case O_DRY: c->o.dry_run = 1; return 0;
	case O_MAX: {
		char *end;
		long long n = strtoll(arg, &end, 10);
		if (!*arg || *end || n < 0)
			return sbx_usage_err(err, "--max-delete must be a number >= 0");
		c->o.max_delete = n;
		return 0;
	}
	case O_METRICS: c->metrics = arg; return 0;
	case O_FORCE: c->o.force = 1; return 0;
	case O_ADOPT: c->o.adopt_legacy = 1; return 0;
	case O_ADOPT_KS:
		if (!sbx_keyspace_valid(arg))
			return sbx_usage_err(err, "--adopt-keyspace: a keyspace id (%d lowercase hex digits)",
					     SBX_KEYSPACE_LEN);
		c->o.adopt_keyspace = arg;
		return 0;
	case O_RETIRE:
		if (sbx_parse_duration_ms(arg, &c->o.retire_idle_ms, err) < 0 || c->o.retire_idle_ms <= 0)
			return sbx_usage_err(err, "--retire-idle: a duration above 0 (e.g. 30d)");
		return 0;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct reap_cli c = {0};
	struct sbx_err err = {0};
	c.o.grace_ms = SBX_REAP_GRACE_DEFAULT_MS;
	c.o.max_delete = -1;
	struct sbx_args a;
	int i = sbx_cli_parse(&cmd, argc, argv, on_opt, &c, &a, &err);
	if (i >= 0 && !!c.o.tenant == !!c.o.all_tenants)
		i = sbx_usage_err(&err, "say which sandboxes to judge: --tenant T or --all-tenants");
	if (i < 0)
		return sbx_cli_report(cmd.name, &err);

	struct sbx_backend *b;
	struct sbx_redis *r;
	if (sbx_app_backend(&c.app, NULL, &b, &err) < 0 || sbx_app_redis(&c.app, &r, &err) < 0) {
		int st = sbx_cli_fail(cmd.name, NULL, &err);
		sbx_app_close(&c.app);
		return st;
	}
	json_object *report = NULL;
	int rc = sbx_reap_run(b, r, &c.o, &report, &err);
	struct sbx_err merr = {0};
	int mrc = c.metrics ? sbx_reap_write_metrics(c.metrics, report, rc == 0, &merr) : 0;
	int st;
	if (rc < 0) {
		st = sbx_cli_fail(cmd.name, report, &err);
	} else if (mrc < 0) {
		sbx_err_prefix(&merr, "writing %s", c.metrics);
		st = sbx_cli_fail(cmd.name, report, &merr);
	} else {
		st = sbx_doc_write(stdout, report, &err) < 0 ? sbx_cli_report(cmd.name, &err) : 0;
	}
	json_object_put(report);
	sbx_app_close(&c.app);
	return st;
}
