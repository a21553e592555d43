/* e2b-sandbox.c - the e2b and cube backends' handle (see e2b-sandbox.h):
 * a handle filled from E2B's JSON (checked by e2b-wire.c), the detail
 * and connect calls, and the attach every envd caller starts with.  It sits below e2b.c (the
 * lifecycle and the vtable) and beside exec, files and images, which use
 * it and never e2b.c. */
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "e2b-sandbox.h"
#include "netpolicy.h"
#include "util.h"

/* The detail's `network` (E2B's lists) is shown as the sbx policy it
 * means (sbx_np_from_e2b: denyOut 0.0.0.0/0 is the default deny), in
 * extra.network_policy as local and docker show theirs; lists that do not
 * parse are left out, not an error (the sandbox is still named). */
int e2b_fill(struct sbx_backend *b, struct sbx_sandbox *sb, json_object *j, struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	if (e2b_wire_fill(c->cube, b->profile && b->profile->name ? b->profile->name : NULL, sb, j, err) < 0)
		return -1;
	json_object *n = sbx_json_obj(j, "network");
	if (n && json_object_is_type(n, json_type_object)) {
		struct sbx_netpolicy p = {0};
		struct sbx_err perr = {0};
		json_object *ao = NULL, *dn = NULL;
		json_object_object_get_ex(n, "allowOut", &ao);
		json_object_object_get_ex(n, "denyOut", &dn);
		if (sbx_np_from_e2b(ao, dn, 1, &p, &perr) == 0) {
			if (!sb->extra)
				sb->extra = json_object_new_object();
			json_object_object_add(sb->extra, "network_policy", sbx_np_to_json(&p));
		}
		sbx_np_clear(&p);
	}
	return 0;
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
	rc = e2b_fill(b, sb, resp, err);
	sb->state = SBX_STATE_RUNNING;
	if (rc == 0)
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
	int rc = e2b_fill(b, sb, j, err);
	json_object *lc = sbx_json_obj(j, "lifecycle");
	if (rc == 0 && sb->state == SBX_STATE_PAUSED)
		rc = !lc || sbx_json_bool(lc, "autoResume", 1)
		     ? e2b_connect_raw(b, sb, op, err)
		     : sbx_fail(err, SBX_CONFLICT, op, "sandbox %s is paused and does not resume on use "
				"(sbx-ctl resume)", sb->id);
	else if (rc == 0)
		rc = e2b_envd_bind(b, sb, sbx_json_str(j, "envdAccessToken"), err);
	json_object_put(j);
	return rc;
}
