/* local-spawn.h - put one command inside a local sandbox (local-spawn.c):
 * the part that exec (local-exec.c) and detached processes
 * (local-proc.c) share.
 *
 * The command joins the sandbox's namespaces through a pidfd on its init
 * (a recycled pid can never point us at another process), the cgroup it
 * is given plus the sandbox's v1 ones, and drops privileges: uid/gid 1000
 * by default; as root, Docker's default capability set without MKNOD and
 * NET_RAW, and no_new_privs either way.  It gets a clean environment
 * (the sandbox's, then the command's), its own session, no fd of ours
 * beyond its three stdio fds, and the sandbox's seccomp filter right
 * before execve.
 *
 * Two steps: local_spawn_prepare allocates and opens everything; after
 * it, local_spawn_fork allocates nothing, so it may run in a child forked
 * from a threaded program (the detached-process supervisor does). */
#ifndef SBX_LOCAL_SPAWN_H
#define SBX_LOCAL_SPAWN_H

#include <sys/types.h>

#include "local-sb.h"
#include "local-pid.h"
#include "local-seccomp.h"

/* What to run. */
struct local_cmd {
	char *const *argv;       /* NULL-terminated, argv[0] looked up in PATH */
	char *const *env;        /* "KEY=VALUE" added last */
	const char *cwd;         /* absolute; NULL = /workspace */
	int as_root;
	int tty;                 /* stdio is the slave of a new pty (below) */
	unsigned short cols, rows;
};

/* Steps of the child, reported as {stage, errno} on the report pipe when
 * one fails; EOF on the pipe means execve succeeded. */
enum { LOCAL_STAGE_CGROUP = 1, LOCAL_STAGE_SETNS, LOCAL_STAGE_CWD, LOCAL_STAGE_PRIV,
       LOCAL_STAGE_EXEC, LOCAL_STAGE_TTY };

struct local_spawn {
	int pidfd;               /* the sandbox's init */
	pid_t init;
	int selfns;              /* our own pid namespace, to come back to */
	int cg_fds[LOCAL_NCG];   /* cgroup.procs files to join, -1 = skip */
	int cg_dir;              /* the cgroup2 dir (O_PATH), to be born in */
	int born_in_cg;          /* set by the fork: cg_fds[CG_V2] is joined */
	int report[2];           /* CLOEXEC pipe of the child's failures */
	int in, out, errfd;      /* become the child's 0, 1, 2 (borrowed);
				  * unused with tty */
	int tty;                 /* cmd->tty: the child opens a pty in the
				  * sandbox's own devpts, makes its slave its
				  * controlling terminal and stdio, and sends
				  * the master back on tty_sock */
	unsigned short cols, rows;
	int tty_sock[2];         /* CLOEXEC socketpair: [0] ours, [1] the child's */
	const char *cwd;
	int as_root;
	char *const *argv;
	char **envp;             /* owned */
	struct local_filter filter;
	int exe;                 /* fexecve this (borrowed) instead of argv[0]; -1 */
	int no_filter;           /* the fork server: no filter (it needs clone3) */
};

/* Prepare `cmd` for sandbox `id` (record `r`, init held by `pidfd`, which
 * the spawn borrows): the environment, the filter, the report pipe and
 * the cgroup files (`cg` is the cgroup2 dir the child joins: <cg>/work
 * or a sub-group of it).  The stdio fds are set by the caller in s->in,
 * s->out, s->errfd before the fork.  0, or -1 with err filled. */
int local_spawn_prepare(const char *id, const struct local_rec *r, int pidfd, pid_t init,
			const char *cg, const struct local_cmd *cmd, struct local_spawn *s,
			struct sbx_err *err);
/* Fork the child into the sandbox.  Returns its pid (in our namespace)
 * or -1 with errno.  With `come_back`, the caller's children are born in
 * its own pid namespace again afterwards (else they go on being born in
 * the sandbox's: for a process that is about to exec anyway).  Allocates
 * nothing. */
pid_t local_spawn_fork(struct local_spawn *s, int come_back);
/* After the fork (our copy of the report pipe's write end closed): 0 when
 * the child exec'd, or the failed stage with *e its errno. */
int local_spawn_report(struct local_spawn *s, int *e);
void local_spawn_free(struct local_spawn *s);
/* With tty, after the fork (our copy of tty_sock[1] closed) and after
 * local_spawn_report said the pty was made (0 or LOCAL_STAGE_EXEC): the
 * pty's master, CLOEXEC, owned by the caller; -1 with errno when the
 * child sent none. */
int local_spawn_tty_master(struct local_spawn *s);

/* An exec step failed with errno set: terminal when the init died under
 * us (setns and fork into its namespaces fail then; what failed is not
 * the point), else internal with the step's message. */
int local_spawn_fail(int pidfd, pid_t init, const char *id, const char *op,
		     struct sbx_err *err, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Close *fd if open and mark it closed (-1). */
void local_closep(int *fd);

/* open(<dir>/<file>, O_WRONLY | O_CLOEXEC): a cgroup control file. */
int local_open_wr(const char *dir, const char *file);

#endif
