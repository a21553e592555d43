/* path.h - the one rule for a path inside a sandbox, and the file
 * operations that apply it before they reach a backend.
 *
 * What each spelling means (sbx_path_norm):
 *   "/workspace/a"         itself
 *   "/workspace//a"        "/workspace/a": empty components are dropped
 *   "/workspace/./a"       "/workspace/a": "." components are dropped
 *   "/workspace/a/"        "/workspace/a": a trailing slash is dropped (a
 *                          program that gives it a meaning, sbx-fs put's
 *                          "into this folder", reads it before)
 *   "/", "//", "/."        "/"
 *   "/workspace/a/../b"    refused, like every ".." component: folding it
 *                          by hand is wrong when "a" is a symlink (the
 *                          kernel would go to the link target's parent),
 *                          and following it is an escape to refuse anyway
 *   "a", "./a", ""         refused: not absolute (sbx-serve maps envd's
 *                          relative paths onto the user's home first)
 *   4096 bytes or more     refused (PATH_MAX), as is a component over 255
 *                          bytes (NAME_MAX)
 *   newline, tab, UTF-8    kept: a Linux name is any bytes but "/" and NUL
 *   NUL                    cannot be in a C string; where one could come
 *                          in (a JSON "\u0000"), the document reader refuses
 *                          the document (sbx_json_text_problem)
 * Refusals are invalid_request.  The rule is about spelling only: what a
 * path resolves to (symlinks, /proc, mounts) is each backend's to confine.
 */
#ifndef SBX_PATH_H
#define SBX_PATH_H

#include <stddef.h>

#include "backend.h"
#include "err.h"

/* `path` under the rule above: a new string in the normal spelling
 * (absolute, no empty, "." or trailing components; "/" for the root), or
 * NULL with err (kind invalid_request, op `op`). */
char *sbx_path_norm(const char *path, const char *op, struct sbx_err *err);

/* The vtable's file operations with the path rule applied first: each
 * normalises its paths (refusing as sbx_path_norm does, before the backend
 * is called), then calls the backend's operation with the normal spelling,
 * or fails with unsupported when it has none.  Every caller above the
 * vtable goes through these, so that a spelling means the same on every
 * backend; the arguments are the vtable's (backend.h). */
int sbx_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		   const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err);
int sbx_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, size_t max,
		  int as_root, char **data, size_t *len, struct sbx_err *err);
int sbx_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int as_root,
		  struct sbx_dirent **out, size_t *n, struct sbx_err *err);
int sbx_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int as_root,
		  struct sbx_dirent *out, struct sbx_err *err);
int sbx_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		   unsigned mode, int as_root, struct sbx_err *err);
int sbx_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int recursive, int as_root, struct sbx_err *err);
int sbx_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		  const char *to, int as_root, struct sbx_err *err);
int sbx_file_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		     int as_root, struct sbx_err *err);
/* tar_get keeps a final "/." (the folder's contents), see path.c. */
int sbx_file_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		     int as_root, struct sbx_err *err);

#endif
