/* local-hostview.h - what a sandbox over the `host` template sees of the
 * host (local-hostview.c). */
#ifndef SBX_LOCAL_HOSTVIEW_H
#define SBX_LOCAL_HOSTVIEW_H

#include "config.h"
#include "err.h"

/* Build the host mask in `mask` (a directory that must not exist yet): an
 * overlay layer of whiteouts and opaque directories meant to lie directly
 * on the host's "/" in every layer stack over the host, below any snapshot
 * layers, so that it hides the host's files and nothing of the sandbox's.
 * It is computed from the host and the whole configuration (every
 * profile, `cur` included) at the call, never stored in a snapshot.  On
 * failure `mask` holds a partial tree that must not be mounted; the caller
 * removes it with the sandbox. */
int local_hostmask_build(const char *mask, const struct sbx_profile *cur, struct sbx_err *err);

#endif
