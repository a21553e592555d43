/* sbx-init - the tiny PID 1 of every local sandbox (libexec, not for users).
 *
 * local_init_start (backends/local/local-init.c) forks and at once execs this
 * program with a fixed argv, an empty environment and its configuration on
 * an inherited fd (the contract is local-init.h), so that nothing of the
 * creating process -- its command line, its environment, its memory --
 * lives on in the sandbox.
 *
 * Run first as the launcher: it detaches (setsid), joins the sandbox's
 * cgroups, unshares the mount, pid, uts, ipc, net and cgroup namespaces
 * and forks the init, which is PID 1 of the new pid namespace; it reports
 * the init's pid and exits, so the init is reparented to the host's init
 * and outlives the creator.
 *
 * The init builds the sandbox's root inside its own mount namespace only
 * (overlay, /proc, a read-only /dev of allow-listed nodes, /sys read-only;
 * every writable mount nodev and nosuid), pivots into it, sets the
 * hostname, brings lo up, reports ready, and then does two things for the
 * rest of its life: reap whatever is reparented to it, and run the idle
 * timer (pause or kill the sandbox after the policy's seconds in which
 * nothing kept it awake: no command, exec, detached process, turn lease or
 * egress; the rule is local-idle.h's).  It stays outside the frozen
 * part of the cgroup tree (<cg>, not <cg>/work), so a paused sandbox
 * keeps its timer.
 *
 * When the init dies, the kernel kills every process of its pid namespace
 * and the mount namespace (with the overlay) goes away with them.  Only
 * libc is linked: this is all the code that runs as a sandbox's PID 1. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
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

#include "local-idle.h"
#include "local-init.h"
#include "local-kfile.h"
#include "local-shared.h"

#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | \
		  CLONE_NEWNET | CLONE_NEWCGROUP)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_CG 8
#define MAX_VOL 16

struct cfg {
	const char *id, *dir, *overlay, *host_view;
	const char *shm_size;   /* bytes, or NULL: 64 MiB */
	const char *sysfs;      /* the shared sysfs to bind, or NULL: mount one */
	const char *empty;      /* the shared empty dir, or NULL */
	const char *dev;        /* the shared /dev to bind, or NULL: build one */
	const char *cg[MAX_CG];
	int ncg;
	int cg_joined;          /* born in cg[0]: do not move there */
	const char *vol[MAX_VOL];  /* "<r|w><path>\n<host dir>" (local-init.h) */
	int nvol;
};

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


/* Read the configuration (fd 4) into `buf` and point `c` into it.  0, or
 * -1 with errno set (EINVAL: a record is malformed or a key is missing). */
