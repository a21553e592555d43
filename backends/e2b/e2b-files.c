/* e2b-files.c - the session filesystem for the e2b and cube backends:
 * envd's /files (raw bytes up and down) and filesystem.Filesystem RPCs
 * (Stat, ListDir, MakeDir, Move, Remove); trees as tar streams through
 * exec of tar inside the sandbox.
 *
 * Promises:
 *   - every call acts as the sandbox user ("user") or, with as_root, as
 *     root; the sandbox confines the paths (envd runs inside it, with that
 *     user's rights), so nothing here can reach the host;
 *   - the semantics are the vtable's, where envd's differ: mkdir is
 *     mkdir -p and an existing directory is success; remove of a missing
 *     path is not_found and of a non-empty directory without recursive a
 *     conflict (envd's Remove is rm -rf and never fails on a missing path);
 *   - a read over `max` bytes is invalid_request, as the local backend
 *     says it; a write sets `mode` when it is not envd's 0644;
 *   - tar_put/tar_get run tar in the sandbox (the template must have it:
 *     docs/remote.md); the archive crosses as a temporary file in the
 *     sandbox's /tmp, streamed through /files, removed afterwards. */
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "e2b-sandbox.h"
#include "util.h"

static const char *user_of(int as_root) { return as_root ? "root" : "user"; }

static char *files_path(const char *path, int as_root)
{
	SBX_AUTOFREE char *p = sbx_http_escape(path);
	return sbx_xasprintf("/files?path=%s&username=%s", p, user_of(as_root));
}

/* ---- entries ----------------------------------------------------------- */

static int fs_rpc(struct sbx_backend *b, struct sbx_sandbox *sb, const char *op, const char *method,
		  json_object *in, int as_root, json_object **out, struct sbx_err *err)
{
	int rc = e2b_attach(b, sb, op, err);
	if (rc == 0) {
		SBX_AUTOFREE char *m = sbx_xasprintf("filesystem.Filesystem/%s", method);
		rc = e2b_rpc(b, op, m, in, user_of(as_root), out, err);
	}
	json_object_put(in);
	return rc;
}

static json_object *path_arg(const char *path)
{
	json_object *in = json_object_new_object();
	sbx_json_set_str(in, "path", path);
	return in;
}

/* Stat with the handle already attached. */
static int stat_bound(struct sbx_backend *b, const char *path, int as_root, struct sbx_dirent *d,
		      struct sbx_err *err)
{
	json_object *in = path_arg(path), *out = NULL;
	int rc = e2b_rpc(b, "file_stat", "filesystem.Filesystem/Stat", in, user_of(as_root), &out, err);
	json_object_put(in);
	if (rc == 0)
		e2b_wire_dirent(sbx_json_obj(out, "entry"), d);
	json_object_put(out);
	return rc;
}

int e2b_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int as_root,
		  struct sbx_dirent *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (e2b_attach(b, sb, "file_stat", err) < 0)
		return -1;
	return stat_bound(b, path, as_root, out, err);
}

int e2b_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int as_root,
		  struct sbx_dirent **out, size_t *n, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	json_object *in = path_arg(path), *r = NULL;
	sbx_json_set_int(in, "depth", 1);
	if (fs_rpc(b, sb, "file_list", "ListDir", in, as_root, &r, err) < 0)
		return -1;
	json_object *a = e2b_json_arr(r, "entries");
	size_t cnt = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
	*out = sbx_xcalloc(cnt ? cnt : 1, sizeof(**out));
	for (size_t i = 0; i < cnt; i++)
		e2b_wire_dirent(json_object_array_get_idx(a, i), &(*out)[i]);
	*n = cnt;
	json_object_put(r);
	return 0;
}

int e2b_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		   unsigned mode, int as_root, struct sbx_err *err)
{
	(void)mode;
	json_object *out = NULL;
	int rc = fs_rpc(b, sb, "file_mkdir", "MakeDir", path_arg(path), as_root, &out, err);
	json_object_put(out);
	if (rc < 0 && (err->kind == SBX_CONFLICT || err->kind == SBX_INVALID_REQUEST)) {
		/* already_exists: fine for a directory, a conflict for anything else */
		struct sbx_dirent d = {0};
		struct sbx_err e2 = {0};
		if (stat_bound(b, path, as_root, &d, &e2) == 0) {
			if (d.type == SBX_FT_DIR)
				rc = 0, sbx_err_clear(err);
			else
				sbx_fail(err, SBX_CONFLICT, "file_mkdir", "%s exists and is not a directory", path);
		}
		free(d.name);
		free(d.path);
		free(d.link_target);
	}
	return rc;
}

