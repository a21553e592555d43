/* serve-tpl.c - E2B's templates and snapshots over the backend: GET
 * /templates (and /v2/templates), GET and DELETE /templates/{id}, GET
 * /snapshots.  A snapshot is listed to, described to, booted by and
 * deleted by the key whose sandbox it was taken from only (serve-state.c
 * keeps that note): to another key it does not exist (404), as on E2B;
 * a backend snapshot this server did not take is no key's.  Templates
 * that are not snapshots are every key's; `base` is the profile's own
 * template.
 *
 * Promises: template ids from URLs are checked as sandbox ids are, plus
 * '.', '_' and ':' (image ids), before the backend sees them; snapshot
 * pages are ordered by id and the X-Next-Token is the last id sent, so a
 * page never repeats or skips one. */
#include "serve-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doc.h"
#include "util.h"

static int tpl_id_ok(const char *id)
{
	size_t n = strlen(id);
	if (!n || n > 128 || id[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.' || c == '_' || c == ':'))
			return 0;
	}
	return 1;
}

static json_object *tpl_json(const struct serve_req *r, const struct sbx_template *t)
{
	json_object *j = json_object_new_object();
	char when[32];
	sbx_json_set_str(j, "templateID", t->id);
	sbx_json_set_str(j, "buildID", "0");
	const struct sbx_limits *l = &r->cfg->profile->limits;
	sbx_json_set_int(j, "cpuCount", l->cpus > 0 ? (int64_t)(l->cpus + 0.999) : 1);
	sbx_json_set_int(j, "memoryMB", l->memory_bytes > 0 ? l->memory_bytes >> 20 : 0);
	sbx_json_set_int(j, "diskSizeMB", l->disk_bytes > 0 ? l->disk_bytes >> 20 : 0);
	sbx_json_set_bool(j, "public", 0);
	json_object *al = json_object_new_array();
	if (t->name)
		json_object_array_add(al, json_object_new_string(t->name));
	const char *def = r->cfg->profile->template_id;
	if (def && !strcmp(def, t->id))
		json_object_array_add(al, json_object_new_string("base"));
	json_object_object_add(j, "aliases", al);
	sbx_time_iso(t->created_at, when, sizeof(when));
	sbx_json_set_str(j, "createdAt", when);
	sbx_json_set_str(j, "updatedAt", when);
	json_object_object_add(j, "createdBy", NULL);
	sbx_json_set_str(j, "lastSpawnedAt", when);
	sbx_json_set_int(j, "spawnCount", 0);
	sbx_json_set_int(j, "buildCount", 1);
	sbx_json_set_str(j, "envdVersion", SERVE_ENVD_VERSION);
	sbx_json_set_str(j, "buildStatus", "ready");
	sbx_json_set_str(j, "kind", t->kind);
	return j;
}

/* A snapshot the request's key may delete: `id` names one of its own. */
static int own_snapshot(const struct serve_req *r, const char *id)
{
	char sb[72], team[17];
	return serve_snap_owner(r->serve_dir, id, sb, team) == 0 && !strcmp(team, r->team);
}

/* A listed or described template the key may see: not a snapshot, or a
 * snapshot of its own. */
static int tpl_visible(const struct serve_req *r, const char *id, const char *kind)
{
	char sb[72], team[17];
	if (serve_snap_owner(r->serve_dir, id, sb, team) == 0)
		return !strcmp(team, r->team);
	return !kind || strcmp(kind, "snapshot") != 0;
}

int serve_tpl_usable(const struct serve_req *r, struct sbx_backend *b, const char *id,
		     struct sbx_err *err)
{
	char sb[72], team[17];
	if (!strcmp(id, "base"))
		return 0;
	if (serve_snap_owner(r->serve_dir, id, sb, team) == 0) {
		if (!strcmp(team, r->team))
			return 0;
		return sbx_fail(err, SBX_NOT_FOUND, "template", "template '%s' not found", id);
	}
	if (!b->ops->template_get)
		return 0;                       /* nothing tells a snapshot apart */
	struct sbx_template t = {0};
	struct sbx_err e2 = {0};
	if (sbx_call(b, template_get, &e2, id, &t) < 0) {
		if (e2.kind == SBX_NOT_FOUND || e2.kind == SBX_INVALID_REQUEST)
			return sbx_fail(err, SBX_NOT_FOUND, "template", "template '%s' not found", id);
		*err = e2;
		return -1;
	}
	int snap = t.kind && !strcmp(t.kind, "snapshot");
	free(t.id);
	free(t.name);
	free(t.kind);
	if (snap)
		return sbx_fail(err, SBX_NOT_FOUND, "template", "template '%s' not found", id);
	return 0;
}

int serve_api_templates(const struct serve_req *r, struct serve_out *o, const char *rest);
int serve_api_templates(const struct serve_req *r, struct serve_out *o, const char *rest)
{
	struct sbx_err err = {0};
	struct sbx_backend *b = NULL;
	if (rest && (!tpl_id_ok(rest) || strchr(rest, '/')))
		return serve_reply_error(o, 400, "Invalid template ID");
	if (serve_open_backend(r, &b, &err) < 0)
		return serve_reply_err(o, &err);
	int rc = 0;
	if (!rest && !strcmp(r->method, "GET")) {
		struct sbx_template *v = NULL;
		size_t n = 0;
		if ((rc = sbx_call(b, template_list, &err, &v, &n)) == 0) {
			json_object *arr = json_object_new_array();
			for (size_t i = 0; i < n; i++)
				if (tpl_visible(r, v[i].id, v[i].kind))
					json_object_array_add(arr, tpl_json(r, &v[i]));
			sbx_templates_free(v, n);
			serve_reply_json(o, 200, arr);
		}
	} else if (rest && !strcmp(r->method, "GET")) {
		struct sbx_template t = {0};
		const char *id = !strcmp(rest, "base") && r->cfg->profile->template_id
					 ? r->cfg->profile->template_id : rest;
		if ((rc = sbx_call(b, template_get, &err, id, &t)) == 0) {
			if (tpl_visible(r, t.id, t.kind))
				serve_reply_json(o, 200, tpl_json(r, &t));
			else
				rc = sbx_fail(&err, SBX_NOT_FOUND, "template", "template '%s' not found", rest);
			free(t.id);
			free(t.name);
			free(t.kind);
		}
	} else if (rest && !strcmp(r->method, "DELETE")) {
		int gone = 0;
		if (own_snapshot(r, rest)) {
			rc = sbx_call(b, snapshot_delete, &err, rest, &gone);
			if (rc == 0) {
				SBX_AUTOFREE char *p = sbx_xasprintf("%s/snapshots/%s.json", r->serve_dir, rest);
				unlink(p);
			}
		} else {
			sbx_fail(&err, SBX_NOT_FOUND, "template", "template '%s' not found", rest);
			rc = -1;
		}
		if (rc == 0 && gone)
			serve_reply_error(o, 404, "template '%s' not found", rest);
		else if (rc == 0)
			serve_reply(o, 204, NULL, NULL, 0);
	} else {
		serve_reply_error(o, 405, "method not allowed");
	}
	if (rc < 0) {
		if (err.kind == SBX_CONFLICT)
			err.kind = SBX_INVALID_REQUEST;     /* E2B: 400 while in use */
		serve_reply_err(o, &err);
	}
	sbx_backend_close(b);
	return 0;
}

static int ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sbx_snapshot_ref *)a)->id, ((const struct sbx_snapshot_ref *)b)->id);
}

