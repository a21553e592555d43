/* local-state.h - bring a local sandbox to the state a command needs
 * (local-state.c).  Private to the local backend. */
#ifndef SBX_LOCAL_STATE_H
#define SBX_LOCAL_STATE_H

#include <sys/types.h>

#include "local-sb.h"

/* The error for a sandbox in state `st` that an operation cannot use:
 * dead and terminal are terminal, transitioning a conflict. */
int local_state_error(const char *id, enum local_state st, const char *op, struct sbx_err *err);

/* The state of the sandbox of `r`, after continuing its init if it was
 * stopped (SIGSTOP from the host): a stopped init runs no idle timer and
 * reaps no orphans, so every command that uses the sandbox continues it
 * first.  The SIGCONT goes through a pidfd proven to be the init (opened,
 * then the start time checked), never to a later holder of its pid.
 * Activity is recorded first, so the idle timer does not fire the moment
 * the init wakes.  An init that stays stopped (held by a tracer) is a
 * conflict: nothing here can free it. */
int local_rec_state_cont(struct sbx_backend *b, const struct local_rec *r, const char *op,
			 enum local_state *st, struct sbx_err *err);

/* Sandbox `id` is running when this returns 0, with the pid and start
 * time its record gives for the init (they name the init as it was when
 * checked; see local_sb_init_pidfd for holding it).  A paused sandbox is
 * thawed when `resume` (connect: sbx-ctl resume, a session resolve) or
 * when its record allows resume on use ("resume_on_use", absent in
 * records older than the flag: on); else it is a conflict that names
 * sbx-ctl resume. */
int local_sb_running(struct sbx_backend *b, const char *id, int resume, pid_t *pid,
		     unsigned long long *start, struct sbx_err *err);

/* The sandbox must be usable: running (a paused one is thawed first: this
 * is auto-resume).  Fails with terminal when its init is gone (state dead)
 * and not_found when no such sandbox exists.  Returns 0 and *init_pid. */
int local_sb_ensure_running(struct sbx_backend *b, const char *id, pid_t *init_pid,
			    struct sbx_err *err);

/* Freeze (1) or thaw (0) every process of the sandbox (cgroup freezer on
 * <cg>/work: not the init, nor process supervisors); returns once the
 * state is reached. */
int local_sb_freeze(struct sbx_backend *b, const char *id, int freeze, struct sbx_err *err);

/* The init of a sandbox, held by pidfd, so that a recycled pid can never
 * make us act on another process.  Sandbox `id` is running when this
 * returns (like local_sb_ensure_running).  The pidfd is opened first and
 * the init's start time checked after, which proves that the pidfd is the
 * init and not a later holder of its pid.  Fails with terminal when the
 * init is gone, not_found when there is no such sandbox.  Returns the
 * pidfd (the caller closes it) and *pid, the init's pid in our pid
 * namespace; `op` names the operation in errors. */
int local_sb_init_pidfd(struct sbx_backend *b, const char *id, const char *op, pid_t *pid,
			struct sbx_err *err);

/* An O_PATH | O_DIRECTORY fd on the sandbox's root as its own processes
 * see it (the merged overlay with /workspace etc.), resuming it first;
 * through the init's pidfd (local_init_open). */
int local_sb_rootfd(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);

#endif
