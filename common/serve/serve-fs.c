/* serve-fs.c - envd's filesystem.Filesystem service (unary Connect calls
 * with JSON) over the backend's file operations: Stat, ListDir (depth
 * 1..N, a flat list), MakeDir, Move, Remove.  WatchDir and the watcher
 * calls are unimplemented (the vtable has no file events).
 *
 * Promises: as serve-envd.c's (paths mapped, ".." refused, the backend
 * confines); envd's answers where the SDK keys on them: MakeDir of an
 * existing folder is already_exists, Stat of a missing path not_found,
 * Remove of a missing path succeeds; ListDir returns at most 10 000
 * entries. */
#include "serve-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "path.h"
#include "util.h"

#define LIST_MAX 10000

static void dirent_clear(struct sbx_dirent *e)
{
	free(e->name);
	free(e->path);
	free(e->link_target);
	memset(e, 0, sizeof(*e));
}

static const char *who(unsigned id)
{
	return id == 0 ? "root" : id == 1000 ? "user" : NULL;
}

static json_object *entry_json(const struct sbx_dirent *e)
{
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "name", e->name);
	const char *type = e->type == SBX_FT_DIR ? "FILE_TYPE_DIRECTORY" : "FILE_TYPE_FILE";
	sbx_json_set_str(j, "type", type);
	sbx_json_set_str(j, "path", e->path);
	serve_set_int64(j, "size", e->size);
	sbx_json_set_int(j, "mode", e->mode & 07777);
	char perm[11] = "----------";
	/* Go's FileMode letters: '?' for what is neither (a FIFO, a socket) */
	perm[0] = e->type == SBX_FT_DIR ? 'd' : e->type == SBX_FT_SYMLINK ? 'L'
		: e->type == SBX_FT_OTHER ? '?' : '-';
	for (int i = 0; i < 9; i++)
		if (e->mode & (1u << (8 - i)))
			perm[1 + i] = "rwxrwxrwx"[i];
	sbx_json_set_str(j, "permissions", perm);
	char num[16];
	snprintf(num, sizeof(num), "%u", e->uid);
	sbx_json_set_str(j, "owner", who(e->uid) ? who(e->uid) : num);
	snprintf(num, sizeof(num), "%u", e->gid);
	sbx_json_set_str(j, "group", who(e->gid) ? who(e->gid) : num);
	char t[32];
	sbx_time_iso(e->mtime, t, sizeof(t));
	sbx_json_set_str(j, "modifiedTime", t);
	if (e->link_target)
		sbx_json_set_str(j, "symlinkTarget", e->link_target);
	json_object_object_add(j, "metadata", json_object_new_object());
	return j;
}

/* The request's path field, mapped; NULL with the reply written. */
static char *req_path(struct serve_out *o, json_object *in, const char *field, int as_root)
{
	const char *p = sbx_json_str(in, field);
	if (!p) {
		serve_connect_unary_err(o, "invalid_argument", "%s is required", field);
		return NULL;
	}
	struct sbx_err err = {0};
	char *m = serve_sandbox_path(p, as_root, &err);
	if (!m)
		serve_connect_unary_err(o, "invalid_argument", "invalid path: %s", err.msg);
	return m;
}

static int stat_reply(struct serve_out *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		      const char *path, int as_root)
{
	struct sbx_err err = {0};
	struct sbx_dirent e = {0};
	if (sbx_file_stat(b, sb, path, as_root, &e, &err) < 0)
		return serve_connect_from_err(o, 0, &err);
	json_object *out = json_object_new_object();
	json_object_object_add(out, "entry", entry_json(&e));
	dirent_clear(&e);
	return serve_connect_unary_ok(o, out);
}

