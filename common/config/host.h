/* host.h - which host this process runs on, for backends whose sandboxes
 * live on one host only (SBX_CAP_HOST_LOCAL: the local backend).
 *
 * The host id is $SBX_HOST_ID, else the hostname (gethostname).  It must be
 * 1..255 bytes of [A-Za-z0-9._-]; anything else is a configuration error
 * (exit 78), so that an id can sit in a Redis key and a binding as it is.
 * Two hosts that share a keyspace must have distinct ids: a binding records
 * the id of the host that holds its sandbox (binding.h), resolve refuses a
 * session bound on another host instead of rebuilding it, and the reaper
 * of a host-local backend takes a lease of its own host (keys.h). */
#ifndef SBX_HOST_H
#define SBX_HOST_H

#include "err.h"

/* The host id (malloc'd), or NULL with err. */
char *sbx_host_id(struct sbx_err *err);

#endif
