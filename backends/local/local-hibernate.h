/* local-hibernate.h - a sandbox's processes and memory to disk and back
 * with CRIU (issue 33; docs/local.md, Hibernate).  Private to the local
 * backend; only where local_criu_check passes.
 *
 * On disk, in the sandbox's folder: hibernate.tmp/ while a dump writes
 * it, hibernate/ once it is whole (the rename is the commit), holding
 * CRIU's images and sbx-hibernate.json (the old init's pid, the root
 * overlay's options, the files the init held on host mounts).  A sandbox
 * whose init is gone and that has hibernate/ is hibernated
 * (local_rec_state; LOCAL_HIBERNATE_DIR is local-sb.h's); one whose
 * init lives ignores a stale hibernate/. */
#ifndef SBX_LOCAL_HIBERNATE_H
#define SBX_LOCAL_HIBERNATE_H

#include "backend.h"
#include "local-sb.h"

/* Why the sandbox of `r` cannot be hibernated, as an error (unsupported;
 * terminal when its init is gone): a process of the sandbox outside the
 * init's tree (sbx-proc's, a running command), which CRIU would not
 * dump, or a network policy.  0 when it can.  Asked before a paused
 * sandbox is thawed for the dump, so that a refused one stays frozen
 * as it was (its idle marker kept); the answer holds while the caller
 * holds the hibernate lock and the sandbox is frozen. */
int local_hibernate_refused(const struct local_rec *r, const char *id, struct sbx_err *err);

/* Dump the running sandbox of `r` (its init and every descendant) into
 * <dir>/hibernate, the tree killed by CRIU once the images are whole, its
 * memory freed.  A hibernated one is left as it is; any other state than
 * running is a conflict.  A failed dump leaves the sandbox running as
 * it was (CRIU lets the tree go on).  The caller holds the sandbox's
 * hibernate lock (local_hibernate_lock), asked local_hibernate_refused
 * and has thawed a paused one (local.c's hibernate: CRIU seizes the
 * tasks). */
int local_hibernate_dump_locked(struct local_rec *r, const char *id, struct sbx_err *err);

/* What a dump killed midway left, deleted once no dump runs: its
 * hibernate.tmp/ and CRIU's network lock table in the sandbox's netns
 * (which drops every packet on its loopback).  One access() when there is
 * nothing to do; called by every command on a running sandbox
 * (local_sb_running). */
void local_hibernate_tidy(struct local_rec *r);

/* The sandbox folder `dir`'s hibernate lock, taken (blocking); the fd to
 * close, or -1. */
int local_hibernate_lock(const char *dir, struct sbx_err *err);

/* Restore the hibernated sandbox `id`: leftovers of an earlier restore
 * that died killed first, the tree restored from <dir>/hibernate, the
 * record updated with the new init, then hibernate/ removed.  A crash at
 * any point leaves it hibernated (restorable) or running.  Under the
 * sandbox's hibernate lock; one already running is success. */
int local_hibernate_restore(struct sbx_backend *b, const char *id, struct sbx_err *err);

#endif
