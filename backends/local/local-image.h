/* local-image.h - the local image store (local-image.c; snapshots are taken
 * and flattened in local-snapshot.c): templates (the
 * builtin `host`, imports) and snapshots as immutable layer stacks; the
 * vtable's template and snapshot entries, and the layer stacks create
 * mounts.  Private to the local backend, never included by common/ or
 * cmd/. */
#ifndef SBX_LOCAL_IMAGE_H
#define SBX_LOCAL_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"

/* Resolve a template or snapshot id into its layer stack: a JSON array of
 * absolute host directories, top-most first, ready for overlay's
 * lowerdir.  not_found for an unknown id; unsupported for the builtin
 * host template when no image of that name exists. */
int local_image_layers(struct sbx_backend *b, const char *template_id, json_object **layers,
		       struct sbx_err *err);
/* Ids of the snapshots/templates whose layers stack on `template_id`
 * (for "in use" checks). */
int local_image_dependents(struct sbx_backend *b, const char *template_id, char ***ids,
			   size_t *n, struct sbx_err *err);

/* vtable entries */
int local_snapshot_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
			  struct sbx_snapshot_ref *out, struct sbx_err *err);
/* The vtable's checkpoint_create (local-snapshot.c). */
int local_checkpoint_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *prev,
			    const char *name, struct sbx_snapshot_ref *out, int64_t *taken_at_ns,
			    struct sbx_err *err);
int local_snapshot_list(struct sbx_backend *b, const char *page_token,
			struct sbx_snapshot_ref **out, size_t *n, char **next, struct sbx_err *err);
int local_snapshot_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);
int local_template_list(struct sbx_backend *b, struct sbx_template **out, size_t *n,
			struct sbx_err *err);
int local_template_get(struct sbx_backend *b, const char *id, struct sbx_template *out,
		       struct sbx_err *err);
int local_template_import(struct sbx_backend *b, const char *name, int fd, const char *dir,
			  struct sbx_template *out, struct sbx_err *err);
int local_template_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);

/* The vtable's snapshot_flatten: the host root, when it is the bottom of
 * the stack, stays a separate layer below (whiteouts that hide host files
 * are kept).  A crash midway leaves a temporary directory that the next
 * image operation removes; the snapshot becomes visible only once
 * complete. */
int local_snapshot_flatten(struct sbx_backend *b, const char *id, const char *name,
			   struct sbx_snapshot_ref *out, struct sbx_err *err);

/* The vtable's store_gc: work directories of imports, snapshots and
 * flattens whose process is gone (a live one holds a lock on its
 * directory), and layers that no record names (a crash between a
 * commit's rename and its record). */
int local_store_gc(struct sbx_backend *b, int dry_run, struct sbx_store_gc *out,
		   struct sbx_err *err);

/* Limit on a stack's lowerdir string (absolute paths joined by ':'): the
 * overlay mount options must fit one page together with upperdir, workdir
 * and the rest.  Snapshots that would exceed it are refused (`capacity`,
 * "flatten first"). */
#define LOCAL_IMAGE_LOWERDIR_MAX 3072

#endif
