/* local-forkd-proto.h - the wire between the library's side of a local
 * sandbox's fork server (local-forkd.c) and the server itself
 * (backends/local/sbx-forkd.c).  libc only: sbx-forkd includes it.
 *
 * sbx-forkd lives inside one sandbox (its namespaces, its `work` cgroup,
 * v1 and v2, root with the sandbox root's capability set and
 * no_new_privs), started by the library through the old path
 * (local-spawn.c) and fexecve'd, with
 *
 *   argv  {"sbx-forkd", NULL}    envp: the sandbox's default environment
 *   fds   0  a listening SOCK_SEQPACKET socket, bound by the library at
 *            <sandbox dir>/forkd.sock on the host (a directory of root's
 *            that nothing inside the sandbox can see); 1, 2 /dev/null
 *
 * One connection is one process start:
 *
 *   library -> forkd   one message: struct local_forkd_req, then `len`
 *                      bytes: cwd, argv[argc], env[envc] (each ended by a
 *                      NUL), then `flen` bytes of seccomp filter (struct
 *                      sock_filter[]); with it, SCM_RIGHTS: stdin, stdout,
 *                      stderr of the process and the cgroup2 directory it
 *                      is born in (O_PATH), in that order
 *   forkd -> library   struct local_forkd_reply; with a pidfd of the
 *                      process (SCM_RIGHTS) when one was forked
 *   library -> forkd   one byte LOCAL_FORKD_ADOPTED once someone holds the
 *                      connection for the rest of the process's life; a
 *                      hangup before it kills the process (the start died).
 *                      The process is not reaped before it is adopted, so
 *                      its /proc entry is there for the adopter to read
 *   forkd -> library   int32 wait status when the process exits
 *
 * A peer whose pid is visible in the sandbox's pid namespace (SO_PEERCRED)
 * is refused: only the host may ask. */
#ifndef SBX_LOCAL_FORKD_PROTO_H
#define SBX_LOCAL_FORKD_PROTO_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "fdpass.h"
#include "local-kfile.h"

#define LOCAL_FORKD_MAGIC   0x73627866u     /* "sbxf" */
#define LOCAL_FORKD_VERSION 1u
/* Bound of the strings of one request (cwd, argv, env) and of its
 * filter: a bigger start takes the old path. */
#define LOCAL_FORKD_STR_MAX  (96 * 1024)
#define LOCAL_FORKD_FILT_MAX (4096 * 8)
#define LOCAL_FORKD_ARGS_MAX 4096             /* argc + envc */
#define LOCAL_FORKD_NFDS     4
#define LOCAL_FORKD_ADOPTED  'A'

/* The failed step of a start, as local-spawn.h's LOCAL_STAGE_* numbers
 * them (local-forkd.c checks that they agree). */
#define LOCAL_FORKD_STAGE_CGROUP 1
#define LOCAL_FORKD_STAGE_SETNS  2
#define LOCAL_FORKD_STAGE_CWD    3
#define LOCAL_FORKD_STAGE_PRIV   4
#define LOCAL_FORKD_STAGE_EXEC   5
/* Beyond the spawn's stages: the request was refused or the fork failed
 * before a process existed (the library takes the old path). */
#define LOCAL_FORKD_STAGE_REFUSED 100

struct local_forkd_req {
	uint32_t magic, version;
	uint32_t as_root;
	uint32_t argc, envc;
	uint32_t len;            /* cwd + argv + env bytes */
	uint32_t flen;           /* filter bytes */
};

struct local_forkd_reply {
	int32_t stage;           /* 0: exec'd; else a LOCAL_FORKD_STAGE_* */
	int32_t err;             /* its errno */
	int32_t nspid;           /* the process's pid in the sandbox, 0 if none */
};

/* Read the server's reply to a start on connection `c` (blocking) and say
 * how the start went: the one reading of it, made by the library
 * (local-forkd.c) and by sbx-procd, which reads a detached start's reply
 * itself so that its own launch overlaps the server's fork.
 *   0  refused before any fork: nothing was started, the old path may
 *      run it (*pidfd -1);
 *   1  *stage, *e as local_spawn_report says them (0: exec'd, EXEC: the
 *      execve failed and the process exits 127); *pidfd the process and
 *      *hostpid its pid in our namespace when one was forked, else -1.
 * A server that took the request and died before answering is a failed
 * start (SETNS, ECONNRESET): the process may have run, and the old path
 * could run it twice.  A process that was forked but cannot be named
 * here (not expected: it is not reaped before it is adopted) is killed,
 * a failed start too (SETNS, ESRCH). */
static inline int local_forkd_reply_read(int c, int *stage, int *e, int *pidfd, pid_t *hostpid)
{
	struct local_forkd_reply rep = {0};
	struct iovec iov = {&rep, sizeof(rep)};
	size_t nfd = 0;
	*pidfd = -1;
	*hostpid = -1;
	ssize_t got = sbx_fds_recv(c, &iov, 1, pidfd, 1, &nfd, 0);
	if (nfd == 0)
		*pidfd = -1;
	if (got == (ssize_t)sizeof(rep) && (rep.stage == LOCAL_FORKD_STAGE_REFUSED || *pidfd < 0)) {
		/* refused before any fork (a fork is always answered with
		 * its pidfd) */
		if (*pidfd >= 0)
			close(*pidfd);
		*pidfd = -1;
		return 0;
	}
	if (got != (ssize_t)sizeof(rep)) {
		if (*pidfd >= 0)
			close(*pidfd);
		*pidfd = -1;
		*stage = LOCAL_FORKD_STAGE_SETNS;
		*e = ECONNRESET;
		return 1;
	}
	*stage = rep.stage;
	*e = rep.err;
	*hostpid = local_pidfd_pid(*pidfd);
	if (*hostpid <= 0 && (rep.stage == 0 || rep.stage == LOCAL_FORKD_STAGE_EXEC)) {
		syscall(SYS_pidfd_send_signal, *pidfd, SIGKILL, NULL, 0);
		*stage = LOCAL_FORKD_STAGE_SETNS;
		*e = ESRCH;
	}
	return 1;
}

#endif
