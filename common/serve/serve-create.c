/* serve-create.c - E2B's create (POST /sandboxes, /v2/sandboxes), and
 * serve_create_sandbox, which serve-fork.c makes its forks with: the
 * fields checked (nothing a client asks for is silently dropped), the
 * key's sandbox limit under its team lock, the backend's create, the
 * record (with what a fork repeats) and the event. */
#include "egress-secrets.h"
#include "serve-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "path.h"
#include "util.h"

/* Check a {string: string} object; NULL is fine. */
static int string_map(json_object *m, const char *what, int no_sbx, struct sbx_err *err)
{
	if (!m)
		return 0;
	if (!json_object_is_type(m, json_type_object))
		return sbx_fail(err, SBX_INVALID_REQUEST, "create", "%s must be an object", what);
	json_object_object_foreach(m, k, v) {
		if (!json_object_is_type(v, json_type_string))
			return sbx_fail(err, SBX_INVALID_REQUEST, "create", "%s values must be strings", what);
		if (no_sbx && strncmp(k, "sbx.", 4) == 0)
			return sbx_fail(err, SBX_INVALID_REQUEST, "create",
					"%s keys starting with 'sbx.' are reserved", what);
	}
	return 0;
}

/* Cube's spellings (cube-wire.md §2.3): lifecycle {onTimeout, autoResume}
 * (or on_timeout / auto_resume) wins over the flat autoPause; auto_pause,
 * a bare autoResume/auto_resume bool, and "envs" for envVars. */
static void cube_create_fields(json_object *in, json_object **env, int *pause, int *resume)
{
	json_object *v;
	if (!*env)
		*env = sbx_json_obj(in, "envs");
	if (json_object_object_get_ex(in, "auto_pause", &v))
		*pause = json_object_get_boolean(v);
	if ((json_object_object_get_ex(in, "autoResume", &v) || json_object_object_get_ex(in, "auto_resume", &v)) &&
	    json_object_is_type(v, json_type_boolean))
		*resume = json_object_get_boolean(v);
	json_object *lc = sbx_json_obj(in, "lifecycle");
	if (lc) {
		const char *on = sbx_json_str(lc, "onTimeout") ? sbx_json_str(lc, "onTimeout")
							     : sbx_json_str(lc, "on_timeout");
		if (on)
			*pause = !strcmp(on, "pause");
		if (json_object_object_get_ex(lc, "autoResume", &v) || json_object_object_get_ex(lc, "auto_resume", &v))
			*resume = json_object_get_boolean(v);
	}
}

/* A field a client left unset: null, "", [], {} (SDKs send some of these
 * for options the user did not give). */
int serve_unset(json_object *v)
{
	if (!v)
		return 1;
	switch (json_object_get_type(v)) {
	case json_type_string:
		return json_object_get_string_len(v) == 0;
	case json_type_array:
		return json_object_array_length(v) == 0;
	case json_type_object:
		return json_object_object_length(v) == 0;
	default:
		return 0;
	}
}

static int name_in(const char *k, const char *const *names)
{
	for (; *names; names++)
		if (!strcmp(k, *names))
			return 1;
	return 0;
}

/* Create's fields, refused unless the server implements them: any field
 * not in the lists below that is set (not null/empty) is a 400 naming it,
 * and so are the implemented fields' values the server cannot honour
 * (secure: false, autoPauseMemory: false).  Nothing a client asks for is
 * silently dropped: a sandbox without the egress proxy, header rules or
 * volume it asked for would look right and be wrong. */
