/* sbx-procd - the supervisor of one detached process of a local sandbox
 * (the library side is backends/local/local-proc.c; the contract, fds and
 * files, is backends/local/local-procd.h).
 *
 * It is exec'd with the process already forked as its child, so it alone
 * reaps it and knows its exit status; or, when the sandbox's fork server
 * forks it (flag "f"), with the start's connection to the server, on
 * which it reads the server's reply (launched while the server forks, so
 * its exec is off the start's path) and then the wait status (if the
 * server dies first, the process ends as exited, exit_code -1, when its
 * pidfd says it is gone).  It copies the process's stdout and
 * stderr into the record's bounded `out` and `err` files, holds the stdin
 * FIFO open until told to let go (SIGUSR1), kills the process at its
 * timeout, and writes the record's `state` whenever something changes.
 *
 * Promises:
 *  - `state` is always whole (written as .state, then swapped in) and
 *    says running until the process is reaped; after that it holds the
 *    exit status, and the output files hold everything the process wrote
 *    before it exited (what its pipes held; not what background children
 *    write later).  An output file is made at its stream's first byte:
 *    none is an empty stream.
 *  - The output files never grow past OUT_MAX kept bytes: the oldest half
 *    is punched out, and `*_start` is moved before the punch.  Where the
 *    filesystem cannot punch holes, new output is dropped instead.
 *  - A terminal (flag "t"): the pty's master is its stdout stream (kept
 *    the same bounded way: a 100 MB flood costs disk it then punches
 *    out, never memory); the stdin FIFO's bytes go to the master, one
 *    4 KiB buffer at a time (the FIFO is read only once the last read
 *    is written), and `winsize` records set its size.
 *  - libc only, statically linked, no allocation in the loop; SIGTERM,
 *    SIGINT and SIGHUP do not stop it (it ends with its process or with
 *    the sandbox's cgroup.kill). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "fdpass.h"
#include "local-forkd-proto.h"
#include "local-kfile.h"
#include "local-procd.h"
#include "spool.h"

struct stream {
	int in;                  /* pipe read end, -1 once at EOF */
	int file;                /* out / err */
	long long start;         /* first byte kept */
	long long end;           /* bytes written so far */
};

static struct {
	int dir;                 /* the record dir */
	char name[64];           /* its name in procs/ */
	pid_t child;
	unsigned long long child_start;
	int nspid;
	int running, exit_code, sig, timed_out;
	long long started_at, ended_at;
	long long out_max;
	struct stream s[2];
	int forkd;               /* "f": the fork server's connection, -1 */
	int lost;                /* a pidfd on the process once the server is gone */
	int tty;                 /* flag "t" */
	int ptm;                 /* the pty's master, -1 when none */
	int tin, twz;            /* the stdin and winsize FIFOs, read ends */
	char pend[4096];         /* keys read, not yet in the master */
	size_t npend, off;
} P = {.forkd = -1, .lost = -1};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* Field 22 of /proc/PID/stat, 0 when unreadable. */
static unsigned long long start_time(pid_t pid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if (local_read_small(p, buf, sizeof(buf)) < 0)
		return 0;
	char *s = strrchr(buf, ')');
	for (int f = 2; s && f < 22; f++) {
		s = strchr(s + 1, ' ');
	}
	return s ? strtoull(s + 1, NULL, 10) : 0;
}

/* The child's pid in the innermost pid namespace (the sandbox's): the
 * last field of NSpid in /proc/PID/status.  It is our unreaped child, so
 * the file is there (a zombie's too). */
static int ns_pid(pid_t pid)
{
	char p[64], buf[4096];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	if (local_read_small(p, buf, sizeof(buf)) < 0)
		return -1;
	char *l = strstr(buf, "\nNSpid:");
	if (!l)
		return -1;
	char *nl = strchr(l + 1, '\n');
	if (nl)
		*nl = '\0';
	char *last = strrchr(l, '\t');
	if (!last)
		last = strrchr(l, ' ');
	return last ? atoi(last + 1) : -1;
}

