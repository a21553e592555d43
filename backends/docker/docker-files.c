/* docker-files.c - the session filesystem of a Docker sandbox.
 *
 * The archive API runs as root inside the container and resolves symlinks
 * there (reference §5: a user-planted `ln -s /root x` turns "write x/f"
 * into a root write).  So everything done on behalf of the sandbox user is
 * done *as* that user, by small busybox scripts run through exec with the
 * paths passed positionally ("$1", never spliced into the script): the
 * kernel's permission checks are the confinement, reads included.  Root
 * operations (the install path, as_root) may use the archive API.
 *
 * Promises: paths (in the library's normal spelling, path.h) are never
 * under /proc, /sys or /dev or the activity marker (invalid_request);
 * writes replace the target atomically (temp file + rename in the same
 * folder), so a symlink planted at the target is replaced, not written
 * through; a missing path is not_found; helper failures are mapped from
 * their stderr (see docker_sh). */
#include "docker-files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docker-api.h"
#include "docker-container.h"
#include "docker-exec.h"
#include "doc.h"
#include "util.h"

int docker_check_path(const char *path, const char *op, struct sbx_err *err)
{
	static const char *const reserved[] = {"/proc", "/sys", "/dev"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(reserved); i++) {
		size_t n = strlen(reserved[i]);
		if (!strncmp(path, reserved[i], n) && (path[n] == 0 || path[n] == '/'))
			return sbx_fail(err, SBX_INVALID_REQUEST, op,
					"path '%s' refused: /proc, /sys and /dev are off limits", path);
	}
	if (!strcmp(path, DOCKER_MARKER))
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "path '%s' is reserved", path);
	return 0;
}

/* Parse "mode_hex size mtime uid gid" as printed by `stat -c "%f %s %Y %u %g"`. */
static int parse_stat(const char *line, struct sbx_dirent *e)
{
	unsigned mode;
	long long size, mtime;
	unsigned uid, gid;
	if (sscanf(line, "%x %lld %lld %u %u", &mode, &size, &mtime, &uid, &gid) != 5)
		return -1;
	switch (mode & 0170000) {
	case 0100000: e->type = SBX_FT_FILE; break;
	case 0040000: e->type = SBX_FT_DIR; break;
	case 0120000: e->type = SBX_FT_SYMLINK; break;
	default: e->type = SBX_FT_OTHER; break;
	}
	e->mode = mode & 07777;
	e->size = size;
	e->mtime = mtime;
	e->uid = uid;
	e->gid = gid;
	return 0;
}

static char *base_name(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	size_t s = n;
	while (s > 0 && path[s - 1] != '/')
		s--;
	if (s == n)
		return sbx_xstrdup("/");
	return strndup(path + s, n - s) ?: sbx_xstrdup("");
}

int docker_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		      const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err)
{
	if (docker_check_path(path, "file_write", err) < 0)
		return -1;
	char m[16];
	snprintf(m, sizeof(m), "%o", (mode ? mode : 0644) & 07777);
	/* Temp file + rename: a symlink at $1 is replaced, never followed.
	 * Every failure reads stdin to its end first: podman resets the
	 * attach of an exec that exits with stdin unread, and its own
	 * "connection reset" error then replaces the command's stderr. */
	static const char script[] =
		"fail() { cat >/dev/null; exit 1; }\n"
		"[ -d \"$1\" ] && [ ! -L \"$1\" ] && { echo \"$1: Is a directory\" >&2; fail; }\n"
		"d=$(dirname -- \"$1\") && mkdir -p -- \"$d\" || fail\n"
		"t=\"$d/.sbx-write.$$\"\n"
		"if cat > \"$t\" && chmod \"$2\" \"$t\" && mv -f -T -- \"$t\" \"$1\"; then exit 0; fi\n"
		"rm -f -- \"$t\"; fail\n";
	const char *args[] = {path, m, NULL};
	struct sbx_exec_result r;
	if (docker_sh(b, sb, as_root, script, args, data ? data : "", len, -1, 4096, &r,
		      "file_write", err) < 0)
		return -1;
	sbx_exec_result_clear(&r);
	return 0;
}

