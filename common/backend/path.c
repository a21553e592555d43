/* path.c - the one rule for sandbox paths (path.h says what each spelling
 * means), and the file operations that apply it above the vtable.
 *
 * Promises: a path that reaches a backend through sbx_file_* is in the
 * normal spelling of sbx_path_norm; a refused path never reaches it. */
#include "path.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

char *sbx_path_norm(const char *path, const char *op, struct sbx_err *err)
{
	if (!path || path[0] != '/') {
		sbx_fail(err, SBX_INVALID_REQUEST, op, "path must be absolute: '%s'",
			 path ? path : "");
		return NULL;
	}
	size_t len = strlen(path);
	if (len >= PATH_MAX) {
		sbx_fail(err, SBX_INVALID_REQUEST, op, "path too long (%zu bytes, at most %d)", len,
			 PATH_MAX - 1);
		return NULL;
	}
	char *out = sbx_xmalloc(len + 2);
	size_t o = 0;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - s);
		if (n == 0 || (n == 1 && s[0] == '.'))
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			free(out);
			sbx_fail(err, SBX_INVALID_REQUEST, op, "'..' is not allowed in paths: '%s'", path);
			return NULL;
		}
		if (n > NAME_MAX) {
			free(out);
			sbx_fail(err, SBX_INVALID_REQUEST, op, "path component longer than %d bytes",
				 NAME_MAX);
			return NULL;
		}
		out[o++] = '/';
		memcpy(out + o, s, n);
		o += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}

/* Normalise `path` into `p` (NULL: fail with -1), as every wrapper does. */
#define NORM(p, path, op)                                              \
	SBX_AUTOFREE char *p = sbx_path_norm((path), (op), err);      \
	if (!p)                                                        \
		return -1

int sbx_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		   const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err)
{
	NORM(p, path, "file_write");
	return sbx_call(b, file_write, err, sb, p, data, len, mode, as_root);
}

int sbx_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, size_t max,
		  int as_root, char **data, size_t *len, struct sbx_err *err)
{
	NORM(p, path, "file_read");
	return sbx_call(b, file_read, err, sb, p, max, as_root, data, len);
}

int sbx_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int as_root,
		  struct sbx_dirent **out, size_t *n, struct sbx_err *err)
{
	NORM(p, path, "file_list");
	return sbx_call(b, file_list, err, sb, p, as_root, out, n);
}

int sbx_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int as_root,
		  struct sbx_dirent *out, struct sbx_err *err)
{
	NORM(p, path, "file_stat");
	return sbx_call(b, file_stat, err, sb, p, as_root, out);
}

int sbx_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		   unsigned mode, int as_root, struct sbx_err *err)
{
	NORM(p, path, "file_mkdir");
	return sbx_call(b, file_mkdir, err, sb, p, mode, as_root);
}

int sbx_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int recursive, int as_root, struct sbx_err *err)
{
	NORM(p, path, "file_remove");
	return sbx_call(b, file_remove, err, sb, p, recursive, as_root);
}

int sbx_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		  const char *to, int as_root, struct sbx_err *err)
{
	NORM(f, from, "file_move");
	NORM(t, to, "file_move");
	return sbx_call(b, file_move, err, sb, f, t, as_root);
}

int sbx_file_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		     int as_root, struct sbx_err *err)
{
	NORM(p, dir, "tar_put");
	return sbx_call(b, tar_put, err, sb, p, fd, as_root);
}

/* A final "/." is not a spelling here but the vtable's "the folder's
 * contents, not the folder" (backend.h, tar_get): it is kept, after the
 * normal spelling of the folder. */
int sbx_file_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		     int as_root, struct sbx_err *err)
{
	NORM(p, path, "tar_get");
	size_t l = strlen(path);
	if (l >= 2 && !strcmp(path + l - 2, "/.")) {
		SBX_AUTOFREE char *c = sbx_xasprintf("%s/.", strcmp(p, "/") ? p : "");
		return sbx_call(b, tar_get, err, sb, c, fd, as_root);
	}
	return sbx_call(b, tar_get, err, sb, p, fd, as_root);
}
