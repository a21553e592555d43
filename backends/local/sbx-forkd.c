/* sbx-forkd - the fork server of one local sandbox (the library side is
 * backends/local/local-forkd.c; the wire is local-forkd-proto.h).
 *
 * It already sits where every process of the sandbox must go: its
 * namespaces, its v1 cgroups and `work`.  A start is then a request over
 * a unix socket and a fork from here, where the old path moved each new
 * process into the v1 cgroups, a write to cgroup.procs that waits for an
 * RCU grace period (docs/design.md, "The fork server").
 *
 * Promises:
 *  - Only the host asks: the listening socket is bound outside the
 *    sandbox's view, and a peer whose pid this pid namespace can see is
 *    refused.
 *  - What it forks is what the old path makes (local-spawn.c): born in
 *    the cgroup2 group it is handed (clone3), its own session, its stdio
 *    and nothing else of ours, uid 1000 (or root with the sandbox root's
 *    capabilities), no_new_privs, the sandbox's seccomp filter last before
 *    execve.
 *  - It holds no host fd beyond its listening socket: a request's fds are
 *    closed once its process is forked.  Not dumpable, so nothing in the
 *    sandbox reads its memory or fds.
 *  - One handler process per start (a fork of the server): it forks the
 *    process, reports, waits for it and sends its wait status, so a slow
 *    start never holds up the next.  libc only, static. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdpass.h"
#include "local-forkd-proto.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#define SANDBOX_UID 1000

static struct {
	struct local_forkd_req h;
	char buf[LOCAL_FORKD_STR_MAX + LOCAL_FORKD_FILT_MAX];
} M;
static char *argv_v[LOCAL_FORKD_ARGS_MAX + 2], *env_v[LOCAL_FORKD_ARGS_MAX + 2];

struct start {
	int fds[LOCAL_FORKD_NFDS];   /* stdin, stdout, stderr, cgroup dir */
	const char *cwd;
	struct sock_fprog prog;
	int report[2];
};

static __attribute__((noreturn)) void child_fail(const struct start *s, int stage)
{
	int msg[2] = {stage, errno};
	(void)!write(s->report[1], msg, sizeof(msg));
	_exit(127);
}

/* The process, between the fork and execve (as local-spawn.c's
 * child_main, minus what the server did once: namespaces, v1 cgroups,
 * the capability bounding set, no_new_privs). */
static __attribute__((noreturn)) void child_main(const struct start *s)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	if (dup2(s->fds[0], 0) < 0 || dup2(s->fds[1], 1) < 0 || dup2(s->fds[2], 2) < 0)
		child_fail(s, LOCAL_FORKD_STAGE_SETNS);
	setsid();
	int rep = s->report[1];
	if (rep > 3)
		syscall(SYS_close_range, 3, rep - 1, 0);
	syscall(SYS_close_range, rep + 1, ~0U, 0);
	if (!M.h.as_root) {
		gid_t g = SANDBOX_UID;
		if (setgroups(1, &g) < 0 || setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0 ||
		    setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0)
			child_fail(s, LOCAL_FORKD_STAGE_PRIV);
	}
	if (chdir(s->cwd) < 0)
		child_fail(s, LOCAL_FORKD_STAGE_CWD);
	extern char **environ;
	environ = env_v;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &s->prog) < 0)
		child_fail(s, LOCAL_FORKD_STAGE_PRIV);
	execvp(argv_v[0], argv_v);
	child_fail(s, LOCAL_FORKD_STAGE_EXEC);
}

/* The request's strings into argv_v and env_v; -1 when malformed. */
static int parse(ssize_t got, struct start *s)
{
	const struct local_forkd_req *h = &M.h;
	if (got < (ssize_t)sizeof(*h) || h->magic != LOCAL_FORKD_MAGIC ||
	    h->version != LOCAL_FORKD_VERSION || h->len > LOCAL_FORKD_STR_MAX ||
	    h->flen > LOCAL_FORKD_FILT_MAX || h->flen == 0 || h->flen % sizeof(struct sock_filter) ||
	    h->argc == 0 || h->argc + h->envc > LOCAL_FORKD_ARGS_MAX ||
	    (size_t)got != sizeof(*h) + h->len + h->flen)
		return -1;
	char *p = M.buf, *end = M.buf + h->len;
	size_t want = 1 + h->argc + h->envc, k = 0;
	while (p < end && k < want) {
		char *z = memchr(p, '\0', (size_t)(end - p));
		if (!z)
			return -1;
		if (k == 0)
			s->cwd = p;
		else if (k <= h->argc)
			argv_v[k - 1] = p;
		else
			env_v[k - 1 - h->argc] = p;
		k++;
		p = z + 1;
	}
	if (k != want || p != end || s->cwd[0] != '/' || !argv_v[0][0])
		return -1;
	argv_v[h->argc] = NULL;
	env_v[h->envc] = NULL;
	s->prog.len = (unsigned short)(h->flen / sizeof(struct sock_filter));
	s->prog.filter = (struct sock_filter *)(void *)(M.buf + h->len);
	return 0;
}

