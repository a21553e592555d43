/* local-copy.h - the tree copier behind local images (local-copy.c).
 *
 * Copies a directory tree into a new one keeping what an overlay layer
 * needs: modes, owners, times, symlinks, hardlinks (within one copy),
 * FIFOs, overlay whiteouts (char 0:0), and xattrs (including
 * trusted.overlay.opaque).  Device nodes and sockets are dropped: a
 * device node in a layer could be opened by whoever gets that layer, and a
 * socket there is a stale name.  Each becomes a whiteout (merged onto a
 * plain tree: nothing), so a name it shadowed stays hidden.  File data is reflinked (FICLONE) where the
 * filesystem allows it, else copied in the kernel (copy_file_range), else
 * read/written.  The same walk can *merge* an overlay layer onto a tree
 * (flatten): whiteouts delete, opaque directories replace.  Nothing here
 * knows about records or ids. */
#ifndef SBX_LOCAL_COPY_H
#define SBX_LOCAL_COPY_H

#include <stdint.h>
#include <time.h>

#include "err.h"

enum {
	/* Interpret the source as an overlay layer applied onto dst: a
	 * whiteout removes dst's entry, an opaque directory replaces dst's.
	 * Without it, whiteouts and overlay xattrs are copied verbatim. */
	LCOPY_MERGE = 1 << 0,
	/* With LCOPY_MERGE: keep whiteouts and opaque markers in dst, because
	 * dst will itself be a layer above another one (e.g. the host). */
	LCOPY_KEEP_WHITEOUTS = 1 << 1,
	/* The source is live (a running sandbox's upper dir): a name that
	 * vanishes during the walk is skipped, not an error.  A copy made so
	 * is only a pre-copy: lcopy_sync settles it. */
	LCOPY_LIVE = 1 << 2,
	/* Internal to lcopy_sync. */
	LCOPY_SYNC = 1 << 3,
	/* Internal to lcopy_diff: every directory written gets
	 * LCOPY_DIRID_XATTR, its source's inode number. */
	LCOPY_DIRID = 1 << 4,
};

/* The identity of a directory of a sandbox's upper dir, recorded on its
 * copy in a checkpoint layer (lcopy_diff): the upper's inode number.  The
 * next diff tells "the same directory" from "removed and made again, or
 * another one renamed onto the name" by it. */
#define LCOPY_DIRID_XATTR "trusted.sbx.dirid"

struct lcopy_stats {
	int64_t files;           /* regular files written (links excluded) */
	int64_t bytes;           /* their apparent size */
	int64_t reflinked;       /* files whose data was cloned, not copied */
	int64_t dirs, others;    /* directories; symlinks, FIFOs, whiteouts */
	int64_t dropped;         /* device nodes and sockets left out */
};

/* Copy (or merge, see flags) the tree `src` into `dst`.  dst is created
 * when missing (with src's root metadata applied last); with LCOPY_MERGE it
 * may already hold a tree.  Mount points below src are copied as empty
 * directories.  On failure dst holds a partial tree: callers copy into a
 * temporary directory and rename it into place only on success. */
int lcopy_tree(const char *src, const char *dst, unsigned flags, struct lcopy_stats *st,
	       struct sbx_err *err);

/* Make `dst`, a copy of `src` begun (lcopy_tree, LCOPY_LIVE) at `since`
 * or later, equal to `src` as it is now, touching only what changed:
 * entries whose inode changed at or after `since` (ctime: data, owner,
 * mode, xattrs, rename) are copied again, new ones copied, and names gone
 * from a changed directory removed from dst.  Unchanged entries cost one
 * lstat each.  Callers pass a `since` a little before the pre-copy began
 * (inode times are coarse-grained).  A write through a shared writable
 * mapping moves ctime only at the first write fault on a clean page, so
 * the caller must syncfs the source's file system after taking `since`
 * and before the pre-copy (local-image.c precopy does): every dirty page
 * is then clean and write-protected, and a later write faults and moves
 * ctime.  On failure dst is partial, as with lcopy_tree. */
int lcopy_sync(const char *src, const char *dst, const struct timespec *since,
	       struct lcopy_stats *st, struct sbx_err *err);

/* Make `dst` (created here) the overlay layer of what changed in `src`,
 * a sandbox's upper dir, since the state that `lowers` (nlowers layer
 * directories, top first) stack up to, which was src's state at
 * `since_ns` (realtime ns; callers pass a little before the state was
 * taken: inode times are coarse).  The layer stacked on `lowers` gives
 * src as it is now:
 *   - an entry whose ctime is at or after since_ns, or that the lowers do
 *     not hold, is copied (a directory the lowers do not hold: whole);
 *   - a name the lowers hold and src no longer does becomes a whiteout;
 *   - a directory that is not the one the lowers recorded (another inode,
 *     LCOPY_DIRID_XATTR: removed and made again, or renamed onto the
 *     name) is copied whole, with a whiteout for each name of the
 *     lowers' directory it lacks (not an opaque mark: that would also
 *     hide the template's directory of that name, which the upper's own
 *     directory merges with);
 *   - the same directory is walked; it appears in dst only when something
 *     below it, or its own metadata, changed (then as a plain, non-opaque
 *     directory with src's metadata).
 * An unchanged non-directory costs one lstat; the lowers are read only
 * for directories, and listed only for directories whose own ctime moved
 * (only those can have lost a name).  Every directory written carries
 * LCOPY_DIRID_XATTR.  nlowers = 0 copies src whole.  flags: LCOPY_LIVE
 * only (src is running: a pre-pass, settled by a second diff over it).
 * On failure dst is partial: callers work in a temporary directory. */
int lcopy_diff(const char *src, const char *const *lowers, size_t nlowers, const char *dst,
	       int64_t since_ns, unsigned flags, struct lcopy_stats *st, struct sbx_err *err);

/* The apparent size of the regular files below `dir` (no mount crossing). */
int lcopy_du(const char *dir, int64_t *bytes, struct sbx_err *err);

#endif
