/* sbx-events - print a tenant's events (events.h), one NDJSON line each.
 *
 *   sbx-events --tenant T [--session S] [--since ID] [--follow]
 *   sbx-events --tenant T --group NAME [--consumer C] [--exec CMD] [--follow]
 *
 * With --group the events are read through a consumer group and each is
 * acknowledged once it was written to stdout, or once --exec CMD (run per
 * event, the event on its stdin) exited 0: a command that fails leaves its
 * event pending, so the next run of this consumer gets it again.  Reads
 * no documents. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "cliopt.h"
#include "doc.h"
#include "events.h"
#include "host.h"
#include "util.h"

enum { O_PROFILE, O_TENANT, O_SESSION, O_SINCE, O_FOLLOW, O_GROUP, O_CONSUMER, O_EXEC, O_CLAIM };

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"tenant", 0, "TENANT", "the tenant whose events to read (required)", O_TENANT, SBX_ALL},
	{"session", 0, "SESSION", "only this session's events (not with --group)", O_SESSION, SBX_ALL},
	{"since", 0, "ID", "events after this entry id (--group: where a new group starts)",
	 O_SINCE, SBX_ALL},
	{"follow", 'f', NULL, "then wait for new events, until killed", O_FOLLOW, SBX_ALL},
	{"group", 0, "NAME", "read through this consumer group, acknowledging each event",
	 O_GROUP, SBX_ALL},
	{"consumer", 0, "NAME", "--group: this reader's name (default the host id)", O_CONSUMER,
	 SBX_ALL},
	{"exec", 0, "CMD", "--group: run CMD per event (on its stdin); acknowledge if it exits 0",
	 O_EXEC, SBX_ALL},
	{"claim-idle", 0, "DURATION", "--group: take other consumers' events pending this long",
	 O_CLAIM, SBX_ALL},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-events",
	.synopsis = "--tenant TENANT [OPTIONS]",
	.summary = "Print a tenant's sandbox and session events as NDJSON.",
	.opts = opts,
};

struct ev_opts {
	struct sbx_app app;
	struct sbx_event_query q;
	const char *exec;
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct ev_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_TENANT: o->q.tenant = arg; return 0;
	case O_SESSION: o->q.session = arg; return 0;
	case O_SINCE:
		if (!sbx_event_id_ok(arg))
			return sbx_usage_err(err, "--since wants a stream entry id (MS or MS-SEQ)");
		o->q.since = arg;
		return 0;
	case O_FOLLOW: o->q.follow = 1; return 0;
	case O_GROUP: o->q.group = arg; return 0;
	case O_CONSUMER: o->q.consumer = arg; return 0;
	case O_EXEC: o->exec = arg; return 0;
	case O_CLAIM:
		if (sbx_parse_duration_ms(arg, &o->q.claim_idle_ms, err) < 0) {
			char why[sizeof(err->msg)];
			snprintf(why, sizeof(why), "%s", err->msg);
			return sbx_usage_err(err, "--claim-idle: %s", why);
		}
		return 0;
	}
	return 0;
}

/* What sbx-events does with one event: print it, or hand it to --exec.
 * 0 done (acknowledged in a group), 1 left pending, -1 stop. */
static int on_event(json_object *ev, void *ctx, struct sbx_err *err)
{
	struct ev_opts *o = ctx;
	if (!o->exec)
		return sbx_emit(ev, err) < 0 ? -1 : 0;
	int status;
	if (sbx_event_run(o->exec, ev, &status, err) < 0)
		return -1;
	if (status == 0)
		return 0;
	sbx_cli_warn(cmd.name, "failed: event %s left pending: --exec exited %d",
		     sbx_json_str(ev, "id"), status);
	return 1;
}

/* The one "document" of the run: the whole read (1: nothing more to write). */
static int read_all(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct ev_opts *o = ctx;
	struct sbx_redis *r;
	(void)doc;
	if (sbx_app_redis(&o->app, &r, err) < 0 || sbx_events_read(r, &o->q, on_event, o, err) < 0)
		return -1;
	return 1;
}

static int check(const struct ev_opts *o, struct sbx_err *err)
{
	if (!o->q.tenant)
		return sbx_usage_err(err, "--tenant is required");
	if (o->q.group && o->q.session)
		return sbx_usage_err(err, "--session does not go with --group (a group reads the "
				     "tenant's whole stream)");
	if (!o->q.group && (o->q.consumer || o->exec || o->q.claim_idle_ms))
		return sbx_usage_err(err, "--consumer, --exec and --claim-idle go with --group");
	return 0;
}

int main(int argc, char **argv)
{
	struct ev_opts o = {0};
	struct sbx_err err = {0};
	struct sbx_args a;
	if (sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err) < 0 || check(&o, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	SBX_AUTOFREE char *host = NULL;
	if (o.q.group && !o.q.consumer && !(o.q.consumer = host = sbx_host_id(&err)))
		return sbx_cli_report(cmd.name, &err);
	json_object *seed = json_object_new_object();
	int st = sbx_cli_run_docs(cmd.name, seed, read_all, &o);
	json_object_put(seed);
	sbx_app_close(&o.app);
	return st;
}
