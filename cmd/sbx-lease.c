/* sbx-lease - turn leases, stale marking, and holding a session's lock.
 *
 *   sbx-lease begin|end|status --tenant T --session S
 *   sbx-lease end --checkpoint [--label L] ...   a checkpoint first (checkpoint.h)
 *   sbx-lease stale (--tenant T | --all-tenants)
 *   sbx-lease lock --tenant T --session S [--wait DURATION] -- CMD [ARG...]
 *
 * begin/end/status/stale write one document {"lease": {...}}; without
 * --tenant they read documents and act on each one's sandbox.tenant and
 * sandbox.session, adding "lease" to it.  `lock` chainloads: it takes the
 * session's lifecycle lock, runs CMD with the lock held (renewed in the
 * background), releases it, and exits with CMD's status. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app.h"
#include "binding.h"
#include "checkpoint.h"
#include "cli.h"
#include "cliopt.h"
#include "doc.h"
#include "keys.h"
#include "lease.h"
#include "ledger.h"
#include "lock.h"
#include "util.h"

enum { O_PROFILE, O_TENANT, O_SESSION, O_WAIT, O_ALL, O_CHECKPOINT, O_LABEL };
enum { S_BEGIN, S_END, S_STATUS, S_STALE, S_LOCK };

static const struct sbx_sub subs[] = {
	[S_BEGIN] = {"begin", "", 0, 0, "start a turn on the session", NULL},
	[S_END] = {"end", "", 0, 0, "end a turn on the session", NULL},
	[S_STATUS] = {"status", "", 0, 0, "show the session's turn lease", NULL},
	[S_STALE] = {"stale", "", 0, 0, "mark the tenant's bindings stale", NULL},
	[S_LOCK] = {"lock", "-- COMMAND [ARG...]", 1, -1, "run COMMAND holding the session's lock",
		     "tenant session"},
	{0},
};

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile (its Redis and prefix)", O_PROFILE, SBX_ALL},
	{"tenant", 0, "TENANT", "the tenant", O_TENANT, SBX_ALL},
	{"session", 's', "SESSION", "the session (begin, end, status, lock)", O_SESSION,
	 ~SBX_SUB(S_STALE)},
	{"all-tenants", 0, NULL, "stale: every tenant in the tenant index", O_ALL, SBX_SUB(S_STALE)},
	{"wait", 'w', "DURATION", "lock: wait this long for a busy lock (default: fail at once)", O_WAIT,
	 SBX_SUB(S_LOCK)},
	{"checkpoint", 0, NULL, "end: checkpoint the session's sandbox first (sbx-snap checkpoint)",
	 O_CHECKPOINT, SBX_SUB(S_END)},
	{"label", 'l', "LABEL", "end --checkpoint: the checkpoint's label", O_LABEL, SBX_SUB(S_END)},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-lease",
	.synopsis = "begin|end|status|stale|lock [OPTIONS] [-- COMMAND [ARG...]]",
	.summary = "Turn leases, stale marking, and running a command under a session's lock.",
	.opts = opts,
	.subs = subs,
};

struct lease_opts {
	struct sbx_app app;
	const char *sub;
	const char *tenant, *session;
	int64_t wait_ms;
	int all_tenants;
	int checkpoint;
	const char *label;
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct lease_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_TENANT: o->tenant = arg; return 0;
	case O_SESSION: o->session = arg; return 0;
	case O_WAIT: return sbx_parse_duration_ms(arg, &o->wait_ms, err);
	case O_ALL: o->all_tenants = 1; return 0;
	case O_CHECKPOINT: o->checkpoint = 1; return 0;
	case O_LABEL: o->label = arg; return 0;
	}
	return 0;
}

static int check_ids(const char *tenant, const char *session, struct sbx_err *err)
{
	if (!tenant || !*tenant)
		return sbx_fail(err, SBX_INVALID_REQUEST, "lease", "no tenant (--tenant or sandbox.tenant)");
	return sbx_ids_check(tenant, "session", session, err);
}

/* stale --all-tenants: every tenant of the tenant index, each tenant's
 * sessions under their locks; the counts are summed and the first
 * failure is reported after all were tried. */
