/* local-files.h - the file operations of a local sandbox, confined to its
 * root (local-files.c): the vtable's file and tar entries.  Private to the
 * local backend. */
#ifndef SBX_LOCAL_FILES_H
#define SBX_LOCAL_FILES_H

#include "backend.h"

int local_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err);
int local_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    size_t max, int as_root, char **data, size_t *len, struct sbx_err *err);
int local_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int as_root, struct sbx_dirent **out, size_t *n, struct sbx_err *err);
int local_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int as_root, struct sbx_dirent *out, struct sbx_err *err);
int local_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     unsigned mode, int as_root, struct sbx_err *err);
int local_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		      int recursive, int as_root, struct sbx_err *err);
int local_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		    const char *to, int as_root, struct sbx_err *err);
int local_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		  int as_root, struct sbx_err *err);
int local_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		  int as_root, struct sbx_err *err);

#endif
