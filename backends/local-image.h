/* local-image.h - the local image store's operations that the backend
 * vtable reaches (snapshot_flatten, store_gc): private to the local
 * backend, never included by common/ or cmd/. */
#ifndef SBX_LOCAL_IMAGE_H
#define SBX_LOCAL_IMAGE_H

#include <stdint.h>

#include "backend.h"

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
