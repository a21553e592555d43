/* local-proc-start.c - start a detached process in a local sandbox: the
 * vtable's proc_start.
 *
 * The caller sends the start to the sandbox's fork server (local-forkd.h)
 * and at once forks twice; the grandchild, born in the sandbox's top
 * cgroup, execs sbx-procd, which reads the server's reply and supervises
 * the process the server forked; so the launch runs while the server
 * forks, off the start's path.  Where the server does not take the start
 * (a terminal, SBX_LOCAL_FORKD=0, gone, refused) the grandchild forks the
 * process into the sandbox itself (local-spawn.c) before the exec, and
 * sbx-procd is its parent (the files and fds are local-procd.h's
 * contract).  Nothing of the caller's memory
 * outlives the call: the supervisor is a fresh exec of a libc-only
 * program, and between the forks and that exec nothing allocates (the
 * caller may be a threaded server).
 *
 * Promises:
 *  - When proc_start returns 0 the process runs (or already ran) under
 *    its supervisor and is listed under its pid.
 *  - A cwd that does not exist, or any failure to enter the sandbox, is
 *    an error and leaves no process and no record.
 *  - A caller killed at any point leaves no process, or a supervised one
 *    whose record is complete (the supervisor names the record itself);
 *    what is left of a start that died before its fork is a .new-* dir
 *    that a later start removes.
 *  - Starts in one sandbox are serialised (procs/.lock), so a tag is
 *    never taken twice by running processes.
 *  - A sandbox keeps the records of at least its 64 latest exited
 *    processes (and of every running one); once it holds more than 128
 *    records, the next start removes the oldest exited ones down to 64.
 *    A start reads only the directory, not every record, unless it has a
 *    tag to check or records to remove: loading 65 records was 3 ms of
 *    each start (sbx-serve's commands.run starts one per call).
 *  - Records are recycled, not deleted: a pruned record (an exited
 *    process's, whose supervisor wrote its last state) becomes a spare
 *    folder, .free-<hex>, at most KEEP_EXITED of them, and a start takes one
 *    (renamed to its .new-<hex>, its output files and FIFOs removed,
 *    proc.json rewritten in place) before it makes a new one.  With the
 *    state's two files swapped, not replaced (sbx-procd), and output
 *    files made at the first byte, a start of a quiet command makes no
 *    inode: on this host's journal-less ext4 each new inode steps over
 *    every inode deleted in the last half minute or so (the kernel's
 *    recently_deleted check), 0.2-0.5 ms each with a record's ~7 files
 *    made and deleted per start (docs/local.md). */
#include "local-proc-start.h"
#include "local-proc.h"
#include "local-procd.h"
#include "local-init.h"
#include "local-cgroup.h"
#include "local-clone.h"
#include "local-forkd.h"
#include "local-forkd-proto.h"
#include "local-spawn.h"
#include "local-state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "doc.h"
#include "fault.h"
#include "proc.h"
#include "util.h"

#define STALE_NEW_SECONDS 60
#define TAG_MAX 256
/* Exited processes whose record (output, status) a sandbox keeps, and
 * the number of records past which a start removes the older ones. */
#define KEEP_EXITED 64
#define PRUNE_PAST (2 * KEEP_EXITED)

/* The spare folders (.free-*) a look at procs/ found. */
struct spares {
	size_t n;
	char take[64];               /* one of them, "" when none */
};

struct pstart {
	struct local_spawn sp;
	int out[2], err[2], status[2];
	int fifo_r, keeper, nul, topcg, topdir, exe, procs, killfd;
	int born_top;                /* the supervisor was born in topdir */
	int fkconn;                  /* >= 0: the fork server has the start; its
				      * reply is the supervisor's to read */
	char name[32];               /* .new-<hex> */
	char *dir, *xcg;
	char argv_buf[5][32];        /* the supervisor's argv, but HOSTPID */
	char line[256];              /* read from the status pipe, not yet taken */
	size_t nline;
};