int serve_api_snapshots(const struct serve_req *r, struct serve_out *o);
int serve_api_snapshots(const struct serve_req *r, struct serve_out *o)
{
	struct sbx_err err = {0};
	struct sbx_backend *b = NULL;
	const char *want = serve_query(r, "sandboxID");
	const char *want_name = serve_query(r, "name");      /* E2B: the snapshot's name */
	if (want_name && !*want_name)
		want_name = NULL;
	const char *next = serve_query(r, "nextToken");
	int cube = r->cfg->flavor == SBX_SERVE_CUBE;
	const char *lq = serve_query(r, "limit");
	long limit = lq ? strtol(lq, NULL, 10) : cube ? 20 : 100;
	if (limit < 1 || limit > 100)
		limit = 100;
	/* Cube: the token is a stringified offset into the listing. */
	long skip = 0;
	if (cube && next && *next) {
		char *end;
		skip = strtol(next, &end, 10);
		if (*end || skip < 0)
			return serve_reply_error(o, 500, "invalid next token");
		next = NULL;
	}
	if (serve_open_backend(r, &b, &err) < 0)
		return serve_reply_err(o, &err);
	struct sbx_snapshot_ref *all = NULL;
	size_t na = 0;
	char *tok = NULL;
	for (int pages = 0; pages < 1000; pages++) {
		struct sbx_snapshot_ref *v = NULL;
		size_t n = 0;
		char *nx = NULL;
		if (sbx_call(b, snapshot_list, &err, tok, &v, &n, &nx) < 0) {
			free(tok);
			sbx_snapshot_refs_free(all, na);
			sbx_backend_close(b);
			return serve_reply_err(o, &err);
		}
		all = sbx_xrealloc(all, (na + n + 1) * sizeof(*all));
		if (n)
			memcpy(all + na, v, n * sizeof(*v));
		na += n;
		free(v);
		int again = nx && (!tok || strcmp(nx, tok) != 0);
		free(tok);
		tok = nx;
		if (!again)
			break;
	}
	free(tok);
	qsort(all, na, sizeof(*all), ref_cmp);
	json_object *arr = json_object_new_array();
	size_t sent = 0, skipped = 0;
	const char *last = NULL;
	int more = 0;
	for (size_t i = 0; i < na; i++) {
		char sb[72], team[17];
		if (serve_snap_owner(r->serve_dir, all[i].id, sb, team) < 0 || strcmp(team, r->team))
			continue;
		if ((want && strcmp(want, sb)) || (next && *next && strcmp(all[i].id, next) <= 0) ||
		    (want_name && !(all[i].name && !strcmp(all[i].name, want_name))))
			continue;
		if (skip > 0) {
			skip--;
			skipped++;
			continue;
		}
		if (sent == (size_t)limit) {
			more = 1;
			break;
		}
		json_object *j = json_object_new_object();
		sbx_json_set_str(j, "snapshotID", all[i].id);
		json_object *names = json_object_new_array();
		if (all[i].name || cube)
			json_object_array_add(names, json_object_new_string(all[i].name ? all[i].name : all[i].id));
		json_object_object_add(j, "names", names);
		json_object_array_add(arr, j);
		sent++;
		last = all[i].id;
	}
	if (more && last && cube)
		serve_out_header(o, "x-next-token", "%zu", skipped + sent);
	else if (more && last)
		serve_out_header(o, "X-Next-Token", "%s", last);
	serve_reply_json(o, 200, arr);
	sbx_snapshot_refs_free(all, na);
	sbx_backend_close(b);
	return 0;
}
