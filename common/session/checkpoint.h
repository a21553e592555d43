/* checkpoint.h - a session's history of checkpoints, and rewinding the
 * session to one of them (issue 32; checkpoint.c, rewind.c).
 *
 * The history is a Redis list at <prefix>:{T}:sess:S:checkpoints (keys.h),
 * oldest first, one JSON entry per checkpoint:
 *
 *   {"n":3,"label":"turn-3","snapshot":"snap-...","sandbox":"...",
 *    "taken_at_ns":...,"size_bytes":...[,"checkpoint_of":"snap-..."]}
 *
 * n is assigned by the append script (the last entry's n + 1), so two
 * checkpoints never share a number, and entries are never rewritten: a
 * rewind keeps the later ones (a rewind is undone by rewinding forward).
 * A checkpoint is a snapshot of the session's sandbox (the backend's
 * checkpoint_create where it has one: the cost of what changed since the
 * previous checkpoint; else snapshot_create).  Files, installed packages
 * and /workspace are kept; processes and memory are not. */
#ifndef SBX_CHECKPOINT_H
#define SBX_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"
#include "err.h"
#include "redis.h"

struct sbx_checkpoint {
	int64_t n;
	char *label;             /* NULL: none */
	char *snapshot;          /* the snapshot (template) id */
	char *sandbox;           /* the sandbox it was taken of */
	char *checkpoint_of;     /* the snapshot whose layers it stacks on, if any */
	int64_t taken_at_ns;     /* realtime ns */
	int64_t size_bytes;      /* the disk it added (-1 unknown) */
};

void sbx_checkpoint_clear(struct sbx_checkpoint *c);
void sbx_checkpoints_free(struct sbx_checkpoint *v, size_t n);
/* The document shape: {n, label, snapshot, sandbox, taken_at (ISO),
 * taken_at_ns, size_bytes, checkpoint_of}, added to `o`. */
void sbx_checkpoint_json(const struct sbx_checkpoint *c, json_object *o);

/* Take a checkpoint of the session's bound sandbox and append it to the
 * history, under the session's lifecycle lock (waiting up to
 * $SBX_LOCK_WAIT, else 90 s: a checkpoint never races a rewind, a rebuild
 * or another checkpoint of the session), the append fenced.  label: NULL
 * or 1 to 255 printable bytes.  not_found when the session has no
 * binding; conflict when it is bound under another backend, profile or
 * host, or the lock was lost (the snapshot then stays, unrecorded, for
 * the reaper of unused snapshots).  *out: the new entry. */
int sbx_checkpoint_take(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
			const char *session, const char *label, struct sbx_checkpoint *out,
			struct sbx_err *err);

/* The history, oldest first (*n may be 0). */
int sbx_checkpoint_list(struct sbx_redis *r, const char *tenant, const char *session,
			struct sbx_checkpoint **out, size_t *n, struct sbx_err *err);

/* The entry `to` names: a number (n), else a label (the latest entry that
 * carries it).  not_found when none does. */
int sbx_checkpoint_find(struct sbx_redis *r, const char *tenant, const char *session,
			const char *to, struct sbx_checkpoint *out, struct sbx_err *err);

struct sbx_lock;
struct sbx_binding;
/* Under lock `l` (taken by the caller): the session's binding as the lock
 * read it, and its sandbox (get).  not_found when there is no binding or
 * its sandbox is gone; conflict when it is bound under another backend,
 * profile or host (not ours to touch).  On success *bd and *sb are the
 * caller's to clear. */
int sbx_session_bound(struct sbx_backend *b, struct sbx_lock *l, const char *tenant,
		      const char *session, struct sbx_binding *bd, struct sbx_sandbox *sb,
		      struct sbx_err *err);

struct sbx_rewind_req {
	const char *tenant, *session;
	const char *to;          /* N or LABEL (sbx_checkpoint_find) */
	int in_turn;             /* the caller holds one reference of the turn lease */
};

/* Rewind (rewind.c): under the session's lifecycle lock, a sandbox
 * created from checkpoint `to`'s snapshot becomes the session's sandbox:
 * created (owned like the old one: its metadata), then the binding moved
 * to it (fenced), then the old sandbox deleted (the lock verified right
 * before).  Refused with conflict while a turn lease is held on the
 * session, unless in_turn and the caller's is the only reference.  A
 * crash at any step leaves the session bound to the old or to the new
 * sandbox, never none; the other one is an unbound sandbox of the
 * session, which the reaper deletes (test points rewind:created,
 * rewind:bound, rewind:before-delete).  *out: the new sandbox; *old_id
 * (malloc'd): the sandbox it replaced. */
int sbx_session_rewind(struct sbx_backend *b, struct sbx_redis *r,
		       const struct sbx_rewind_req *req, struct sbx_sandbox *out,
		       struct sbx_checkpoint *used, char **old_id, struct sbx_err *err);

struct sbx_fork_req {
	const char *tenant;
	const char *session;     /* the new session */
	const char *from;        /* the session it starts from */
	const char *at;          /* N or LABEL of from's history; NULL: a checkpoint now */
	const struct sbx_create_req *create;   /* options for its sandbox (may be NULL) */
	int64_t lock_wait_ms;    /* as sbx_resolve_req's */
};

/* Fork (fork.c): session `session` starts from `from`'s checkpoint `at`
 * (or one taken now, labelled "fork:SESSION", in from's history): its
 * sandbox is created from that snapshot and bound, under its own lock, as
 * a resolve does.  conflict when `session` has a sandbox already;
 * not_found when `from` has no sandbox (a checkpoint now) or no such
 * checkpoint.  *out: the new session's sandbox; *from_ck: the checkpoint
 * it started from (the caller's to clear). */
int sbx_session_fork(struct sbx_backend *b, struct sbx_redis *r, const struct sbx_fork_req *req,
		     struct sbx_sandbox *out, struct sbx_checkpoint *from_ck, struct sbx_err *err);

#endif
