/* local-proc.c - the detached processes of a local sandbox, as records:
 * load, list, find; and the vtable's proc_list, proc_signal and
 * proc_input.  Starting one is local-proc-start.c's, following its output
 * local-proc-output.c's; the files are described in local-procd.h.
 *
 * Promises:
 *  - A signal reaches the process it names or nobody: it goes through a
 *    pidfd opened on the recorded host pid and proven by the recorded
 *    start time; an exited process (its record says so, or its pid now
 *    names someone else) gets nothing.
 *  - uid 1000 (as_root = 0) signals, writes to and closes the stdin of
 *    its own processes only.
 *  - A write to stdin never blocks past 10 s, and a stdin whose reader is
 *    gone is a conflict, never a SIGPIPE to the caller. */
#include "local-proc.h"
#include "local-procd.h"
#include "local-pid.h"
#include "local-state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "doc.h"
#include "proc.h"
#include "util.h"

#define INPUT_TIMEOUT_MS 10000

char *local_procs_dir(const struct local_rec *r)
{
	return sbx_xasprintf("%s/procs", r->dir);
}

void local_prec_free(struct local_prec *p)
{
	sbx_proc_info_clear(&p->i);
	free(p->dir);
	memset(p, 0, sizeof(*p));
}

void local_precs_free(struct local_prec *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++)
		local_prec_free(&p[i]);
	free(p);
}

static long long state_val(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ')
			return strtoll(l + kl + 1, NULL, 10);
	return 0;
}

static int64_t file_size(const char *dir, const char *name)
{
	char p[4200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 ? (int64_t)st.st_size : 0;
}

int local_proc_claimed(const char *dir)
{
	char ap[4200];
	snprintf(ap, sizeof(ap), "%s/" LOCAL_PROC_ATTACH, dir);
	SBX_AUTOCLOSE int fd = open(ap, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		return errno == EWOULDBLOCK;
	return 0;
}

int local_prec_refresh(struct local_prec *p, struct sbx_err *err)
{
	SBX_AUTOFREE char *sp = sbx_xasprintf("%s/state", p->dir);
	SBX_AUTOFREE char *buf = NULL;
	size_t len;
	/* A whole state ends with its err_start line (local-procd.h); one
	 * opened just before sbx-procd swapped it out can be emptied by its
	 * next write: the name has a whole one again, read it anew.  (The
	 * writer's open-write-swap is microseconds: 1000 tries are a
	 * bound on a state a writer killed mid-way never leaves, not a
	 * wait.) */
	for (int tries = 0;; tries++) {
		struct sbx_err e2 = {0};
		free(buf);
		buf = NULL;
		if (sbx_read_file(sp, 4096, &buf, &len, &e2) < 0)
			return sbx_fail(err, SBX_NOT_FOUND, "proc", "no process %d", p->i.pid);
		char *last = len ? memrchr(buf, '\n', len - 1) : NULL;
		last = last ? last + 1 : buf;
		if ((len && buf[len - 1] == '\n' &&
		     strncmp(last, LOCAL_PROC_K_ERR_START " ", strlen(LOCAL_PROC_K_ERR_START) + 1) == 0) ||
		    tries >= 1000)
			break;
		sched_yield();
	}
	struct sbx_proc_info *i = &p->i;
	p->host_pid = (pid_t)state_val(buf, LOCAL_PROC_K_HOST_PID);
	p->host_start = (unsigned long long)state_val(buf, LOCAL_PROC_K_HOST_START);
	p->sup_pid = (pid_t)state_val(buf, LOCAL_PROC_K_SUP_PID);
	p->sup_start = (unsigned long long)state_val(buf, LOCAL_PROC_K_SUP_START);
	i->running = state_val(buf, LOCAL_PROC_K_RUNNING) != 0;
	i->exit_code = (int)state_val(buf, LOCAL_PROC_K_EXIT);
	i->signal = (int)state_val(buf, LOCAL_PROC_K_SIGNAL);
	i->timed_out = state_val(buf, LOCAL_PROC_K_TIMED_OUT) != 0;
	i->ended_at = state_val(buf, LOCAL_PROC_K_ENDED_AT);
	i->out_start = state_val(buf, LOCAL_PROC_K_OUT_START);
	i->err_start = state_val(buf, LOCAL_PROC_K_ERR_START);
	/* Sizes after the state: a state that says exited was written after
	 * the last output, so these sizes are final then. */
	i->out_end = file_size(p->dir, "out");
	i->err_end = file_size(p->dir, "err");
	if (i->running && !local_pid_alive(p->sup_pid, p->sup_start) &&
	    !local_pid_alive(p->host_pid, p->host_start)) {
		/* Its supervisor was killed and the process is gone too: the
		 * exit status died with the supervisor. */
		i->running = 0;
		i->exit_code = -1;
	}
	char cp[4200];
	snprintf(cp, sizeof(cp), "%s/stdin.closed", p->dir);
	i->stdin_open = p->keep_stdin && i->running && access(cp, F_OK) < 0;
	i->attached = i->tty && i->running && local_proc_claimed(p->dir);
	return 0;
}

int local_prec_load(const char *procs, const char *name, struct local_prec *p,
		    struct sbx_err *err)
{
	memset(p, 0, sizeof(*p));
	char *end;
	long pid = strtol(name, &end, 10);
	if (*end || pid <= 0 || end == name)
		return sbx_fail(err, SBX_NOT_FOUND, "proc", "no process %s", name);
	p->dir = sbx_xasprintf("%s/%s", procs, name);
	SBX_AUTOFREE char *jp = sbx_xasprintf("%s/proc.json", p->dir);
	SBX_AUTOFREE char *data = NULL;
	size_t len;
	struct sbx_err e2 = {0};
	json_object *j = NULL;
	if (sbx_read_file(jp, 1 << 20, &data, &len, &e2) < 0 || !(j = json_tokener_parse(data))) {
		local_prec_free(p);
		return sbx_fail(err, SBX_NOT_FOUND, "proc", "no process %s", name);
	}
	p->i.pid = (int)pid;
	sbx_proc_from_record(j, &p->i, &p->keep_stdin);
	json_object_put(j);
	if (local_prec_refresh(p, err) < 0) {
		local_prec_free(p);
		return -1;
	}
	return 0;
}

static int cmp_prec(const void *a, const void *b)
{
	const struct local_prec *x = a, *y = b;
	if (x->i.started_at != y->i.started_at)
		return x->i.started_at < y->i.started_at ? -1 : 1;
	return x->i.pid - y->i.pid;
}

int local_prec_list(const char *procs, struct local_prec **out, size_t *n,
		    struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(procs);
	if (!d)
		return errno == ENOENT ? 0 : sbx_fail_errno(err, SBX_INTERNAL, "proc", "%s", procs);
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct local_prec p;
		struct sbx_err e2 = {0};
		if (e->d_name[0] == '.' || local_prec_load(procs, e->d_name, &p, &e2) < 0)
			continue;   /* being started or replaced */
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			*out = sbx_xrealloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = p;
	}
	closedir(d);
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), cmp_prec);
	return 0;
}