int docker_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     size_t max, int as_root, char **data, size_t *len, struct sbx_err *err)
{
	*data = NULL;
	*len = 0;
	if (docker_check_path(path, "file_read", err) < 0)
		return -1;
	if (!max)
		max = 64u << 20;
	/* Only regular files (through symlinks, with the user's rights): a
	 * FIFO planted at the path must not hang the reader. */
	static const char script[] =
		"if [ ! -e \"$1\" ]; then echo \"$1: No such file or directory\" >&2; exit 1; fi\n"
		"[ -f \"$1\" ] || { echo \"$1: Is a directory or not a regular file: Invalid argument\" >&2; exit 1; }\n"
		"exec cat -- \"$1\"\n";
	const char *args[] = {path, NULL};
	struct sbx_exec_result r;
	if (docker_sh(b, sb, as_root, script, args, NULL, 0, -1, max + 1, &r, "file_read", err) < 0)
		return -1;
	if (r.out_truncated || r.out_len > max) {
		sbx_exec_result_clear(&r);
		return sbx_fail_reason(err, SBX_INVALID_REQUEST, SBX_R_TOO_LARGE, "file_read",
				       "%s: more than the limit of %zu bytes", path, max);
	}
	*data = r.out;
	*len = r.out_len;
	r.out = NULL;
	sbx_exec_result_clear(&r);
	return 0;
}

int docker_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     int as_root, struct sbx_dirent *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (docker_check_path(path, "file_stat", err) < 0)
		return -1;
	static const char script[] =
		"stat -c '%f %s %Y %u %g' -- \"$1\" || exit 1\n"
		"if [ -L \"$1\" ]; then readlink -- \"$1\"; fi\n";
	const char *args[] = {path, NULL};
	struct sbx_exec_result r;
	if (docker_sh(b, sb, as_root, script, args, NULL, 0, -1, 65536, &r, "file_stat", err) < 0)
		return -1;
	char *nl = r.out ? strchr(r.out, '\n') : NULL;
	if (!nl || parse_stat(r.out, out) < 0) {
		sbx_exec_result_clear(&r);
		return sbx_fail(err, SBX_INTERNAL, "file_stat", "unexpected stat output");
	}
	if (out->type == SBX_FT_SYMLINK) {
		char *t = nl + 1;
		size_t n = strlen(t);
		if (n && t[n - 1] == '\n')
			t[n - 1] = 0;
		out->link_target = sbx_xstrdup(t);
	}
	out->name = base_name(path);
	out->path = sbx_xstrdup(path);
	sbx_exec_result_clear(&r);
	return 0;
}

/* One exec for the whole folder: the names NUL-separated (any byte but NUL
 * and '/' is allowed in them, newlines included), an empty name as the end
 * mark, then one stat line per name in the same order. */
int docker_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     int as_root, struct sbx_dirent **out, size_t *n, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	if (docker_check_path(path, "file_list", err) < 0)
		return -1;
	static const char script[] =
		"cd -- \"$1\" || exit 1\n"
		"shift\n"
		"for f in .* *; do\n"
		"  case $f in .|..) continue;; esac\n"
		"  [ -e \"$f\" ] || [ -L \"$f\" ] || continue\n"
		"  set -- \"$@\" \"$f\"\n"
		"done\n"
		"[ $# -gt 0 ] || exit 0\n"
		"printf '%s\\0' \"$@\"; printf '\\0'\n"
		"exec stat -c '%f %s %Y %u %g' -- \"$@\"\n";
	const char *args[] = {path, NULL};
	struct sbx_exec_result r;
	if (docker_sh(b, sb, as_root, script, args, NULL, 0, -1, 64u << 20, &r, "file_list", err) < 0)
		return -1;
	if (r.out_truncated) {
		sbx_exec_result_clear(&r);
		return sbx_fail(err, SBX_CAPACITY, "file_list", "%s: listing too large", path);
	}
	const char *p = r.out, *end = r.out + r.out_len;
	size_t cnt = 0;
	for (const char *q = p; q < end && *q; q += strlen(q) + 1)
		cnt++;
	struct sbx_dirent *v = sbx_xcalloc(cnt ? cnt : 1, sizeof(*v));
	size_t i = 0;
	const char *q = p;
	for (; i < cnt; i++) {
		v[i].name = sbx_xstrdup(q);
		size_t pl = strlen(path);
		v[i].path = sbx_xasprintf("%s%s%s", path, pl && path[pl - 1] == '/' ? "" : "/", q);
		q += strlen(q) + 1;
	}
	q++;   /* the end mark */
	size_t got = 0;
	while (q < end && got < cnt) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		SBX_AUTOFREE char *line = strndup(q, nl ? (size_t)(nl - q) : (size_t)(end - q));
		if (parse_stat(line, &v[got]) < 0)
			break;
		got++;
		q = nl ? nl + 1 : end;
	}
	sbx_exec_result_clear(&r);
	if (got != cnt) {
		sbx_dirents_free(v, cnt);
		return sbx_fail(err, SBX_CONFLICT, "file_list", "%s changed while it was listed", path);
	}
	*out = v;
	*n = cnt;
	return 0;
}

