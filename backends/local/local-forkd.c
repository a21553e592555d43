/* local-forkd.c - the library's side of a local sandbox's fork server:
 * find it (or start it), send one start, read how it went (contract in
 * local-forkd.h; the wire in local-forkd-proto.h).
 *
 * Promises:
 *  - The server is started at most once at a time per sandbox (an flock
 *    on <dir>/forkd.lock), through the old path, into `work`, as root
 *    with the sandbox root's capabilities, without the seccomp filter
 *    (it forks with clone3, which the filter refuses; it runs no code
 *    but its own, and installs the filter in every process it forks).
 *  - It is orphaned at once (forked from a throwaway child), so no
 *    caller of ours is left with a zombie of it; it ends with the
 *    sandbox: the pid namespace's end, remove's cgroup.kill, a reap.
 *  - Any failure here means "take the old path": a start is never lost
 *    to the server being gone or killed -9 half-way (the connect is
 *    refused once its listening socket is gone with it). */
#include "local-forkd.h"
#include "local-forkd-proto.h"
#include "local-init.h"
#include "local-cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdpass.h"
#include "util.h"

_Static_assert(LOCAL_FORKD_STAGE_CGROUP == LOCAL_STAGE_CGROUP &&
		       LOCAL_FORKD_STAGE_SETNS == LOCAL_STAGE_SETNS &&
		       LOCAL_FORKD_STAGE_CWD == LOCAL_STAGE_CWD &&
		       LOCAL_FORKD_STAGE_PRIV == LOCAL_STAGE_PRIV &&
		       LOCAL_FORKD_STAGE_EXEC == LOCAL_STAGE_EXEC,
	       "the fork server's stages are the spawn's");

static int disabled(void)
{
	const char *v = getenv("SBX_LOCAL_FORKD");
	return v && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0);
}

/* <dir>/forkd.sock as an address; through /proc/self/fd when the path
 * would not fit in sun_path. */
static int sock_addr(int dirfd, const char *dir, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	int n = snprintf(a->sun_path, sizeof(a->sun_path), "%s/forkd.sock", dir);
	if (n > 0 && (size_t)n < sizeof(a->sun_path))
		return 0;
	n = snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/forkd.sock", dirfd);
	return n > 0 && (size_t)n < sizeof(a->sun_path) ? 0 : -1;
}

static int try_connect(const struct sockaddr_un *a)
{
	int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -1;
	if (connect(c, (const struct sockaddr *)a, sizeof(*a)) < 0) {
		close(c);
		return -1;
	}
	return c;
}

/* Start the server of sandbox `id` listening at `a`: 0 once it exec'd. */
static int spawn_server(const char *id, const struct local_rec *r, const struct local_spawn *sp,
			const struct sockaddr_un *a)
{
	struct sbx_err err = {0};
	SBX_AUTOCLOSE int exe = local_libexec_open("sbx-forkd", "exec", &err);
	SBX_AUTOCLOSE int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	SBX_AUTOCLOSE int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (exe < 0 || nul < 0 || lfd < 0)
		return -1;
	unlink(a->sun_path);
	if (bind(lfd, (const struct sockaddr *)a, sizeof(*a)) < 0 || listen(lfd, 64) < 0)
		return -1;
	SBX_AUTOFREE char *work = sbx_xasprintf("%s/work", r->cg[CG_V2]);
	char *argv[] = {"sbx-forkd", NULL};
	struct local_cmd cmd = {.argv = argv, .cwd = "/", .as_root = 1};
	struct local_spawn fs;
	if (local_spawn_prepare(id, r, sp->pidfd, sp->init, work, &cmd, &fs, &err) < 0) {
		local_spawn_free(&fs);
		return -1;
	}
	fs.exe = exe;
	fs.no_filter = 1;
	fs.in = lfd;
	fs.out = fs.errfd = nul;
	pid_t mid = fork();
	if (mid == 0) {
		pid_t c = local_spawn_fork(&fs, 0);
		_exit(c < 0 ? 1 : 0);
	}
	int st = 0, stage = -1, e = 0;
	if (mid > 0 && waitpid(mid, &st, 0) == mid && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		local_closep(&fs.report[1]);
		stage = local_spawn_report(&fs, &e);
	}
	local_spawn_free(&fs);
	return stage == 0 ? 0 : -1;
}