int local_prec_find(const char *procs, const struct sbx_proc_sel *sel, struct local_prec *p,
		    struct sbx_err *err)
{
	if (sel->pid > 0) {
		char name[32];
		snprintf(name, sizeof(name), "%d", sel->pid);
		return local_prec_load(procs, name, p, err);
	}
	if (!sel->tag || !*sel->tag)
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "name a process by pid or tag");
	struct local_prec *all;
	size_t n;
	if (local_prec_list(procs, &all, &n, err) < 0)
		return -1;
	ssize_t pick = -1;
	for (size_t k = 0; k < n; k++)
		if (all[k].i.tag && strcmp(all[k].i.tag, sel->tag) == 0 &&
		    (pick < 0 || all[k].i.running || !all[pick].i.running))
			pick = (ssize_t)k;
	if (pick >= 0) {
		*p = all[pick];
		memset(&all[pick], 0, sizeof(all[pick]));
	}
	local_precs_free(all, n);
	if (pick < 0)
		return sbx_fail(err, SBX_NOT_FOUND, "proc", "no process tagged %s", sel->tag);
	return 0;
}

/* The sandbox's record and the process `sel` names in it. */
static int open_proc(struct sbx_backend *b, struct sbx_sandbox *sb,
		     const struct sbx_proc_sel *sel, struct local_prec *p, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	SBX_AUTOFREE char *procs = local_procs_dir(&r);
	local_rec_free(&r);
	return local_prec_find(procs, sel, p, err);
}

int local_proc_list(struct sbx_backend *b, struct sbx_sandbox *sb,
		    struct sbx_proc_info **out, size_t *n, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	SBX_AUTOFREE char *procs = local_procs_dir(&r);
	local_rec_free(&r);
	struct local_prec *all;
	if (local_prec_list(procs, &all, n, err) < 0)
		return -1;
	*out = sbx_xcalloc(*n + 1, sizeof(**out));
	for (size_t k = 0; k < *n; k++) {
		(*out)[k] = all[k].i;
		memset(&all[k].i, 0, sizeof(all[k].i));
	}
	local_precs_free(all, *n);
	return 0;
}

/* Send sig to the process of `p` (host pid proven by its start time), or
 * to its supervisor (sup = 1).  0 whether or not it was still there; -1
 * only when the signal could not be sent to a live target. */
