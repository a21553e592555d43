/* serve-sbjson.c - a sandbox in E2B's JSON: Sandbox (create, connect,
 * resume), ListedSandbox and SandboxDetail (lists, get), from the
 * backend's sandbox and sbx-serve's record of it. */
#include "serve-int.h"

#include <stdio.h>
#include <string.h>

#include "doc.h"
#include "netpolicy.h"
#include "util.h"

void serve_iso_ms(int64_t ms, char *buf, size_t len)
{
	char s[32];
	sbx_time_iso(ms / 1000, s, sizeof(s));
	s[strlen(s) - 1] = '\0';                 /* drop the Z */
	snprintf(buf, len, "%s.%03lldZ", s, (long long)(ms % 1000));
}

static const char *state_name(enum sbx_state s)
{
	return s == SBX_STATE_PAUSED ? "paused" : "running";
}

/* User metadata: everything but sbx's own keys. */
json_object *serve_user_metadata(const struct sbx_sandbox *sb)
{
	json_object *m = json_object_new_object();
	if (sb->metadata) {
		json_object_object_foreach(sb->metadata, k, v)
			if (strncmp(k, "sbx.", 4) != 0)
				json_object_object_add(m, k, json_object_get(v));
	}
	return m;
}

static void add_resources(const struct serve_req *r, json_object *j)
{
	const struct sbx_limits *l = &r->cfg->profile->limits;
	sbx_json_set_int(j, "cpuCount", l->cpus > 0 ? (int64_t)(l->cpus + 0.999) : 1);
	sbx_json_set_int(j, "memoryMB", l->memory_bytes > 0 ? l->memory_bytes >> 20 : 0);
	sbx_json_set_int(j, "diskSizeMB", l->disk_bytes > 0 ? l->disk_bytes >> 20 : 0);
}

/* Sandbox (create, connect, resume): ids, tokens, domain. */
int serve_sandbox_json(const struct serve_req *r, const struct sbx_sandbox *sb,
			const struct serve_rec *rec, json_object **out, struct sbx_err *err)
{
	char tok[65];
	if (serve_token(r->serve_dir, "envd", sb->id, tok, err) < 0)
		return -1;
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "templateID", sb->template_id);
	if (rec->alias && sb->template_id && strcmp(rec->alias, sb->template_id) != 0)
		sbx_json_set_str(j, "alias", rec->alias);
	sbx_json_set_str(j, "sandboxID", sb->id);
	sbx_json_set_str(j, "clientID", SERVE_CLIENT_ID);
	sbx_json_set_str(j, "envdVersion", SERVE_ENVD_VERSION);
	sbx_json_set_str(j, "envdAccessToken", tok);
	if (!rec->allow_public) {
		if (serve_token(r->serve_dir, "traffic", sb->id, tok, err) < 0) {
			json_object_put(j);
			return -1;
		}
		sbx_json_set_str(j, "trafficAccessToken", tok);
	} else {
		json_object_object_add(j, "trafficAccessToken", NULL);
	}
	if (r->cfg->domain)
		sbx_json_set_str(j, "domain", r->cfg->domain);
	else
		json_object_object_add(j, "domain", NULL);
	*out = j;
	return 0;
}

/* SandboxDetail.network: a sandbox's egress policy in E2B's lists, when
 * it has one they can say (sbx_np_to_e2b); NULL otherwise (a policy from
 * a profile with ports is enforced, just not shown in E2B's terms). */
static json_object *network_detail(const struct sbx_sandbox *sb)
{
	json_object *np = sb->extra ? sbx_json_obj(sb->extra, "network_policy") : NULL;
	if (!np)
		return NULL;
	struct sbx_netpolicy p = {0};
	struct sbx_err err = {0};
	json_object *ao = NULL, *dn = NULL, *n = NULL;
	if (sbx_np_from_json(np, &p, &err) == 0 && sbx_np_to_e2b(&p, &ao, &dn, &err) == 0) {
		n = json_object_new_object();
		json_object_object_add(n, "allowOut", ao);
		json_object_object_add(n, "denyOut", dn);
	}
	sbx_np_clear(&p);
	return n;
}

/* ListedSandbox, and with `detail` SandboxDetail. */
json_object *serve_listed_json(const struct serve_req *r, const struct sbx_sandbox *sb,
				const struct serve_rec *rec, int detail)
{
	json_object *j = json_object_new_object();
	char t[48];
	sbx_json_set_str(j, "templateID", sb->template_id);
	if (rec->alias && sb->template_id && strcmp(rec->alias, sb->template_id) != 0)
		sbx_json_set_str(j, "alias", rec->alias);
	sbx_json_set_str(j, "sandboxID", sb->id);
	sbx_json_set_str(j, "clientID", SERVE_CLIENT_ID);
	int64_t started = rec->started_at_ms ? rec->started_at_ms : sb->created_at * 1000;
	serve_iso_ms(started, t, sizeof(t));
	sbx_json_set_str(j, "startedAt", t);
	serve_iso_ms(rec->end_at_ms ? rec->end_at_ms : sbx_now_ms(), t, sizeof(t));
	sbx_json_set_str(j, "endAt", t);
	add_resources(r, j);
	json_object_object_add(j, "metadata", serve_user_metadata(sb));
	json_object *vm = serve_vol_listed(sb);
	if (vm)
		json_object_object_add(j, "volumeMounts", vm);
	sbx_json_set_str(j, "state", state_name(sb->state));
	sbx_json_set_str(j, "envdVersion", SERVE_ENVD_VERSION);
	if (detail) {
		char tok[65];
		struct sbx_err err = {0};
		if (serve_token(r->serve_dir, "envd", sb->id, tok, &err) == 0)
			sbx_json_set_str(j, "envdAccessToken", tok);
		if (r->cfg->domain && sb->state != SBX_STATE_PAUSED)
			sbx_json_set_str(j, "domain", r->cfg->domain);
		else
			json_object_object_add(j, "domain", NULL);
		json_object *lc = json_object_new_object();
		sbx_json_set_bool(lc, "autoResume", rec->auto_resume);
		sbx_json_set_str(lc, "onTimeout", rec->auto_pause ? "pause" : "kill");
		json_object_object_add(j, "lifecycle", lc);
		json_object *n = network_detail(sb);
		if (n)
			json_object_object_add(j, "network", n);
	}
	return j;
}