static void write_state(void)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf),
			 LOCAL_PROC_K_PID " %d\n" LOCAL_PROC_K_HOST_PID " %d\n"
			 LOCAL_PROC_K_HOST_START " %llu\n" LOCAL_PROC_K_SUP_PID " %d\n"
			 LOCAL_PROC_K_SUP_START " %llu\n" LOCAL_PROC_K_RUNNING " %d\n"
			 LOCAL_PROC_K_EXIT " %d\n" LOCAL_PROC_K_SIGNAL " %d\n"
			 LOCAL_PROC_K_TIMED_OUT " %d\n" LOCAL_PROC_K_ENDED_AT " %lld\n"
			 LOCAL_PROC_K_OUT_START " %lld\n" LOCAL_PROC_K_ERR_START " %lld\n",
			 P.nspid, (int)P.child, P.child_start, (int)getpid(),
			 start_time(getpid()), P.running, P.exit_code, P.sig, P.timed_out,
			 P.ended_at, P.s[0].start, P.s[1].start);
	/* Whole, never torn: .state is written, then swapped with state
	 * (RENAME_EXCHANGE), so the record's two inodes serve every write
	 * and, in a recycled folder (local-proc-start.c), every record after
	 * it: a new inode on a journal-less ext4 steps over each recently
	 * deleted one, and a rename over state freed one per write (two a
	 * process).  Only the first write of a fresh folder, which has no
	 * state yet, is a plain rename.  A reader that opened state before a
	 * swap may see it emptied by the write after: it reads again
	 * (local-proc.c). */
	int fd = openat(P.dir, ".state", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	int ok = write(fd, buf, (size_t)n) == n;
	close(fd);
	if (ok && renameat2(P.dir, ".state", P.dir, "state", RENAME_EXCHANGE) < 0)
		renameat(P.dir, ".state", P.dir, "state");
}

/* Keep at most out_max bytes of a stream: before appending `len` more,
 * punch out everything but the newest half (page-aligned), moving start
 * first so that a reader never takes a hole for output. */
static int make_room(struct stream *st, size_t len)
{
	if (st->end + (long long)len - st->start <= P.out_max)
		return 1;
	long long keep_from = (st->end + (long long)len - P.out_max / 2) & ~4095LL;
	if (keep_from <= st->start)
		return 1;
	long long old = st->start;
	st->start = keep_from;
	write_state();
	if (fallocate(st->file, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, old,
		      keep_from - old) == 0)
		return 1;
	st->start = old;         /* cannot punch here: drop the new output */
	write_state();
	return 0;
}

/* Move what the pipe has into the file: 1 after data, 0 at EOF, 2 when
 * there is nothing now.  The file is made at the stream's first byte: a
 * silent stream has none (readers take a missing file for an empty one),
 * two inodes fewer for most commands.  Where it cannot be made the bytes
 * are dropped, as past the bound. */