static int refuse_unimplemented(json_object *in, int cube, struct sbx_err *err)
{
	static const char *const top[] = {"templateID", "timeout", "autoPause", "autoResume",
					  "secure", "allow_internet_access", "network", "metadata",
					  "envVars", "autoPauseMemory", "volumeMounts", NULL};
	static const char *const cube_top[] = {"lifecycle", "auto_pause", "auto_resume", "envs", NULL};
	static const char *const network[] = {"allowPublicTraffic", "allowOut", "denyOut", "rules", NULL};
	json_object_object_foreach(in, k, v) {
		if (name_in(k, top) || (cube && name_in(k, cube_top)) || serve_unset(v))
			continue;
		return sbx_fail(err, SBX_INVALID_REQUEST, "create",
				"sbx-serve does not implement '%.64s'", k);
	}
	json_object *net = NULL;
	if (json_object_object_get_ex(in, "network", &net) && net &&
	    !json_object_is_type(net, json_type_object))
		return sbx_fail(err, SBX_INVALID_REQUEST, "create", "network must be an object");
	if (net) {
		json_object_object_foreach(net, k, v) {
			if (name_in(k, network) || serve_unset(v))
				continue;
			return sbx_fail(err, SBX_INVALID_REQUEST, "create",
					"sbx-serve does not implement 'network.%.64s'", k);
		}
	}
	json_object *flag;
	if (json_object_object_get_ex(in, "secure", &flag) && flag && !json_object_get_boolean(flag))
		return sbx_fail(err, SBX_INVALID_REQUEST, "create",
				"sbx-serve does not implement 'secure': false (envd always needs its token)");
	if (json_object_object_get_ex(in, "autoPauseMemory", &flag) && flag && !json_object_get_boolean(flag))
		return sbx_fail(err, SBX_INVALID_REQUEST, "create",
				"sbx-serve does not implement 'autoPauseMemory': false (a pause keeps memory)");
	return 0;
}

/* The create's metadata: the user's, the key's id under SERVE_TEAM_KEY, and
 * the volume mounts (serve_vol_note). */
static json_object *create_metadata(json_object *md, const char *team,
				    const struct serve_vols *sv)
{
	json_object *meta = NULL;
	if (!md || json_object_deep_copy(md, &meta, NULL) < 0)
		meta = json_object_new_object();
	sbx_json_set_str(meta, SERVE_TEAM_KEY, team);
	serve_vol_note(sv, meta);
	return meta;
}

/* What a fork repeats of its source's create (serve-fork.c): the network
 * as it was granted (egress, allowOut/denyOut, inbound), the envVars and
 * the timeout policy, in create's own spelling, so that a fork is made by
 * create itself and can never be given more than its source had. */
static json_object *fork_recipe(const struct sbx_create_req *req, json_object *env, int allow_public)
{
	json_object *j = json_object_new_object();
	sbx_json_set_bool(j, "allow_internet_access", req->net.allow_internet);
	json_object *n = json_object_new_object();
	sbx_json_set_bool(n, "allowPublicTraffic", allow_public);
	if (req->net.allow_out)
		json_object_object_add(n, "allowOut", json_object_get(req->net.allow_out));
	if (req->net.deny_out)
		json_object_object_add(n, "denyOut", json_object_get(req->net.deny_out));
	json_object_object_add(j, "network", n);
	if (env)
		json_object_object_add(j, "envVars", json_object_get(env));
	sbx_json_set_bool(j, "autoPause", req->timeout.on_timeout_pause);
	json_object *ar = json_object_new_object();
	sbx_json_set_bool(ar, "enabled", req->timeout.auto_resume);
	json_object_object_add(j, "autoResume", ar);
	return j;
}

/* The checks of a create before the backend is asked: the fields, the
 * template (404 as E2B's when the key may not use it), the key's limit
 * (capacity, under the team lock *lock, which the caller closes). */
/* Whether the new sandbox has /bin/bash, which commands.run asks for
 * (`/bin/bash -l -c CMD`), looked up once here rather than by a /bin/sh
 * wrapper in front of every command (one exec more per command:
 * docs/serve.md "Benchmarks").  Only where sandboxes run on this host
 * (local): there a start takes a few ms and the wrapper's exec is a share
 * of it, while the look is a fork; elsewhere a start is a container exec
 * or a round trip (tens to hundreds of ms) that the wrapper does not move,
 * and the look would cost one more of those on every create.  Unknown
 * then, and when the look fails otherwise than with not_found: Start
 * keeps the wrapper. */
static int bash_of(struct sbx_backend *b, struct sbx_sandbox *sb)
{
	struct sbx_dirent e = {0};
	struct sbx_err err = {0};
	if (!(sbx_backend_caps(b) & SBX_CAP_HOST_LOCAL))
		return SERVE_BASH_UNKNOWN;
	if (sbx_file_stat(b, sb, "/bin/bash", 1, &e, &err) < 0)
		return err.kind == SBX_NOT_FOUND ? SERVE_BASH_NO : SERVE_BASH_UNKNOWN;
	int yes = e.type == SBX_FT_SYMLINK || (e.type == SBX_FT_FILE && (e.mode & 0111));
	free(e.name);
	free(e.path);
	free(e.link_target);
	return yes ? SERVE_BASH_YES : SERVE_BASH_NO;
}

