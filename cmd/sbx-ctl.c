/* sbx-ctl - pause, resume, kill or re-time sandboxes; show capabilities.
 *
 *   sbx-ctl pause|resume|kill|hibernate [--id ID]
 *   sbx-ctl timeout [--id ID] --seconds N [--on-timeout kill|pause|hibernate] [--auto-resume]
 *   sbx-ctl network [--id ID] [--allow-out R]... [--deny-out R]... [--policy FILE]
 *   sbx-ctl caps
 *   sbx-ctl quota --tenant T [--running N|none|profile] [--sandboxes N|none|profile]
 *                 [--paused-bytes SIZE|none|profile] [--retain-paused DURATION|none|profile]
 *   sbx-ctl rewind --tenant T --session S --to N|LABEL [--in-turn]
 *   sbx-ctl egress-ca [--rotate]
 *
 * Per input document it acts on the document's sandbox, refreshes the
 * handle and adds {"ctl": {"op": ...}}.  kill is idempotent: a sandbox
 * that is already gone is success, reported as "gone": true. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "checkpoint.h"
#include "cli.h"
#include "cliopt.h"
#include "cliutil.h"
#include "doc.h"
#include "egress-secrets.h"
#include "events.h"
#include "lifecycle.h"
#include "keys.h"
#include "netpolicy.h"
#include "quota.h"
#include "session.h"
#include "util.h"

enum { O_PROFILE, O_ID, O_SECONDS, O_ON_TIMEOUT, O_AUTO_RESUME, O_NO_AUTO_RESUME,
       O_ALLOW_OUT, O_DENY_OUT, O_POLICY, O_TENANT, O_RUNNING, O_SANDBOXES,
       O_RETAIN, O_PAUSED_BYTES, O_SESSION, O_TO, O_IN_TURN, O_ROTATE };
enum { S_PAUSE, S_RESUME, S_KILL, S_TIMEOUT, S_NETWORK, S_CAPS, S_QUOTA, S_REWIND, S_HIBERNATE,
       S_EGRESS_CA };

static const struct sbx_sub subs[] = {
	[S_PAUSE] = {"pause", "", 0, 0, "freeze the sandbox's processes", NULL},
	[S_RESUME] = {"resume", "", 0, 0, "thaw a paused sandbox", NULL},
	[S_KILL] = {"kill", "", 0, 0, "delete the sandbox (one already gone is success)", NULL},
	[S_TIMEOUT] = {"timeout", "", 0, 0, "set the idle timer and its action", "seconds"},
	[S_NETWORK] = {"network", "", 0, 0, "replace the sandbox's egress policy (running or paused)", NULL},
	[S_CAPS] = {"caps", "", 0, 0, "show the backend's capabilities and default limits", NULL},
	[S_QUOTA] = {"quota", "", 0, 0, "set or show a tenant's own quota (over the profile's)", "tenant"},
	[S_REWIND] = {"rewind", "", 0, 0, "make a sandbox from one of the session's checkpoints its "
		      "sandbox", "tenant session to"},
	[S_HIBERNATE] = {"hibernate", "", 0, 0, "processes and memory to disk, memory freed (where "
			 "sbx-ctl caps says hibernate; else unsupported)", NULL},
	[S_EGRESS_CA] = {"egress-ca", "", 0, 0, "show or rotate the profile's egress interception CA",
			 NULL},
	{0},
};

#define ON_SANDBOX (SBX_SUB(S_PAUSE) | SBX_SUB(S_RESUME) | SBX_SUB(S_KILL) | SBX_SUB(S_TIMEOUT) | \
		    SBX_SUB(S_NETWORK) | SBX_SUB(S_HIBERNATE))
static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"id", 0, "ID", "act on this sandbox instead of reading documents", O_ID, ON_SANDBOX},
	{"seconds", 0, "N", "timeout: idle seconds before the action (0 = never)", O_SECONDS,
	 SBX_SUB(S_TIMEOUT)},
	{"on-timeout", 0, "ACTION", "timeout: pause, kill or hibernate when idle (default pause)", O_ON_TIMEOUT,
	 SBX_SUB(S_TIMEOUT)},
	{"auto-resume", 0, NULL, "timeout: resume on the next command after a pause", O_AUTO_RESUME,
	 SBX_SUB(S_TIMEOUT)},
	{"no-auto-resume", 0, NULL, "timeout: stay paused until sbx-ctl resume", O_NO_AUTO_RESUME,
	 SBX_SUB(S_TIMEOUT)},
	{"allow-out", 0, "DEST[:PORTS]", "network: allow a CIDR, a domain or *.suffix (repeatable, in order)",
	 O_ALLOW_OUT, SBX_SUB(S_NETWORK)},
	{"deny-out", 0, "DEST[:PORTS]", "network: deny a CIDR, a domain or *.suffix (repeatable, in order)",
	 O_DENY_OUT, SBX_SUB(S_NETWORK)},
	{"policy", 0, "FILE", "network: rules from a JSON policy document (after the flags)", O_POLICY,
	 SBX_SUB(S_NETWORK)},
	{"tenant", 0, "TENANT", "quota, rewind: the tenant", O_TENANT,
	 SBX_SUB(S_QUOTA) | SBX_SUB(S_REWIND)},
	{"session", 's', "SESSION", "rewind: the session to rewind", O_SESSION, SBX_SUB(S_REWIND)},
	{"to", 0, "CHECKPOINT", "rewind: the checkpoint, its number or its label (sbx-snap ls)",
	 O_TO, SBX_SUB(S_REWIND)},
	{"in-turn", 0, NULL, "rewind: the caller holds the session's turn lease (one reference)",
	 O_IN_TURN, SBX_SUB(S_REWIND)},
	{"rotate", 0, NULL, "egress-ca: remove the CA; the next sandbox that needs one makes a new one",
	 O_ROTATE, SBX_SUB(S_EGRESS_CA)},
	{"running", 0, "N", "quota: running sandboxes at most (none: no limit; profile: the profile's)",
	 O_RUNNING, SBX_SUB(S_QUOTA)},
	{"sandboxes", 0, "N", "quota: sandboxes at most, paused or running (none, profile)",
	 O_SANDBOXES, SBX_SUB(S_QUOTA)},
	{"paused-bytes", 0, "SIZE", "quota: bytes the paused sandboxes' layers may hold (10M; none, profile)",
	 O_PAUSED_BYTES, SBX_SUB(S_QUOTA)},
	{"retain-paused", 0, "DURATION", "quota: end a sandbox paused this long (none: keep; profile)",
	 O_RETAIN, SBX_SUB(S_QUOTA)},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-ctl",
	.synopsis = "pause|resume|kill|hibernate|timeout|network|caps|quota|rewind|egress-ca [OPTIONS]",
	.summary = "Pause, resume, kill or re-time sandboxes; show the backend's capabilities.",
	.opts = opts,
	.subs = subs,
};

struct ctl_opts {
	struct sbx_app app;
	const char *op;
	const char *id;
	int64_t seconds;
	int pause, hibernate;
	int auto_resume;         /* 1 on, 0 off, -1 keep the sandbox's */
	struct sbx_netpolicy policy;   /* network: the whole new policy */
	const char *tenant;      /* quota, rewind */
	const char *session, *to;   /* rewind */
	int in_turn;
	int rotate;              /* egress-ca */
	struct sbx_quota quota;  /* quota: SBX_QUOTA_KEEP unless given */
	int64_t retain_ms;       /* quota: the same */
};

