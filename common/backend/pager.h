/* pager.h - every page of a backend listing, or an error: the one paging
 * loop of sbx (sandboxes and snapshots).
 *
 * Promises: a listing is either complete or the call fails.  A page token
 * seen before (a backend that loops would otherwise spin forever or, worse,
 * make an incomplete listing look complete) and a listing longer than
 * SBX_PAGES_MAX pages fail with `internal` ("... repeated page token ...");
 * a page that fails fails the call, with "listing page N" in front of its
 * error.  Nothing is left allocated on failure.
 *
 * Test points (fault.h: SBX_FAULT names them, nothing is killed): the
 * sandbox listing is read whole once, then re-served one item per page with
 * tokens of our own, so that the fail-closed paths of every caller can be
 * exercised on a backend that lists in one page (local):
 *   list:pages-of-one   correct tokens "p1", "p2", ...;
 *   list:fail-page-2    the request for the second page fails (unavailable);
 *   list:repeat-token   the second page hands out "p1" again. */
#ifndef SBX_PAGER_H
#define SBX_PAGER_H

#include <stddef.h>

#include "backend.h"
#include "err.h"

#define SBX_PAGES_MAX 100000

/* fn gets each listed sandbox in the backend's order; it may take its
 * fields (leaving them zeroed), what it leaves is cleared after.  It
 * returns 0 to go on or -1 to stop with its error.  *pages (may be NULL)
 * is the number of pages read. */
typedef int (*sbx_list_fn)(struct sbx_sandbox *sb, void *ctx, struct sbx_err *err);
int sbx_list_each(struct sbx_backend *b, const struct sbx_list_filter *f, sbx_list_fn fn,
		  void *ctx, long *pages, struct sbx_err *err);
/* Every listed sandbox into *out (malloc'd, *n of them; free each with
 * sbx_sandbox_clear, then the array). */
int sbx_list_all(struct sbx_backend *b, const struct sbx_list_filter *f,
		 struct sbx_sandbox **out, size_t *n, long *pages, struct sbx_err *err);
/* Every snapshot (sbx_snapshot_refs_free). */
int sbx_snapshots_all(struct sbx_backend *b, struct sbx_snapshot_ref **out, size_t *n,
		      struct sbx_err *err);

#endif