static void ps_init(struct pstart *s)
{
	memset(s, 0, sizeof(*s));
	s->out[0] = s->out[1] = s->err[0] = s->err[1] = s->status[0] = s->status[1] = -1;
	s->fifo_r = s->keeper = s->nul = s->topcg = s->topdir = s->exe = s->procs = s->killfd = -1;
	s->fkconn = -1;
	s->sp.selfns = s->sp.report[0] = s->sp.report[1] = s->sp.cg_dir = -1;
	s->sp.tty_sock[0] = s->sp.tty_sock[1] = -1;
	for (int i = 0; i < LOCAL_NCG; i++)
		s->sp.cg_fds[i] = -1;
}

static void ps_free(struct pstart *s)
{
	int *fds[] = {&s->out[0], &s->out[1], &s->err[0], &s->err[1], &s->status[0],
		      &s->status[1], &s->fifo_r, &s->keeper, &s->nul, &s->topcg, &s->topdir, &s->exe,
		      &s->procs, &s->killfd, &s->fkconn};
	for (size_t i = 0; i < SBX_ARRAY_LEN(fds); i++)
		local_closep(fds[i]);
	local_spawn_free(&s->sp);
	free(s->dir);
	free(s->xcg);
}

/* .new-* dirs of starts that died before their fork (older than a
 * minute: a live start holds the lock while its dir is young) are
 * removed, and spare folders past KEEP_EXITED; returns the number of
 * records (names of digits) there are, the spares left in *sp. */
static size_t remove_stale_new(const char *procs, struct spares *sp)
{
	DIR *d = opendir(procs);
	struct dirent *e;
	size_t records = 0;
	sp->n = 0;
	sp->take[0] = '\0';
	while (d && (e = readdir(d))) {
		struct stat st;
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			records++;
		if (strncmp(e->d_name, ".free-", 6) == 0 && sp->n < KEEP_EXITED) {
			if (sp->n++ == 0)
				snprintf(sp->take, sizeof(sp->take), "%s", e->d_name);
			continue;
		}
		if (strncmp(e->d_name, ".free-", 6) == 0) {
			SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", procs, e->d_name);
			struct sbx_err e2 = {0};
			sbx_rm_rf(p, &e2);
			continue;
		}
		if (strncmp(e->d_name, ".new-", 5) != 0 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_mtime > time(NULL) - STALE_NEW_SECONDS)
			continue;
		SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", procs, e->d_name);
		struct sbx_err e2 = {0};
		sbx_rm_rf(p, &e2);
	}
	if (d)
		closedir(d);
	return records;
}

/* A pruned record becomes a spare folder while there are fewer than
 * KEEP_EXITED; else it is removed. */
static void retire(const char *procs, const char *dir, struct spares *sp)
{
	char hex[13];
	struct sbx_err e2 = {0};
	if (sp->n < KEEP_EXITED && sbx_random_hex(hex, 6, &e2) == 0) {
		char name[32];
		snprintf(name, sizeof(name), ".free-%s", hex);
		SBX_AUTOFREE char *to = sbx_xasprintf("%s/%s", procs, name);
		if (rename(dir, to) == 0) {
			if (sp->n++ == 0)
				snprintf(sp->take, sizeof(sp->take), "%s", name);
			return;
		}
	}
	sbx_rm_rf(dir, &e2);
}

/* Under procs/.lock: the leftovers of dead starts go; past PRUNE_PAST
 * records, those of exited processes beyond the newest KEEP_EXITED go
 * (oldest first) to the spares; a tag held by a running process is
 * refused. */
static int under_lock(const char *procs, const char *tag, struct spares *sp, struct sbx_err *err)
{
	if (remove_stale_new(procs, sp) <= PRUNE_PAST && !tag)
		return 0;
	struct local_prec *all;
	size_t n, exited = 0;
	if (local_prec_list(procs, &all, &n, err) < 0)
		return -1;
	for (size_t k = 0; k < n; k++)
		exited += !all[k].i.running;
	int rc = 0;
	for (size_t k = 0; k < n; k++) {
		if (!all[k].i.running && exited > KEEP_EXITED) {
			retire(procs, all[k].dir, sp);
			exited--;
		} else if (rc == 0 && tag && all[k].i.running && all[k].i.tag &&
			   strcmp(all[k].i.tag, tag) == 0) {
			rc = sbx_fail(err, SBX_CONFLICT, "proc", "tag %s is taken by process %d", tag,
				      all[k].i.pid);
		}
	}
	local_precs_free(all, n);
	return rc;
}