/* --running / --sandboxes: a count, "none" (no limit) or "profile" (the
 * tenant's own value goes). */
static int quota_arg(const char *flag, const char *arg, int64_t *out, struct sbx_err *err)
{
	if (strcmp(arg, "none") == 0) {
		*out = -1;
		return 0;
	}
	if (strcmp(arg, "profile") == 0) {
		*out = SBX_QUOTA_PROFILE;
		return 0;
	}
	char *end;
	long long n = strtoll(arg, &end, 10);
	if (end == arg || *end || n < 0)
		return sbx_usage_err(err, "--%s must be a count >= 0, none or profile", flag);
	*out = n;
	return 0;
}

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct ctl_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_ID: o->id = arg; return 0;
	case O_SECONDS: {
		char *end;
		long long n = strtoll(arg, &end, 10);
		if (*end || n < 0 || end == arg)
			return sbx_usage_err(err, "--seconds must be a number >= 0");
		o->seconds = n;
		return 0;
	}
	case O_ON_TIMEOUT:
		if (sbx_on_timeout_parse(arg, &o->pause, &o->hibernate) < 0)
			return sbx_usage_err(err, "--on-timeout must be pause, kill or hibernate");
		return 0;
	case O_AUTO_RESUME: o->auto_resume = 1; return 0;
	case O_NO_AUTO_RESUME: o->auto_resume = 0; return 0;
	case O_ALLOW_OUT:
	case O_DENY_OUT:
		return sbx_np_add(&o->policy, key == O_ALLOW_OUT ? SBX_NP_ALLOW : SBX_NP_DENY, arg, err);
	case O_TENANT:
		if (sbx_id_check("tenant", arg, strlen(arg), err) < 0)
			return -1;
		o->tenant = arg;
		return 0;
	case O_SESSION: o->session = arg; return 0;
	case O_TO: o->to = arg; return 0;
	case O_IN_TURN: o->in_turn = 1; return 0;
	case O_ROTATE: o->rotate = 1; return 0;
	case O_RUNNING: return quota_arg("running", arg, &o->quota.running, err);
	case O_SANDBOXES: return quota_arg("sandboxes", arg, &o->quota.sandboxes, err);
	case O_PAUSED_BYTES:
		if (strcmp(arg, "none") == 0 || strcmp(arg, "profile") == 0)
			return quota_arg("paused-bytes", arg, &o->quota.paused_bytes, err);
		if (sbx_parse_size(arg, &o->quota.paused_bytes, err) < 0 || o->quota.paused_bytes < 0)
			return sbx_usage_err(err, "--paused-bytes must be a size (10M, 2G), none or profile");
		return 0;
	case O_RETAIN:
		if (strcmp(arg, "none") == 0 || strcmp(arg, "profile") == 0) {
			o->retain_ms = arg[0] == 'n' ? 0 : SBX_QUOTA_PROFILE;
			return 0;
		}
		if (sbx_parse_duration_ms(arg, &o->retain_ms, err) < 0 || o->retain_ms <= 0)
			return sbx_usage_err(err, "--retain-paused must be a duration > 0, none or profile");
		return 0;
	case O_POLICY: {
		SBX_AUTOFREE char *text = NULL;
		size_t len;
		if (sbx_read_file(arg, 1 << 22, &text, &len, err) < 0 ||
		    sbx_np_from_text(text, len, &o->policy, err) < 0) {
			sbx_err_prefix(err, "--policy %s", arg);
			return -1;
		}
		return 0;
	}
	}
	return 0;
}

