/* local-init.c - the tiny PID 1 of every local sandbox.
 *
 * There is no separate binary: create forks a launcher, the launcher joins
 * the sandbox's cgroups, detaches (setsid, every inherited fd closed, stdio
 * on /dev/null), unshares the mount, pid, uts, ipc, net and cgroup
 * namespaces and forks the init, which is PID 1 of the new pid namespace.
 * The launcher exits at once, so the init is reparented to the host's init
 * and outlives the creating process.
 *
 * The init builds the sandbox's root inside its own mount namespace only
 * (overlay, /proc, a minimal /dev, /sys read-only), pivots into it, sets
 * the hostname, brings lo up, tells the creator it is ready, and then does
 * two things for the rest of its life: reap whatever is reparented to it,
 * and run the idle timer (pause or kill the sandbox after the policy's
 * seconds without activity).  It stays outside the frozen part of the
 * cgroup tree (<cg>, not <cg>/work), so a paused sandbox keeps its timer.
 *
 * Promise: when local_init_start returns 0 the sandbox is ready for exec.
 * When the init dies, the kernel kills every process of its pid namespace
 * and the mount namespace (with the overlay) goes away with them. */
#include "local-sb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | \
		  CLONE_NEWNET | CLONE_NEWCGROUP)

/* fds the init keeps across the pivot (everything else is closed). */
struct init_fds {
	int status;     /* write end of the status pipe, closed once ready */
	int dir;        /* the sandbox dir on the host: activity, busy, policy */
	int freeze;     /* <cg>/work/cgroup.freeze */
	int events;     /* <cg>/work/cgroup.events */
	int kill;       /* <cg>/work/cgroup.kill */
};

static void report(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)!write(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Fail inside the launcher or the init: say why on the status pipe, die. */
#define DIE(fds, what) do { \
		report((fds)->status, "E %d %s\n", errno, what); \
		_exit(1); \
	} while (0)

static int write_str_at(int dirfd, const char *path, const char *s)
{
	int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n < 0 ? -1 : 0;
}

static int is_kept(int fd, const int *keep, int n)
{
	for (int i = 0; i < n; i++)
		if (keep[i] == fd)
			return 1;
	return 0;
}

/* Close every fd but stdio and `keep`: the init must hold nothing of the
 * caller's (a pipeline's pipe would never see EOF; a host fd inside a
 * sandbox is an escape). */
static void close_other_fds(const int *keep, int n)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		for (int fd = 3; fd < 1024; fd++)
			if (!is_kept(fd, keep, n))
				close(fd);
		return;
	}
	int self = dirfd(d);
	struct dirent *e;
	int fds[1024], nfds = 0;
	while ((e = readdir(d)) && nfds < 1024) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd < 3 || fd == self || is_kept(fd, keep, n))
			continue;
		fds[nfds++] = fd;
	}
	closedir(d);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

static void mknod_dev(struct init_fds *f, const char *root, const char *name,
		      unsigned maj, unsigned min)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/dev/%s", root, name);
	if (mknod(p, S_IFCHR | 0666, makedev(maj, min)) < 0)
		DIE(f, "mknod /dev node");
}

static void mount_or_die(struct init_fds *f, const char *src, const char *dst,
			 const char *type, unsigned long flags, const char *data,
			 const char *what)
{
	if (mount(src, dst, type, flags, data) < 0)
		DIE(f, what);
}

/* Root in a sandbox keeps DAC_OVERRIDE, and some /proc files check
 * nothing else: /proc/sysrq-trigger would reboot the host, /proc/sys
 * (core_pattern!) would run host code.  Like Docker: those are read-only,
 * and the files that leak host kernel state are masked. */
