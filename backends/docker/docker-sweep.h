/* docker-sweep.h - the Docker backend's idle sweep: containers idle past
 * their TTL are removed. */
#ifndef SBX_DOCKER_SWEEP_H
#define SBX_DOCKER_SWEEP_H

#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"

/* The idle sweep (for sbx-reap, and run opportunistically at most once a
 * minute from create, get and connect).  Every sbx container whose label
 * sbx.idle-ttl-seconds is > 0 and whose last activity (the mtime of
 * /var/lib/sbx-activity; the container's start when the marker is missing
 * or more than 2 minutes in the future) is older than that, none of
 * whose execs or detached processes is running, and (a session sandbox)
 * whose turn lease b->idle_seen says is not held, is removed, after
 * checking all of them once more right before the delete.  Without an
 * idle_seen no session sandbox is removed (its lease cannot be read).
 * With
 * dry_run nothing is removed.  `report` (an object, may be NULL) gets
 * {"checked": N, "idle": [ids], "deleted": [ids], "errors": [{id, kind,
 * message}]}.  A failure on one container does not stop the sweep; -1 only
 * when the containers cannot be listed. */
int sbx_docker_reap_idle(struct sbx_backend *b, int dry_run, json_object *report,
			 struct sbx_err *err);
/* The vtable's reap_idle: the same sweep reporting in backend.h's array
 * form. */
int docker_reap_idle(struct sbx_backend *b, int dry_run, json_object *report,
		     struct sbx_err *err);
/* The vtable's hold.  A held lease is not written anywhere: the sweep
 * reads it in Redis (b->idle_seen), and a marker in the container's
 * future is the clock trick the sweep refuses.  The end of the last turn
 * (until_ms 0) is activity now: the marker is put with mtime now through
 * the archive API (nothing runs inside), so the idle clock counts from the
 * lease's end, as on the local backend. */
int docker_hold(struct sbx_backend *b, const char *id, int64_t until_ms, struct sbx_err *err);
/* Run the sweep when the stamp file in the profile's state dir is older
 * than a minute (touching it first, so concurrent processes mostly skip).
 * Errors are ignored: the sweep is housekeeping, never the caller's
 * failure. */
void docker_maybe_sweep(struct sbx_backend *b);

#endif
