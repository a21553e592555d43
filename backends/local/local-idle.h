/* local-idle.h - the idle rule of a local sandbox, inline: sbx-init (libc
 * only) decides with it when to pause or kill, and the backend shows with
 * the same code which signal last kept the sandbox awake (sbx-ls's
 * `awake_by`), so the two never disagree.
 *
 * A sandbox is idle only when none of these has kept it awake for the
 * policy's seconds.  Each is a file in the sandbox's directory on the host
 * (local-sb.h), where nothing inside the sandbox can write:
 *
 *   activity   "command"  mtime: the last command that used the sandbox
 *   busy       "exec"     flock(LOCK_SH) held by every running exec,
 *                         and by a hibernate's dump (local.c: the timer
 *                         must not freeze what CRIU seizes); mtime: the
 *                         end of the last exec
 *   busy-proc  "process"  flock(LOCK_SH) held by the sbx-procd of every
 *                         running detached process (sbx-proc start; a
 *                         terminal would be one: there is no PTY yet);
 *                         mtime: the last exit
 *   lease      "lease"    mtime: until when a turn lease is held (in the
 *                         future while held; sbx-lease begin/end)
 *   egress     "egress"   mtime: the last relay of bytes by the egress
 *                         broker (sandboxes with a network policy)
 *
 * A held flock or a lease deadline in the future counts as "now".  A lock
 * dies with its holder (a crashed exec or supervisor keeps nothing awake);
 * a lease's deadline is its TTL, so a holder that never ends it keeps the
 * sandbox awake no longer than Redis keeps the lease. */
#ifndef SBX_LOCAL_IDLE_H
#define SBX_LOCAL_IDLE_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

enum local_awake {
	LOCAL_AWAKE_COMMAND,
	LOCAL_AWAKE_EXEC,
	LOCAL_AWAKE_PROCESS,
	LOCAL_AWAKE_LEASE,
	LOCAL_AWAKE_EGRESS,
	LOCAL_AWAKE_N
};

/* The file of each signal, and its name in sbx-ls and the marker. */
static inline const char *local_awake_file(int i)
{
	static const char *const f[LOCAL_AWAKE_N] = {
		"activity", "busy", "busy-proc", "lease", "egress"};
	return i >= 0 && i < LOCAL_AWAKE_N ? f[i] : "activity";
}
static inline const char *local_awake_name(int i)
{
	static const char *const n[LOCAL_AWAKE_N] = {
		"command", "exec", "process", "lease", "egress"};
	return i >= 0 && i < LOCAL_AWAKE_N ? n[i] : "command";
}

/* Written by sbx-init when its idle timer paused the sandbox: the name of
 * the signal that last kept it awake, one line.  Removed by a resume. */
#define LOCAL_IDLE_MARKER "idle-paused"

/* The idle timer's log, appended line by line (O_APPEND, one write each)
 * and taken whole by the vtable's idle_notes (rename, read, unlink):
 *   "P <unix ms> <awake_by>"   sbx-init paused the sandbox
 *   "R <unix ms>"              a command resumed it on use (local-state.c)
 * What is taken while a line is being appended may lose that line. */
#define LOCAL_IDLE_LOG "idle-log"
#define LOCAL_IDLE_LOG_MAX 65536

static inline void local_idle_log(int dirfd, const char *line, size_t len)
{
	int fd = openat(dirfd, LOCAL_IDLE_LOG, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) == 0 && st.st_size < LOCAL_IDLE_LOG_MAX)
		(void)!write(fd, line, len);
	close(fd);
}

struct local_idle {
	int64_t last_ms;        /* unix ms the sandbox was last kept awake */
	enum local_awake by;    /* by what */
	int held;               /* 1: something holds it awake right now */
};

/* 1 when someone holds a shared flock on `name` in dirfd. */
static inline int local_idle_locked(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int held = flock(fd, LOCK_EX | LOCK_NB) < 0;
	close(fd);
	return held;
}

/* Probe the sandbox dir `dirfd` at `now_ms` (unix ms).  A missing
 * `activity` (a sandbox being made) counts as activity now: never idle.
 * On a tie the later signal in the enum wins (an exec's end touches both
 * activity and busy: it is named "exec"). */
static inline void local_idle_probe(int dirfd, int64_t now_ms, struct local_idle *out)
{
	out->last_ms = -1;
	out->by = LOCAL_AWAKE_COMMAND;
	out->held = 0;
	for (int i = 0; i < LOCAL_AWAKE_N; i++) {
		struct stat st;
		int64_t t;
		int held = 0;
		if (fstatat(dirfd, local_awake_file(i), &st, 0) < 0) {
			if (i != LOCAL_AWAKE_COMMAND)
				continue;
			t = now_ms;
			held = 1;
		} else {
			t = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
		}
		if ((i == LOCAL_AWAKE_EXEC || i == LOCAL_AWAKE_PROCESS) &&
		    local_idle_locked(dirfd, local_awake_file(i)))
			held = 1;
		if (i == LOCAL_AWAKE_LEASE && t > now_ms)
			held = 1;
		if (held || t > now_ms)
			t = now_ms;
		if (t >= out->last_ms) {
			out->last_ms = t;
			out->by = (enum local_awake)i;
		}
		out->held |= held;
	}
}

#endif