static void protect_proc(struct init_fds *f, const char *root)
{
	static const char *const ro[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
	static const char *const masked[] = {
		"kcore", "keys", "timer_list", "sched_debug", "acpi", "scsi", "kallsyms",
	};
	char p[4200];
	for (size_t i = 0; i < SBX_ARRAY_LEN(ro); i++) {
		snprintf(p, sizeof(p), "%s/proc/%s", root, ro[i]);
		if (access(p, F_OK) < 0)
			continue;
		mount_or_die(f, p, p, NULL, MS_BIND | MS_REC, NULL, "bind /proc path");
		mount_or_die(f, NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID |
			     MS_NODEV | MS_NOEXEC, NULL, "make /proc path read-only");
	}
	for (size_t i = 0; i < SBX_ARRAY_LEN(masked); i++) {
		struct stat st;
		snprintf(p, sizeof(p), "%s/proc/%s", root, masked[i]);
		if (stat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			mount_or_die(f, "tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				     "size=0", "mask /proc dir");
		else
			mount_or_die(f, "/dev/null", p, NULL, MS_BIND, NULL, "mask /proc file");
	}
}

/* overlayfs refuses a lower layer that lies below another lower layer of
 * the same filesystem ("overlapping lowerdir path").  A snapshot over the
 * `host` template stacks layers kept under the state dir (on the root
 * filesystem, usually) over "/" itself, so "/" enters the stack through a
 * read-only overlay of its own (lowerdir=<empty tmpfs>:/): a different
 * superblock, the same files.  It lives only in this mount namespace. */
static void mount_host_view(struct init_fds *f, const struct local_init_cfg *c)
{
	char empty[4200], opts[4300];
	snprintf(empty, sizeof(empty), "%s/hostempty", c->dir);
	mount_or_die(f, "tmpfs", empty, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=755",
		     "mount the empty host-view layer");
	snprintf(opts, sizeof(opts), "lowerdir=%s:/", empty);
	mount_or_die(f, "overlay", c->host_view, "overlay", MS_RDONLY, opts, "mount the host view");
}

/* Build the sandbox's root at <dir>/root and pivot into it. */
static void setup_root(struct init_fds *f, const struct local_init_cfg *c)
{
	char root[4096], p[4200];
	snprintf(root, sizeof(root), "%s/root", c->dir);

	mount_or_die(f, NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL, "make mounts private");
	if (c->host_view)
		mount_host_view(f, c);
	mount_or_die(f, "overlay", root, "overlay", 0, c->overlay_opts, "mount the overlay");

	snprintf(p, sizeof(p), "%s/proc", root);
	mount_or_die(f, "proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, "mount /proc");
	protect_proc(f, root);
	snprintf(p, sizeof(p), "%s/sys", root);
	mount_or_die(f, "sysfs", p, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL,
		     "mount /sys");

	/* A minimal /dev of our own: never the host's. */
	snprintf(p, sizeof(p), "%s/dev", root);
	mount_or_die(f, "tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536",
		     "mount /dev");
	mknod_dev(f, root, "null", 1, 3);
	mknod_dev(f, root, "zero", 1, 5);
	mknod_dev(f, root, "full", 1, 7);
	mknod_dev(f, root, "random", 1, 8);
	mknod_dev(f, root, "urandom", 1, 9);
	mknod_dev(f, root, "tty", 5, 0);
	static const char *const dirs[] = {"pts", "shm"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(dirs); i++) {
		snprintf(p, sizeof(p), "%s/dev/%s", root, dirs[i]);
		if (mkdir(p, 0755) < 0)
			DIE(f, "mkdir /dev/pts|shm");
	}
	snprintf(p, sizeof(p), "%s/dev/pts", root);
	mount_or_die(f, "devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
		     "newinstance,ptmxmode=0666,mode=0620", "mount /dev/pts");
	snprintf(p, sizeof(p), "%s/dev/shm", root);
	mount_or_die(f, "shm", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", "mount /dev/shm");
	static const char *const links[][2] = {
		{"pts/ptmx", "ptmx"}, {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
		{"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
	};
	for (size_t i = 0; i < SBX_ARRAY_LEN(links); i++) {
		snprintf(p, sizeof(p), "%s/dev/%s", root, links[i][1]);
		if (symlink(links[i][0], p) < 0)
			DIE(f, "symlink in /dev");
	}

	/* pivot_root(".", "."): the old root ends up stacked under the new
	 * one and is detached at once; no directory is needed for it. */
	if (chdir(root) < 0)
		DIE(f, "chdir to the new root");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		DIE(f, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		DIE(f, "detach the old root");
	if (chdir("/") < 0)
		DIE(f, "chdir /");
}

static void lo_up(struct init_fds *f)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		DIE(f, "socket for lo");
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		DIE(f, "get lo flags");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		DIE(f, "bring lo up");
	close(s);
}

/* ---- the init's life after setup ---- */

struct policy {
	int64_t seconds;
	int pause;
};

static void policy_load(int dirfd, struct policy *p)
{
	char buf[128] = {0};
	p->seconds = 0;
	p->pause = 1;
	int fd = openat(dirfd, "policy", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	long long s = 0;
	int pause = 1, ar = 0;
	if (sscanf(buf, "%lld %d %d", &s, &pause, &ar) >= 2) {
		p->seconds = s;
		p->pause = pause;
	}
}

static int work_frozen(int events_fd)
{
	char buf[256];
	ssize_t n = pread(events_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *fz = strstr(buf, "frozen ");
	return fz && fz[7] == '1';
}

/* Seconds since the last recorded activity; an exec in progress (someone
 * holds `busy` shared) counts as activity now. */
static int64_t idle_ms(int dirfd)
{
	int fd = openat(dirfd, "busy", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		int busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
		close(fd);
		if (busy)
			return 0;
	}
	struct stat st;
	if (fstatat(dirfd, "activity", &st, 0) < 0)
		return 0;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t ms = (now.tv_sec - st.st_mtim.tv_sec) * 1000 +
		     (now.tv_nsec - st.st_mtim.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms;
}

static __attribute__((noreturn)) void init_loop(struct init_fds *f)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	struct policy pol;
	policy_load(f->dir, &pol);
	for (;;) {
		struct timespec ts = {1, 0};
		int64_t wait_ms = -1;
		if (pol.seconds > 0 && !work_frozen(f->events)) {
			int64_t idle = idle_ms(f->dir);
			int64_t left = pol.seconds * 1000 - idle;
			if (left <= 0) {
				if (pol.pause) {
					(void)!write(f->freeze, "1", 1);
				} else {
					int k = openat(f->dir, "killed", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
					if (k >= 0)
						close(k);
					(void)!write(f->kill, "1", 1);
					_exit(0);  /* the kernel kills the rest of the pid ns */
				}
				continue;
			}
			/* Wake at the deadline, but at least once a second, so
			 * that activity and resumes are seen without signals. */
			wait_ms = left < 1000 ? left : 1000;
		} else if (pol.seconds > 0) {
			wait_ms = 1000;
		}
		int sig;
		if (wait_ms < 0) {
			siginfo_t si;
			sig = sigwaitinfo(&set, &si);
		} else {
			ts.tv_sec = wait_ms / 1000;
			ts.tv_nsec = (wait_ms % 1000) * 1000000;
			sig = sigtimedwait(&set, NULL, &ts);
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (sig == SIGHUP)
			policy_load(f->dir, &pol);
	}
}

/* The init: runs as PID 1 in the fresh namespaces. */
static __attribute__((noreturn)) void init_main(struct init_fds *f, const struct local_init_cfg *c)
{
	prctl(PR_SET_NAME, "sbx-init");
	/* Nobody in the sandbox may read this process's fds or memory. */
	prctl(PR_SET_DUMPABLE, 0);
	setup_root(f, c);
	if (sethostname(c->id, strlen(c->id)) < 0)
		DIE(f, "sethostname");
	lo_up(f);
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		close(nul);
	}
	report(f->status, "K\n");
	close(f->status);
	f->status = -1;
	init_loop(f);
}

static int join_cgroups(char *const *cg)
{
	char pid[32], p[4200];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (int i = 0; i < LOCAL_NCG; i++) {
		if (!cg[i])
			continue;
		snprintf(p, sizeof(p), "%s/cgroup.procs", cg[i]);
		if (write_str_at(AT_FDCWD, p, pid) < 0)
			return -1;
	}
	return 0;
}

/* The launcher: detach, join, unshare, fork the init, report its pid. */
static __attribute__((noreturn)) void launcher(int status_fd, const struct local_init_cfg *c)
{
	struct init_fds f = {.status = status_fd, .dir = -1, .freeze = -1, .events = -1, .kill = -1};
	char p[4200];
	signal(SIGPIPE, SIG_IGN);
	if (setsid() < 0)
		DIE(&f, "setsid");
	f.dir = open(c->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (f.dir < 0)
		DIE(&f, "open the sandbox dir");
	snprintf(p, sizeof(p), "%s/work/cgroup.freeze", c->cg[CG_V2]);
	if ((f.freeze = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		DIE(&f, "open cgroup.freeze");
	snprintf(p, sizeof(p), "%s/work/cgroup.events", c->cg[CG_V2]);
	if ((f.events = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		DIE(&f, "open cgroup.events");
	snprintf(p, sizeof(p), "%s/work/cgroup.kill", c->cg[CG_V2]);
	if ((f.kill = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		DIE(&f, "open cgroup.kill");
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0)
		DIE(&f, "open /dev/null");
	dup2(nul, 0);
	dup2(nul, 1);
	dup2(nul, 2);
	close(nul);
	int keep[] = {f.status, f.dir, f.freeze, f.events, f.kill};
	close_other_fds(keep, SBX_ARRAY_LEN(keep));
	umask(0);
	if (join_cgroups(c->cg) < 0)
		DIE(&f, "join the sandbox cgroups");
	if (unshare(NS_FLAGS) < 0)
		DIE(&f, "unshare namespaces");
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	pid_t pid = fork();
	if (pid < 0)
		DIE(&f, "fork the init");
	if (pid == 0)
		init_main(&f, c);
	report(status_fd, "P %d\n", (int)pid);
	_exit(0);
}

int local_init_start(const struct local_init_cfg *c, pid_t *pid, struct sbx_err *err)
{
	int pfd[2];
	*pid = 0;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "pipe");
	pid_t l = fork();
	if (l < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "fork");
	}
	if (l == 0) {
		close(pfd[0]);
		launcher(pfd[1], c);
	}
	close(pfd[1]);
	/* Read until EOF: the launcher says "P pid", the init says "K" (ready)
	 * or "E errno what".  Both ends close when they exit or get ready. */
	char buf[1024];
	size_t len = 0;
	int64_t deadline = sbx_mono_ms() + 30000;
	for (;;) {
		struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
		int64_t left = deadline - sbx_mono_ms();
		if (left <= 0)
			break;
		int r = poll(&pf, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		ssize_t n = read(pfd[0], buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len >= sizeof(buf) - 1)
			break;
	}
	close(pfd[0]);
	buf[len] = '\0';
	waitpid(l, NULL, 0);
	int ready = 0, e = 0;
	char what[256] = "";
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		int v;
		if (sscanf(line, "P %d", &v) == 1)
			*pid = v;
		else if (strcmp(line, "K") == 0)
			ready = 1;
		else if (sscanf(line, "E %d %255[^\n]", &e, what) >= 1)
			ready = 0;
	}
	if (ready && *pid > 0)
		return 0;
	if (what[0])
		return sbx_fail(err, SBX_INTERNAL, "create", "sandbox init: %s: %s", what,
				strerror(e));
	return sbx_fail(err, SBX_INTERNAL, "create", "sandbox init did not report ready");
}
