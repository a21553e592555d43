/* local-pid.c - who a pid is: start times, liveness and stop states from
 * /proc, and the sandbox init held through a pidfd, so that a recycled
 * pid never makes the backend act on another process.
 *
 * Promise: every function that acts on the init (signal, open one of its
 * /proc files) proves, after it holds the process (a pidfd, an fd), that
 * the holder is still the process that started at the recorded time; a
 * later holder of the pid cannot have that earlier start time. */
#include "local-pid.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fault.h"
#include "util.h"

/* Fields of /proc/PID/stat: *state (field 3), and the number of field
 * `field` (> 3) in *num.  -1 when it cannot be read. */
static int stat_read(pid_t pid, int field, char *state, unsigned long long *num)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if (local_read_small(p, buf, sizeof(buf)) < 0)
		return -1;
	char *s = strrchr(buf, ')');
	if (!s || s[1] != ' ')
		return -1;
	*state = s[2];
	s += 2;
	for (int f = 3; f < field && s; f++) {
		s = strchr(s, ' ');
		if (s)
			s++;
	}
	if (!s)
		return -1;
	*num = strtoull(s, NULL, 10);
	return 0;
}

unsigned long long local_pid_start(pid_t pid)
{
	char state;
	unsigned long long start;
	/* starttime is field 22; a zombie's (or a dead one's) counts as 0. */
	if (stat_read(pid, 22, &state, &start) < 0 || state == 'Z' || state == 'X')
		return 0;
	return start;
}

/* Field 3 of /proc/PID/stat (R, S, D, T, t, Z...), or 0. */
char local_pid_state(pid_t pid)
{
	char state;
	unsigned long long flags;
	return stat_read(pid, 9, &state, &flags) < 0 ? 0 : state;
}

/* It has begun its exit (PF_EXITING in field 9, flags).  An init does
 * not turn zombie until every process of its pid namespace is killed and
 * reaped, which takes as long as that takes; from the first step on it
 * is dying. */
static int pid_exiting(pid_t pid)
{
	char state;
	unsigned long long flags;
	return stat_read(pid, 9, &state, &flags) == 0 && (flags & 0x4);
}

/* The init is stopped: by a signal (T) or by a tracer (t). */
int local_pid_stopped(pid_t pid)
{
	char st = local_pid_state(pid);
	return st == 'T' || st == 't';
}

int local_pid_alive(pid_t pid, unsigned long long start)
{
	if (pid <= 0)
		return 0;
	unsigned long long now = local_pid_start(pid);
	return now != 0 && (start == 0 || now == start);
}

int local_init_dead(const char *id, const char *op, struct sbx_err *err)
{
	return sbx_fail(err, SBX_TERMINAL, op, "sandbox %s is dead (its init is gone)", id);
}

void local_init_signal(pid_t pid, unsigned long long start, int sig, const char *stop)
{
	if (pid <= 0 || start == 0)
		return;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return;
	if (local_pid_alive(pid, start)) {
		if (stop)
			sbx_fault(stop);
		syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
	}
	close(fd);
}

int local_init_alive(int pidfd, pid_t pid)
{
	/* Signal 0 succeeds until the process is reaped, so its pid is not
	 * yet free and /proc/<pid> is still this process: a start time of
	 * 0 there means a zombie. */
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 && local_pid_start(pid) != 0;
}

int local_init_gone(int pidfd, pid_t pid)
{
	/* An init in the middle of exiting has already lost its root and
	 * namespaces but is not a zombie yet; a pidfd polls readable once the
	 * exit is complete, so give it a moment. */
	struct pollfd pf = {.fd = pidfd, .events = POLLIN};
	return pid_exiting(pid) || poll(&pf, 1, 200) > 0 || !local_init_alive(pidfd, pid);
}

int local_init_open(int pidfd, pid_t pid, const char *what, int flags, const char *id,
		    const char *op, struct sbx_err *err)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, what);
	int fd = open(p, flags | O_CLOEXEC);
	int e = errno;
	/* Alive after the open means alive during it: the pid could not be
	 * anyone else's then, so fd is the init's.  Asked even when the open
	 * failed: a dead init is terminal, not an internal error. */
	if (fd >= 0 ? !local_init_alive(pidfd, pid) : local_init_gone(pidfd, pid)) {
		if (fd >= 0)
			close(fd);
		return local_init_dead(id, op, err);
	}
	if (fd < 0) {
		errno = e;
		return sbx_fail_errno(err, SBX_INTERNAL, op, "open %s of sandbox %s", what, id);
	}
	return fd;
}
