/* local-forkd.h - start a process through a local sandbox's fork server
 * (local-forkd.c; the server is sbx-forkd.c, the wire
 * local-forkd-proto.h).
 *
 * The fork server sits inside the sandbox (namespaces, v1 cgroups,
 * `work`), so a process forked from it needs no cgroup move; the old
 * path (local-spawn.c's fork, then a write into each v1 cgroup.procs)
 * stays the fallback whenever the server cannot take a start: not
 * running and not startable, killed, a request too big for the wire.
 * `SBX_LOCAL_FORKD=0` in the environment forces the old path (the
 * benchmark's baseline). */
#ifndef SBX_LOCAL_FORKD_H
#define SBX_LOCAL_FORKD_H

#include <sys/types.h>

#include "local-spawn.h"

/* A process started through the server. */
struct local_forkd_proc {
	int conn;                /* the start's connection: its wait status comes here */
	int pidfd;               /* the process */
	pid_t hostpid;           /* its pid in our namespace */
};

/* Start `s`'s command (prepared by local_spawn_prepare, stdio set; it is
 * born in s->cg_dir) through the fork server of sandbox `id`, starting
 * the server first when none answers.  1 when the server took it: `p`
 * is filled and *stage, *e say how the start went as local_spawn_report
 * would (0: exec'd); the caller sends local_forkd_adopt once it or its
 * heir holds p->conn, else the server kills the process when the
 * connection closes.  0 when the caller must take the old path (nothing
 * was started: no server, or it refused the request).  A server that
 * took the request and died before answering is a failed start (1 with
 * LOCAL_STAGE_SETNS, ECONNRESET, p->pidfd -1): the process may have run,
 * and taking the old path could run it twice. */
int local_forkd_start(const char *id, const struct local_rec *r, struct local_spawn *s,
		      struct local_forkd_proc *p, int *stage, int *e);
/* The first half of local_forkd_start: the request sent, the reply
 * (local_forkd_reply_read, local-forkd-proto.h) not yet read.  The
 * connection, or -1 when the caller must take the old path (nothing was
 * started).  Whoever holds the connection reads the reply; when every
 * holder closes it before sending LOCAL_FORKD_ADOPTED, the server kills
 * the process (a detached start hands it to sbx-procd: local-procd.h). */
int local_forkd_send(const char *id, const struct local_rec *r, const struct local_spawn *s);
/* Tell the server the process is held (see above). */
void local_forkd_adopt(const struct local_forkd_proc *p);
/* Read the wait status once p->conn is readable: 1 with *status, 0 when
 * the server went away first (its process's status is lost). */
int local_forkd_status(const struct local_forkd_proc *p, int *status);
void local_forkd_close(struct local_forkd_proc *p);

#endif