/* A spare folder made ready as s->dir: what a record has beyond
 * proc.json, state and .state (which the start and the supervisor
 * rewrite) goes, and its mtime is now's (a young .new-* dir is a live
 * start's, remove_stale_new).  0, or -1 when there is none to take. */
static int take_spare(struct pstart *s, const char *procs, const struct spares *sp)
{
	if (!sp->take[0])
		return -1;
	SBX_AUTOFREE char *from = sbx_xasprintf("%s/%s", procs, sp->take);
	if (rename(from, s->dir) < 0)
		return -1;
	static const char *const extra[] = {"out", "err", "stdin", "stdin.closed",
					    LOCAL_PROC_WINSIZE, LOCAL_PROC_ATTACH};
	SBX_AUTOCLOSE int d = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return -1;   /* a start that dies here leaves a .new-* dir: stale later */
	for (size_t i = 0; i < SBX_ARRAY_LEN(extra); i++)
		unlinkat(d, extra[i], 0);
	futimens(d, NULL);
	return 0;
}

/* procs/.new-<hex>/ (a spare folder, or a new one) with proc.json: what
 * was asked (env names only).  Written in place, not synced: a .new-* dir
 * is no record until the supervisor renames it (after this write is
 * whole), a dead start's is removed as stale, and no record outlives the
 * machine's processes, so neither a tmp + rename (a new inode, and the
 * old one freed) nor an fsync (a few ms here) buys anything. */
static int write_request(struct pstart *s, const char *procs, const struct sbx_proc_req *req,
			 const struct spares *sp, struct sbx_err *err)
{
	char hex[13];
	if (sbx_random_hex(hex, 6, err) < 0)
		return -1;
	snprintf(s->name, sizeof(s->name), ".new-%s", hex);
	s->dir = sbx_xasprintf("%s/%s", procs, s->name);
	if (take_spare(s, procs, sp) < 0 && mkdir(s->dir, 0700) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "mkdir %s", s->dir);
	json_object *j = sbx_proc_record(req);
	size_t n;
	const char *txt = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN, &n);
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/proc.json", s->dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc = fd >= 0 && sbx_write_all(fd, txt, n) == 0 && sbx_write_all(fd, "\n", 1) == 0 ? 0 : -1;
	if (fd >= 0 && close(fd) < 0)
		rc = -1;
	json_object_put(j);
	if (rc < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "write %s", path);
	return 0;
}

/* The stdio of the process: pipes to the supervisor, stdin a FIFO in the
 * record (or /dev/null), and the timeout's own cgroup.  (They become the
 * spawn's stdio once it is prepared.) */
