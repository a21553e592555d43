/* sbx-create - create a sandbox, or resolve a session's sandbox.
 *
 *   sbx-create [--template ID] [--label K=V]... [options]      a new sandbox
 *   sbx-create --tenant T --session S [--wait D]               the session's sandbox
 *   sbx-create --tenant T --skill-image                        an installer sandbox
 *   sbx-create --tenant T --session S2 --fork S1 [--at N|LABEL] a session from another's files
 *
 * Writes {"sandbox": handle} (plus "resolved" for sessions).  Reads no
 * documents unless --in is given; then it acts once per input document
 * and adds its result to it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "checkpoint.h"
#include "cli.h"
#include "cliopt.h"
#include "cliutil.h"
#include "doc.h"
#include "metadata.h"
#include "netpolicy.h"
#include "session.h"
#include "util.h"
#include "volume.h"

enum { O_PROFILE, O_TEMPLATE, O_LABEL, O_ENV, O_TIMEOUT, O_ON_TIMEOUT, O_AUTO_RESUME,
       O_NO_AUTO_RESUME, O_MEMORY, O_PIDS, O_CPUS, O_DISK, O_INTERNET, O_TENANT, O_SESSION, O_SKILL_IMAGE, O_VOLUME, O_IN,
       O_WAIT, O_ALLOW_OUT, O_DENY_OUT, O_NET_POLICY, O_FORK, O_AT };

static const struct sbx_opt opts[] = {
	{"profile", 'p', "NAME", "use this configuration profile", O_PROFILE, SBX_ALL},
	{"template", 't', "ID", "template or snapshot id to start from", O_TEMPLATE, SBX_ALL},
	{"label", 'l', "KEY=VALUE", "metadata stored with the sandbox (repeatable)", O_LABEL, SBX_ALL},
	{"env", 'e', "KEY[=VALUE]", "environment variable for every command; a bare KEY copies our value (repeatable)", O_ENV, SBX_ALL},
	{"timeout", 0, "DURATION", "idle time before the sandbox is paused or killed", O_TIMEOUT, SBX_ALL},
	{"on-timeout", 0, "ACTION", "what the idle timer does: pause, kill or hibernate", O_ON_TIMEOUT, SBX_ALL},
	{"auto-resume", 0, NULL, "resume a paused sandbox on the next command (the default)", O_AUTO_RESUME, SBX_ALL},
	{"no-auto-resume", 0, NULL, "a paused sandbox waits for sbx-ctl resume", O_NO_AUTO_RESUME, SBX_ALL},
	{"memory", 0, "SIZE", "memory limit (e.g. 512M)", O_MEMORY, SBX_ALL},
	{"pids", 0, "N", "process limit", O_PIDS, SBX_ALL},
	{"cpus", 0, "N", "CPU limit (e.g. 1.5)", O_CPUS, SBX_ALL},
	{"disk", 0, "SIZE", "disk budget of the sandbox's own layer (e.g. 2G)", O_DISK, SBX_ALL},
	{"allow-internet", 0, NULL, "allow egress (default: no network but lo)", O_INTERNET, SBX_ALL},
	{"allow-out", 0, "DEST[:PORTS]", "egress rule: allow a CIDR, a domain or *.suffix (repeatable, in order; implies egress)", O_ALLOW_OUT, SBX_ALL},
	{"deny-out", 0, "DEST[:PORTS]", "egress rule: deny a CIDR, a domain or *.suffix (repeatable, in order)", O_DENY_OUT, SBX_ALL},
	{"network-policy", 0, "FILE", "egress rules from a JSON policy document (after --allow-out/--deny-out)", O_NET_POLICY, SBX_ALL},
	{"tenant", 0, "TENANT", "tenant of the session", O_TENANT, SBX_ALL},
	{"session", 's', "SESSION", "resolve this session's sandbox", O_SESSION, SBX_ALL},
	{"skill-image", 0, NULL, "start from the tenant's skill image (installer)", O_SKILL_IMAGE, SBX_ALL},
	{"volume", 'v', "NAME:/PATH[:ro]", "mount the tenant's volume NAME at PATH, read-only with :ro (repeatable; needs --tenant)", O_VOLUME, SBX_ALL},
	{"in", 0, NULL, "read documents from stdin and act once per document", O_IN, SBX_ALL},
	{"wait", 0, "DURATION", "session: wait for a busy session lock (default 90s; 0 = no wait)", O_WAIT, SBX_ALL},
	{"fork", 0, "SESSION", "the new session (--session) starts from this session's files, at a checkpoint taken now", O_FORK, SBX_ALL},
	{"at", 0, "N|LABEL", "--fork: start from this checkpoint of the source's history instead", O_AT, SBX_ALL},
	{0},
};

static const struct sbx_cmd cmd = {
	.name = "sbx-create",
	.synopsis = "[OPTIONS]",
	.summary = "Create a sandbox, or resolve a session's sandbox.",
	.opts = opts,
};

struct create_opts {
	struct sbx_app app;
	const char *template_id;
	json_object *labels, *env;
	int64_t timeout_ms;
	int timeout_set;
	int on_timeout_pause, on_timeout_hibernate, on_timeout_set;
	int auto_resume;         /* 1 --auto-resume, -1 --no-auto-resume, 0 the profile's */
	struct sbx_limits limits;
	int disk_set;            /* --disk: must be enforced, not best effort */
	int allow_internet;
	struct sbx_netpolicy policy;   /* --allow-out/--deny-out/--network-policy, in order */
	int policy_set, profile_policy_added;
	const char *tenant, *session;
	const char *fork_from, *fork_at;   /* --fork, --at */
	int skill_image, read_input;
	int64_t lock_wait_ms;    /* 0 = library default; -1 = try once */
	json_object *env_all;    /* the profile's env, then --env over it */
	const char *volumes[SBX_VOLUMES_MAX];   /* --volume specs */
	size_t nvolumes;
};

