/* local-pid.h - who a pid is, and the sandbox init held by pidfd
 * (local-pid.c).  Private to the local backend. */
#ifndef SBX_LOCAL_PID_H
#define SBX_LOCAL_PID_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "local-kfile.h"


/* Field 22 of /proc/PID/stat (its start time), 0 when the pid is free or
 * a zombie. */
unsigned long long local_pid_start(pid_t pid);
/* Field 3 of /proc/PID/stat (R, S, D, T, t, Z...), or 0. */
char local_pid_state(pid_t pid);
/* Stopped by a signal (T) or by a tracer (t). */
int local_pid_stopped(pid_t pid);
/* 1 if pid is alive and still the process that started at `start`
 * (0 = do not check).  A pid names whoever holds it *now*: between this
 * check and any later use of the pid, the process may die and the pid go
 * to another one.  Use a pidfd (local_sb_init_pidfd) whenever the answer
 * leads to acting on the process. */
int local_pid_alive(pid_t pid, unsigned long long start);

/* Send `sig` to the init `pid` that started at `start`, through a pidfd
 * opened on its pid and then checked against the start time: once the
 * check passes, the pidfd holds the init itself, so a pid the init left
 * behind and another process took gets nothing.  A start time of 0 gets
 * nothing either (the init was already gone at create).  `stop` names a
 * fault point between the check and the signal, for tests. */
void local_init_signal(pid_t pid, unsigned long long start, int sig, const char *stop);

/* The terminal error "sandbox ID is dead (its init is gone)". */
int local_init_dead(const char *id, const char *op, struct sbx_err *err);

/* local_init_open: open /proc/<pid>/<what> (root, ns/mnt, ...) of the
 * init behind `pidfd`.  The path goes through the pid, so the open is
 * proven afterwards: when the init is still alive after the open, the pid
 * was not recycled before it, and the fd is the init's.  When the init
 * died meanwhile the fd is dropped and the error is terminal, whatever the
 * open returned.
 *
 * local_init_alive: 1 while the process behind `pidfd` lives and is not
 * a zombie (a zombie still answers signals but has no root, no
 * namespaces).
 *
 * local_init_gone: after something failed on the init, 1 when it is dead
 * or dying: its exit begun (PF_EXITING: it tears its pid namespace down
 * first, which kills the fork server mid-start), or done within 200 ms
 * (an exit takes the root and namespaces away before the zombie). */
int local_init_open(int pidfd, pid_t pid, const char *what, int flags, const char *id,
		    const char *op, struct sbx_err *err);
int local_init_alive(int pidfd, pid_t pid);
int local_init_gone(int pidfd, pid_t pid);

#endif
