/* local-image.h - local image operations that the backend vtable has no
 * slot for (yet).  Programs call these instead of reaching into local.h;
 * each fails with `unsupported` on any backend but local, so a main never
 * tests which backend it holds.  (Proposal for the lead: a
 * `snapshot_flatten` op in backend.h would make this header disappear.) */
#ifndef SBX_LOCAL_IMAGE_H
#define SBX_LOCAL_IMAGE_H

#include <stdint.h>

#include "backend.h"

/* Merge the layer stack of snapshot/template `id` into one new layer and
 * record it as a new snapshot named `name` (NULL: "<id>-flat").  The host
 * root, when it is the bottom of the stack, stays a separate layer below
 * (whiteouts that hide host files are kept).  The source is untouched and
 * not referenced by the result: it can be deleted afterwards.  A crash
 * midway leaves a temporary directory that the next image operation
 * removes; the snapshot becomes visible only once complete. */
int sbx_snapshot_flatten(struct sbx_backend *b, const char *id, const char *name,
			 struct sbx_snapshot_ref *out, struct sbx_err *err);

/* Reclaim what crashed image work left in the store: work directories of
 * imports, snapshots and flattens whose process is gone (a live one holds
 * a lock on its directory and is never touched), and layers that no record
 * names (a crash between a commit's rename and its record).  With dry_run
 * only counts.  Called by sbx-snap --recover and sbx-reap; `unsupported`
 * on a backend without a local image store. */
struct sbx_image_gc {
	int64_t tmp;             /* work directories removed */
	int64_t layers;          /* unnamed layers removed */
	int64_t bytes;           /* their apparent size */
};
int sbx_image_gc(struct sbx_backend *b, int dry_run, struct sbx_image_gc *out,
		 struct sbx_err *err);

/* Limit on a stack's lowerdir string (absolute paths joined by ':'): the
 * overlay mount options must fit one page together with upperdir, workdir
 * and the rest.  Snapshots that would exceed it are refused (`capacity`,
 * "flatten first"). */
#define LOCAL_IMAGE_LOWERDIR_MAX 3072

#endif
