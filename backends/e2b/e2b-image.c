/* e2b-image.c - snapshots and templates for the e2b and cube backends.
 *
 * Promises:
 *   - a snapshot create is sent once: on a 5xx, a timeout or a lost
 *     connection the caller is told (the kind says whether retrying could
 *     help) and nothing is retried here, because the server may have taken
 *     the snapshot; sbx-snap's ledger row (planned name) finds it then;
 *   - snapshots are listed with E2B's paging (X-Next-Token back as
 *     nextToken; Cube's offset token the same way; every page through
 *     pager.c, so a token seen before at any distance is an error) and
 *     deleted through
 *     DELETE /templates/{id}, a missing one being gone, not an error;
 *   - template lists never show a snapshot: ids with Cube's "snap-" prefix
 *     and every id the snapshot listing names are left out. */
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "e2b-sandbox.h"
#include "pager.h"
#include "util.h"

#define SNAP_PAGE 100

int e2b_snapshot_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
			struct sbx_snapshot_ref *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (e2b_check_id(sb->id, "sandbox id", "snapshot", err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/sandboxes/%s/snapshots", sb->id);
	json_object *body = json_object_new_object(), *resp = NULL;
	if (name)
		sbx_json_set_str(body, "name", name);
	int rc = e2b_api(b, "snapshot", "POST", path, body, E2B_ONCE, &resp, NULL, err);
	json_object_put(body);
	if (rc < 0) {
		if (err->http_status >= 500 || err->kind == SBX_TIMEOUT)
			sbx_err_prefix(err, "the snapshot of %s may or may not exist (not retried; "
				       "sbx-snap --recover looks for it by name)", sb->id);
		return -1;
	}
	rc = e2b_wire_snapshot(resp, out, err);
	json_object_put(resp);
	if (rc < 0)
		return -1;
	if (!*out->id) {
		free(out->id);
		free(out->name);
		free(out->parent);
		memset(out, 0, sizeof(*out));
		return sbx_fail(err, SBX_INTERNAL, "snapshot", "the server returned no snapshotID");
	}
	if (!out->name && name)
		out->name = sbx_xstrdup(name);
	free(out->parent);
	out->parent = sb->template_id ? sbx_xstrdup(sb->template_id) : NULL;
	if (!out->created_at)
		out->created_at = sbx_now_ms() / 1000;
	return 0;
}

int e2b_snapshot_list(struct sbx_backend *b, const char *page_token, struct sbx_snapshot_ref **out,
		      size_t *n, char **next, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	*next = NULL;
	SBX_AUTOFREE char *tok = page_token ? sbx_http_escape(page_token) : NULL;
	SBX_AUTOFREE char *path = sbx_xasprintf("/snapshots?limit=%d%s%s", SNAP_PAGE,
						tok ? "&nextToken=" : "", tok ? tok : "");
	json_object *arr = NULL;
	if (e2b_api(b, "snapshot_list", "GET", path, NULL, E2B_IDEMPOTENT, &arr, next, err) < 0)
		return -1;
	if (!arr || !json_object_is_type(arr, json_type_array)) {
		json_object_put(arr);
		free(*next);
		*next = NULL;
		return sbx_fail(err, SBX_INTERNAL, "snapshot_list", "the snapshot listing is not an array");
	}
	size_t cnt = json_object_array_length(arr);
	*out = sbx_xcalloc(cnt ? cnt : 1, sizeof(**out));
	for (size_t i = 0; i < cnt; i++) {
		if (e2b_wire_snapshot(json_object_array_get_idx(arr, i), &(*out)[i], err) < 0) {
			sbx_snapshot_refs_free(*out, i);
			*out = NULL;
			json_object_put(arr);
			free(*next);
			*next = NULL;
			return -1;
		}
	}
	*n = cnt;
	json_object_put(arr);
	return 0;
}

/* DELETE /templates/{id}: snapshots and templates alike. */
static int delete_template(struct sbx_backend *b, const char *id, int *gone, const char *op,
			   struct sbx_err *err)
{
	*gone = 0;
	if (e2b_check_id(id, "id", op, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/templates/%s", id);
	if (e2b_api(b, op, "DELETE", path, NULL, E2B_IDEMPOTENT, NULL, NULL, err) == 0)
		return 0;
	if (err->http_status == 404) {
		sbx_err_clear(err);
		*gone = 1;
		return 0;
	}
	if (err->http_status == 400 && err->reason == SBX_R_IN_USE)
		err->kind = SBX_CONFLICT;            /* E2B: 400 while sandboxes use it */
	return -1;
}

int e2b_snapshot_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	return delete_template(b, id, gone, "snapshot_delete", err);
}

static int snapshot_ids(struct sbx_backend *b, json_object *set, struct sbx_err *err);

/* The same route deletes both; a snapshot named here is refused, as the
 * other backends refuse it (sbx-snap rm is the program for it). */
int e2b_template_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	json_object *snaps = json_object_new_object();
	int rc = snapshot_ids(b, snaps, err);
	int is_snap = rc == 0 && (sbx_str_starts(id, "snap-") || json_object_object_get_ex(snaps, id, NULL));
	json_object_put(snaps);
	if (rc < 0)
		return -1;
	if (is_snap)
		return sbx_fail(err, SBX_INVALID_REQUEST, "template_delete",
				"%s is a snapshot, not a template: use sbx-snap rm", id);
	return delete_template(b, id, gone, "template_delete", err);
}

/* ---- templates --------------------------------------------------------- */

/* Every snapshot id into `set`, through the one paging loop (pager.h:
 * a page token seen before, at any distance, fails the listing). */
static int snapshot_ids(struct sbx_backend *b, json_object *set, struct sbx_err *err)
{
	struct sbx_snapshot_ref *v;
	size_t n;
	if (sbx_snapshots_all(b, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		json_object_object_add(set, v[i].id, NULL);
	sbx_snapshot_refs_free(v, n);
	return 0;
}

int e2b_template_list(struct sbx_backend *b, struct sbx_template **out, size_t *n,
		      struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	json_object *arr = NULL, *snaps = json_object_new_object();
	if (snapshot_ids(b, snaps, err) < 0 ||
	    e2b_api(b, "template_list", "GET", "/templates", NULL, E2B_IDEMPOTENT, &arr, NULL, err) < 0) {
		json_object_put(snaps);
		return -1;
	}
	size_t cnt = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	*out = sbx_xcalloc(cnt ? cnt : 1, sizeof(**out));
	for (size_t i = 0; i < cnt; i++) {
		json_object *j = json_object_array_get_idx(arr, i);
		const char *id = sbx_json_str(j, "templateID");
		if (!id || sbx_str_starts(id, "snap-") || json_object_object_get_ex(snaps, id, NULL))
			continue;
		if (e2b_wire_template(j, &(*out)[*n], err) < 0) {
			sbx_templates_free(*out, *n);
			*out = NULL;
			*n = 0;
			json_object_put(arr);
			json_object_put(snaps);
			return -1;
		}
		(*n)++;
	}
	json_object_put(arr);
	json_object_put(snaps);
	return 0;
}

int e2b_template_get(struct sbx_backend *b, const char *id, struct sbx_template *out,
		     struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (e2b_check_id(id, "template id", "template_get", err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/templates/%s", id);
	json_object *j = NULL;
	if (e2b_api(b, "template_get", "GET", path, NULL, E2B_IDEMPOTENT, &j, NULL, err) < 0)
		return -1;
	int rc = e2b_wire_template(j, out, err);
	json_object_put(j);
	return rc;
}