static void reply(int c, int stage, int e, int nspid, int pidfd)
{
	struct local_forkd_reply r = {stage, e, nspid};
	struct iovec iov = {&r, sizeof(r)};
	(void)sbx_fds_send(c, &iov, 1, &pidfd, pidfd >= 0 ? 1 : 0, 0);
}

/* Fork straight into the cgroup2 group open as `cg`. */
static pid_t clone_into(int cg)
{
	struct clone_args a;
	memset(&a, 0, sizeof(a));
	a.flags = CLONE_INTO_CGROUP;
	a.exit_signal = SIGCHLD;
	a.cgroup = (uint64_t)cg;
	return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
}

/* One start, in the handler; never returns. */
static __attribute__((noreturn)) void handle(int c)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigaction(SIGCHLD, &dfl, NULL);   /* the handler reaps its process */
	struct start s = {.fds = {-1, -1, -1, -1}, .report = {-1, -1}};
	struct iovec iov = {&M, sizeof(M)};
	union {
		char b[CMSG_SPACE(sizeof(int) * LOCAL_FORKD_NFDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			    .msg_controllen = sizeof(u.b)};
	ssize_t got;
	do
		got = recvmsg(c, &mh, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	int nfds = 0;
	for (struct cmsghdr *cm = got > 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			int n = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int i = 0; i < n; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (nfds < LOCAL_FORKD_NFDS)
					s.fds[nfds++] = fd;
				else
					close(fd);
			}
		}
	if (nfds != LOCAL_FORKD_NFDS || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || parse(got, &s) < 0 ||
	    pipe2(s.report, O_CLOEXEC) < 0) {
		reply(c, LOCAL_FORKD_STAGE_REFUSED, EINVAL, 0, -1);
		_exit(0);
	}
	pid_t child = clone_into(s.fds[3]);
	if (child == 0)
		child_main(&s);
	int fork_errno = errno;
	for (int i = 0; i < LOCAL_FORKD_NFDS; i++)
		close(s.fds[i]);
	close(s.report[1]);
	if (child < 0) {
		reply(c, LOCAL_FORKD_STAGE_REFUSED, fork_errno, 0, -1);
		_exit(0);
	}
	int msg[2] = {0, 0};
	ssize_t n;
	do
		n = read(s.report[0], msg, sizeof(msg));
	while (n < 0 && errno == EINTR);
	int stage = n == (ssize_t)sizeof(msg) ? msg[0] : 0;
	int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	reply(c, stage, msg[1], child, pidfd);
	int adopted = 0, linked = 1, status = 0;
	while (pidfd >= 0) {
		/* Not reaped before it is adopted: until then its /proc
		 * entry (start time, NSpid) stays for whoever takes it. */
		struct pollfd pf[2] = {{.fd = adopted || !linked ? pidfd : -1, .events = POLLIN},
				       {.fd = linked ? c : -1, .events = POLLIN}};
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[0].revents)
			break;
		if (pf[1].revents) {
			char b = 0;
			ssize_t r = read(c, &b, 1);
			if (r == 1 && b == LOCAL_FORKD_ADOPTED) {
				adopted = 1;
				continue;
			}
			if (r < 0 && errno == EINTR)
				continue;
			/* The start died before anyone took the process. */
			if (!adopted)
				kill(child, SIGKILL);
			linked = 0;
		}
	}
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	int32_t st = status;
	if (linked)
		(void)!send(c, &st, sizeof(st), MSG_NOSIGNAL);
	_exit(0);
}

int main(void)
{
	prctl(PR_SET_NAME, "sbx-forkd", 0, 0, 0);
	/* exec made us dumpable again: we hold the listening socket. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	struct sigaction ign = {.sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT};
	sigaction(SIGCHLD, &ign, NULL);   /* handlers are reaped by the kernel */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	int lfd = fcntl(0, F_DUPFD_CLOEXEC, 3);
	if (lfd < 0)
		return 64;
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, 0);
		close(nul);
	}
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				usleep(10000);   /* the library falls back meanwhile */
				continue;
			}
			return 70;
		}
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		/* A peer in (or below) our pid namespace is in the sandbox. */
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.pid != 0) {
			close(c);
			continue;
		}
		pid_t h = fork();
		if (h == 0) {
			close(lfd);
			handle(c);
		}
		close(c);
	}
}