static int stale_all(struct sbx_redis *r, json_object *res, struct sbx_err *err)
{
	char **ts;
	size_t nt;
	if (sbx_ledger_tenants(r, &ts, &nt, err) < 0)
		return -1;
	long marked = 0, failed = 0;
	struct sbx_err first = {0};
	for (size_t i = 0; i < nt; i++) {
		long m = 0, f = 0;
		struct sbx_err e = {0};
		if (sbx_bindings_mark_stale(r, ts[i], sbx_now_ms() / 1000, &m, &f, &e) < 0 && !first.kind) {
			first = e;
			sbx_err_prefix(&first, "tenant %s", ts[i]);
		}
		marked += m;
		failed += f + (e.kind && !f);
	}
	sbx_ledger_ids_free(ts, nt);
	sbx_json_set_bool(res, "all_tenants", 1);
	sbx_json_set_int(res, "tenants", (int64_t)nt);
	sbx_json_set_int(res, "marked", marked);
	sbx_json_set_int(res, "failed", failed);
	if (first.kind) {
		*err = first;
		return -1;
	}
	return 0;
}

/* After begin/end: the bound sandbox's idle timer learns of the lease
 * (sbx_turn_hold).  Best effort, on purpose: the lease is Redis's and is
 * already taken; an unbound session, a sandbox gone or on another host, a
 * backend that cannot be opened here change nothing about it, and the
 * timer then only falls back to the other signals. */
static void lease_hold(struct lease_opts *o, struct sbx_redis *r, const char *tenant,
		       const char *session, long long refs)
{
	struct sbx_binding bd;
	struct sbx_err e = {0};
	if (sbx_binding_get(r, tenant, session, &bd, &e) <= 0)
		return;
	json_object *h = json_object_new_object();
	if (bd.profile)
		sbx_json_set_str(h, "profile", bd.profile);
	struct sbx_backend *b;
	if (sbx_app_backend(&o->app, h, &b, &e) == 0 && bd.backend &&
	    !strcmp(b->ops->name, bd.backend))
		sbx_turn_hold(b, bd.sandbox_id, refs, &e);
	json_object_put(h);
	sbx_binding_clear(&bd);
}

/* end --checkpoint: the checkpoint first, under res.checkpoint; the
 * lease ends only once it is recorded (a failed one leaves the turn
 * held: retry, or end without it). */
static int end_checkpoint(struct lease_opts *o, struct sbx_redis *r, json_object *sb,
			  const char *tenant, const char *session, json_object *res,
			  struct sbx_err *err)
{
	struct sbx_backend *b;
	struct sbx_checkpoint c;
	if (sbx_app_backend(&o->app, sb, &b, err) < 0 ||
	    sbx_checkpoint_take(b, r, tenant, session, o->label, &c, err) < 0)
		return -1;
	sbx_checkpoint_json(&c, sbx_json_child(res, "checkpoint"));
	sbx_checkpoint_clear(&c);
	return 0;
}

/* One document: act on the flags' ids, else on the handle's. */
static int lease_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct lease_opts *o = ctx;
	json_object *sb = sbx_json_obj(doc, "sandbox");
	const char *tenant = o->tenant ? o->tenant : sbx_json_str(sb, "tenant");
	const char *session = o->session ? o->session : sbx_json_str(sb, "session");
	int stale = strcmp(o->sub, "stale") == 0;
	if (!(stale && o->all_tenants) && check_ids(tenant, stale ? NULL : session, err) < 0)
		return -1;
	if (!stale && (!session || !*session))
		return sbx_fail(err, SBX_INVALID_REQUEST, "lease", "no session (--session or sandbox.session)");
	struct sbx_redis *r;
	/* The handle's profile names the Redis its session lives in. */
	if (sbx_app_use(&o->app, sb, err) < 0 || sbx_app_redis(&o->app, &r, err) < 0)
		return -1;

	json_object *res = json_object_new_object();
	sbx_json_set_str(res, "op", o->sub);
	if (o->all_tenants) {
		int rc = stale_all(r, res, err);
		json_object_object_add(doc, "lease", res);
		return rc;
	}
	sbx_json_set_str(res, "tenant", tenant);
	if (!stale)
		sbx_json_set_str(res, "session", session);
	int rc = 0;
	long long refs = 0;
	if (!strcmp(o->sub, "begin") || !strcmp(o->sub, "end")) {
		if (o->checkpoint)
			rc = end_checkpoint(o, r, sb, tenant, session, res, err);
		if (rc == 0)
			rc = o->sub[0] == 'b' ? sbx_turn_begin(r, tenant, session, &refs, err)
					      : sbx_turn_end(r, tenant, session, &refs, err);
		if (rc == 0) {
			sbx_json_set_int(res, "refs", refs);
			sbx_json_set_bool(res, "active", refs > 0);
			lease_hold(o, r, tenant, session, refs);
		}
	} else if (!strcmp(o->sub, "status")) {
		struct sbx_turn t;
		rc = sbx_turn_state(r, tenant, session, &t, err);
		if (rc == 0) {
			struct sbx_binding bd;
			sbx_json_set_bool(res, "active", t.active);
			sbx_json_set_bool(res, "rebuild", t.rebuild);
			sbx_json_set_int(res, "refs", t.refs);
			sbx_json_set_int(res, "ttl_ms", t.ttl_ms);
			/* status renewed an active lease's TTL: so its hold. */
			if (t.active)
				lease_hold(o, r, tenant, session, t.refs);
			int found = sbx_binding_get(r, tenant, session, &bd, err);
			json_object *b = found > 0 ? json_object_new_object() : NULL;
			if (found < 0)
				rc = -1;
			else
				json_object_object_add(res, "binding", b);   /* null when unbound */
			if (found > 0) {
				sbx_binding_json(&bd, b);
				sbx_binding_clear(&bd);
			}
		}
	} else {
		long marked = 0, failed = 0;
		rc = sbx_bindings_mark_stale(r, tenant, sbx_now_ms() / 1000, &marked, &failed, err);
		sbx_json_set_int(res, "marked", marked);
		sbx_json_set_int(res, "failed", failed);
	}
	if (rc < 0) {
		json_object_put(res);
		return -1;
	}
	json_object_object_add(doc, "lease", res);
	return 0;
}