static int send_sig(const struct local_prec *p, int sup, int sig, struct sbx_err *err)
{
	pid_t pid = sup ? p->sup_pid : p->host_pid;
	unsigned long long start = sup ? p->sup_start : p->host_start;
	if (pid <= 0 || start == 0)
		return 0;
	SBX_AUTOCLOSE int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0 || !local_pid_alive(pid, start))
		return 0;
	if (syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) < 0 && errno != ESRCH)
		return sbx_fail_errno(err, SBX_INTERNAL, "proc", "signal process %d", p->i.pid);
	return 0;
}

int local_proc_signal(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_sel *sel, int sig, int as_root, struct sbx_err *err)
{
	if (sig <= 0 || sig >= NSIG)
		return sbx_fail(err, SBX_INVALID_REQUEST, "proc", "no signal %d", sig);
	struct local_prec p;
	if (open_proc(b, sb, sel, &p, err) < 0)
		return -1;
	int rc = sbx_proc_may_act(&p.i, as_root, "signal", err);
	pid_t init;
	if (rc == 0 && p.i.running && local_sb_ensure_running(b, sb->id, &init, err) < 0)
		rc = -1;
	if (rc == 0 && p.i.running) {
		local_sb_touch(b, sb->id);
		rc = send_sig(&p, 0, sig, err);
	}
	local_prec_free(&p);
	return rc;
}

/* Write all of data into the FIFO at `path` within the deadline, with
 * SIGPIPE blocked on this thread (and a pending one taken back), so that
 * a reader gone is EPIPE here and never kills the caller. */
static int fifo_write(const char *path, int pid, const char *data, size_t len,
		      struct sbx_err *err)
{
	SBX_AUTOCLOSE int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENXIO || errno == ENOENT
		       ? sbx_fail(err, SBX_CONFLICT, "proc", "process %d no longer reads its stdin", pid)
		       : sbx_fail_errno(err, SBX_INTERNAL, "proc", "open the stdin of %d", pid);
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	int64_t deadline = sbx_mono_ms() + INPUT_TIMEOUT_MS;
	size_t off = 0;
	int rc = 0;
	while (off < len && rc == 0) {
		ssize_t w = write(fd, data + off, len - off);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		int64_t left = deadline - sbx_mono_ms();
		if (w < 0 && errno == EPIPE)
			rc = sbx_fail(err, SBX_CONFLICT, "proc", "process %d closed its stdin", pid);
		else if (w < 0 && errno != EAGAIN && errno != EINTR)
			rc = sbx_fail_errno(err, SBX_INTERNAL, "proc", "write the stdin of %d", pid);
		else if (left <= 0)
			rc = sbx_fail(err, SBX_TIMEOUT, "proc", "process %d does not read its stdin "
				      "(%zu of %zu bytes written)", pid, off, len);
		else
			poll(&(struct pollfd){.fd = fd, .events = POLLOUT}, 1, (int)left);
	}
	struct timespec zero = {0, 0};
	while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int local_proc_input(struct sbx_backend *b, struct sbx_sandbox *sb,
		     const struct sbx_proc_sel *sel, const void *data, size_t len,
		     int close_stdin, int as_root, struct sbx_err *err)
{
	struct local_prec p;
	if (open_proc(b, sb, sel, &p, err) < 0)
		return -1;
	int rc = sbx_proc_may_act(&p.i, as_root, "write to", err);
	pid_t init;
	if (rc == 0 && !p.keep_stdin)
		rc = sbx_fail(err, SBX_CONFLICT, "proc", "process %d was started without stdin",
			      p.i.pid);
	else if (rc == 0 && !p.i.stdin_open)
		rc = sbx_fail(err, SBX_CONFLICT, "proc", "the stdin of process %d is closed%s",
			      p.i.pid, p.i.running ? "" : " (it exited)");
	if (rc == 0 && local_sb_ensure_running(b, sb->id, &init, err) < 0)
		rc = -1;
	if (rc == 0)
		local_sb_touch(b, sb->id);
	SBX_AUTOFREE char *fifo = sbx_xasprintf("%s/stdin", p.dir);
	if (rc == 0 && len > 0)
		rc = fifo_write(fifo, p.i.pid, data, len, err);
	if (rc == 0 && close_stdin) {
		SBX_AUTOFREE char *mark = sbx_xasprintf("%s/stdin.closed", p.dir);
		int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			rc = sbx_fail_errno(err, SBX_INTERNAL, "proc", "close the stdin of %d", p.i.pid);
		else
			close(fd);
		/* The supervisor lets its write end go: the process sees EOF
		 * once no writer is left. */
		if (rc == 0)
			rc = send_sig(&p, 1, SIGUSR1, err);
	}
	local_prec_free(&p);
	return rc;
}