/* Entries of `path` down to `depth` levels, appended to arr. */
static int list_into(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int depth,
		     int as_root, json_object *arr, struct sbx_err *err)
{
	struct sbx_dirent *v = NULL;
	size_t n = 0;
	if (sbx_file_list(b, sb, path, as_root, &v, &n, err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && json_object_array_length(arr) < LIST_MAX; i++) {
		json_object_array_add(arr, entry_json(&v[i]));
		if (depth > 1 && v[i].type == SBX_FT_DIR) {
			struct sbx_err e2 = {0};
			list_into(b, sb, v[i].path, depth - 1, as_root, arr, &e2);
		}
	}
	sbx_dirents_free(v, n);
	return rc;
}

static int listdir(struct serve_out *o, struct sbx_backend *b, struct sbx_sandbox *sb,
		   const char *path, int depth, int as_root)
{
	struct sbx_err err = {0};
	struct sbx_dirent e = {0};
	if (sbx_file_stat(b, sb, path, as_root, &e, &err) < 0)
		return serve_connect_from_err(o, 0, &err);
	/* envd follows a symlink to a directory (the backend confines it) */
	int dir = e.type == SBX_FT_DIR || e.type == SBX_FT_SYMLINK;
	dirent_clear(&e);
	if (!dir)
		return serve_connect_unary_err(o, "invalid_argument", "path is not a directory");
	json_object *arr = json_object_new_array();
	if (list_into(b, sb, path, depth < 1 ? 1 : depth > 16 ? 16 : depth, as_root, arr,
		      &err) < 0) {
		json_object_put(arr);
		return serve_connect_from_err(o, 0, &err);
	}
	json_object *out = json_object_new_object();
	json_object_object_add(out, "entries", arr);
	return serve_connect_unary_ok(o, out);
}

int serve_envd_fs(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		  struct sbx_sandbox *sb, const char *method)
{
	int streaming;
	char who[65];
	int as_root = serve_envd_user(r, NULL, who);
	if (as_root < 0)
		return serve_connect_unary_err(o, "unauthenticated", "invalid username: '%s'", who);
	json_object *in = serve_connect_request(r, o, &streaming);
	if (!in)
		return 0;
	int rc;
	struct sbx_err err = {0};
	SBX_AUTOFREE char *path = NULL, *to = NULL;
	if (streaming) {
		rc = serve_connect_end(o, "unimplemented", "file watching is not supported by sbx-serve");
	} else if (!strcmp(method, "Stat")) {
		rc = (path = req_path(o, in, "path", as_root))
			     ? stat_reply(o, b, sb, path, as_root) : 0;
	} else if (!strcmp(method, "ListDir")) {
		rc = (path = req_path(o, in, "path", as_root))
			     ? listdir(o, b, sb, path, (int)sbx_json_int(in, "depth", 1), as_root) : 0;
	} else if (!strcmp(method, "MakeDir")) {
		rc = 0;
		if ((path = req_path(o, in, "path", as_root))) {
			struct sbx_dirent e = {0};
			if (sbx_file_stat(b, sb, path, as_root, &e, &err) == 0) {
				int dir = e.type == SBX_FT_DIR;
				dirent_clear(&e);
				rc = dir ? serve_connect_unary_err(o, "already_exists", "directory already exists: %s",
								   sbx_json_str(in, "path"))
					 : serve_connect_unary_err(o, "invalid_argument", "path already exists and is not a directory");
			} else if (sbx_file_mkdir(b, sb, path, 0755, as_root, &err) < 0) {
				rc = serve_connect_from_err(o, 0, &err);
			} else {
				serve_audit(r->cfg, b, sb, "file", serve_audit_file("mkdir", path, -1));
				rc = stat_reply(o, b, sb, path, as_root);
			}
		}
	} else if (!strcmp(method, "Move")) {
		rc = 0;
		if ((path = req_path(o, in, "source", as_root)) &&
		    (to = req_path(o, in, "destination", as_root))) {
			if (sbx_file_move(b, sb, path, to, as_root, &err) < 0) {
				rc = serve_connect_from_err(o, 0, &err);
			} else {
				json_object *a = serve_audit_file("mv", path, -1);
				sbx_json_set_str(a, "dest", to);
				serve_audit(r->cfg, b, sb, "file", a);
				rc = stat_reply(o, b, sb, to, as_root);
			}
		}
	} else if (!strcmp(method, "Remove")) {
		rc = 0;
		if ((path = req_path(o, in, "path", as_root))) {
			if (sbx_file_remove(b, sb, path, 1, as_root, &err) < 0 && err.kind != SBX_NOT_FOUND) {
				rc = serve_connect_from_err(o, 0, &err);
			} else {
				serve_audit(r->cfg, b, sb, "file", serve_audit_file("rm", path, -1));
				rc = serve_connect_unary_ok(o, json_object_new_object());
			}
		}
	} else {
		rc = serve_connect_unary_err(o, "unimplemented", "filesystem.Filesystem/%.64s is not supported", method);
	}
	json_object_put(in);
	return rc;
}
