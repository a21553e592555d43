/* docker-files.h - the session filesystem of a Docker sandbox: the
 * vtable's file and tar entries, and the path check they share. */
#ifndef SBX_DOCKER_FILES_H
#define SBX_DOCKER_FILES_H

#include <stddef.h>

#include "backend.h"

/* The vtable's file and tar entries (contracts in backend.h). */
int docker_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		      const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err);
int docker_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     size_t max, int as_root, char **data, size_t *len, struct sbx_err *err);
int docker_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     int as_root, struct sbx_dirent **out, size_t *n, struct sbx_err *err);
int docker_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     int as_root, struct sbx_dirent *out, struct sbx_err *err);
int docker_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		      unsigned mode, int as_root, struct sbx_err *err);
int docker_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		       int recursive, int as_root, struct sbx_err *err);
int docker_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		     const char *to, int as_root, struct sbx_err *err);
int docker_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		   int as_root, struct sbx_err *err);
int docker_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		   int as_root, struct sbx_err *err);

/* A path a caller may touch: not under /proc, /sys or /dev, not the
 * activity marker.  `path` is in the normal spelling of the library's path
 * rule (path.h: the vtable is called with nothing else), so a prefix
 * compare is exact.  0 / -1 invalid_request. */
int docker_check_path(const char *path, const char *op, struct sbx_err *err);

#endif
