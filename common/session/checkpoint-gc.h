/* checkpoint-gc.h - retention of a session's checkpoints (issue 32): the
 * last K of each session's history are kept (the profile's
 * checkpoints_keep), and every one of a session that ended (no binding).
 * The reaper collects the others (common/reap/reap-ckpt.c), in two steps:
 *
 *   1. unlist: under the session's lifecycle lock (tried once), one fenced
 *      script moves the entries from the head of the history (oldest
 *      first) into the tenant's pending hash <prefix>:{T}:checkpoints-gc
 *      (snapshot id -> the entry, with its session): from then on no ls
 *      lists them and no rewind finds them;
 *   2. collect: each pending snapshot is deleted through the backend
 *      (snapshot_delete), then its pending entry goes.  A snapshot that a
 *      later checkpoint stacks on, or that a live sandbox was created from
 *      (a rewound session's), is refused by the backend with conflict: it
 *      stays pending, "not yet", and a later run tries again.
 *
 * A crash between the steps leaves pending entries, which every run
 * collects; a crash inside either leaves the state before or after it (one
 * script; a delete followed by a pending entry for a snapshot gone, which
 * the next delete finds gone).  Test points: reap:checkpoint-unlisted (after
 * the unlist script, the lock still held), reap:checkpoint-deleted (after
 * a snapshot's delete, before its pending entry goes). */
#ifndef SBX_CHECKPOINT_GC_H
#define SBX_CHECKPOINT_GC_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "checkpoint.h"
#include "err.h"
#include "redis.h"

/* A checkpoint out of its history (unlisted or pending). */
struct sbx_ckpt_out {
	char *session;
	char *snapshot;
	int64_t n;
	int64_t taken_at_ns;
};
void sbx_ckpt_outs_free(struct sbx_ckpt_out *v, size_t n);

/* The sessions of `tenant` that have a history (SCAN of their keys). */
int sbx_checkpoint_sessions(struct sbx_redis *r, const char *tenant, char ***out, size_t *n,
			    struct sbx_err *err);

/* What retention takes out of the session's history: with `unlist` 0 a
 * plan only (read, no lock); else done, under the session's lock tried
 * once.  The entries beyond the last `keep` (0: none beyond), or all of
 * them when the session has no binding (*ended 1), oldest first, stopping
 * at the first one taken after `cutoff_ns` (the reaper's grace).  Returns
 * 1 with *out (*n may be 0), 0 when the lock was busy or lost (*why
 * "locked", "lock-lost"; nothing taken out), -1 on error. */
int sbx_checkpoint_unlist(struct sbx_redis *r, const char *tenant, const char *session,
			  int64_t keep, int64_t cutoff_ns, int unlist, struct sbx_ckpt_out **out,
			  size_t *n, int *ended, const char **why, struct sbx_err *err);

/* The tenant's pending checkpoints, newest first (the order in which
 * those that stack on each other can go). */
int sbx_checkpoint_pending(struct sbx_redis *r, const char *tenant, struct sbx_ckpt_out **out,
			   size_t *n, struct sbx_err *err);

/* Checkpoints a crash cut short (checkpoint.c: planned, never appended):
 * each record of the tenant's planned hash taken before `cutoff_ns` is
 * resolved under its session's lock (tried once; a held lock is a
 * checkpoint still running: left for a later run).  When the backend
 * lists a snapshot of the planned name, one fenced script records it as
 * pending (step 2 deletes it) and drops the record; when none, the record
 * is dropped (the snapshot was never made, and its maker, whose lock is
 * gone, can no longer append: a holder whose append fails deletes its own
 * snapshot).  With `doit` 0 a plan only: nothing written, no lock.
 * *out: the snapshots found (n 0; taken_at_ns the planned time), *n may
 * be 0; *busy: records left because their session was locked. */
int sbx_checkpoint_adopt(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
			 int64_t cutoff_ns, int doit, struct sbx_ckpt_out **out, size_t *n,
			 size_t *busy, struct sbx_err *err);

/* Delete pending snapshot `snapshot`, then its pending entry.  1 deleted
 * (*gone when it was gone already), 0 when the backend refused it as in
 * use (kept pending), -1 on any other error (kept pending). */
int sbx_checkpoint_collect(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
			   const char *snapshot, int *gone, struct sbx_err *err);

#endif