int e2b_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int recursive, int as_root, struct sbx_err *err)
{
	struct sbx_dirent d;
	if (e2b_file_stat(b, sb, path, as_root, &d, err) < 0)
		return -1;
	int dir = d.type == SBX_FT_DIR;
	free(d.name);
	free(d.path);
	free(d.link_target);
	if (dir && !recursive) {
		json_object *in = path_arg(path), *r = NULL;
		sbx_json_set_int(in, "depth", 1);
		int rc = e2b_rpc(b, "file_remove", "filesystem.Filesystem/ListDir", in, user_of(as_root), &r, err);
		json_object_put(in);
		json_object *a = rc == 0 ? e2b_json_arr(r, "entries") : NULL;
		size_t cnt = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
		json_object_put(r);
		if (rc < 0)
			return -1;
		if (cnt)
			return sbx_fail(err, SBX_CONFLICT, "file_remove", "%s is a directory that is not empty "
					"(recursive not asked for)", path);
	}
	json_object *in = path_arg(path), *out = NULL;
	int rc = e2b_rpc(b, "file_remove", "filesystem.Filesystem/Remove", in, user_of(as_root), &out, err);
	json_object_put(in);
	json_object_put(out);
	return rc;
}

int e2b_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		  const char *to, int as_root, struct sbx_err *err)
{
	json_object *in = json_object_new_object(), *out = NULL;
	sbx_json_set_str(in, "source", from);
	sbx_json_set_str(in, "destination", to);
	int rc = fs_rpc(b, sb, "file_move", "Move", in, as_root, &out, err);
	json_object_put(out);
	return rc;
}

/* ---- bytes ------------------------------------------------------------- */

int e2b_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		   const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err)
{
	if (e2b_attach(b, sb, "file_write", err) < 0)
		return -1;
	SBX_AUTOFREE char *p = files_path(path, as_root);
	const char *hdrs[] = {"Content-Type: application/octet-stream", NULL};
	struct sbx_http_req req = {.method = "POST", .path = p, .headers = hdrs,
				   .body = data ? data : "", .body_len = len, .timeout_ms = 600000};
	struct sbx_http_resp resp = {0};
	if (e2b_envd_do(b, "file_write", &req, &resp, err) < 0)
		return -1;
	int rc = resp.status == 200 || resp.status == 201 || resp.status == 204 ? 0
		 : e2b_status_err("file_write", &resp, err);
	sbx_http_resp_clear(&resp);
	if (rc == 0 && (mode & 07777) != 0644 && mode) {
		char m[16];
		snprintf(m, sizeof(m), "%o", mode & 07777);
		char *const argv[] = {"chmod", m, (char *)path, NULL};
		struct sbx_exec_req x = {.argv = argv, .as_root = as_root, .cwd = "/",
					 .raw_out_fd = -1, .raw_err_fd = -1, .raw_in_fd = -1};
		struct sbx_exec_result r;
		if ((rc = e2b_exec(b, sb, &x, &r, err)) == 0 && r.exit_code != 0)
			rc = sbx_fail(err, SBX_INTERNAL, "file_write", "chmod %s %s: %s", m, path,
				      r.err ? sbx_trim(r.err) : "failed");
		sbx_exec_result_clear(&r);
	}
	return rc;
}

int e2b_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, size_t max,
		  int as_root, char **data, size_t *len, struct sbx_err *err)
{
	*data = NULL;
	*len = 0;
	if (e2b_attach(b, sb, "file_read", err) < 0)
		return -1;
	SBX_AUTOFREE char *p = files_path(path, as_root);
	struct sbx_http_req req = {.method = "GET", .path = p, .max_body = max ? max + 1 : 0,
				   .timeout_ms = 600000};
	struct sbx_http_resp resp = {0};
	if (e2b_envd_do(b, "file_read", &req, &resp, err) < 0) {
		if (err->kind == SBX_INTERNAL && max)
			return sbx_fail_reason(err, SBX_INVALID_REQUEST, SBX_R_TOO_LARGE, "file_read",
					       "%s is more than the limit of %zu bytes", path, max);
		return -1;
	}
	if (resp.status != 200) {
		e2b_status_err("file_read", &resp, err);
		sbx_http_resp_clear(&resp);
		return -1;
	}
	if (max && resp.len > max) {
		sbx_http_resp_clear(&resp);
		return sbx_fail_reason(err, SBX_INVALID_REQUEST, SBX_R_TOO_LARGE, "file_read",
				       "%s is more than the limit of %zu bytes", path, max);
	}
	*data = resp.body ? resp.body : sbx_xstrdup("");
	*len = resp.len;
	resp.body = NULL;
	sbx_http_resp_clear(&resp);
	return 0;
}

/* ---- trees ------------------------------------------------------------ */

/* Run argv in the sandbox; a non-zero exit is an error in `op`'s words
 * (tar's message, its kind guessed from it). */
