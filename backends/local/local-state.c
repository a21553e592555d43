/* local-state.c - bring a local sandbox to the state a command needs:
 * continue a stopped init, thaw a paused sandbox when it resumes on use,
 * freeze and thaw it, and hold its init (by pidfd) or its root for the
 * command.
 *
 * Promises:
 *  - A command that uses a sandbox records activity first, so the idle
 *    timer does not fire the moment the sandbox wakes.
 *  - A sandbox whose auto-resume is off is never thawed by a command
 *    (conflict naming sbx-ctl resume); only connect resumes it.
 *  - What these calls hand back (a pidfd, a root fd) is the sandbox's
 *    init or nothing (local-pid.c). */
#include "local-state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "doc.h"
#include "fault.h"
#include "local-hibernate.h"
#include "local-idle.h"
#include "local-pid.h"
#include "util.h"

int local_sb_freeze(struct sbx_backend *b, const char *id, int freeze, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, id, &r, err) < 0)
		return -1;
	int rc = 0;
	char p[PATH_MAX];
	/* Whichever way it goes, the idle timer's marker is no longer true:
	 * a command pauses, a resume wakes (local-idle.h). */
	snprintf(p, sizeof(p), "%s/" LOCAL_IDLE_MARKER, r.dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/work", r.cg[CG_V2] ? r.cg[CG_V2] : "/nonexistent");
	if (local_cg_write(p, "cgroup.freeze", freeze ? "1" : "0") < 0)
		rc = sbx_fail_errno(err, errno == ENOENT ? SBX_TERMINAL : SBX_INTERNAL,
				    freeze ? "pause" : "resume", "sandbox %s", id);
	else if (local_cg_wait(p, "frozen", freeze, 10000) < 0)
		rc = sbx_fail(err, SBX_TIMEOUT, freeze ? "pause" : "resume",
			      "sandbox %s did not %s in time", id, freeze ? "freeze" : "thaw");
	local_rec_free(&r);
	return rc;
}

int local_state_error(const char *id, enum local_state st, const char *op, struct sbx_err *err)
{
	switch (st) {
	case LOCAL_DEAD:
		return sbx_fail(err, SBX_TERMINAL, op, "sandbox %s is dead (its init is gone)", id);
	case LOCAL_TERMINAL:
		return sbx_fail(err, SBX_TERMINAL, op, "sandbox %s was killed", id);
	case LOCAL_TRANSITIONING:
		return sbx_fail(err, SBX_CONFLICT, op, "sandbox %s is still being created", id);
	default:
		return sbx_fail(err, SBX_INTERNAL, op, "sandbox %s is in state %s", id,
				local_state_word(st) ? local_state_word(st)
						     : sbx_state_name(local_state_is(st)));
	}
}

/* Ready when the init is no longer stopped. */
static int init_running(void *pid)
{
	return !local_pid_stopped(*(pid_t *)pid);
}

/* The state of the sandbox of `r`, after continuing its init if it was
 * stopped (SIGSTOP from the host): a stopped init runs no idle timer and
 * reaps no orphans, so every command that uses the sandbox continues it
 * first.  The SIGCONT goes through a pidfd proven to be the init (opened,
 * then the start time checked), never to a later holder of its pid.
 * Activity is recorded first, so the idle timer does not fire the moment
 * the init wakes.  An init that stays stopped (held by a tracer) is a
 * conflict: nothing here can free it. */
int local_rec_state_cont(struct sbx_backend *b, const struct local_rec *r, const char *op,
			  enum local_state *st, struct sbx_err *err)
{
	const char *id = sbx_json_str(r->j, "id");
	*st = local_rec_state(r);
	if (*st != LOCAL_STOPPED)
		return 0;
	local_sb_touch(b, id);
	unsigned long long start = (unsigned long long)sbx_json_int(r->j, "init_start", 0);
	SBX_AUTOCLOSE int fd = (int)syscall(SYS_pidfd_open, r->init_pid, 0);
	if (fd < 0 || start == 0 || !local_pid_alive(r->init_pid, start))
		return local_state_error(id, LOCAL_DEAD, op, err);
	if (syscall(SYS_pidfd_send_signal, fd, SIGCONT, NULL, 0) < 0)
		return sbx_fail_errno(err, errno == ESRCH ? SBX_TERMINAL : SBX_INTERNAL, op,
				      "continue the init of sandbox %s", id);
	/* SIGCONT wakes a signal-stopped task at once; a traced one stays. */
	pid_t pid = r->init_pid;
	if (!sbx_poll_until(1000, 10, init_running, &pid))
		return sbx_fail(err, SBX_CONFLICT, op, "the init of sandbox %s is stopped and does "
				"not continue (held by a tracer?)", id);
	*st = local_rec_state(r);
	return 0;
}

static void idle_log_resume(struct sbx_backend *b, const char *id)
{
	SBX_AUTOFREE char *dir = sbx_xasprintf("%s/sandboxes/%s", local_of(b)->dir, id);
	SBX_AUTOCLOSE int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	char line[40];
	int n = snprintf(line, sizeof(line), "R %lld\n", (long long)sbx_now_ms());
	local_idle_log(dfd, line, (size_t)n);
}

