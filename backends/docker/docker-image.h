/* docker-image.h - snapshots and templates of the Docker backend (the
 * vtable's snapshot_* and template_* entries; contracts in backend.h). */
#ifndef SBX_DOCKER_IMAGE_H
#define SBX_DOCKER_IMAGE_H

#include <stddef.h>

#include "backend.h"

int docker_snapshot_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
			   struct sbx_snapshot_ref *out, struct sbx_err *err);
int docker_snapshot_list(struct sbx_backend *b, const char *page_token,
			 struct sbx_snapshot_ref **out, size_t *n, char **next, struct sbx_err *err);
int docker_snapshot_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);
int docker_snapshot_flatten(struct sbx_backend *b, const char *id, const char *name,
			    struct sbx_snapshot_ref *out, struct sbx_err *err);
int docker_template_list(struct sbx_backend *b, struct sbx_template **out, size_t *n,
			 struct sbx_err *err);
int docker_template_get(struct sbx_backend *b, const char *id, struct sbx_template *out,
			struct sbx_err *err);
int docker_template_import(struct sbx_backend *b, const char *name, int fd, const char *dir,
			   struct sbx_template *out, struct sbx_err *err);
int docker_template_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);

#endif