static int open_stdio(struct pstart *s, const struct local_rec *r, const struct sbx_proc_req *req,
		      struct sbx_err *err)
{
	s->nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (s->nul < 0 || pipe2(s->out, O_CLOEXEC) < 0 || pipe2(s->err, O_CLOEXEC) < 0 ||
	    pipe2(s->status, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "pipe");
	if (req->tty) {
		SBX_AUTOFREE char *wz = sbx_xasprintf("%s/" LOCAL_PROC_WINSIZE, s->dir);
		SBX_AUTOFREE char *at = sbx_xasprintf("%s/" LOCAL_PROC_ATTACH, s->dir);
		int afd = open(at, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (mkfifo(wz, 0600) < 0 || afd < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "proc", "terminal files");
		close(afd);
	}
	if (req->keep_stdin || req->tty) {
		SBX_AUTOFREE char *fifo = sbx_xasprintf("%s/stdin", s->dir);
		if (mkfifo(fifo, 0600) < 0 ||
		    (s->fifo_r = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
		    (s->keeper = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
		    fcntl(s->fifo_r, F_SETFL, 0) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "proc", "stdin fifo");
	}
	s->topcg = local_open_wr(r->cg[CG_V2], "cgroup.procs");
	s->topdir = open(r->cg[CG_V2], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->topcg < 0 || s->topdir < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "open %s", r->cg[CG_V2]);
	if (req->timeout_ms > 0) {
		/* our earlier starts' groups whose processes have ended */
		SBX_AUTOFREE char *work = sbx_xasprintf("%s/work", r->cg[CG_V2]);
		local_cg_sweep_x(work, 1);
		char hex[17];
		if (sbx_random_hex(hex, 8, err) < 0)
			return -1;
		/* x-<our pid>-*: exec's cleanup removes it once it is empty
		 * and we are gone (local-exec.c). */
		s->xcg = sbx_xasprintf("%s/work/x-%d-p%s", r->cg[CG_V2], (int)getpid(), hex);
		if (mkdir(s->xcg, 0755) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "proc", "mkdir %s", s->xcg);
		s->killfd = local_open_wr(s->xcg, "cgroup.kill");
	}
	return 0;
}

static void utoa(char *buf, size_t n, long v)
{
	char tmp[24];
	size_t k = 0;
	do
		tmp[k++] = (char)('0' + v % 10);
	while ((v /= 10) > 0 && k < sizeof(tmp));
	size_t i = 0;
	while (k > 0 && i + 1 < n)
		buf[i++] = tmp[--k];
	buf[i] = '\0';
}

/* In the grandchild: join the sandbox's top cgroup (unless born in it),
 * fork the process into the sandbox, become sbx-procd.  No allocation,
 * no return. */
static __attribute__((noreturn)) void become_supervisor(struct pstart *s)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigaction(SIGCHLD, &dfl, NULL);   /* an ignored SIGCHLD would reap it */
	if (!s->born_top && write(s->topcg, "0", 1) < 0)
		_exit(126);
	/* Being forked by the fork server (the supervisor reads which
	 * process from its reply), or now by us. */
	pid_t c = s->fkconn >= 0 ? 0 : local_spawn_fork(&s->sp, 0);
	if (c < 0)
		_exit(125);
	char hostpid[24];
	utoa(hostpid, sizeof(hostpid), c);
	char *argv[] = {"sbx-procd", s->name, hostpid, s->argv_buf[0], s->argv_buf[1],
			s->argv_buf[2], NULL};
	static char *const envp[] = {NULL};
	int want[] = {s->status[1], s->procs, s->sp.tty ? s->sp.tty_sock[0] : s->out[0], s->err[0],
		      s->keeper >= 0 ? s->keeper : s->nul, s->killfd >= 0 ? s->killfd : s->nul,
		      s->fkconn >= 0 ? s->fkconn : s->nul};
	int hi[SBX_ARRAY_LEN(want)];
	int e = fcntl(s->exe, F_DUPFD_CLOEXEC, 20), n = fcntl(s->nul, F_DUPFD_CLOEXEC, 20);
	for (size_t i = 0; i < SBX_ARRAY_LEN(want); i++)
		if ((hi[i] = fcntl(want[i], F_DUPFD_CLOEXEC, 20)) < 0)
			_exit(124);
	if (e < 0 || n < 0 || dup2(n, 0) < 0 || dup2(n, 1) < 0 || dup2(n, 2) < 0)
		_exit(124);
	for (size_t i = 0; i < SBX_ARRAY_LEN(want); i++)
		if (dup2(hi[i], LOCAL_PROC_FD_STATUS + (int)i) < 0)
			_exit(124);
	/* Nothing else of the caller's (a pipeline's pipe, a file it held
	 * without O_CLOEXEC) lives on in the supervisor. */
	if (e > LOCAL_PROC_FD_FORKD + 1)
		syscall(SYS_close_range, LOCAL_PROC_FD_FORKD + 1, e - 1, 0);
	syscall(SYS_close_range, e + 1, ~0U, 0);
	fexecve(e, argv, envp);
	_exit(127);
}

/* The supervisor's next line on the status pipe ("F <stage> <errno>",
 * "P <pid> <hostpid> <start>"), NUL-ended without its newline; -1 when
 * it closed the pipe first (it died, or failed to set up) or 10 s went
 * by.  What came after the line stays in s->line for the next call. */
static int next_line(struct pstart *s, char *out, size_t cap)
{
	int64_t deadline = sbx_mono_ms() + 10000;
	char *nl;
	while (!(nl = memchr(s->line, '\n', s->nline)) && s->nline < sizeof(s->line)) {
		int64_t left = deadline - sbx_mono_ms();
		struct pollfd pf = {.fd = s->status[0], .events = POLLIN};
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return -1;
		ssize_t n = read(s->status[0], s->line + s->nline, sizeof(s->line) - s->nline);
		if (n <= 0)
			return -1;
		s->nline += (size_t)n;
	}
	if (!nl)
		return -1;
	size_t len = (size_t)(nl - s->line);
	snprintf(out, cap, "%.*s", (int)len, s->line);
	s->nline -= len + 1;
	memmove(s->line, nl + 1, s->nline);
	return 0;
}

/* The supervisor's flags (local-procd.h). */
static void set_flags(struct pstart *s, const struct sbx_proc_req *req)
{
	int keep = req->keep_stdin || req->tty;
	snprintf(s->argv_buf[2], sizeof(s->argv_buf[2]), "%s%s%s%s%s", keep ? "s" : "",
		 s->killfd >= 0 ? "k" : "", s->fkconn >= 0 ? "f" : "", req->tty ? "t" : "",
		 s->fkconn >= 0 && sbx_fault_on("procd:before-reply") ? "X" : "");
	if (!s->argv_buf[2][0])
		snprintf(s->argv_buf[2], sizeof(s->argv_buf[2]), "-");
}

/* Fork twice: the grandchild becomes the supervisor, nobody's child of
 * ours.  0, or -1 when the first fork failed (a later failure shows as
 * a supervisor that never writes).  The first is a vfork: the middle
 * child only calls setsid and clone (raw system calls: no libc state
 * of ours is touched, as glibc's fork would with its handlers) and
 * exits, so it needs no copy of the caller's memory, which a fork made
 * for nothing (a third of the worker's CPU per start went to copying
 * page tables twice, perf); the grandchild is a real copy, as before.
 * Its one write to *s (born_top) is read only by the grandchild, which
 * copies it after the write. */
static int spawn_supervisor(struct pstart *s, struct sbx_err *err)
{
	pid_t mid = vfork();
	if (mid < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "fork");
	if (mid == 0) {
		setsid();
		/* Born in the sandbox's top cgroup where the kernel can: a
		 * write to cgroup.procs waits for an RCU grace period (10 ms
		 * and more here, most of a start; local-clone.h). */
		s->born_top = 1;
		pid_t g = local_clone_into_cgroup(s->topdir);
		if (g < 0) {
			s->born_top = 0;
			g = (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);
		}
		if (g == 0)
			become_supervisor(s);
		_exit(g < 0 ? 1 : 0);
	}
	int st = 0;
	waitpid(mid, &st, 0);
	return 0;
}

/* A start the fork server took, its supervisor launched while the server
 * forks: the supervisor's "F" line says how the fork went.  0 when the
 * process runs (*stage 0) or "ran" (*stage LOCAL_STAGE_EXEC); 1 when the
 * server refused it before any fork (the caller takes the old path: a
 * fresh status pipe is ready); -1 when it failed (nothing is left: the
 * process never got in, or its end came with the supervisor's, whose
 * connection the server then saw close before the adoption). */
static int forkd_outcome(struct pstart *s, const char *id, int *stage, int *e,
			 struct sbx_err *err)
{
	char l[128];
	if (next_line(s, l, sizeof(l)) < 0 || sscanf(l, "F %d %d", stage, e) != 2) {
		struct sbx_err e2 = {0};
		sbx_rm_rf(s->dir, &e2);
		return sbx_fail(err, SBX_INTERNAL, "proc", "the process supervisor did not start");
	}
	if (*stage == LOCAL_FORKD_STAGE_REFUSED) {
		local_closep(&s->status[0]);
		s->nline = 0;
		if (pipe2(s->status, O_CLOEXEC) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "proc", "pipe");
		return 1;
	}
	if (*stage == 0 || *stage == LOCAL_STAGE_EXEC)
		return 0;
	struct sbx_err e2 = {0};
	sbx_rm_rf(s->dir, &e2);
	errno = *e;
	if (*stage == LOCAL_STAGE_CWD)
		return sbx_fail_errno(err, SBX_INVALID_REQUEST, "proc", "cwd %s", s->sp.cwd);
	return local_spawn_fail(s->sp.pidfd, s->sp.init, id, "proc", err,
				"enter sandbox %s (step %d)", id, *stage);
}

/* Launch the supervisor and learn how the process started.  0 with *pid
 * once the supervisor has it; -1 when it could not enter the sandbox
 * (nothing is left then: the process is gone and its record removed). */
static int launch(struct pstart *s, const char *procs, const char *id,
		  const struct sbx_proc_req *req, int *pid, struct sbx_err *err)
{
	int e = 0, stage = 0;
	set_flags(s, req);
	if (spawn_supervisor(s, err) < 0)
		return -1;
	sbx_fault("local:proc-forked");
	local_closep(&s->status[1]);
	if (s->fkconn >= 0) {
		local_closep(&s->fkconn);   /* the supervisor holds it now */
		int rc = forkd_outcome(s, id, &stage, &e, err);
		if (rc < 0)
			return -1;
		if (rc == 1) {
			/* Refused before any fork: the old path, a
			 * supervisor that forks the process itself. */
			stage = 0;
			set_flags(s, req);
			if (spawn_supervisor(s, err) < 0) {
				struct sbx_err e2 = {0};
				sbx_rm_rf(s->dir, &e2);
				return -1;
			}
			local_closep(&s->status[1]);
			local_closep(&s->sp.report[1]);
			stage = local_spawn_report(&s->sp, &e);
		}
	} else {
		local_closep(&s->sp.report[1]);
		stage = local_spawn_report(&s->sp, &e);
	}
	local_closep(&s->sp.report[1]);
	local_closep(&s->out[0]);
	local_closep(&s->out[1]);
	local_closep(&s->err[0]);
	local_closep(&s->sp.tty_sock[0]);
	local_closep(&s->sp.tty_sock[1]);
	local_closep(&s->fifo_r);
	local_closep(&s->keeper);
	if (stage == LOCAL_STAGE_EXEC) {
		/* It "ran": exits 127 or 126 with the reason on its stderr,
		 * as exec reports it. */
		char line[512];
		int n = snprintf(line, sizeof(line), "sbx: %s: %s\n", req->argv[0], strerror(e));
		(void)!write(s->err[1], line, (size_t)n);
	}
	local_closep(&s->err[1]);
	char l[128];
	if (next_line(s, l, sizeof(l)) < 0 || sscanf(l, "P %d", pid) != 1 || *pid <= 0) {
		struct sbx_err e2 = {0};
		sbx_rm_rf(s->dir, &e2);
		return sbx_fail(err, SBX_INTERNAL, "proc", "the process supervisor did not start");
	}
	if (stage == 0 || stage == LOCAL_STAGE_EXEC)
		return 0;
	/* It never got in: wait for the supervisor to record that, then
	 * take the record away. */
	char buf[64];
	while (read(s->status[0], buf, sizeof(buf)) > 0)
		;
	SBX_AUTOFREE char *rec = sbx_xasprintf("%s/%d", procs, *pid);
	struct sbx_err e2 = {0};
	sbx_rm_rf(rec, &e2);
	errno = e;
	if (stage == LOCAL_STAGE_CWD)
		return sbx_fail_errno(err, SBX_INVALID_REQUEST, "proc", "cwd %s", s->sp.cwd);
	return local_spawn_fail(s->sp.pidfd, s->sp.init, id, "proc", err,
				"enter sandbox %s (step %d)", id, stage);
}

static int check_req(const struct sbx_proc_req *req, struct sbx_err *err)
{
	if (!req->argv || !req->argv[0] || !req->argv[0][0])
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "no command to run");
	if (req->cwd && *req->cwd && req->cwd[0] != '/')
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "cwd must be absolute: %s", req->cwd);
	if (req->tag && (!*req->tag || strlen(req->tag) > TAG_MAX))
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "a tag is 1 to %d bytes", TAG_MAX);
	if (req->timeout_ms < 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "timeout must be >= 0");
	return 0;
}