static int cfg_read(char *buf, size_t cap, struct cfg *c)
{
	size_t len = 0;
	for (;;) {
		ssize_t n = pread(SBX_INIT_FD_CONFIG, buf + len, cap - 1 - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len >= cap - 1) {
			errno = EFBIG;
			return -1;
		}
	}
	buf[len] = '\0';
	memset(c, 0, sizeof(*c));
	for (char *r = buf, *next; r < buf + len; r = next) {
		next = r + strlen(r) + 1;
		char *eq = strchr(r, '=');
		if (!eq) {
			errno = EINVAL;
			return -1;
		}
		*eq = '\0';
		const char *v = eq + 1;
		if (strcmp(r, SBX_INIT_K_ID) == 0)
			c->id = v;
		else if (strcmp(r, SBX_INIT_K_DIR) == 0)
			c->dir = v;
		else if (strcmp(r, SBX_INIT_K_OVERLAY) == 0)
			c->overlay = v;
		else if (strcmp(r, SBX_INIT_K_HOST_VIEW) == 0)
			c->host_view = v;
		else if (strcmp(r, SBX_INIT_K_SYSFS) == 0)
			c->sysfs = v;
		else if (strcmp(r, SBX_INIT_K_EMPTY) == 0)
			c->empty = v;
		else if (strcmp(r, SBX_INIT_K_DEV) == 0)
			c->dev = v;
		else if (strcmp(r, SBX_INIT_K_SHM_SIZE) == 0 && v[strspn(v, "0123456789")] == '\0')
			c->shm_size = v;
		else if (strcmp(r, SBX_INIT_K_CG) == 0 && c->ncg < MAX_CG)
			c->cg[c->ncg++] = v;
		else if (strcmp(r, SBX_INIT_K_VOLUME) == 0 && c->nvol < MAX_VOL &&
			 (v[0] == 'r' || v[0] == 'w') && v[1] == '/' && strchr(v, '\n'))
			c->vol[c->nvol++] = v;
		else if (strcmp(r, SBX_INIT_K_CG_JOINED) == 0)
			c->cg_joined = strcmp(v, "1") == 0;
	}
	if (!c->id || !c->dir || !c->overlay || c->ncg == 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
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
 * and the files that leak host kernel state are masked.  A masked
 * directory gets `empty` bound over it when there is one (the host view's
 * empty tmpfs): every superblock a sandbox holds costs memory in every
 * memory cgroup of the host (the kernel's per-cgroup shrinker maps), so
 * one empty tmpfs serves both. */
static void protect_proc(struct init_fds *f, const char *root, const char *empty)
{
	static const char *const ro[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
	static const char *const masked[] = {
		"kcore", "keys", "timer_list", "sched_debug", "acpi", "scsi", "kallsyms",
	};
	char p[4200];
	for (size_t i = 0; i < ARRAY_LEN(ro); i++) {
		snprintf(p, sizeof(p), "%s/proc/%s", root, ro[i]);
		if (access(p, F_OK) < 0)
			continue;
		mount_or_die(f, p, p, NULL, MS_BIND | MS_REC, NULL, "bind /proc path");
		mount_or_die(f, NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID |
			     MS_NODEV | MS_NOEXEC, NULL, "make /proc path read-only");
	}
	for (size_t i = 0; i < ARRAY_LEN(masked); i++) {
		struct stat st;
		snprintf(p, sizeof(p), "%s/proc/%s", root, masked[i]);
		if (stat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && empty) {
			mount_or_die(f, empty, p, NULL, MS_BIND, NULL, "mask /proc dir");
			mount_or_die(f, NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID |
				     MS_NODEV | MS_NOEXEC, NULL, "make a /proc mask read-only");
		} else if (S_ISDIR(st.st_mode))
			mount_or_die(f, "tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				     "size=0", "mask /proc dir");
		else
			mount_or_die(f, "/dev/null", p, NULL, MS_BIND, NULL, "mask /proc file");
	}
}

/* An empty read-only directory, for the /proc masks and the host view's
 * bottom layer: the shared one (local-shared.h), else, with a host view
 * to make, an empty tmpfs of our own at <dir>/hostempty, else NULL. */
static const char *empty_dir(struct init_fds *f, const struct cfg *c, char *buf, size_t cap)
{
	if (c->empty && local_is_mount_of(c->empty, TMPFS_MAGIC))
		return c->empty;
	if (!c->host_view)
		return NULL;
	snprintf(buf, cap, "%s/hostempty", c->dir);
	mount_or_die(f, "tmpfs", buf, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=755",
		     "mount the empty host-view layer");
	return buf;
}

/* overlayfs refuses a lower layer that lies below another lower layer of
 * the same filesystem ("overlapping lowerdir path").  A snapshot over the
 * `host` template stacks layers kept under the state dir (on the root
 * filesystem, usually) over "/" itself, so "/" enters the stack through a
 * read-only overlay of its own (lowerdir=<empty tmpfs>:/): a different
 * superblock, the same files.  Where the shared one is mounted (the host
 * view path is already an overlay: local-shared.h) it serves; else we
 * mount one there, in this mount namespace only. */
static void mount_host_view(struct init_fds *f, const struct cfg *c, const char *empty)
{
	char opts[4300];
	if (local_is_mount_of(c->host_view, OVERLAYFS_SUPER_MAGIC))
		return;
	snprintf(opts, sizeof(opts), "lowerdir=%s:/", empty);
	mount_or_die(f, "overlay", c->host_view, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts,
		     "mount the host view");
}

/* A /dev of our own, never the host's: the allow-listed nodes (null, zero,
 * full, random, urandom, tty; ptmx through pts), the fd links, and then
 * read-only, so that no node (nor anything else) can be added.  The
 * shared one (local-shared.h) is the same, bound. */
static void own_dev(struct init_fds *f, const char *root)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/dev", root);
	mount_or_die(f, "tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, LOCAL_DEV_TMPFS_OPTS,
		     "mount /dev");
	for (size_t i = 0; i < ARRAY_LEN(local_dev_nodes); i++)
		mknod_dev(f, root, local_dev_nodes[i].name, local_dev_nodes[i].maj,
			  local_dev_nodes[i].min);
	static const char *const dirs[] = {"pts", "shm"};
	for (size_t i = 0; i < ARRAY_LEN(dirs); i++) {
		snprintf(p, sizeof(p), "%s/dev/%s", root, dirs[i]);
		if (mkdir(p, 0755) < 0)
			DIE(f, "mkdir /dev/pts|shm");
	}
	for (size_t i = 0; i < ARRAY_LEN(local_dev_links); i++) {
		snprintf(p, sizeof(p), "%s/dev/%s", root, local_dev_links[i][1]);
		if (symlink(local_dev_links[i][0], p) < 0)
			DIE(f, "symlink in /dev");
	}
}

/* /dev: the shared one or our own, read-only; in it the sandbox's own
 * devpts instance and /dev/shm, nodev, nosuid and noexec like Docker's,
 * and sized (`shm_size` bytes): a write past it fails with ENOSPC.  Its
 * pages are charged to the writer's memory cgroup as well. */
static void setup_dev(struct init_fds *f, const struct cfg *c, const char *root)
{
	char p[4200], shm_opts[64];
	snprintf(p, sizeof(p), "%s/dev", root);
	if (c->dev && local_is_mount_of(c->dev, TMPFS_MAGIC))
		mount_or_die(f, c->dev, p, NULL, MS_BIND, NULL, "bind the shared /dev");
	else
		own_dev(f, root);
	mount_or_die(f, NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
		     NULL, "make /dev read-only");
	snprintf(p, sizeof(p), "%s/dev/pts", root);
	mount_or_die(f, "devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
		     "newinstance,ptmxmode=0666,mode=0620", "mount /dev/pts");
	snprintf(p, sizeof(p), "%s/dev/shm", root);
	snprintf(shm_opts, sizeof(shm_opts), "mode=1777,size=%s", c->shm_size ? c->shm_size : "67108864");
	mount_or_die(f, "shm", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, shm_opts,
		     "mount /dev/shm");
}

/* /sys, read-only: the shared one (local-shared.h: a bind walks no
 * superblock list), else (none shared, or unmounted on the host since the
 * creator looked) one of our own. */
static void setup_sys(struct init_fds *f, const struct cfg *c, const char *root)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/sys", root);
	if (!c->sysfs || !local_is_mount_of(c->sysfs, SYSFS_MAGIC)) {
		mount_or_die(f, "sysfs", p, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			     NULL, "mount /sys");
		return;
	}
	mount_or_die(f, c->sysfs, p, NULL, MS_BIND, NULL, "bind the shared /sys");
	mount_or_die(f, NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
		     MS_NOEXEC, NULL, "make /sys read-only");
	/* Its network namespace is not held here: the host's pin
	 * (<sysfs>.net) holds it.  An fd on that nsfs file would be a file of
	 * a mount outside the sandbox that CRIU can name external but not
	 * restore (it seeks it: ESPIPE), so a sandbox holding one could not be
	 * hibernated (docs/local.md).  The cost: if an admin unmounts the
	 * host's pin, this /sys stays but its class/net no longer lists lo. */
}

/* The sandbox's root.  A kernel before 5.10 does not know `volatile`
 * (local-layer.c says why it is asked for): then without it. */
static void mount_overlay(struct init_fds *f, const char *root, const char *opts)
{
	if (mount("overlay", root, "overlay", MS_NODEV | MS_NOSUID, opts) == 0)
		return;
	static const char vol[] = ",volatile";
	size_t n = strlen(opts);
	if (errno != EINVAL || n < sizeof(vol) || strcmp(opts + n - (sizeof(vol) - 1), vol) != 0)
		DIE(f, "mount the overlay");
	char plain[SBX_INIT_CONFIG_MAX];
	snprintf(plain, sizeof(plain), "%.*s", (int)(n - (sizeof(vol) - 1)), opts);
	mount_or_die(f, "overlay", root, "overlay", MS_NODEV | MS_NOSUID, plain,
		     "mount the overlay");
}

/* The directory `path` (absolute) below the directory fd `root`, made
 * when missing (0755), as an O_PATH fd; every component is opened with
 * O_NOFOLLOW, so a symlink in the template (mnt -> /proc, or into the
 * host's paths before the pivot) is refused (ELOOP/ENOTDIR), never
 * followed.  -1 with errno. */
static int mkdir_below(int root, const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	int fd = dup(root);
	for (char *s = buf, *save = NULL, *c; fd >= 0 && (c = strtok_r(s, "/", &save)); s = NULL) {
		if (!strcmp(c, ".") || !strcmp(c, "..")) {
			close(fd);
			errno = EINVAL;
			return -1;
		}
		if (mkdirat(fd, c, 0755) < 0 && errno != EEXIST) {
			close(fd);
			return -1;
		}
		int next = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
	}
	return fd;
}

/* The volumes (local-init.h), on the new root before the pivot: each a
 * detached copy of its host folder (open_tree: nothing of the host's tree
 * beside it comes along), set nodev, nosuid and, for r, read-only before
 * it is attached (mount_setattr), then moved onto its mount point, which
 * is reached through fds only (mkdir_below).  The sandbox's seccomp
 * filter refuses every mount call (local-seccomp.c), so root inside can
 * neither remount it writable nor unmount it to see what is below. */
static void mount_volumes(struct init_fds *f, const struct cfg *c, const char *root)
{
	int rfd = c->nvol ? open(root, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (c->nvol && rfd < 0)
		DIE(f, "open the new root");
	for (int i = 0; i < c->nvol; i++) {
		char path[4096];
		const char *nl = strchr(c->vol[i], '\n');
		snprintf(path, sizeof(path), "%.*s", (int)(nl - c->vol[i] - 1), c->vol[i] + 1);
		int src = (int)syscall(SYS_open_tree, AT_FDCWD, nl + 1,
				       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (src < 0)
			DIE(f, "open a volume's folder");
		struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
						   (c->vol[i][0] == 'r' ? MOUNT_ATTR_RDONLY : 0)};
		if (syscall(SYS_mount_setattr, src, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
			DIE(f, "set a volume's mount flags");
		int dst = mkdir_below(rfd, path);
		if (dst < 0)
			DIE(f, "make a volume's mount point");
		if (syscall(SYS_move_mount, src, "", dst, "",
			    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			DIE(f, "mount a volume");
		close(src);
		close(dst);
	}
	if (rfd >= 0)
		close(rfd);
}

/* Build the sandbox's root at <dir>/root and pivot into it.  The overlay
 * is nodev: a device node in any layer (a hostile template, a snapshot,
 * one root made inside) cannot be opened; and nosuid (see docs/security). */
static void setup_root(struct init_fds *f, const struct cfg *c)
{
	char root[4096], p[4200];
	snprintf(root, sizeof(root), "%s/root", c->dir);

	mount_or_die(f, NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL, "make mounts private");
	char ebuf[4200];
	const char *empty = empty_dir(f, c, ebuf, sizeof(ebuf));
	if (c->host_view)
		mount_host_view(f, c, empty);
	mount_overlay(f, root, c->overlay);

	snprintf(p, sizeof(p), "%s/proc", root);
	mount_or_die(f, "proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, "mount /proc");
	protect_proc(f, root, empty);
	setup_sys(f, c, root);
	setup_dev(f, c, root);
	mount_volumes(f, c, root);

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

/* Milliseconds since something last kept the sandbox awake (the rule is
 * local-idle.h's); *by gets what it was. */
static int64_t idle_ms(int dirfd, enum local_awake *by)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	struct local_idle st;
	local_idle_probe(dirfd, now_ms, &st);
	*by = st.by;
	int64_t ms = now_ms - st.last_ms;
	return st.held || ms < 0 ? 0 : ms;
}

/* The idle pause's marker (local-idle.h): what last kept the sandbox
 * awake, for the host side to show.  Written before the freeze, so a
 * frozen sandbox found without it was paused by a command. */
static void mark_idle_pause(int dirfd, enum local_awake by)
{
	int fd = openat(dirfd, LOCAL_IDLE_MARKER, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	const char *w = local_awake_name(by);
	(void)!write(fd, w, strlen(w));
	(void)!write(fd, "\n", 1);
	close(fd);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	char line[64];
	int n = snprintf(line, sizeof(line), "P %lld %s\n",
			 (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, w);
	local_idle_log(dirfd, line, (size_t)n);
}

static __attribute__((noreturn)) void init_loop(struct init_fds *f)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	struct policy pol;
	policy_load(f->dir, &pol);
	/* This idle spell's pause is marked and logged once, also when the
	 * freeze takes more than one turn of the loop to show as frozen. */
	int marked = 0;
	for (;;) {
		struct timespec ts = {1, 0};
		int64_t wait_ms = -1;
		if (pol.seconds > 0 && !work_frozen(f->events)) {
			enum local_awake by;
			int64_t idle = idle_ms(f->dir, &by);
			int64_t left = pol.seconds * 1000 - idle;
			if (left <= 0) {
				if (pol.pause) {
					if (!marked)
						mark_idle_pause(f->dir, by);
					marked = 1;
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
			marked = 0;
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
static __attribute__((noreturn)) void init_main(struct init_fds *f, const struct cfg *c)
{
	/* A session of our own, led by PID 1 of the sandbox's pid namespace:
	 * the launcher's session was made in the host's pid namespace, and a
	 * tree whose session leader is outside its pid namespace cannot be
	 * checkpointed (CRIU refuses it; docs/local.md, hibernate).  Cannot
	 * fail: the init was forked, so it leads no process group. */
	setsid();
	/* Nobody in the sandbox may read this process's fds or memory. */
	prctl(PR_SET_DUMPABLE, 0);
	setup_root(f, c);
	if (sethostname(c->id, strlen(c->id)) < 0)
		DIE(f, "sethostname");
	lo_up(f);
	/* stdio on the sandbox's own /dev/null, not the host's. */
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

/* The launcher: detach, join, unshare, fork the init, report its pid.
 * Anything wrong with how we were started (run by hand, no config) is
 * said on stderr when there is no status pipe to say it on. */
int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	/* comm: an fexecve'd program is otherwise named by its fd number. */
	prctl(PR_SET_NAME, "sbx-init");
	struct init_fds f = {.status = SBX_INIT_FD_STATUS, .dir = -1, .freeze = -1,
			     .events = -1, .kill = -1};
	struct stat st;
	if (fstat(SBX_INIT_FD_STATUS, &st) < 0 || !S_ISFIFO(st.st_mode) ||
	    fstat(SBX_INIT_FD_CONFIG, &st) < 0) {
		static const char msg[] = "sbx-init: started by the local backend only\n";
		(void)!write(2, msg, sizeof(msg) - 1);
		return 64;
	}
	static char cfgbuf[SBX_INIT_CONFIG_MAX];
	struct cfg c;
	if (cfg_read(cfgbuf, sizeof(cfgbuf), &c) < 0)
		DIE(&f, "read the init's configuration");
	/* Only stdio and the status pipe: the config is read, and nothing
	 * else was meant to reach us. */
	syscall(SYS_close_range, SBX_INIT_FD_STATUS + 1, ~0U, 0);
	signal(SIGPIPE, SIG_IGN);
	if (setsid() < 0)
		DIE(&f, "setsid");
	char p[4200];
	f.dir = open(c.dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (f.dir < 0)
		DIE(&f, "open the sandbox dir");
	snprintf(p, sizeof(p), "%s/work/cgroup.freeze", c.cg[0]);
	if ((f.freeze = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		DIE(&f, "open cgroup.freeze");
	snprintf(p, sizeof(p), "%s/work/cgroup.events", c.cg[0]);
	if ((f.events = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		DIE(&f, "open cgroup.events");
	snprintf(p, sizeof(p), "%s/work/cgroup.kill", c.cg[0]);
	if ((f.kill = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		DIE(&f, "open cgroup.kill");
	umask(0);
	char pid[32];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (int i = c.cg_joined ? 1 : 0; i < c.ncg; i++) {
		snprintf(p, sizeof(p), "%s/cgroup.procs", c.cg[i]);
		if (local_write_small(p, pid) < 0)
			DIE(&f, "join the sandbox cgroups");
	}
	if (unshare(NS_FLAGS) < 0)
		DIE(&f, "unshare namespaces");
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	pid_t child = fork();
	if (child < 0)
		DIE(&f, "fork the init");
	if (child == 0)
		init_main(&f, &c);
	report(f.status, "P %d\n", (int)child);
	_exit(0);
}
