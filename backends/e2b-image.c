/* e2b-image.c - snapshots and templates for the e2b and cube backends.
 *
 * Promises:
 *   - a snapshot create is sent once: on a 5xx, a timeout or a lost
 *     connection the caller is told (the kind says whether retrying could
 *     help) and nothing is retried here, because the server may have taken
 *     the snapshot; sbx-snap's ledger row (planned name) finds it then;
 *   - snapshots are listed with E2B's paging (X-Next-Token back as
 *     nextToken; Cube's offset token the same way) and deleted through
 *     DELETE /templates/{id}, a missing one being gone, not an error;
 *   - template lists never show a snapshot: ids with Cube's "snap-" prefix
 *     and every id the snapshot listing names are left out. */
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "e2b-sandbox.h"
#include "util.h"

#define SNAP_PAGE 100
#define SNAP_PAGES_MAX 1000

/* "team/name:tag" -> "name" (the tag "default" is E2B's none). */
static char *short_name(const char *n)
{
	const char *slash = strrchr(n, '/');
	const char *s = slash ? slash + 1 : n;
	const char *colon = strrchr(s, ':');
	return colon && !strcmp(colon, ":default") ? strndup(s, (size_t)(colon - s)) : sbx_xstrdup(s);
}

static void ref_from(json_object *j, struct sbx_snapshot_ref *r)
{
	memset(r, 0, sizeof(*r));
	const char *id = sbx_json_str(j, "snapshotID");
	r->id = sbx_xstrdup(id ? id : "");
	json_object *names = e2b_json_arr(j, "names");
	json_object *n0 = names && json_object_is_type(names, json_type_array) &&
			  json_object_array_length(names) ? json_object_array_get_idx(names, 0) : NULL;
	const char *n = n0 ? json_object_get_string(n0) : NULL;
	if (n && *n && strcmp(n, r->id) != 0)
		r->name = short_name(n);
	const char *sb = sbx_json_str(j, "sandboxID");
	r->parent = sb ? sbx_xstrdup(sb) : NULL;
	r->created_at = sbx_time_parse_iso(sbx_json_str(j, "createdAt"));
	if (r->created_at < 0)
		r->created_at = 0;
	r->size_bytes = -1;
	r->layers = -1;
}

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
	ref_from(resp, out);
	json_object_put(resp);
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
	for (size_t i = 0; i < cnt; i++)
		ref_from(json_object_array_get_idx(arr, i), &(*out)[i]);
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
	if (err->http_status == 400 && strstr(err->msg, "use"))
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

static void tpl_from(json_object *j, struct sbx_template *t)
{
	memset(t, 0, sizeof(*t));
	const char *id = sbx_json_str(j, "templateID");
	t->id = sbx_xstrdup(id ? id : "");
	json_object *al = e2b_json_arr(j, "aliases");
	json_object *a0 = al && json_object_is_type(al, json_type_array) && json_object_array_length(al)
			  ? json_object_array_get_idx(al, 0) : NULL;
	t->name = sbx_xstrdup(a0 ? json_object_get_string(a0) : t->id);
	const char *k = sbx_json_str(j, "kind");
	t->kind = sbx_xstrdup(k ? k : "template");
	int64_t c = sbx_time_parse_iso(sbx_json_str(j, "createdAt"));
	t->created_at = c > 0 ? c : 0;
	t->size_bytes = -1;
}

/* Every snapshot id, all pages (a repeated token is an error). */
static int snapshot_ids(struct sbx_backend *b, json_object *set, struct sbx_err *err)
{
	char *tok = NULL;
	for (int page = 0; page < SNAP_PAGES_MAX; page++) {
		struct sbx_snapshot_ref *v;
		size_t n;
		char *nx;
		if (e2b_snapshot_list(b, tok, &v, &n, &nx, err) < 0) {
			free(tok);
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			json_object_object_add(set, v[i].id, NULL);
		sbx_snapshot_refs_free(v, n);
		int repeat = nx && tok && !strcmp(nx, tok);
		free(tok);
		tok = nx;
		if (repeat) {
			free(tok);
			return sbx_fail(err, SBX_INTERNAL, "template_list", "the snapshot listing repeated its page token");
		}
		if (!tok)
			return 0;
	}
	free(tok);
	return sbx_fail(err, SBX_INTERNAL, "template_list", "the snapshot listing did not end");
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
		tpl_from(j, &(*out)[(*n)++]);
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
	tpl_from(j, out);
	json_object_put(j);
	return 0;
}
