/* local-proc-output.c - follow the output of a local sandbox's detached
 * process: the vtable's proc_output.
 *
 * The output is read from the record's files (local-procd.h), not from the
 * process: any number of readers, at any offsets, none of which can slow
 * the process down or lose it anything.  A follower sleeps on inotify
 * (the supervisor's appends and its state renames wake it), so it costs
 * nothing while the process is quiet.
 *
 * Promises:
 *  - Each stream is delivered in order, from the asked offset (or the
 *    first byte still kept), with its stream offset; bytes the bounded
 *    files dropped are skipped, never delivered as zeros.
 *  - With follow, the call returns once the process has exited and its
 *    output is delivered to the end (or when the sink says stop).
 *  - It does not resume a paused sandbox, nor count as activity: a
 *    follower does not keep a sandbox from its idle timer. */
#include "local-proc-output.h"
#include "local-proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "proc.h"
#include "util.h"

#define CHUNK (32 * 1024)        /* E2B's data events are at most 32 KiB */
#define RECHECK_MS 1000          /* a follower looks at its supervisor this often */

struct follow {
	struct local_prec *p;
	int fd[2];
	int64_t off[2];
	sbx_proc_sink sink;
	void *ctx;
	int stopped;
};

static int64_t kept_start(const struct local_prec *p, int k)
{
	return k == 0 ? p->i.out_start : p->i.err_start;
}

/* Stream k's file, opened once it has bytes (sbx-procd makes it at the
 * first one: a missing file is an empty stream, local-procd.h). */
static int open_stream(struct follow *f, int k, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/%s", f->p->dir, k == 0 ? "out" : "err");
	f->fd[k] = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd[k] < 0)
		return sbx_fail_errno(err, errno == ENOENT ? SBX_NOT_FOUND : SBX_INTERNAL,
				      "proc", "output of process %d", f->p->i.pid);
	return 0;
}

/* Deliver what stream k has past its offset.  1 when something was
 * delivered, 0 when nothing, -1 on a read error (err filled). */
static int deliver(struct follow *f, int k, struct sbx_err *err)
{
	int64_t end = k == 0 ? f->p->i.out_end : f->p->i.err_end;
	int any = 0;
	char buf[CHUNK];
	if (f->fd[k] < 0 && f->off[k] < end && open_stream(f, k, err) < 0)
		return -1;
	while (!f->stopped && f->off[k] < end) {
		if (f->off[k] < kept_start(f->p, k))
			f->off[k] = kept_start(f->p, k);
		size_t want = end - f->off[k] < CHUNK ? (size_t)(end - f->off[k]) : CHUNK;
		ssize_t n = pread(f->fd[k], buf, want, f->off[k]);
		if (n < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "proc", "read output of %d",
					      f->p->i.pid);
		if (n == 0)
			break;
		/* Punched while we read?  The supervisor moves the start
		 * before it punches, so a fresh look tells. */
		if (local_prec_refresh(f->p, err) < 0)
			return -1;
		int64_t skip = kept_start(f->p, k) > f->off[k] ? kept_start(f->p, k) - f->off[k] : 0;
		if (skip >= n) {
			f->off[k] = kept_start(f->p, k);
			continue;
		}
		if (f->sink(f->ctx, k == 0 ? SBX_PROC_STDOUT : SBX_PROC_STDERR, buf + skip,
			    (size_t)(n - skip), f->off[k] + skip) != 0)
			f->stopped = 1;
		f->off[k] += n;
		any = 1;
	}
	return any;
}

static int open_streams(struct follow *f, const struct sbx_proc_attach *a, struct sbx_err *err)
{
	int64_t want[2] = {a->out_offset, a->err_offset};
	int64_t end[2] = {f->p->i.out_end, f->p->i.err_end};
	for (int k = 0; k < 2; k++) {
		f->off[k] = want[k] < 0 || want[k] > end[k] ? end[k] : want[k];
		if (end[k] > 0 && open_stream(f, k, err) < 0)
			return -1;
	}
	return 0;
}