static int run_helper(struct sbx_backend *b, struct sbx_sandbox *sb, char *const *argv, int as_root,
		      const char *op, char **out, struct sbx_err *err)
{
	struct sbx_exec_req x = {.argv = argv, .as_root = as_root, .cwd = "/",
				 .raw_in_fd = -1, .raw_out_fd = -1, .raw_err_fd = -1,
				 .output_cap = 64 << 10};
	struct sbx_exec_result r;
	int rc = e2b_exec(b, sb, &x, &r, err);
	if (rc == 0 && r.exit_code != 0) {
		const char *why = r.err && r.err_len ? sbx_trim(r.err) : "failed";
		enum sbx_kind k = strstr(why, "No such file") ? SBX_NOT_FOUND
				: strstr(why, "Permission denied") ? SBX_AUTHENTICATION : SBX_INVALID_REQUEST;
		if (r.exit_code == 127)
			k = SBX_UNSUPPORTED;
		rc = sbx_fail(err, k, op, "tar in the sandbox: %s", why);
	}
	if (rc == 0 && out)
		*out = sbx_trim(r.out ? sbx_xstrdup(r.out) : sbx_xstrdup(""));
	sbx_exec_result_clear(&r);
	return rc;
}

static void remove_quietly(struct sbx_backend *b, const char *path, int as_root)
{
	json_object *in = path_arg(path), *out = NULL;
	struct sbx_err e = {0};
	e2b_rpc(b, "tar", "filesystem.Filesystem/Remove", in, user_of(as_root), &out, &e);
	json_object_put(in);
	json_object_put(out);
}

/* The archive crosses as a file: /files up (streamed from fd) to a
 * private temporary file, then tar -x inside, then the file removed.
 * (Through exec's stdin it would cross as base64 in JSON messages.) */
int e2b_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		int as_root, struct sbx_err *err)
{
	char rnd[17];
	if (sbx_random_hex(rnd, 8, err) < 0 ||
	    e2b_file_mkdir(b, sb, dir, 0755, as_root, err) < 0)
		return -1;
	SBX_AUTOFREE char *tmp = sbx_xasprintf("/tmp/.sbx-put-%s.tar", rnd);
	SBX_AUTOFREE char *p = files_path(tmp, as_root);
	const char *hdrs[] = {"Content-Type: application/octet-stream", NULL};
	struct sbx_http_req req = {.method = "POST", .path = p, .headers = hdrs, .body_fd = fd,
				   .timeout_ms = -1};
	struct sbx_http_resp resp = {0};
	if (e2b_envd_do(b, "tar_put", &req, &resp, err) < 0)
		return -1;
	int rc = resp.status >= 200 && resp.status < 300 ? 0 : e2b_status_err("tar_put", &resp, err);
	sbx_http_resp_clear(&resp);
	if (rc < 0) {
		remove_quietly(b, tmp, as_root);
		return -1;
	}
	char *const argv[] = {"tar", "-x", "--no-same-owner", "-f", tmp, "-C", (char *)dir, NULL};
	rc = run_helper(b, sb, argv, as_root, "tar_put", NULL, err);
	remove_quietly(b, tmp, as_root);
	return rc;
}

static const char TAR_GET_SH[] =
	"set -e; t=$(mktemp /tmp/.sbx-get.XXXXXXXX); "
	"tar -c -f \"$t\" -C \"$1\" \"$2\" || { rm -f \"$t\"; exit 1; }; echo \"$t\"";

int e2b_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		int as_root, struct sbx_err *err)
{
	SBX_AUTOFREE char *copy = sbx_xstrdup(path);
	char *slash = strrchr(copy, '/');
	const char *base = slash[1] ? slash + 1 : ".";
	const char *parent = slash == copy ? "/" : (*slash = '\0', copy);
	char *const argv[] = {"sh", "-c", (char *)TAR_GET_SH, "sh", (char *)parent, (char *)base, NULL};
	SBX_AUTOFREE char *tmp = NULL;
	if (run_helper(b, sb, argv, as_root, "tar_get", &tmp, err) < 0)
		return -1;
	SBX_AUTOFREE char *p = files_path(tmp, as_root);
	struct sbx_http_req req = {.method = "GET", .path = p, .out_fd = fd, .timeout_ms = -1};
	struct sbx_http_resp resp = {0};
	int rc = e2b_envd_do(b, "tar_get", &req, &resp, err);
	if (rc == 0 && resp.status != 200) {
		rc = e2b_status_err("tar_get", &resp, err);
		if (resp.status == 400 || resp.status == 413) {
			/* envd refuses files over its download limit (sbx-serve: 1 GiB) */
			err->kind = SBX_CAPACITY;
			sbx_err_prefix(err, "the archive of %s is over what the server's /files sends "
				       "(sbx-fs get --max cannot raise that)", path);
		}
	}
	sbx_http_resp_clear(&resp);
	remove_quietly(b, tmp, as_root);
	return rc;
}