int docker_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		      unsigned mode, int as_root, struct sbx_err *err)
{
	if (docker_check_path(path, "file_mkdir", err) < 0)
		return -1;
	char m[16];
	snprintf(m, sizeof(m), "%o", (mode ? mode : 0755) & 07777);
	static const char script[] =
		"if [ -d \"$1\" ]; then exit 0; fi\n"
		"mkdir -p -m \"$2\" -- \"$1\"\n";
	const char *args[] = {path, m, NULL};
	struct sbx_exec_result r;
	if (docker_sh(b, sb, as_root, script, args, NULL, 0, -1, 4096, &r, "file_mkdir", err) < 0)
		return -1;
	sbx_exec_result_clear(&r);
	return 0;
}

int docker_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		       int recursive, int as_root, struct sbx_err *err)
{
	if (docker_check_path(path, "file_remove", err) < 0)
		return -1;
	const char *q = path;
	while (*q == '/')
		q++;
	if (!*q)
		return sbx_fail(err, SBX_INVALID_REQUEST, "file_remove", "refusing to remove /");
	static const char rec[] = "exec rm -rf -- \"$1\"\n";
	static const char one[] =
		"if [ -d \"$1\" ] && [ ! -L \"$1\" ]; then exec rmdir -- \"$1\"; fi\n"
		"exec rm -f -- \"$1\"\n";
	const char *args[] = {path, NULL};
	struct sbx_exec_result r;
	if (docker_sh(b, sb, as_root, recursive ? rec : one, args, NULL, 0, -1, 4096, &r,
		      "file_remove", err) < 0)
		return -1;
	sbx_exec_result_clear(&r);
	return 0;
}

int docker_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		     const char *to, int as_root, struct sbx_err *err)
{
	if (docker_check_path(from, "file_move", err) < 0 || docker_check_path(to, "file_move", err) < 0)
		return -1;
	/* -T: `to` is the new name, never "into `to`" when it is a folder. */
	static const char script[] =
		"[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: No such file or directory\" >&2; exit 1; }\n"
		"exec mv -f -T -- \"$1\" \"$2\"\n";
	const char *args[] = {from, to, NULL};
	struct sbx_exec_result r;
	if (docker_sh(b, sb, as_root, script, args, NULL, 0, -1, 4096, &r, "file_move", err) < 0)
		return -1;
	sbx_exec_result_clear(&r);
	return 0;
}

/* Extract a tar under `dir`.  As the user: busybox tar inside, reading the
 * stream on stdin (-o: files belong to the user).  As root: the archive
 * API with copyUIDGID, so everything is owned by root whatever the
 * archive says (skills must not be writable by the sandbox user). */
int docker_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		   int as_root, struct sbx_err *err)
{
	if (docker_check_path(dir, "tar_put", err) < 0)
		return -1;
	if (!as_root) {
		/* A failure drains stdin first (see docker_file_write). */
		static const char script[] =
			"mkdir -p -- \"$1\" && cd -- \"$1\" || { cat >/dev/null; exit 1; }\n"
			"tar -x -o -f - && exit 0\n"
			"cat >/dev/null; exit 1\n";
		const char *args[] = {dir, NULL};
		struct sbx_exec_result r;
		SBX_AUTOCLOSE int in = fd == 0 ? dup(0) : -1;
		if (docker_sh(b, sb, 0, script, args, NULL, 0, fd == 0 ? in : fd, 65536, &r,
			      "tar_put", err) < 0)
			return -1;
		sbx_exec_result_clear(&r);
		return 0;
	}
	if (docker_file_mkdir(b, sb, dir, 0755, 1, err) < 0)
		return -1;
	if (docker_ensure_running(b, sb->id, err) < 0)
		return -1;
	SBX_AUTOFREE char *q = sbx_http_escape(dir);
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/archive?path=%s&copyUIDGID=1", sb->id, q);
	const char *hdr[] = {"Content-Type: application/x-tar", NULL};
	SBX_AUTOCLOSE int body = fd == 0 ? dup(0) : -1;
	struct sbx_http_req req = {
		.method = "PUT", .path = path, .headers = hdr, .body_fd = fd == 0 ? body : fd,
		.timeout_ms = -1,
	};
	struct sbx_http_resp resp = {0};
	if (docker_raw(b, "tar_put", &req, &resp, err) < 0)
		return -1;
	int rc = 0;
	if (resp.status < 200 || resp.status >= 300)
		rc = docker_status_err("tar_put", &resp, err);
	sbx_http_resp_clear(&resp);
	return rc;
}

