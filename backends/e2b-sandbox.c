/* e2b-sandbox.c - the e2b and cube backends' handle (see e2b-sandbox.h):
 * ids checked before they reach a URL, sbx's metadata spelling on the
 * wire, a handle filled from E2B's JSON, the detail and connect calls, and
 * the attach every envd caller starts with.  It sits below e2b.c (the
 * lifecycle and the vtable) and beside exec, files and images, which use
 * it and never e2b.c. */
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "e2b-sandbox.h"
#include "metadata.h"
#include "util.h"


int e2b_check_id(const char *id, const char *what, const char *op, struct sbx_err *err)
{
	size_t n = id ? strlen(id) : 0;
	int ok = n > 0 && n <= 128;
	for (size_t i = 0; ok && i < n; i++)
		ok = (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
		     (id[i] >= '0' && id[i] <= '9') || id[i] == '-';
	return ok ? 0 : sbx_fail(err, SBX_INVALID_REQUEST, op, "invalid %s '%.80s'", what, id ? id : "");
}

json_object *e2b_json_arr(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

static json_object *md_rename(json_object *md, const char *from, const char *to)
{
	json_object *o = json_object_new_object();
	if (!md || !json_object_is_type(md, json_type_object))
		return o;
	size_t fl = strlen(from);
	json_object_object_foreach(md, k, v) {
		SBX_AUTOFREE char *key = !strncmp(k, from, fl) ? sbx_xasprintf("%s%s", to, k + fl) : sbx_xstrdup(k);
		json_object_object_add(o, key, json_object_get(v));
	}
	return o;
}

json_object *e2b_md_to_wire(json_object *md) { return md_rename(md, "sbx.", "sbx_"); }
json_object *e2b_md_from_wire(json_object *md) { return md_rename(md, "sbx_", "sbx."); }

void e2b_fill(struct sbx_backend *b, struct sbx_sandbox *sb, json_object *j)
{
	struct e2b_conn *c = e2b_conn(b);
	const char *id = sbx_json_str(j, "sandboxID"), *tpl = sbx_json_str(j, "templateID");
	const char *alias = sbx_json_str(j, "alias"), *st = sbx_json_str(j, "state");
	if (id) {
		free(sb->id);
		sb->id = sbx_xstrdup(id);
	}
	free(sb->backend);
	sb->backend = sbx_xstrdup(c->cube ? "cube" : "e2b");
	if (!sb->profile)
		sb->profile = sbx_xstrdup(b->profile && b->profile->name ? b->profile->name : "default");
	if (tpl || alias) {
		free(sb->template_id);
		sb->template_id = sbx_xstrdup(alias ? alias : tpl);
	}
	if (st)
		sb->state = !strcmp(st, "paused") ? SBX_STATE_PAUSED
			  : !strcmp(st, "running") ? SBX_STATE_RUNNING : SBX_STATE_TRANSITIONING;
	json_object *md = sbx_json_obj(j, "metadata");
	if (md || st) {   /* a listing or detail: metadata as the server has it */
		json_object_put(sb->metadata);
		sb->metadata = e2b_md_from_wire(md);
		const char *t = sbx_json_str(sb->metadata, SBX_MD_TENANT);
		const char *s = sbx_json_str(sb->metadata, SBX_MD_SESSION);
		free(sb->tenant);
		free(sb->session);
		sb->tenant = t && *t ? sbx_xstrdup(t) : NULL;
		sb->session = s && *s ? sbx_xstrdup(s) : NULL;
	}
	int64_t started = sbx_time_parse_iso(sbx_json_str(j, "startedAt"));
	if (started > 0)
		sb->created_at = started;
	const char *dom = sbx_json_str(j, "domain");
	if (dom && *dom) {
		if (!sb->extra)
			sb->extra = json_object_new_object();
		sbx_json_set_str(sb->extra, "domain", dom);
	}
}

/* GET /sandboxes/{id}: the detail, with the access token. */
int e2b_detail(struct sbx_backend *b, const char *id, const char *op, json_object **out,
		  struct sbx_err *err)
{
	if (e2b_check_id(id, "sandbox id", op, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/sandboxes/%s", id);
	return e2b_api(b, op, "GET", path, NULL, E2B_IDEMPOTENT, out, NULL, err);
}

/* The sandbox's idle seconds for a connect: the handle's, else the
 * profile's, else E2B's default. */
static int64_t idle_seconds(struct sbx_backend *b, const struct sbx_sandbox *sb)
{
	int64_t s = sb->extra ? sbx_json_int(sb->extra, "idle_seconds", 0) : 0;
	if (s == 0 && b->profile && b->profile->idle_timeout_ms > 0)
		s = b->profile->idle_timeout_ms / 1000;
	return s > 0 ? s : s < 0 ? E2B_NEVER_SECONDS : 300;
}

/* POST /sandboxes/{id}/connect: resumes a paused sandbox, extends its
 * end; the answer's token binds the data plane. */
int e2b_connect_raw(struct sbx_backend *b, struct sbx_sandbox *sb, const char *op,
		       struct sbx_err *err)
{
	if (e2b_check_id(sb->id, "sandbox id", op, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/sandboxes/%s/connect", sb->id);
	json_object *body = json_object_new_object(), *resp = NULL;
	sbx_json_set_int(body, "timeout", idle_seconds(b, sb));
	int rc = e2b_api(b, op, "POST", path, body, E2B_IDEMPOTENT, &resp, NULL, err);
	json_object_put(body);
	if (rc < 0)
		return -1;
	e2b_fill(b, sb, resp);
	sb->state = SBX_STATE_RUNNING;
	rc = e2b_envd_bind(b, sb, sbx_json_str(resp, "envdAccessToken"), err);
	json_object_put(resp);
	return rc;
}

int e2b_attach(struct sbx_backend *b, struct sbx_sandbox *sb, const char *op, struct sbx_err *err)
{
	json_object *j;
	if (!sb->id)
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "the sandbox has no id");
	if (e2b_detail(b, sb->id, op, &j, err) < 0)
		return -1;
	e2b_fill(b, sb, j);
	int rc;
	if (sb->state == SBX_STATE_PAUSED) {
		json_object *lc = sbx_json_obj(j, "lifecycle");
		int resume = lc ? sbx_json_bool(lc, "autoResume", 1) : 1;
		rc = resume ? e2b_connect_raw(b, sb, op, err)
			    : sbx_fail(err, SBX_CONFLICT, op, "sandbox %s is paused and does not resume on use "
				       "(sbx-ctl resume)", sb->id);
	} else {
		rc = e2b_envd_bind(b, sb, sbx_json_str(j, "envdAccessToken"), err);
	}
	json_object_put(j);
	return rc;
}

