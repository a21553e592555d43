/* local-hostview.h - what a sandbox over the `host` template sees of the
 * host (local-hostview.c). */
#ifndef SBX_LOCAL_HOSTVIEW_H
#define SBX_LOCAL_HOSTVIEW_H

#include "config.h"
#include "err.h"

/* The host mask for a sandbox created now: an overlay layer of whiteouts
 * and opaque directories meant to lie directly on the host's "/" in every
 * layer stack over the host, below any snapshot layers, so that it hides
 * the host's files and nothing of the sandbox's.  It is planned from the
 * host and the whole configuration (every profile, `cur` included) at the
 * call, never stored in a snapshot.  *out is the path of the mask, a
 * directory named by the plan's digest under `cache` (built there if it
 * is not yet), which must never be written to or removed while a sandbox
 * stacks it (local_hostmask_gc).  A crash while building leaves a
 * ".tmp-*" directory that the next build of the same plan by the same pid,
 * or local_hostmask_gc, removes. */
int local_hostmask_get(const char *cache, const struct sbx_profile *cur, char **out,
		       struct sbx_err *err);

#endif
