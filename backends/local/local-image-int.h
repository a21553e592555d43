/* local-image-int.h - what the image store (local-image.c) shares with the
 * snapshot operations (local-snapshot.c): the record of a template or
 * snapshot, its paths, the lock and the commit.  Private to those two. */
#ifndef SBX_LOCAL_IMAGE_INT_H
#define SBX_LOCAL_IMAGE_INT_H

#include <stdint.h>

#include "local-image.h"

#define HOST_ID "host"
#define HOST_LAYER "/"
#define SNAP_PREFIX "snap-"

struct rec {
	char *id, *name, *kind, *parent, *from;
	char **layers;           /* lids, or "/" for the host root; top first */
	size_t nlayers;
	int64_t created_at, size_bytes;
	/* Checkpoints (local_checkpoint_create): the sandbox whose upper dir
	 * it froze, when (realtime ns, the freeze), and the checkpoint whose
	 * layers it stacks on (NULL: none). */
	char *sandbox, *checkpoint_of;
	int64_t taken_at_ns;
};

/* Each is described where local-image.c defines it. */
char *img_path(struct sbx_backend *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rec_clear(struct rec *r);
void rec_add_layer(struct rec *r, const char *lid);
int is_snapshot(const struct rec *r);
char *layer_abs(struct sbx_backend *b, const char *lid);
int valid_name(const char *s);
int images_init(struct sbx_backend *b, struct sbx_err *err);
int lock_file(const char *path, int mode, const char *op, struct sbx_err *err);
int image_load(struct sbx_backend *b, const char *id, struct rec *r, struct sbx_err *err);
int check_stack(struct sbx_backend *b, const struct rec *r, struct sbx_err *err);
int img_commit(struct sbx_backend *b, struct rec *r, const char *tmp, int gc_all,
	       struct sbx_err *err);
int new_work(struct sbx_backend *b, char lid[9], char **tmp, int *lk,
	     struct sbx_err *err);
int sync_tree(const char *path, struct sbx_err *err);
/* A new layer's tree is complete: its size measured (*bytes), then
 * sync_tree. */
int layer_settle(const char *path, int64_t *bytes, struct sbx_err *err);
void ref_from_rec(const struct rec *r, struct sbx_snapshot_ref *out);

#endif