/* The Redis of a sandbox that has a tenant, for its events (events.h);
 * NULL for another's, or when it cannot be opened (the event is counted
 * as lost, the operation goes on). */
static struct sbx_redis *ctl_redis(struct sbx_app *app, struct sbx_backend *b,
				   struct sbx_sandbox *sb)
{
	const char *tenant, *session;
	struct sbx_redis *r = NULL;
	struct sbx_err e = {0};
	if (!sbx_session_of(b, sb, &tenant, &session) && !sb->tenant &&
	    !sbx_json_str(sb->metadata, SBX_MD_TENANT))
		return NULL;
	if (sbx_app_redis(app, &r, &e) < 0)
		sbx_events_lost(&e);
	return r;
}

/* Kill the sandbox of `sb`; a session sandbox's binding goes with it
 * (session.h, sbx_session_end: Redis is opened only for a session's). */
static int ctl_kill(struct sbx_app *app, struct sbx_backend *b, struct sbx_sandbox *sb,
		    int *gone, struct sbx_err *err)
{
	const char *tenant, *session, *why;
	struct sbx_redis *r = NULL;
	if (sbx_session_of(b, sb, &tenant, &session)) {
		if (sbx_app_redis(app, &r, err) < 0)
			return -1;
	} else {
		r = ctl_redis(app, b, sb);    /* an installer's: for its event only */
	}
	return sbx_session_end(b, r, sb, SBX_END_KILL, gone, &why, err) < 0 ? -1 : 0;
}