/* A connection to the server, starting it when none answers; -1 when
 * none can be had. */
static int server_conn(const char *id, const struct local_rec *r, const struct local_spawn *sp)
{
	SBX_AUTOCLOSE int dirfd = open(r->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct sockaddr_un a;
	if (dirfd < 0 || sock_addr(dirfd, r->dir, &a) < 0)
		return -1;
	int c = try_connect(&a);
	if (c >= 0)
		return c;
	SBX_AUTOFREE char *lockp = sbx_xasprintf("%s/forkd.lock", r->dir);
	SBX_AUTOCLOSE int lock = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0)
		return -1;
	/* Someone may have started it while we waited for the lock. */
	if ((c = try_connect(&a)) >= 0)
		return c;
	if (spawn_server(id, r, sp, &a) < 0)
		return -1;
	return try_connect(&a);
}

/* The request's strings: cwd, argv, env, each NUL-ended.  0 when they
 * do not fit the wire. */
static size_t pack(const struct local_spawn *s, char *buf, size_t cap, uint32_t *argc,
		   uint32_t *envc)
{
	size_t n = 0;
	*argc = *envc = 0;
	const char *cwd = s->cwd;
	size_t l = strlen(cwd) + 1;
	if (l > cap)
		return 0;
	memcpy(buf, cwd, l);
	n = l;
	for (int pass = 0; pass < 2; pass++) {
		char *const *v = pass == 0 ? s->argv : s->envp;
		for (; v && *v; v++) {
			l = strlen(*v) + 1;
			if (n + l > cap || *argc + *envc >= LOCAL_FORKD_ARGS_MAX)
				return 0;
			memcpy(buf + n, *v, l);
			n += l;
			if (pass == 0)
				(*argc)++;
			else
				(*envc)++;
		}
	}
	return n;
}

int local_forkd_send(const char *id, const struct local_rec *r, const struct local_spawn *s)
{
	size_t flen = (size_t)s->filter.len * 8;
	if (disabled() || !s->filter.insns || flen == 0 || flen > LOCAL_FORKD_FILT_MAX)
		return -1;
	SBX_AUTOFREE char *buf = sbx_xmalloc(LOCAL_FORKD_STR_MAX + LOCAL_FORKD_FILT_MAX);
	struct local_forkd_req h = {.magic = LOCAL_FORKD_MAGIC, .version = LOCAL_FORKD_VERSION,
				    .as_root = (uint32_t)!!s->as_root};
	size_t len = pack(s, buf, LOCAL_FORKD_STR_MAX, &h.argc, &h.envc);
	if (len == 0 || h.argc == 0)
		return -1;
	memcpy(buf + len, s->filter.insns, flen);
	h.len = (uint32_t)len;
	h.flen = (uint32_t)flen;
	int c = server_conn(id, r, s);
	if (c < 0)
		return -1;
	struct iovec iov[2] = {{&h, sizeof(h)}, {buf, len + flen}};
	int fds[LOCAL_FORKD_NFDS] = {s->in, s->out, s->errfd, s->cg_dir};
	if (sbx_fds_send(c, iov, 2, fds, LOCAL_FORKD_NFDS, 0) != (ssize_t)(sizeof(h) + len + flen)) {
		close(c);
		return -1;
	}
	return c;
}

int local_forkd_start(const char *id, const struct local_rec *r, struct local_spawn *s,
		      struct local_forkd_proc *p, int *stage, int *e)
{
	memset(p, 0, sizeof(*p));
	p->conn = p->pidfd = -1;
	int c = local_forkd_send(id, r, s);
	if (c < 0)
		return 0;
	if (local_forkd_reply_read(c, stage, e, &p->pidfd, &p->hostpid) == 0) {
		close(c);
		return 0;
	}
	p->conn = c;
	return 1;
}

void local_forkd_adopt(const struct local_forkd_proc *p)
{
	char a = LOCAL_FORKD_ADOPTED;
	(void)!send(p->conn, &a, 1, MSG_NOSIGNAL);
}

int local_forkd_status(const struct local_forkd_proc *p, int *status)
{
	int32_t st;
	ssize_t n;
	do
		n = recv(p->conn, &st, sizeof(st), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(st))
		return 0;
	*status = st;
	return 1;
}

void local_forkd_close(struct local_forkd_proc *p)
{
	local_closep(&p->conn);
	local_closep(&p->pidfd);
}