static int create_checks(const struct serve_req *r, json_object *in, const char *tpl,
			 int64_t timeout, struct sbx_backend **b, int *lock, struct sbx_err *err)
{
	int cube = r->cfg->flavor == SBX_SERVE_CUBE;
	size_t have = 0;
	if (timeout <= 0 && !(cube && timeout == 0 && sbx_json_int(in, "timeout", 1) == -1))
		return sbx_fail(err, SBX_INVALID_REQUEST, "create", "Timeout must be greater than 0");
	if (strlen(tpl) > 256 || strchr(tpl, '\n'))
		return sbx_fail(err, SBX_INVALID_REQUEST, "create", "Invalid template ID");
	if (refuse_unimplemented(in, cube, err) < 0 ||
	    string_map(sbx_json_obj(in, "metadata"), "metadata", 1, err) < 0 ||
	    string_map(sbx_json_obj(in, "envVars"), "envVars", 0, err) < 0 ||
	    (cube && string_map(sbx_json_obj(in, "envs"), "envs", 0, err) < 0) ||
	    serve_open_backend(r, b, err) < 0 ||
	    (*lock = serve_team_lock(r->serve_dir, r->team, err)) < 0 ||
	    serve_team_count(r, *b, &have, err) < 0)
		return -1;
	if (serve_tpl_usable(r, *b, tpl, err) < 0)
		return -2;                               /* not_found: 404 as E2B's */
	if (have >= r->cfg->max_sandboxes_per_key)
		return sbx_fail(err, SBX_CAPACITY, "create", "the key has %zu sandboxes, its limit", have);
	return 0;
}

