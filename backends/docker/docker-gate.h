/* docker-gate.h - the freeze gate of a Docker sandbox: a pause (or a
 * pausing commit) never lands while an exec into the same container is
 * still starting.
 *
 * Why: with runc 1.1 on cgroup v1 (Debian 12's docker.io), an exec whose
 * `runc init` joins the container's cgroup while the freezer is freezing
 * it is frozen half-way; `runc exec` then waits on it for ever, the
 * containerd shim serialises the container's next operations behind it,
 * and dockerd's unpause, inspect and delete of that container hang until
 * someone thaws the cgroup by hand (docs/docker.md, "Pause and exec").
 *
 * The gate is an flock(2) on <state_dir>/docker-gate/<container id>:
 * shared from an exec's state check until the daemon reports the exec's
 * pid (the process is running, runc is done), exclusive around a pause.
 * It orders the sbx processes of one host that share a state dir (the
 * CLI, sbx-serve's workers); a foreign client (the docker CLI) or another
 * host is not ordered by it.  Entering twice in one process for the same
 * container nests (a count), so a caller may hold the gate across several
 * execs. */
#ifndef SBX_DOCKER_GATE_H
#define SBX_DOCKER_GATE_H

#include <stdint.h>

#include "backend.h"

/* How long a pause waits for the execs that are starting: they take
 * milliseconds, so a gate still held after this is a stuck start. */
#define DOCKER_GATE_PAUSE_WAIT_MS 30000

/* Enter the gate of container `id` (its full id: docker_full_id; every
 * caller must name the same file), shared or exclusive,
 * waiting up to wait_ms.  0 on success; -1 with timeout when it stayed
 * held, or internal when the gate file cannot be made.  Without a state
 * dir, or over TCP (a remote daemon: the gate would order nothing), it is
 * a no-op that succeeds.  Every successful enter is paired with a leave. */
int docker_gate_enter(struct sbx_backend *b, const char *id, int exclusive, int64_t wait_ms,
		      struct sbx_err *err);
/* Remove the gate files of a container that is gone (full id; best
 * effort: a gate file left behind is an empty file, nothing more). */
void docker_gate_forget(struct sbx_backend *b, const char *id);
/* Leave what docker_gate_enter entered for `id` (the last leave unlocks). */
void docker_gate_leave(const char *id);

#endif