static int on_opt(int key, const char *arg, void *ctx, struct sbx_err *err)
{
	struct create_opts *o = ctx;
	switch (key) {
	case O_PROFILE: o->app.profile_flag = arg; return 0;
	case O_TEMPLATE: o->template_id = arg; return 0;
	case O_LABEL:
		if (sbx_str_starts(arg, SBX_MD_PREFIX))
			return sbx_usage_err(err, "labels starting with sbx. are reserved");
		return sbx_cli_pair_add(o->labels, arg, "--label", err);
	case O_ENV: return sbx_cli_env_add(o->env, arg, err);
	case O_TIMEOUT:
		o->timeout_set = 1;
		return sbx_parse_duration_ms(arg, &o->timeout_ms, err);
	case O_ON_TIMEOUT:
		if (sbx_on_timeout_parse(arg, &o->on_timeout_pause, &o->on_timeout_hibernate) < 0)
			return sbx_usage_err(err, "--on-timeout must be pause, kill or hibernate");
		o->on_timeout_set = 1;
		return 0;
	case O_AUTO_RESUME: o->auto_resume = 1; return 0;
	case O_NO_AUTO_RESUME: o->auto_resume = -1; return 0;
	case O_MEMORY: return sbx_parse_size(arg, &o->limits.memory_bytes, err);
	case O_DISK:
		if (sbx_parse_size(arg, &o->limits.disk_bytes, err) < 0)
			return -1;
		if (o->limits.disk_bytes <= 0)
			return sbx_usage_err(err, "--disk must be a positive size");
		o->disk_set = 1;
		return 0;
	case O_PIDS: {
		char *end;
		long long n = strtoll(arg, &end, 10);
		if (*end || n <= 0)
			return sbx_usage_err(err, "--pids must be a positive number");
		o->limits.pids = n;
		return 0;
	}
	case O_CPUS: {
		char *end;
		double c = strtod(arg, &end);
		if (*end || c <= 0)
			return sbx_usage_err(err, "--cpus must be a positive number");
		o->limits.cpus = c;
		return 0;
	}
	case O_INTERNET: o->allow_internet = 1; return 0;
	case O_ALLOW_OUT:
	case O_DENY_OUT:
		o->policy_set = 1;
		return sbx_np_add(&o->policy, key == O_ALLOW_OUT ? SBX_NP_ALLOW : SBX_NP_DENY, arg, err);
	case O_NET_POLICY: {
		SBX_AUTOFREE char *text = NULL;
		size_t len;
		o->policy_set = 1;
		if (sbx_read_file(arg, 1 << 22, &text, &len, err) < 0 ||
		    sbx_np_from_text(text, len, &o->policy, err) < 0) {
			sbx_err_prefix(err, "--network-policy %s", arg);
			return -1;
		}
		return 0;
	}
	case O_TENANT: o->tenant = arg; return 0;
	case O_SESSION: o->session = arg; return 0;
	case O_FORK: o->fork_from = arg; return 0;
	case O_AT: o->fork_at = arg; return 0;
	case O_SKILL_IMAGE: o->skill_image = 1; return 0;
	case O_IN: o->read_input = 1; return 0;
	case O_VOLUME:
		if (o->nvolumes == SBX_VOLUMES_MAX)
			return sbx_usage_err(err, "at most %d --volume", SBX_VOLUMES_MAX);
		o->volumes[o->nvolumes++] = arg;
		return 0;
	case O_WAIT:
		if (sbx_parse_duration_ms(arg, &o->lock_wait_ms, err) < 0)
			return -1;
		if (o->lock_wait_ms == 0)
			o->lock_wait_ms = -1;
		return 0;
	}
	return 0;
}