static int ctl_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct ctl_opts *o = ctx;
	json_object *sbj = sbx_json_obj(doc, "sandbox");
	struct sbx_sandbox sb;
	struct sbx_backend *b;
	if (sbx_cli_open_sandbox(&o->app, sbj, &sb, &b, err) < 0)
		return -1;
	json_object *res = json_object_new_object();
	sbx_json_set_str(res, "op", o->op);
	int rc;
	if (strcmp(o->op, "kill") == 0) {
		int gone = 0;
		rc = ctl_kill(&o->app, b, &sb, &gone, err);
		if (rc == 0) {
			sbx_json_set_bool(res, "gone", gone);
			sb.state = SBX_STATE_TERMINAL;
			free(sb.state_word);     /* "dead" no more: gone */
			sb.state_word = NULL;
		}
	} else if (strcmp(o->op, "pause") == 0) {
		rc = sbx_lifecycle_pause(b, ctl_redis(&o->app, b, &sb), &sb, err);
	} else if (strcmp(o->op, "hibernate") == 0) {
		rc = sbx_lifecycle_hibernate(b, ctl_redis(&o->app, b, &sb), &sb, 0, "command", err);
	} else if (strcmp(o->op, "resume") == 0) {
		rc = sbx_lifecycle_resume(b, ctl_redis(&o->app, b, &sb), &sb, err);
	} else if (strcmp(o->op, "network") == 0) {
		sbx_np_finish(&o->policy);
		rc = sbx_call(b, set_network, err, &sb, &o->policy);
		if (rc == 0)
			json_object_object_add(res, "policy", sbx_np_to_json(&o->policy));
	} else {
		struct sbx_timeout_policy t = {
			.seconds = o->seconds, .on_timeout_pause = o->pause,
			.on_timeout_hibernate = o->hibernate, .auto_resume = o->auto_resume,
		};
		rc = sbx_lifecycle_timeout(b, ctl_redis(&o->app, b, &sb), &sb, &t, err);
		if (rc == 0) {
			sbx_json_set_int(res, "seconds", t.seconds);
			sbx_json_set_str(res, "on_timeout",
					 sbx_on_timeout_word(t.on_timeout_pause, t.on_timeout_hibernate));
			if (t.auto_resume >= 0)
				sbx_json_set_bool(res, "auto_resume", t.auto_resume);
		}
	}
	if (rc == 0) {
		json_object_object_add(doc, "sandbox", sbx_sandbox_to_json(&sb));
		json_object_object_add(doc, "ctl", res);
	} else {
		json_object_put(res);
	}
	sbx_sandbox_clear(&sb);
	return rc;
}

static int caps_main(struct ctl_opts *o)
{
	struct sbx_err err = {0};
	struct sbx_backend *b;
	if (sbx_app_backend(&o->app, NULL, &b, &err) < 0)
		return sbx_cli_fail(cmd.name, NULL, &err);
	json_object *doc = json_object_new_object();
	sbx_json_set_str(doc, "backend", b->ops->name);
	sbx_json_set_str(doc, "profile", o->app.profile->name);
	/* hibernate: asked apart (a probe, local: `criu check`, cached), and
	 * when missing, why, under "unavailable". */
	struct sbx_err why = {0};
	unsigned caps = sbx_backend_caps(b);
	if (sbx_backend_hibernate_check(b, &why) == 0)
		caps |= SBX_CAP_HIBERNATE;
	json_object_object_add(doc, "caps", sbx_caps_to_json(caps));
	if (!(caps & SBX_CAP_HIBERNATE)) {
		json_object *un = json_object_new_object();
		sbx_json_set_str(un, "hibernate", why.msg);
		json_object_object_add(doc, "unavailable", un);
	}
	/* The limits every sandbox of this profile gets unless it sets its own,
	 * and how the backend enforces them on this host. */
	const struct sbx_limits *l = &o->app.profile->limits;
	json_object *lim = b->ops->limits_info ? b->ops->limits_info(b) : NULL;
	if (!lim)
		lim = json_object_new_object();
	sbx_json_set_int(lim, "memory_bytes", l->memory_bytes);
	sbx_json_set_int(lim, "pids", l->pids);
	json_object_object_add(lim, "cpus", json_object_new_double(l->cpus));
	sbx_json_set_int(lim, "disk_bytes", l->disk_bytes);
	sbx_json_set_int(lim, "shm_bytes", l->shm_bytes);
	json_object_object_add(doc, "limits", lim);
	int rc = sbx_emit(doc, &err);
	json_object_put(doc);
	return rc < 0 ? sbx_cli_report(cmd.name, &err) : 0;
}

/* egress-ca: the profile's interception CA (egress-secrets.h), removed
 * first with --rotate.  It is profile state in the state folder, which
 * sbx-ctl administers (quota is the other profile-wide verb); sbx-tpl
 * is about images. */