/* Everything of a start once the sandbox is held and its procs/ locked. */
static int start_locked(struct pstart *s, struct sbx_sandbox *sb, const struct local_rec *r,
			const char *procs, const struct sbx_proc_req *req,
			struct sbx_proc_info *out, struct sbx_err *err)
{
	struct local_cmd cmd = {.argv = req->argv, .env = req->env, .cwd = req->cwd,
				.as_root = req->as_root, .tty = req->tty,
				.cols = (unsigned short)(req->tty_cols > 0xffff ? 0xffff : req->tty_cols),
				.rows = (unsigned short)(req->tty_rows > 0xffff ? 0xffff : req->tty_rows)};
	SBX_AUTOFREE char *work = sbx_xasprintf("%s/work", r->cg[CG_V2]);
	struct spares sp;
	if (under_lock(procs, req->tag, &sp, err) < 0 || write_request(s, procs, req, &sp, err) < 0)
		return -1;
	sbx_fault("local:proc-recorded");
	if (open_stdio(s, r, req, err) < 0 ||
	    local_spawn_prepare(sb->id, r, s->sp.pidfd, s->sp.init, s->xcg ? s->xcg : work, &cmd,
				&s->sp, err) < 0 ||
	    (s->exe = local_libexec_open("sbx-procd", "proc", err)) < 0 ||
	    (s->procs = open(procs, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		if (err->kind == SBX_OK)        /* the open sets only errno */
			sbx_fail_errno(err, SBX_INTERNAL, "proc", "open %s", procs);
		struct sbx_err e2 = {0};
		sbx_rm_rf(s->dir, &e2);
		return -1;
	}
	s->sp.in = s->fifo_r >= 0 ? s->fifo_r : s->nul;
	s->sp.out = s->out[1];
	s->sp.errfd = s->err[1];
	snprintf(s->argv_buf[0], sizeof(s->argv_buf[0]), "%lld", (long long)req->timeout_ms);
	snprintf(s->argv_buf[1], sizeof(s->argv_buf[1]), "%d", LOCAL_PROC_OUT_MAX);
	/* Through the sandbox's fork server where it takes the start (no
	 * cgroup move: local-forkd.h), its reply read by the supervisor,
	 * which is launched while the server forks; else the supervisor's
	 * grandparent forks it.  A terminal is made by local-spawn.c's
	 * child, never the server's. */
	sbx_fault("local:proc-before-send");
	if (!req->tty)
		s->fkconn = local_forkd_send(sb->id, r, &s->sp);
	int pid;
	if (launch(s, procs, sb->id, req, &pid, err) < 0)
		return -1;
	char name[32];
	snprintf(name, sizeof(name), "%d", pid);
	struct local_prec p;
	if (local_prec_load(procs, name, &p, err) < 0)
		return -1;
	*out = p.i;
	memset(&p.i, 0, sizeof(p.i));
	local_prec_free(&p);
	return 0;
}

int local_proc_start(struct sbx_backend *b, struct sbx_sandbox *sb,
		     const struct sbx_proc_req *req, struct sbx_proc_info *out,
		     struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (check_req(req, err) < 0)
		return -1;
	pid_t init;
	SBX_AUTOCLOSE int pidfd = local_sb_init_pidfd(b, sb->id, "proc", &init, err);
	if (pidfd < 0)
		return -1;
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	SBX_AUTOFREE char *procs = local_procs_dir(&r);
	SBX_AUTOFREE char *lockp = sbx_xasprintf("%s/.lock", procs);
	if (mkdir(procs, 0700) < 0 && errno != EEXIST) {
		local_rec_free(&r);
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "mkdir %s", procs);
	}
	SBX_AUTOCLOSE int lock = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		local_rec_free(&r);
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "lock %s", lockp);
	}
	local_sb_touch(b, sb->id);
	struct pstart s;
	ps_init(&s);
	s.sp.pidfd = pidfd;
	s.sp.init = init;
	int rc = start_locked(&s, sb, &r, procs, req, out, err);
	ps_free(&s);
	local_rec_free(&r);
	return rc;
}
