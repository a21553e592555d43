/* local-layer.h - the template's read-only layers and the sandbox's own
 * writable layer (local-layer.c).  Private to the local backend. */
#ifndef SBX_LOCAL_LAYER_H
#define SBX_LOCAL_LAYER_H

#include "backend.h"

/* The builtin template: the host's "/", read-only. */
#define LOCAL_HOST_TEMPLATE "host"

struct local_layers {
	char **dir;              /* top-most first */
	size_t n;
	int host;                /* the bottom layer is the host's "/" */
};
void local_layers_free(struct local_layers *l);

/* The template's read-only layers, top-most first.  The builtin `host`
 * template is the host's "/" when no image module answers for it.  An
 * unknown template is invalid_request (a bad create, not a missing
 * sandbox). */
int local_layers_resolve(struct sbx_backend *b, const char *tpl, struct local_layers *l,
			 struct sbx_err *err);

/* Everything the sandbox's root needs in its own layer `upper`: the
 * standard directories, /workspace, /home/user and the account.  (What a
 * sandbox over the host must not see is hidden below this layer, by the
 * host mask: local-hostview.c.) */
int local_upper_prepare(const char *upper, const struct local_layers *l, struct sbx_err *err);

/* The bytes the layer `upper` holds on disk: the allocated blocks of
 * every file in it (a du, one walk; hard links counted at each name), the
 * paused_bytes measure (backend.h).  A directory the walk cannot read is
 * counted without its content. */
int local_layer_bytes(const char *upper, int64_t *bytes, struct sbx_err *err);

/* The writable layer of sandbox `id` in its directory `dir` (upper/,
 * work/, root/, the disk quota of `req`, local_upper_prepare), and the
 * overlay options over the stack `l`.  A stack over the host's "/" gets
 * the host mask and the host view: the shared one `shared_view` when it
 * is not NULL (local-shared.h), else a mount point in `dir`; *host_view is
 * then that path (else NULL).  `l` is consumed.  *disk_enforced says whether
 * the disk budget is enforced.  Both strings are malloc'd. */
int local_layers_mount_opts(struct sbx_backend *b, const char *dir, const char *id,
			    const struct sbx_create_req *req, struct local_layers *l,
			    const char *shared_view, char **opts, char **host_view, int *disk_enforced,
			    struct sbx_err *err);

#endif