/* `lock`: run argv under the lock.  The child gets SBX_LOCK_FENCE so it can
 * pass the fence on to fenced writes of its own.  Exit: the command's
 * status (128+signal when killed), 75 when the lock is busy, 70 when the
 * lock was lost while the command ran (its work may have raced another
 * holder), 127/126 when the command cannot be run. */
static int run_locked(struct lease_opts *o, char **argv)
{
	struct sbx_err err = {0};
	struct sbx_redis *r;
	struct sbx_lock *l = NULL;
	if (check_ids(o->tenant, o->session, &err) < 0 ||
	    (!o->session && sbx_fail(&err, SBX_INVALID_REQUEST, "lease", "lock needs --session") < 0) ||
	    sbx_app_redis(&o->app, &r, &err) < 0 ||
	    sbx_lock_acquire(r, o->tenant, strlen(o->tenant), o->session, strlen(o->session),
			     o->wait_ms, &l, &err) < 0)
		return sbx_cli_report(cmd.name, &err);

	char fence[24];
	snprintf(fence, sizeof(fence), "%lld", (long long)l->fence);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		sbx_fail_errno(&err, SBX_INTERNAL, "lease", "fork");
		sbx_lock_release(l, &(struct sbx_err){0});
		return sbx_cli_report(cmd.name, &err);
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		setenv("SBX_LOCK_FENCE", fence, 1);
		execvp(argv[0], argv);
		int e = errno;
		sbx_fail_errno(&err, SBX_NOT_FOUND, "lease", "cannot run %s", argv[0]);
		sbx_cli_report(cmd.name, &err);
		_exit(e == ENOENT ? 127 : 126);
	}
	/* While the command runs, we only wait: the lock renews itself.
	 * Ctrl-C and TERM reach the child (same process group); we outlive
	 * it to release the lock. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (sbx_lock_release(l, &err) < 0) {
		sbx_cli_report(cmd.name, &err);
		if (err.kind == SBX_CONFLICT)
			return SBX_EXIT_SOFTWARE;
	}
	return status;
}

int main(int argc, char **argv)
{
	struct lease_opts o = {0};
	struct sbx_err err = {0};
	struct sbx_args a;
	signal(SIGPIPE, SIG_IGN);
	int rc = sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err);
	if (rc == 0 && !o.tenant && o.session)
		rc = sbx_usage_err(&err, "--session needs --tenant");
	if (rc == 0 && o.all_tenants && o.tenant)
		rc = sbx_usage_err(&err, "--tenant or --all-tenants, not both");
	if (rc == 0 && o.label && !o.checkpoint)
		rc = sbx_usage_err(&err, "--label belongs to --checkpoint");
	if (rc < 0)
		return sbx_cli_report(cmd.name, &err);
	o.sub = subs[a.sub].name;
	int st;
	if (a.sub == S_LOCK) {
		st = run_locked(&o, a.argv);
	} else {
		json_object *seed = o.tenant || o.all_tenants ? json_object_new_object() : NULL;
		st = sbx_cli_run_docs(cmd.name, seed, lease_one, &o);
		json_object_put(seed);
	}
	sbx_app_close(&o.app);
	return st;
}