/* The process's one inotify instance, made at its first follow and kept:
 * closing an instance that held a watch waits for an SRCU grace period in
 * the kernel (fsnotify_destroy_group), milliseconds that came after a
 * process's last byte and before its end reached the caller.  A watch is
 * added and removed per follow instead, which does not wait.  A forked
 * child makes its own (it must not drain its parent's events); the fd is
 * CLOEXEC.  Followers of one process run one at a time (the library is
 * single-threaded), so the events in it are always the current follow's
 * or stale ones, which only cost a look.  -1 with errno. */
static int follow_inotify(void)
{
	static int fd = -1;
	static pid_t owner;
	if (fd >= 0 && owner == getpid())
		return fd;
	fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	owner = getpid();
	return fd;
}

static void drain(int in)
{
	char ev[4096];
	while (read(in, ev, sizeof(ev)) > 0)
		;
}

/* The follow itself, on the instance `in` (watching the record). */
static int follow_events(struct follow *f, const struct sbx_proc_attach *a, int in,
			 struct sbx_err *err)
{
	int64_t quiet_since = sbx_mono_ms();
	for (;;) {
		if (local_prec_refresh(f->p, err) < 0)
			return -1;
		/* The state first, then the files: a state that says exited
		 * was written after the last byte, so this round gets all. */
		int running = f->p->i.running;
		int got0 = deliver(f, 0, err), got1 = got0 < 0 ? -1 : deliver(f, 1, err);
		if (got0 < 0 || got1 < 0)
			return -1;
		if (f->stopped || !running)
			return 0;
		if (got0 || got1) {
			quiet_since = sbx_mono_ms();
			continue;
		}
		int64_t wait = RECHECK_MS;
		if (a->tick_ms > 0) {
			int64_t left = quiet_since + a->tick_ms - sbx_mono_ms();
			if (left <= 0) {
				if (f->sink(f->ctx, SBX_PROC_TICK, NULL, 0, 0) != 0)
					return 0;
				quiet_since = sbx_mono_ms();
				left = a->tick_ms;
			}
			wait = left < wait ? left : wait;
		}
		struct pollfd pf = {.fd = in, .events = POLLIN};
		if (poll(&pf, 1, (int)wait) > 0)
			drain(in);
	}
}

/* Follow until the process has exited and everything is delivered. */
static int follow_loop(struct follow *f, const struct sbx_proc_attach *a, struct sbx_err *err)
{
	int in = follow_inotify();
	int wd = in < 0 ? -1 : inotify_add_watch(in, f->p->dir, IN_MODIFY | IN_MOVED_TO);
	if (wd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "inotify on %s", f->p->dir);
	drain(in);                   /* an earlier follow's leftovers */
	int rc = follow_events(f, a, in, err);
	inotify_rm_watch(in, wd);
	return rc;
}

int local_proc_output(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_sel *sel, const struct sbx_proc_attach *a,
		      sbx_proc_sink sink, void *ctx, struct sbx_proc_info *end,
		      struct sbx_err *err)
{
	memset(end, 0, sizeof(*end));
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	SBX_AUTOFREE char *procs = local_procs_dir(&r);
	local_rec_free(&r);
	struct local_prec p;
	if (local_prec_find(procs, sel, &p, err) < 0)
		return -1;
	struct follow f = {.p = &p, .fd = {-1, -1}, .sink = sink, .ctx = ctx};
	int rc = open_streams(&f, a, err);
	if (rc == 0 && a->follow) {
		rc = follow_loop(&f, a, err);
	} else if (rc == 0) {
		if (deliver(&f, 0, err) < 0 || deliver(&f, 1, err) < 0)
			rc = -1;
	}
	for (int k = 0; k < 2; k++)
		if (f.fd[k] >= 0)
			close(f.fd[k]);
	if (rc == 0 && local_prec_refresh(&p, err) < 0)
		rc = -1;
	if (rc == 0) {
		*end = p.i;
		memset(&p.i, 0, sizeof(p.i));
	}
	local_prec_free(&p);
	return rc;
}