static int pump(struct stream *st)
{
	char buf[65536];
	ssize_t n = read(st->in, buf, sizeof(buf));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 2 : 0;
	if (n == 0)
		return 0;
	if (st->file < 0)
		st->file = openat(P.dir, st == &P.s[0] ? "out" : "err",
				  O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (st->file >= 0 && make_room(st, (size_t)n) &&
	    pwrite(st->file, buf, (size_t)n, st->end) == n)
		st->end += n;
	return 1;
}

/* After the exit: what the pipes still hold, not what background children
 * write later; a writer that keeps going gets 256 reads, one that is gone
 * a 50 ms grace for the library's last word (a failed execve's reason). */
static void drain(void)
{
	for (int i = 0; i < 2; i++) {
		struct stream *st = &P.s[i];
		for (int k = 0; st->in >= 0 && k < 256; k++) {
			struct pollfd pf = {.fd = st->in, .events = POLLIN};
			if (poll(&pf, 1, 50) <= 0 || pump(st) != 1)
				break;
		}
	}
}

static void reaped(int status)
{
	P.running = 0;
	P.ended_at = now_ms();
	if (WIFEXITED(status)) {
		P.exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		P.exit_code = -1;
		P.sig = WTERMSIG(status);
	}
}

/* The process's end as a record of the session's audit (audit.h, kind
 * process, event end), appended to the sandbox folder's spool (spool.h:
 * the parent of our procs/ dir, fd 4) for the takers that have Redis
 * (sbx-exec, sbx-fs, sbx-proc start, the reaper, a kill).  Only when the
 * create left audit.json (a profile with audit on); a spool at its bound
 * gets a `dropped` line in the broker's slack (LOCAL_AUDIT_RECORD_MAX)
 * instead, and when even that does not fit the end is lost uncounted:
 * a bounded file beats an unbounded one. */
static void audit_end(void)
{
	static const char dir[] = "/proc/self/fd/4/..";
	int64_t max = sbx_spool_conf_max(dir), size;
	if (max <= 0)
		return;
	char line[512];
	int n = snprintf(line, sizeof(line),
			 "{\"kind\":\"process\",\"by\":\"sbx-procd\",\"data\":{\"event\":\"end\","
			 "\"pid\":%d,\"exit_code\":%d,\"signal\":%d,\"timed_out\":%s,"
			 "\"duration_ms\":%lld}}\n",
			 P.nspid, P.exit_code, P.sig, P.timed_out ? "true" : "false",
			 P.ended_at > P.started_at ? P.ended_at - P.started_at : 0);
	if (sbx_spool_append(dir, line, (size_t)n, max, &size) == 0) {
		static const char drop[] = "{\"kind\":\"dropped\",\"data\":{\"count\":1}}\n";
		sbx_spool_append(dir, drop, sizeof(drop) - 1, max + 1024, &size);
	}
}

/* The pty's master, as the process sent it before its execve; -1 when
 * it sent none (it failed before, the socket is at EOF). */
static int recv_master(int sock)
{
	char one;
	struct iovec iov = {.iov_base = &one, .iov_len = 1};
	int fd = -1;
	size_t nfd;
	if (sbx_fds_recv(sock, &iov, 1, &fd, 1, &nfd, 0) != 1 || nfd != 1) {
		if (nfd)
			close(fd);
		return -1;
	}
	return fd;
}

/* A terminal's setup: the master replaces the stdout pipe. */
static void setup_tty(void)
{
	fcntl(LOCAL_PROC_FD_OUT, F_SETFL, 0);   /* setup made it non-blocking */
	P.ptm = recv_master(LOCAL_PROC_FD_OUT);
	close(LOCAL_PROC_FD_OUT);
	P.s[0].in = P.ptm;
	if (P.ptm >= 0)
		fcntl(P.ptm, F_SETFL, O_NONBLOCK);
	P.tin = openat(P.dir, "stdin", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	/* Our own write end keeps it from EOF between writers. */
	P.twz = openat(P.dir, LOCAL_PROC_WINSIZE, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}

/* Keys for the terminal: take what the FIFO has once the last are in. */
static void tty_keys(void)
{
	if (!P.npend) {
		ssize_t n = read(P.tin, P.pend, sizeof(P.pend));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			/* stdin closed: the terminal's EOF, once */
			close(P.tin);
			P.tin = -1;
			struct termios t;
			P.pend[0] = tcgetattr(P.ptm, &t) == 0 && t.c_cc[VEOF] ? (char)t.c_cc[VEOF] : 4;
			n = 1;
		}
		if (n > 0) {
			P.npend = (size_t)n;
			P.off = 0;
		}
	}
}

static void tty_flush(void)
{
	ssize_t w = write(P.ptm, P.pend + P.off, P.npend - P.off);
	if (w > 0)
		P.off += (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR)
		P.off = P.npend;         /* the terminal is gone: drop them */
	if (P.off >= P.npend)
		P.npend = P.off = 0;
}

static void tty_resize(void)
{
	uint16_t rec[16][2];
	ssize_t n = read(P.twz, rec, sizeof(rec));
	size_t k = n > 0 ? (size_t)n / sizeof(rec[0]) : 0;
	if (k && rec[k - 1][0] && rec[k - 1][1]) {
		struct winsize ws = {.ws_col = rec[k - 1][0], .ws_row = rec[k - 1][1]};
		ioctl(P.ptm, TIOCSWINSZ, &ws);
	}
}

/* Flag "f": the fork server's reply to the start, read here and not by
 * the library, which launched us while the server forked.  How it went
 * is the status pipe's first line, "F <stage> <errno>" (the stages of
 * local-forkd-proto.h; REFUSED: nothing was forked, the library takes
 * the old path).  0 when there is a process to supervise (it runs, or
 * its execve failed and it exits 127); -1 when there is none: we exit,
 * and our connection's close before the adoption is the server's word
 * to kill whatever it forked.  No reply in 10 s is a failed start. */
static int take_reply(const char *flags)
{
	if (strchr(flags, 'X'))
		raise(SIGKILL);  /* the fault point procd:before-reply (fault.h) */
	struct pollfd pf = {.fd = LOCAL_PROC_FD_FORKD, .events = POLLIN};
	int stage = LOCAL_FORKD_STAGE_SETNS, e = ETIMEDOUT, pidfd = -1;
	pid_t hp = -1;
	if (poll(&pf, 1, 10000) > 0 &&
	    local_forkd_reply_read(LOCAL_PROC_FD_FORKD, &stage, &e, &pidfd, &hp) == 0)
		stage = LOCAL_FORKD_STAGE_REFUSED;
	char line[64];
	int n = snprintf(line, sizeof(line), "F %d %d\n", stage, e);
	(void)!write(LOCAL_PROC_FD_STATUS, line, (size_t)n);
	if (stage != 0 && stage != LOCAL_FORKD_STAGE_EXEC) {
		if (pidfd >= 0)
			close(pidfd);
		return -1;
	}
	P.child = hp;
	P.lost = pidfd;
	return 0;
}

static int setup(char **argv)
{
	snprintf(P.name, sizeof(P.name), "%s", argv[1]);
	if (!strchr(argv[5], 'f'))
		P.child = (pid_t)atoi(argv[2]);
	long long timeout = atoll(argv[3]);
	P.out_max = atoll(argv[4]) > 0 ? atoll(argv[4]) : LOCAL_PROC_OUT_MAX;
	const char *flags = argv[5];
	P.dir = openat(LOCAL_PROC_FD_DIR, P.name, O_DIRECTORY | O_CLOEXEC);
	if (P.dir < 0)
		return -1;
	P.child_start = start_time(P.child);
	/* The process began before we did (forked, then we were exec'd):
	 * its start is its own, field 22 in clock ticks since boot. */
	struct timespec bt;
	long tck = sysconf(_SC_CLK_TCK);
	long long late = 0;
	if (P.child_start && tck > 0 && clock_gettime(CLOCK_BOOTTIME, &bt) == 0)
		late = (long long)bt.tv_sec * 1000 + bt.tv_nsec / 1000000 -
		       (long long)(P.child_start * 1000 / (unsigned long long)tck);
	P.started_at = now_ms() - (late > 0 && late < 3600000 ? late : 0);
	P.nspid = ns_pid(P.child);
	P.running = 1;
	for (int i = 0; i < 2; i++) {
		P.s[i].in = LOCAL_PROC_FD_OUT + i;
		fcntl(P.s[i].in, F_SETFL, O_NONBLOCK);
		P.s[i].file = -1;        /* made at the first byte (pump) */
	}
	if (!strchr(flags, 's'))
		close(LOCAL_PROC_FD_STDIN);
	P.ptm = P.tin = P.twz = -1;
	if (strchr(flags, 't'))
		setup_tty();
	write_state();
	/* The record becomes <pid>; an older record of that pid (a process
	 * that exited) is swapped out and removed (not made a spare folder,
	 * local-proc-start.c: its supervisor may not have written its last
	 * state yet, and must not write it into a later record). */
	char pid[32];
	snprintf(pid, sizeof(pid), "%d", P.nspid);
	if (renameat2(LOCAL_PROC_FD_DIR, P.name, LOCAL_PROC_FD_DIR, pid, RENAME_NOREPLACE) < 0 &&
	    renameat2(LOCAL_PROC_FD_DIR, P.name, LOCAL_PROC_FD_DIR, pid, RENAME_EXCHANGE) == 0) {
		int old = openat(LOCAL_PROC_FD_DIR, P.name, O_DIRECTORY | O_CLOEXEC);
		static const char *const names[] = {"proc.json", "state", ".state", "out", "err",
						    "stdin", "stdin.closed", LOCAL_PROC_WINSIZE,
						    LOCAL_PROC_ATTACH};
		for (size_t i = 0; old >= 0 && i < sizeof(names) / sizeof(names[0]); i++)
			unlinkat(old, names[i], 0);
		if (old >= 0)
			close(old);
		unlinkat(LOCAL_PROC_FD_DIR, P.name, AT_REMOVEDIR);
	}
	char line[128];
	int n = snprintf(line, sizeof(line), "P %d %d %llu\n", P.nspid, (int)P.child,
			 P.child_start);
	(void)!write(LOCAL_PROC_FD_STATUS, line, (size_t)n);
	if (strchr(flags, 'f')) {
		/* The record has its pid: the server may reap it now. */
		P.forkd = LOCAL_PROC_FD_FORKD;
		char a = LOCAL_FORKD_ADOPTED;
		(void)!send(P.forkd, &a, 1, MSG_NOSIGNAL);
	}
	int tfd = -1;
	if (timeout > 0) {
		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		struct itimerspec it = {.it_value = {timeout / 1000, (timeout % 1000) * 1000000}};
		if (tfd >= 0)
			timerfd_settime(tfd, 0, &it, NULL);
	}
	return tfd;
}

static void on_timeout(const char *flags)
{
	P.timed_out = 1;
	if (!strchr(flags, 'k') || write(LOCAL_PROC_FD_KILL, "1", 1) < 0)
		kill(P.child, SIGKILL);
	write_state();
}

int main(int argc, char **argv)
{
	prctl(PR_SET_NAME, "sbx-procd", 0, 0, 0);
	if (argc != 6 || fcntl(LOCAL_PROC_FD_STATUS, F_GETFD) < 0) {
		fprintf(stderr, "sbx-procd: started by the local backend only\n");
		return 64;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (strchr(argv[5], 'f') && take_reply(argv[5]) < 0)
		return 0;
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	int tfd = setup(argv);
	if (P.dir < 0 || sfd < 0) {
		kill(P.child, SIGKILL);
		waitpid(P.child, NULL, 0);
		return 70;
	}
	/* While the process runs the sandbox is not idle: a shared lock on
	 * the sandbox dir's busy-proc (local-idle.h), which dies with us; its
	 * mtime, touched as we go, is the last exit. */
	int awake = openat(LOCAL_PROC_FD_DIR, "../busy-proc", O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
	if (awake >= 0 && awake <= LOCAL_PROC_FD_KILL) {
		/* Never one of the fixed fds (a free fd 7 is closed again when
		 * stdin closes). */
		int hi = fcntl(awake, F_DUPFD_CLOEXEC, LOCAL_PROC_FD_KILL + 1);
		close(awake);
		awake = hi;
	}
	if (awake >= 0)
		flock(awake, LOCK_SH);
	const char *flags = argv[5];
	int status = 0;
	/* A SIGCHLD that came before the mask was set is gone: ask once. */
	if (P.forkd < 0 && waitpid(P.child, &status, WNOHANG) == P.child)
		reaped(status);
	while (P.running) {
		int keys = P.ptm >= 0 && P.tin >= 0 && !P.npend;
		struct pollfd pf[8] = {
			{.fd = P.s[0].in, .events = POLLIN}, {.fd = P.s[1].in, .events = POLLIN},
			{.fd = sfd, .events = POLLIN}, {.fd = tfd, .events = POLLIN},
			{.fd = P.forkd >= 0 ? P.forkd : P.lost, .events = POLLIN},
			{.fd = keys ? P.tin : -1, .events = POLLIN},
			{.fd = P.ptm >= 0 ? P.twz : -1, .events = POLLIN},
			{.fd = P.ptm >= 0 && P.npend ? P.ptm : -1, .events = POLLOUT},
		};
		if (poll(pf, 8, -1) < 0 && errno != EINTR)
			break;
		if (pf[4].revents && P.forkd >= 0) {
			int32_t st;
			ssize_t got = recv(P.forkd, &st, sizeof(st), MSG_DONTWAIT);
			if (got == (ssize_t)sizeof(st)) {
				reaped(st);
			} else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
				close(P.forkd);   /* the server died: its status is lost */
				P.forkd = -1;
				if (P.lost < 0) {
					P.running = 0;
					P.exit_code = -1;
					P.ended_at = now_ms();
				}
			}
		} else if (pf[4].revents && P.lost >= 0) {
			P.running = 0;
			P.exit_code = -1;
			P.ended_at = now_ms();
		}
		if (pf[5].revents)
			tty_keys();
		if (pf[6].revents)
			tty_resize();
		if (pf[7].revents || (P.npend && !pf[7].revents && pf[5].revents))
			tty_flush();
		for (int i = 0; i < 2; i++)
			if (pf[i].revents && P.s[i].in >= 0 && pump(&P.s[i]) == 0) {
				/* A terminal's master stays open until the process
				 * is reaped: its close hangs the terminal up, and a
				 * process that closed its stdio on its way out (cat
				 * does) died of that SIGHUP instead of its status.
				 * Keys written meanwhile fail and are dropped. */
				if (P.s[i].in != P.ptm)
					close(P.s[i].in);
				P.s[i].in = -1;
			}
		if (pf[3].revents) {
			uint64_t x;
			(void)!read(tfd, &x, sizeof(x));
			close(tfd);
			tfd = -1;
			on_timeout(flags);
		}
		if (pf[2].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				if (si.ssi_signo == SIGUSR1)
					close(LOCAL_PROC_FD_STDIN);
			if (waitpid(P.child, &status, WNOHANG) == P.child)
				reaped(status);
		}
	}
	close(LOCAL_PROC_FD_STDIN);
	drain();
	audit_end();            /* spooled before the state says it ended */
	write_state();
	if (awake >= 0)
		futimens(awake, NULL);
	return 0;
}