/* As the sandbox user: busybox tar inside the container, run through
 * exec as uid 1000, its stdout streamed to fd, so the kernel refuses what
 * that user may not read (the archive API reads everything as root).
 * Names follow the same convention as below.  Symlinks are stored. */
static int tar_get_as_user(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
			   int fd, struct sbx_err *err)
{
	static const char script[] =
		"p=$1\n"
		"case $p in\n"
		"*/.) d=${p%/.}; cd -- \"${d:-/}\" || exit 1; set --\n"
		"  for f in .* *; do\n"
		"    case $f in .|..) continue;; esac\n"
		"    [ -e \"$f\" ] || [ -L \"$f\" ] || continue\n"
		"    set -- \"$@\" \"$f\"\n"
		"  done;;\n"
		"*) [ -e \"$p\" ] || [ -L \"$p\" ] || { echo \"$p: No such file or directory\" >&2; exit 1; }\n"
		"  n=${p##*/}; d=${p%/*}; cd -- \"${d:-/}\" || exit 1; set -- \"$n\";;\n"
		"esac\n"
		"[ $# -gt 0 ] || exec head -c 10240 /dev/zero\n"
		"exec tar -c -f - -- \"$@\"\n";
	char *argv[] = {"/bin/sh", "-c", (char *)script, "sbx-fs", (char *)path, NULL};
	struct sbx_exec_req req = {
		.argv = argv, .cwd = "/", .as_root = 0, .raw_out_fd = fd, .raw_err_fd = -1,
		.raw_in_fd = -1,
	};
	struct sbx_exec_result r = {0};
	if (docker_exec(b, sb, &req, &r, err) < 0) {
		snprintf(err->op, sizeof(err->op), "tar_get");
		return -1;
	}
	int rc = 0;
	if (r.exit_code != 0) {
		const char *m = r.err && *r.err ? sbx_trim(r.err) : "";
		enum sbx_kind k = strstr(m, "No such file") ? SBX_NOT_FOUND
				: strstr(m, "Permission denied") ? SBX_INVALID_REQUEST : SBX_INTERNAL;
		rc = sbx_fail(err, k, "tar_get", "%s%s(exit %d)", m, *m ? " " : "", r.exit_code);
	}
	sbx_exec_result_clear(&r);
	return rc;
}

/* Write `path` as a tar to fd: as root through the archive API: "/dir/."
 * gives the folder's contents, anything else one top entry named by its
 * basename (the same convention as the local backend).  The daemon
 * resolves symlinks as root, inside the container: fine for a root read,
 * so only as_root gets here.  As the sandbox user: tar_get_as_user. */
int docker_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		   int as_root, struct sbx_err *err)
{
	size_t l = path ? strlen(path) : 0;
	SBX_AUTOFREE char *chk = l >= 2 && !strcmp(path + l - 2, "/.") ? strndup(path, l - 2)
								     : sbx_xstrdup(path ? path : "");
	if (!*chk) {
		free(chk);
		chk = sbx_xstrdup("/");
	}
	if (docker_check_path(chk, "tar_get", err) < 0)
		return -1;
	if (fd == 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "tar_get", "cannot write a tar to fd 0");
	if (!as_root)
		return tar_get_as_user(b, sb, path, fd, err);
	if (docker_ensure_running(b, sb->id, err) < 0)
		return -1;
	SBX_AUTOFREE char *q = sbx_http_escape(path);
	SBX_AUTOFREE char *qc = sbx_http_escape(chk);
	SBX_AUTOFREE char *hpath = sbx_xasprintf("/containers/%s/archive?path=%s", sb->id, qc);
	struct sbx_http_req hreq = {.method = "HEAD", .path = hpath};
	struct sbx_http_resp resp = {0};
	if (docker_raw(b, "tar_get", &hreq, &resp, err) < 0)
		return -1;
	if (resp.status != 200) {
		int rc = resp.status == 404
				 ? sbx_fail(err, SBX_NOT_FOUND, "tar_get", "%s: No such file or directory", path)
				 : docker_status_err("tar_get", &resp, err);
		sbx_http_resp_clear(&resp);
		return rc;
	}
	sbx_http_resp_clear(&resp);
	SBX_AUTOFREE char *gpath = sbx_xasprintf("/containers/%s/archive?path=%s", sb->id, q);
	struct sbx_http_req greq = {.method = "GET", .path = gpath, .out_fd = fd, .timeout_ms = -1};
	if (docker_raw(b, "tar_get", &greq, &resp, err) < 0)
		return -1;
	int rc = 0;
	if (resp.status < 200 || resp.status >= 300)
		rc = docker_status_err("tar_get", &resp, err);
	sbx_http_resp_clear(&resp);
	return rc;
}