int serve_create_sandbox(const struct serve_req *r, json_object *in, int v2, json_object **out,
			 struct sbx_err *err)
{
	*out = NULL;
	struct sbx_backend *b = NULL;
	const char *tpl = sbx_json_str(in, "templateID");
	json_object *md = sbx_json_obj(in, "metadata"), *env = sbx_json_obj(in, "envVars");
	json_object *net = sbx_json_obj(in, "network");
	int64_t timeout = sbx_json_int(in, "timeout", v2 ? 300 : 15);
	json_object *ar = sbx_json_obj(in, "autoResume");
	int auto_pause = sbx_json_bool(in, "autoPause", 0);
	int auto_resume = ar ? sbx_json_bool(ar, "enabled", 0) : 0;
	int cube = r->cfg->flavor == SBX_SERVE_CUBE;
	if (cube)
		cube_create_fields(in, &env, &auto_pause, &auto_resume);
	struct sbx_create_req req = {
		.timeout = {.seconds = timeout, .on_timeout_pause = auto_pause, .auto_resume = auto_resume},
		.net = {.allow_internet = sbx_json_bool(in, "allow_internet_access",
							r->cfg->profile->allow_internet),
			/* the backend's inbound switch: as asked, else the
			 * profile's (inbound through sbx-serve is its own
			 * relay, with E2B's default, below) */
			.allow_public = net ? sbx_json_bool(net, "allowPublicTraffic", r->cfg->profile->allow_public)
					    : r->cfg->profile->allow_public,
			.allow_out = net ? serve_json_arr(net, "allowOut") : NULL,
			.deny_out = net ? serve_json_arr(net, "denyOut") : NULL},
		.limits = r->cfg->profile->limits,
	};
	if (!tpl || !*tpl)
		tpl = "base";
	if (strcmp(tpl, "base") != 0)
		req.template_id = tpl;
	if (cube && timeout == -1)
		timeout = 0;                         /* Cube: -1 is never */
	SBX_AUTOCLOSE int lock = -1;
	int checked = create_checks(r, in, tpl, timeout, &b, &lock, err);
	int rc = checked < 0 ? -1 : 0;
	struct sbx_sandbox sb = {0};
	/* A backend that kills idle sandboxes cannot pause them at an idle
	 * timeout: then the sweeper alone pauses at the end time, and the
	 * backend gets no backstop timer (it would kill). */
	if (rc == 0 && req.timeout.on_timeout_pause && (sbx_backend_caps(b) & SBX_CAP_IDLE_KILL))
		req.timeout.seconds = 0;
	struct serve_vols sv;
	if (serve_vol_prepare(r, b, rc == 0 ? in : NULL, &sv, &req, err) < 0)
		rc = -1;
	int public_in = net ? sbx_json_bool(net, "allowPublicTraffic", 1) : 1;
	/* E2B's network.rules: transform headers, ${e2b.secrets.NAME} of the
	 * profile's egress_secrets (egress-secrets.h); local and docker only,
	 * with allowOut/denyOut (so a broker); anything else is a 400. */
	json_object *hdrs = NULL, *rules = net ? sbx_json_obj(net, "rules") : NULL;
	if (rc == 0 && rules && !serve_unset(rules)) {
		if (sbx_egress_headers_from_e2b(rules, r->cfg->profile->raw, &hdrs, err) < 0)
			rc = -1;
		else if (hdrs && strcmp(b->ops->name, "local") && strcmp(b->ops->name, "docker"))
			rc = sbx_fail(err, SBX_INVALID_REQUEST, "create", "network.rules needs the local "
				      "or docker backend (this is %s)", b->ops->name);
		else if (hdrs && !req.net.allow_out && !req.net.deny_out)
			rc = sbx_fail(err, SBX_INVALID_REQUEST, "create", "network.rules needs "
				      "network.allowOut or denyOut (the egress broker applies them)");
		req.net.headers = hdrs;
	}
	if (rc == 0) {
		json_object *meta = create_metadata(md, r->team, &sv);
		req.metadata = meta;
		req.env = env;
		/* Inbound traffic is this server's own (serve-proxy.c relays it,
		 * the record keeps the switch): the backend is asked for none, so
		 * a backend without inbound access (local) serves E2B's default
		 * allowPublicTraffic: true. */
		req.net.allow_public = 0;
		rc = sbx_backend_create(b, &req, &sb, err);
		json_object_put(meta);
		if (rc == 0 && serve_vol_attach(r, b, &sv, sb.id, err) < 0)
			rc = -1;
	}
	serve_vols_clear(&sv);
	if (rc == 0) {
		struct serve_rec rec = {.started_at_ms = sbx_now_ms(), .auto_pause = req.timeout.on_timeout_pause,
					.auto_resume = req.timeout.auto_resume, .allow_public = public_in};
		snprintf(rec.team, sizeof(rec.team), "%s", r->team);
		rec.end_at_ms = timeout ? rec.started_at_ms + timeout * 1000 : 0;
		rec.alias = sbx_xstrdup(tpl);
		rec.fork_recipe = fork_recipe(&req, env, public_in);
		rec.bash = bash_of(b, &sb);
		if (serve_rec_save(r->serve_dir, sb.id, &rec, err) < 0 ||
		    serve_sandbox_json(r, &sb, &rec, out, err) < 0) {
			int gone;
			struct sbx_err e2 = {0};
			sbx_call(b, remove, &e2, sb.id, &gone);
			rc = -1;
		} else {
			json_object *d = json_object_new_object();
			sbx_json_set_str(d, "template", tpl);
			serve_event(r->cfg, r->team, sb.id, "created", NULL, d);
		}
		serve_rec_clear(&rec);
	}
	if (rc < 0 && checked != -2 && err->kind == SBX_NOT_FOUND)
		err->kind = SBX_INVALID_REQUEST;         /* a missing template */
	json_object_put(hdrs);
	sbx_sandbox_clear(&sb);
	sbx_backend_close(b);
	return rc;
}

int serve_api_create(const struct serve_req *r, struct serve_out *o, int v2)
{
	json_object *in = serve_body_obj(r, o);
	if (!in)
		return 0;
	struct sbx_err err = {0};
	json_object *out;
	if (serve_create_sandbox(r, in, v2, &out, &err) == 0) {
		serve_reply_json(o, 201, out);
	} else if (err.kind == SBX_CAPACITY) {
		serve_out_header(o, "Retry-After", "5");
		serve_reply_error(o, 429, "%s", err.msg);
	} else {
		serve_reply_err(o, &err);
	}
	json_object_put(in);
	return 0;
}
