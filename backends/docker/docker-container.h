/* docker-container.h - one container of the Docker backend: whether it is
 * ours, its state, its handle, keeping it running, removing it.
 *
 * A sandbox is a container labelled sbx.managed=1; its id is the full
 * 64-hex container id, its metadata the container's labels (ours, the idle
 * TTL and the snapshot labels an image passes down, left out).  Every call
 * naming a container that is not ours fails with not_found, so sbx never
 * touches a container it did not create. */
#ifndef SBX_DOCKER_CONTAINER_H
#define SBX_DOCKER_CONTAINER_H

#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"

#define DOCKER_MARKER "/var/lib/sbx-activity"
#define DOCKER_LABEL_MANAGED "sbx.managed"
#define DOCKER_LABEL_TTL "sbx.idle-ttl-seconds"
#define DOCKER_LABEL_NO_RESUME "sbx.no-auto-resume"   /* "1": stays paused until connect */
#define DOCKER_LABEL_SNAPSHOT "sbx.snapshot"
#define DOCKER_LABEL_SNAPSHOT_NAME "sbx.snapshot.name"
#define DOCKER_LABEL_SNAPSHOT_PARENT "sbx.snapshot.parent"
/* The template id create was given: inspect's Config.Image is that on
 * dockerd but the image's full name on podman, so it is kept here. */
#define DOCKER_LABEL_TEMPLATE "sbx.template"
/* "policy": created with a network policy (sbx-ctl network can replace
 * it, sbx-ls shows it); "open": egress without one (docker-egress.h). */
#define DOCKER_LABEL_EGRESS "sbx.egress"

/* Docker's state word ("running", "paused", ...) as an sbx state.  The
 * engine's "dead" (a container it failed to remove) is terminal, and
 * handles keep the word (the backend's one state word). */
enum sbx_state docker_map_state(const char *s);
extern const struct sbx_state_word docker_state_words[];
/* Labels that are ours, not the caller's metadata. */
int docker_internal_label(const char *k);

/* Fill *sb (fields may be uninitialised) from a container's id, image,
 * labels, state word and creation time: metadata = the caller's labels,
 * blank ones (inherited from a snapshot image) left out. */
void docker_fill_sandbox(struct sbx_backend *b, struct sbx_sandbox *sb, const char *id,
			 const char *image, json_object *labels, const char *state,
			 int64_t created);

/* GET /containers/{id}/json into *out (the caller puts it): not_found when
 * the container is missing (http_status 404) or not ours; invalid_request
 * for an id that cannot go into a path. */
int docker_inspect(struct sbx_backend *b, const char *id, const char *op, json_object **out,
		   struct sbx_err *err);
/* The full 64-hex id of `id` (a short id or a name is inspected: errors
 * as docker_inspect's), to free; NULL on error. */
char *docker_full_id(struct sbx_backend *b, const char *id, const char *op, struct sbx_err *err);
/* State.Status of an inspect answer (NULL when absent). */
const char *docker_inspect_status(json_object *j);
/* docker_fill_sandbox from an inspect answer. */
void docker_fill_from_inspect(struct sbx_backend *b, struct sbx_sandbox *sb, json_object *j);

/* POST /containers/{id}/{what} ("start", "pause", "unpause"). */
int docker_container_post(struct sbx_backend *b, const char *id, const char *what,
			  const char *op, struct sbx_err *err);

/* The container must be able to run an exec: a paused one is unpaused
 * (auto-resume) unless it was created with auto_resume off (then a
 * conflict naming sbx-ctl resume), a stopped one started.  not_found when
 * it is gone or not an sbx container; terminal when it is dead. */
int docker_ensure_running(struct sbx_backend *b, const char *id, struct sbx_err *err);
/* The same for connect (sbx-ctl resume, a session resolve): a paused
 * container is unpaused whatever its auto_resume says. */
int docker_resume(struct sbx_backend *b, const char *id, struct sbx_err *err);

/* Remove the container and its anonymous volumes, running or not.  A
 * container that is already gone is success with *gone = 1; one whose
 * removal is already under way is success too. */
int docker_container_remove(struct sbx_backend *b, const char *id, int *gone,
			    struct sbx_err *err);

#endif