/* Fill the create request from flags, the profile's defaults below them. */
static void build_request(struct create_opts *o, const struct sbx_profile *p,
			  struct sbx_create_req *req)
{
	memset(req, 0, sizeof(*req));
	req->template_id = o->template_id ? o->template_id : p->template_id;
	req->metadata = o->labels;
	if (!o->env_all) {
		o->env_all = json_object_new_object();
		json_object *penv = sbx_json_obj(p->raw, "env");
		if (penv) {
			json_object_object_foreach(penv, k, v)
				json_object_object_add(o->env_all, k, json_object_get(v));
		}
		json_object_object_foreach(o->env, k, v)
			json_object_object_add(o->env_all, k, json_object_get(v));
	}
	req->env = o->env_all;
	req->timeout.seconds = (o->timeout_set ? o->timeout_ms : p->idle_timeout_ms) / 1000;
	req->timeout.on_timeout_pause = o->on_timeout_set ? o->on_timeout_pause : p->on_timeout_pause;
	req->timeout.on_timeout_hibernate = o->on_timeout_set ? o->on_timeout_hibernate
							     : p->on_timeout_hibernate;
	req->timeout.auto_resume = o->auto_resume ? o->auto_resume > 0 : p->auto_resume;
	req->net.allow_internet = o->allow_internet || p->allow_internet;
	/* The rules: the flags' (in order), then the profile's; the default
	 * is the document's if one named it, else deny when any rule allows. */
	json_object *pnp = sbx_json_obj(p->raw, "network_policy");
	if (pnp && !o->profile_policy_added) {
		struct sbx_err e = {0};   /* checked when the profile loaded */
		struct sbx_netpolicy pp = {0};
		if (sbx_np_from_json(pnp, &pp, &e) == 0) {
			int keep = o->policy.dflt_set;
			for (size_t i = 0; i < pp.n; i++)
				(void)sbx_np_add_rule(&o->policy, &pp.rules[i], &e);
			if (!keep && pp.dflt_set) {
				o->policy.dflt = pp.dflt;
				o->policy.dflt_set = 1;
			}
			o->policy_set = 1;
		}
		sbx_np_clear(&pp);
		o->profile_policy_added = 1;
	}
	if (o->policy_set) {
		if (!o->policy.dflt_set)
			sbx_np_finish(&o->policy);
		req->net.policy = &o->policy;
		req->net.allow_internet = 1;
	}
	req->net.allow_public = p->allow_public;
	req->limits = p->limits;
	if (o->limits.memory_bytes)
		req->limits.memory_bytes = o->limits.memory_bytes;
	if (o->limits.pids)
		req->limits.pids = o->limits.pids;
	if (o->limits.cpus > 0)
		req->limits.cpus = o->limits.cpus;
	if (o->limits.disk_bytes)
		req->limits.disk_bytes = o->limits.disk_bytes;
	req->disk_required = o->disk_set;
}

