/* hostcopy.h - copy a folder between the host and a sandbox (sbx-fs put,
 * get, restore, collect), with the host's safety rules.
 *
 * Promises: a host folder is read through a confined view (no link in it
 * is followed out of it); a copy out lands in a new private directory
 * below DEST's parent (no name or link in the archive can land outside
 * it), within a byte budget, with setuid/setgid bits cleared and every
 * symlink that would lead out of the copy removed (and reported), and only
 * then is it renamed into place, so DEST never holds a half copy. */
#ifndef SBX_HOSTCOPY_H
#define SBX_HOSTCOPY_H

#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"
#include "err.h"

/* Send host folder `dir` into sandbox folder `dest` (merged), its modes
 * or'ed with mode_or; as uid 1000 unless as_root. */
int sbx_hostcopy_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir,
		     const char *dest, int as_root, unsigned mode_or, struct sbx_err *err);
/* Copy sandbox folder `src` to host `dest`, which must be missing or an
 * empty folder (else conflict): extract into a fresh 0700 directory beside
 * dest (at most `max` bytes of files), clean setuid bits, drop links that
 * lead out (res gets links_removed and removed_links), give it `mode`,
 * rename into place.  On failure nothing is left beside dest. */
int sbx_hostcopy_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *src,
		     const char *dest, unsigned mode, int as_root, int64_t max, json_object *res,
		     struct sbx_err *err);

#endif