/* The common part of ensure_running, init_pidfd and connect: sandbox `id`
 * is running when this returns 0, with the pid and start time its record
 * gives for the init.  Those name the init as it was when checked; see
 * local_sb_init_pidfd for holding it.  A paused sandbox is thawed when
 * `resume` (connect: sbx-ctl resume, a session resolve) or when its record
 * allows resume on use ("resume_on_use", absent in records older than the
 * flag: on); else it is a conflict that names sbx-ctl resume. */
int local_sb_running(struct sbx_backend *b, const char *id, int resume, pid_t *pid,
		      unsigned long long *start, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, id, &r, err) < 0)
		return -1;
	enum local_state st;
	int rc = local_rec_state_cont(b, &r, "resume", &st, err);
	*pid = r.init_pid;
	*start = (unsigned long long)sbx_json_int(r.j, "init_start", 0);
	int on_use = sbx_json_bool(r.j, "resume_on_use", 1);
	if (rc == 0 && st == LOCAL_RUNNING)
		local_hibernate_tidy(&r);     /* a killed dump's leftovers */
	local_rec_free(&r);
	if (rc < 0)
		return -1;
	if ((st == LOCAL_PAUSED || st == LOCAL_HIBERNATED) && !resume && !on_use)
		return sbx_fail(err, SBX_CONFLICT, "resume",
				"sandbox %s is paused and does not resume on use (auto_resume off); "
				"run sbx-ctl resume first", id);
	if (st == LOCAL_HIBERNATED) {
		/* Restored (under its lock; a concurrent one restores once),
		 * then what the record now names is the init. */
		local_sb_touch(b, id);
		if (local_hibernate_restore(b, id, err) < 0)
			return -1;
		idle_log_resume(b, id);
		if (local_rec_load(b, id, &r, err) < 0)
			return -1;
		rc = local_rec_state_cont(b, &r, "resume", &st, err);
		*pid = r.init_pid;
		*start = (unsigned long long)sbx_json_int(r.j, "init_start", 0);
		local_rec_free(&r);
		if (rc < 0)
			return -1;
	}
	if (st == LOCAL_PAUSED) {
		/* Auto-resume, under the hibernate lock: a hibernate of a
		 * paused sandbox (the reaper's, SBX_HIBERNATE_IF_PAUSED) then
		 * either took it whole before (hibernated: restored, once
		 * more round) or finds it running after.  Activity first, so
		 * the idle timer does not freeze it again before the caller
		 * gets to use it. */
		if (local_rec_load(b, id, &r, err) < 0)
			return -1;
		int lk = local_hibernate_lock(r.dir, err);
		rc = lk < 0 ? -1 : local_rec_state_cont(b, &r, "resume", &st, err);
		local_rec_free(&r);
		if (rc == 0 && st == LOCAL_PAUSED) {
			local_sb_touch(b, id);
			rc = local_sb_freeze(b, id, 0, err);
			/* For the resumed event the reaper writes (idle_notes):
			 * resume on use happens below every program's Redis. */
			if (rc == 0)
				idle_log_resume(b, id);
		}
		if (lk >= 0)
			close(lk);
		if (rc < 0)
			return -1;
		if (st == LOCAL_HIBERNATED)
			return local_sb_running(b, id, resume, pid, start, err);
		if (st != LOCAL_PAUSED && st != LOCAL_RUNNING)
			return local_state_error(id, st, "resume", err);
	} else if (st != LOCAL_RUNNING) {
		return local_state_error(id, st, "resume", err);
	}
	if (geteuid() != 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "exec",
				"the local backend needs root (or user namespaces: not implemented)");
	return 0;
}

int local_sb_ensure_running(struct sbx_backend *b, const char *id, pid_t *init_pid,
			    struct sbx_err *err)
{
	unsigned long long start;
	return local_sb_running(b, id, 0, init_pid, &start, err);
}

int local_sb_init_pidfd(struct sbx_backend *b, const char *id, const char *op, pid_t *pid,
			struct sbx_err *err)
{
	unsigned long long start;
	if (local_sb_running(b, id, 0, pid, &start, err) < 0)
		return -1;
	int fd = (int)syscall(SYS_pidfd_open, *pid, 0);
	if (fd < 0 && errno != ESRCH)
		return sbx_fail_errno(err, SBX_INTERNAL, op, "pidfd_open of the init of %s", id);
	/* After the open: the pid's holder now started when the init did,
	 * so it is the init, and so is what the pidfd holds.  A record
	 * without a start time cannot prove that: the init was already gone
	 * when create looked (local_pid_start gave 0). */
	if (fd < 0 || start == 0 || !local_pid_alive(*pid, start)) {
		if (fd >= 0)
			close(fd);
		return local_init_dead(id, op, err);
	}
	sbx_fault("local:init-pidfd");
	return fd;
}

/* An fd on the root of the init of sb, through a pidfd (see
 * local_init_open): never another process's root, even if the init dies
 * and its pid is reused while we open it. */
int local_sb_rootfd(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	pid_t pid;
	SBX_AUTOCLOSE int pidfd = local_sb_init_pidfd(b, sb->id, "files", &pid, err);
	if (pidfd < 0)
		return -1;
	int fd = local_init_open(pidfd, pid, "root", O_PATH | O_DIRECTORY, sb->id, "files", err);
	if (fd < 0)
		return -1;
	local_sb_touch(b, sb->id);
	return fd;
}