static int egress_ca_main(struct ctl_opts *o)
{
	struct sbx_err err = {0};
	struct sbx_backend *b;
	if (sbx_app_backend(&o->app, NULL, &b, &err) < 0)
		return sbx_cli_fail(cmd.name, NULL, &err);
	int had = 0;
	if (o->rotate && sbx_egress_ca_rotate(o->app.profile, &had, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	SBX_AUTOFREE char *dir = sbx_egress_ca_dir(o->app.profile);
	SBX_AUTOFREE char *pem = sbx_xasprintf("%s/ca.pem", dir);
	json_object *doc = json_object_new_object(), *ca = json_object_new_object();
	sbx_json_set_str(doc, "profile", o->app.profile->name);
	sbx_json_set_str(ca, "path", pem);
	sbx_json_set_bool(ca, "exists", access(pem, F_OK) == 0);
	if (o->rotate)
		sbx_json_set_bool(ca, "rotated", had);
	json_object_object_add(doc, "egress_ca", ca);
	int rc = sbx_emit(doc, &err);
	json_object_put(doc);
	return rc < 0 ? sbx_cli_report(cmd.name, &err) : 0;
}

/* quota: write the tenant's own limits (if any flag says so), then show
 * its use against the quota now in force, as sbx-ls --usage does. */
static int quota_main(struct ctl_opts *o)
{
	struct sbx_err err = {0};
	struct sbx_redis *r;
	struct sbx_usage u;
	if (sbx_app_use(&o->app, NULL, &err) < 0 || sbx_app_redis(&o->app, &r, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	if ((o->quota.running != SBX_QUOTA_KEEP || o->quota.sandboxes != SBX_QUOTA_KEEP ||
	     o->quota.paused_bytes != SBX_QUOTA_KEEP || o->retain_ms != SBX_QUOTA_KEEP) &&
	    sbx_quota_set(r, o->tenant, &o->quota, o->retain_ms, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	if (sbx_quota_usage(r, &o->app.profile->quota, o->app.profile->retain_paused_ms, o->tenant,
			    &u, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	json_object *doc = json_object_new_object();
	sbx_json_set_str(doc, "tenant", o->tenant);
	json_object_object_add(doc, "usage", sbx_usage_json(&u));
	int rc = sbx_emit(doc, &err);
	json_object_put(doc);
	return rc < 0 ? sbx_cli_report(cmd.name, &err) : 0;
}

/* rewind: one document, the new sandbox with {"ctl": {"op": "rewind",
 * "replaced": OLD}} and the checkpoint it came from. */
static int rewind_main(struct ctl_opts *o)
{
	struct sbx_err err = {0};
	struct sbx_backend *b;
	struct sbx_redis *r;
	if (sbx_app_backend(&o->app, NULL, &b, &err) < 0 || sbx_app_redis(&o->app, &r, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	struct sbx_rewind_req q = {.tenant = o->tenant, .session = o->session, .to = o->to,
				   .in_turn = o->in_turn};
	struct sbx_sandbox sb;
	struct sbx_checkpoint c;
	SBX_AUTOFREE char *old = NULL;
	int64_t t0 = sbx_mono_ms();
	if (sbx_session_rewind(b, r, &q, &sb, &c, &old, &err) < 0)
		return sbx_cli_report(cmd.name, &err);
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "sandbox", sbx_sandbox_to_json(&sb));
	json_object *res = sbx_json_child(doc, "ctl");
	sbx_json_set_str(res, "op", "rewind");
	sbx_json_set_str(res, "replaced", old);
	sbx_json_set_int(res, "duration_ms", sbx_mono_ms() - t0);
	sbx_checkpoint_json(&c, sbx_json_child(doc, "checkpoint"));
	int rc = sbx_emit(doc, &err);
	json_object_put(doc);
	sbx_sandbox_clear(&sb);
	sbx_checkpoint_clear(&c);
	return rc < 0 ? sbx_cli_report(cmd.name, &err) : 0;
}

int main(int argc, char **argv)
{
	struct ctl_opts o = {.pause = 1, .auto_resume = -1,
			     .quota = {.running = SBX_QUOTA_KEEP, .sandboxes = SBX_QUOTA_KEEP,
				       .paused_bytes = SBX_QUOTA_KEEP},
			     .retain_ms = SBX_QUOTA_KEEP};
	struct sbx_err err = {0};
	struct sbx_args a;
	int rc = sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err);
	if (rc == 0 && o.auto_resume == 1 && !o.pause)
		rc = sbx_usage_err(&err, "--auto-resume needs --on-timeout pause or hibernate");
	if (rc < 0) {
		sbx_np_clear(&o.policy);
		return sbx_cli_report(cmd.name, &err);
	}
	o.op = subs[a.sub].name;
	int st;
	if (a.sub == S_CAPS) {
		st = caps_main(&o);
	} else if (a.sub == S_QUOTA) {
		st = quota_main(&o);
	} else if (a.sub == S_REWIND) {
		st = rewind_main(&o);
	} else if (a.sub == S_EGRESS_CA) {
		st = egress_ca_main(&o);
	} else {
		json_object *seed = sbx_cli_id_seed(o.id);
		st = sbx_cli_run_docs(cmd.name, seed, ctl_one, &o);
		json_object_put(seed);
	}
	sbx_np_clear(&o.policy);
	sbx_app_close(&o.app);
	return st;
}
