/* docker.h - the Docker backend: internals shared by its files, and the
 * idle sweep the reaper calls.
 *
 *   docker.c        the vtable; Engine API calls (common/http.h) and their
 *                   error mapping; lifecycle: create, connect, get, list,
 *                   remove, pause; snapshots (commit), templates (images),
 *                   the idle sweep, the fingerprint
 *   docker-exec.c   exec: the hijacked /exec/{id}/start stream (stdin in,
 *                   the 8-byte-header multiplexed stdout/stderr out)
 *   docker-files.c  files: exec as the sandbox user for everything a user
 *                   could abuse (symlinks), the archive API where it is safe
 *
 * The backend never runs the docker CLI: it speaks the Engine API v1.41 on
 * the daemon's unix socket, or over TCP with TLS client certificates
 * (profile endpoint tcp://host:port, tls_cert_path holding ca.pem, cert.pem
 * and key.pem). */
#ifndef SBX_DOCKER_H
#define SBX_DOCKER_H

#include <stddef.h>
#include <json-c/json.h>

#include "backend.h"
#include "http.h"

#define DOCKER_API "/v1.41"
#define DOCKER_MARKER "/var/lib/sbx-activity"
#define DOCKER_LABEL_MANAGED "sbx.managed"
#define DOCKER_LABEL_TTL "sbx.idle-ttl-seconds"
#define DOCKER_LABEL_NO_RESUME "sbx.no-auto-resume"   /* "1": stays paused until connect */
#define DOCKER_LABEL_SNAPSHOT "sbx.snapshot"
#define DOCKER_LABEL_SNAPSHOT_NAME "sbx.snapshot.name"
#define DOCKER_LABEL_SNAPSHOT_PARENT "sbx.snapshot.parent"

struct docker {
	struct sbx_http *http;
	char *endpoint;          /* as configured ("" when the profile names none) */
	char *unix_path;         /* unix socket, or NULL for tcp */
	char *base_url;          /* "http://docker" or "https://host:port" */
	char *ca, *cert, *key;   /* tcp+TLS client files */
	char *state_dir;         /* for the sweep's rate-limit stamp */
	int allow_private;
};

static inline struct docker *docker_of(struct sbx_backend *b) { return b->priv; }

/* One Engine API call.  `path` starts after the version ("/containers/..."),
 * the caller escapes query values.  `body` (may be NULL) is sent as JSON.
 * On 2xx: 0, *out = the parsed JSON response body (NULL when empty or not
 * JSON; out may be NULL).  On any other status: -1 with the kind from
 * sbx_kind_from_http(op, status), refined by the daemon's message ("is
 * paused", "is not running", "already in progress" -> conflict), and the
 * daemon's message in err. */
int docker_api(struct sbx_backend *b, const char *op, const char *method, const char *path,
	       json_object *body, json_object **out, struct sbx_err *err);
/* The same, returning the raw response (any status) for callers that need
 * headers or a streamed body.  -1 only on a transport failure. */
int docker_raw(struct sbx_backend *b, const char *op, struct sbx_http_req *req,
	       struct sbx_http_resp *resp, struct sbx_err *err);
/* Turn a non-2xx response into an error (as docker_api does); returns -1. */
int docker_status_err(const char *op, const struct sbx_http_resp *resp, struct sbx_err *err);

/* The container must be able to run an exec: a paused one is unpaused
 * (auto-resume) unless it was created with auto_resume off (then a
 * conflict naming sbx-ctl resume), a stopped one started.  not_found when
 * it is gone or not an sbx container; terminal when it is dead. */
int docker_ensure_running(struct sbx_backend *b, const char *id, struct sbx_err *err);

/* Exec with the container resumed first when it is paused (docker-exec.c). */
int docker_exec(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req,
		struct sbx_exec_result *res, struct sbx_err *err);
/* Run a small helper script as uid 1000 (or root) with `args` as "$1"...;
 * stdout captured up to `cap`.  Fails with an error mapped from the
 * script's stderr ("No such file" -> not_found, ...) when it exits
 * non-zero. */
int docker_sh(struct sbx_backend *b, struct sbx_sandbox *sb, int as_root, const char *script,
	      const char *const *args, const void *in, size_t in_len, int in_fd, size_t cap,
	      struct sbx_exec_result *res, const char *op, struct sbx_err *err);

/* Files (docker-files.c), vtable entries. */
int docker_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		      const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err);
int docker_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     size_t max, int as_root, char **data, size_t *len, struct sbx_err *err);
int docker_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     int as_root, struct sbx_dirent **out, size_t *n, struct sbx_err *err);
int docker_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     int as_root, struct sbx_dirent *out, struct sbx_err *err);
int docker_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		      unsigned mode, int as_root, struct sbx_err *err);
int docker_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		       int recursive, int as_root, struct sbx_err *err);
int docker_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		     const char *to, int as_root, struct sbx_err *err);
int docker_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		   int as_root, struct sbx_err *err);
int docker_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		   int as_root, struct sbx_err *err);

/* A path a caller may touch: absolute, no "." or ".." components, not under
 * /proc, /sys or /dev, not the activity marker.  0 / -1 invalid_request. */
int docker_check_path(const char *path, const char *op, struct sbx_err *err);

/* The idle sweep (for sbx-reap, and run opportunistically at most once a
 * minute from create, get and connect).  Every sbx container whose label
 * sbx.idle-ttl-seconds is > 0 and whose last activity (the mtime of
 * /var/lib/sbx-activity; the container's start when the marker is missing
 * or more than 2 minutes in the future) is older than that is removed,
 * after checking the marker once more right before the delete.  With
 * dry_run nothing is removed.  `report` (an object, may be NULL) gets
 * {"checked": N, "idle": [ids], "deleted": [ids], "errors": [{id, kind,
 * message}]}.  A failure on one container does not stop the sweep; -1 only
 * when the containers cannot be listed.  The vtable's reap_idle is the
 * same sweep reporting in backend.h's array form. */
int sbx_docker_reap_idle(struct sbx_backend *b, int dry_run, json_object *report,
			 struct sbx_err *err);

#endif