/* The volume specs of this create: the flags', else the profile's
 * "volumes" (a list of the same strings).  -1 when the profile's is not
 * a list of strings. */
static int volume_specs(struct create_opts *o, const struct sbx_profile *p,
			const char **specs, size_t *n, struct sbx_err *err)
{
	*n = o->nvolumes;
	memcpy(specs, o->volumes, o->nvolumes * sizeof(*specs));
	json_object *pv = NULL;
	if (o->nvolumes || !p->raw || !json_object_object_get_ex(p->raw, "volumes", &pv))
		return 0;
	if (!json_object_is_type(pv, json_type_array) ||
	    json_object_array_length(pv) > SBX_VOLUMES_MAX)
		return sbx_fail_config(err, "create",
				"profile '%s': volumes must be a list of at most %d NAME:/PATH[:ro]",
				p->name, SBX_VOLUMES_MAX);
	for (size_t i = 0; i < json_object_array_length(pv); i++) {
		json_object *s = json_object_array_get_idx(pv, i);
		if (!json_object_is_type(s, json_type_string))
			return sbx_fail_config(err, "create",
					"profile '%s': volumes[%zu] is not a string", p->name, i);
		specs[(*n)++] = json_object_get_string(s);
	}
	return 0;
}

static int create_one(json_object *doc, void *ctx, struct sbx_err *err)
{
	struct create_opts *o = ctx;
	struct sbx_backend *b;
	struct sbx_create_req req;
	struct sbx_sandbox sb = {0};
	const char *how = NULL;

	if (sbx_app_backend(&o->app, NULL, &b, err) < 0)
		return -1;
	build_request(o, o->app.profile, &req);
	if (o->auto_resume > 0 && !req.timeout.on_timeout_pause)
		return sbx_fail(err, SBX_INVALID_REQUEST, "create", "--auto-resume needs --on-timeout pause or hibernate");

	const char *specs[SBX_VOLUMES_MAX];
	size_t nspec = 0;
	struct sbx_vol vols[SBX_VOLUMES_MAX] = {{0}};
	char *paths[SBX_VOLUMES_MAX] = {0};
	struct sbx_vol_mount mounts[SBX_VOLUMES_MAX];
	struct sbx_redis *r = NULL;
	/* A fork mounts what its source was granted (fork.c), not these. */
	if (o->fork_from && o->nvolumes)
		return sbx_usage_err(err, "--volume with --fork: a fork mounts its source's "
				     "read-only volumes");
	if (!o->fork_from && volume_specs(o, o->app.profile, specs, &nspec, err) < 0)
		return -1;
	int rc = 0;
	if (o->tenant && !o->session && !o->skill_image && !nspec)
		return sbx_usage_err(err, "--tenant needs --session, --skill-image or a volume "
				     "(--volume, or the profile's volumes)");
	if (nspec) {
		if (!o->tenant)
			return sbx_usage_err(err, "a volume is a tenant's: --volume needs --tenant");
		if (sbx_backend_require(b, SBX_CAP_VOLUMES, "create", err) < 0 ||
		    sbx_app_redis(&o->app, &r, err) < 0)
			return -1;
		rc = sbx_vol_mounts(r, b, o->app.profile, o->tenant, specs, nspec, vols, paths,
				    mounts, err);
		req.volumes = mounts;
		req.nvolumes = nspec;
	}
	struct sbx_checkpoint from = {0};
	if (rc < 0) {
	} else if (o->fork_from) {
		if (sbx_app_redis(&o->app, &r, err) < 0)
			return -1;
		struct sbx_fork_req fr = {
			.tenant = o->tenant, .session = o->session, .from = o->fork_from,
			.at = o->fork_at, .create = &req, .lock_wait_ms = o->lock_wait_ms,
		};
		rc = sbx_session_fork(b, r, &fr, &sb, &from, err);
		how = "forked";
	} else if (o->tenant && (o->session || o->skill_image)) {
		if (sbx_app_redis(&o->app, &r, err) < 0)
			return -1;
		struct sbx_resolve_req rr = {
			.tenant = o->tenant, .session = o->session,
			.skill_image = o->skill_image, .create = &req,
			.lock_wait_ms = o->lock_wait_ms,
		};
		rc = sbx_session_resolve(b, r, &rr, &sb, &how, err);
	} else {
		rc = sbx_backend_create(b, &req, &sb, err);
	}
	if (rc == 0 && nspec)
		rc = sbx_vol_attach_all(b, r, o->tenant, mounts, nspec, sb.id, err);
	for (size_t i = 0; i < nspec; i++)
		free(paths[i]);
	for (size_t i = 0; i < nspec; i++)
		sbx_vol_clear(&vols[i]);
	if (rc < 0) {
		sbx_checkpoint_clear(&from);
		sbx_sandbox_clear(&sb);
		return -1;
	}
	json_object_object_add(doc, "sandbox", sbx_sandbox_to_json(&sb));
	if (how)
		sbx_json_set_str(doc, "resolved", how);
	if (o->fork_from) {
		json_object *f = json_object_new_object();
		sbx_json_set_str(f, "session", o->fork_from);
		sbx_checkpoint_json(&from, f);
		json_object_object_add(doc, "fork", f);
		sbx_checkpoint_clear(&from);
	}
	sbx_sandbox_clear(&sb);
	return 0;
}

int main(int argc, char **argv)
{
	struct create_opts o = {0};
	struct sbx_err err = {0};
	o.labels = json_object_new_object();
	o.env = json_object_new_object();
	struct sbx_args a;
	int i = sbx_cli_parse(&cmd, argc, argv, on_opt, &o, &a, &err);
	if (i >= 0 && (o.session || o.skill_image) && !o.tenant)
		i = sbx_usage_err(&err, "--session and --skill-image need --tenant");
	if (i >= 0 && o.session && o.skill_image)
		i = sbx_usage_err(&err, "--session and --skill-image exclude each other");
	if (i >= 0 && o.fork_at && !o.fork_from)
		i = sbx_usage_err(&err, "--at needs --fork");
	if (i >= 0 && o.fork_from && (!o.session || o.template_id || o.read_input))
		i = sbx_usage_err(&err, "--fork needs --tenant and --session, and takes no --template or --in");
	if (i < 0) {
		json_object_put(o.labels);
		json_object_put(o.env);
		sbx_np_clear(&o.policy);
		return sbx_cli_report(cmd.name, &err);
	}
	json_object *seed = o.read_input ? NULL : json_object_new_object();
	int st = sbx_cli_run_docs(cmd.name, seed, create_one, &o);
	json_object_put(seed);
	json_object_put(o.labels);
	json_object_put(o.env);
	json_object_put(o.env_all);
	sbx_np_clear(&o.policy);
	sbx_app_close(&o.app);
	return st;
}
