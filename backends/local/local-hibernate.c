/* local-hibernate.c - hibernate and restore a local sandbox with CRIU
 * (contract in local-hibernate.h; the recipe is what tools/vm/criu-probe
 * found, docs/local.md).
 *
 * The dump: `criu dump --tree <init>` with the sandbox's cgroups, its
 * bind mounts external (--external mnt[]:sm) and each file the init holds
 * on a host mount named external (--external file[MNT:INODE]: its
 * executable, the sandbox folder, its cgroup.freeze, cgroup.events and
 * cgroup.kill), which the restore opens again and hands in with
 * --inherit-fd.  The restore runs in a mount namespace of its own
 * (private, without /sys/kernel/tracing, which CRIU 3.17 trips on), with
 * the root overlay mounted again at <dir>/root for --root, the volatile
 * overlay's marker removed first; then CRIU 3.17's stale network lock
 * table (inet CRIU-<old init pid>) is deleted in the restored netns. */
#include "local-hibernate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doc.h"
#include "local-pid.h"
#include "util.h"

#define MAX_EXT 32

struct ext {
	char key[48];            /* MNT:INODE, hex, as CRIU names it */
	char path[PATH_MAX];
	int mode;                /* O_RDONLY, O_WRONLY or O_RDWR */
};

/* The lock that orders dumps and restores of one sandbox: <dir>/hibernate.lock. */
static int hib_lock(const char *dir, struct sbx_err *err)
{
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/hibernate.lock", dir);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "hibernate", "open %s", p);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			close(fd);
			return sbx_fail_errno(err, SBX_INTERNAL, "hibernate", "lock %s", p);
		}
	}
	return fd;
}

/* The mount id of an open file, from /proc/<pid>/fdinfo/<fd>; -1 if unknown. */
static long fd_mnt_id(pid_t pid, int fd, int *flags)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/fdinfo/%d", (int)pid, fd);
	SBX_AUTOCLOSE int f = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *m = strstr(buf, "mnt_id:");
	char *fl = strstr(buf, "flags:");
	if (flags)
		*flags = fl ? (int)strtol(fl + 6, NULL, 8) : 0;
	return m ? strtol(m + 7, NULL, 10) : -1;
}

/* Is mount `id` one of the mounts of `pid`'s mount namespace? */
static int mnt_of(pid_t pid, long id)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mountinfo", (int)pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return 0;
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strtol(line, NULL, 10) == id;
	fclose(f);
	return found;
}

/* Add the file open at /proc/<who>/fd/<fd> to `e` when its mount is not
 * one of the init's; `mode` -1: the fd's own access mode. */
static int add_ext(pid_t init, pid_t who, int fd, int mode, struct ext *e, int *n,
		   struct sbx_err *err)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)who, fd);
	struct stat st;
	if (stat(link, &st) < 0)
		return 0;
	int flags = 0;
	long mnt = fd_mnt_id(who, fd, &flags);
	if (mnt < 0 || mnt_of(init, mnt))
		return 0;
	if (*n == MAX_EXT)
		return sbx_fail(err, SBX_UNSUPPORTED, "hibernate", "the init holds more than %d host files",
				MAX_EXT);
	struct ext *x = &e[(*n)++];
	snprintf(x->key, sizeof(x->key), "%lx:%lx", mnt, (unsigned long)st.st_ino);
	ssize_t l = readlink(link, x->path, sizeof(x->path) - 1);
	x->path[l > 0 ? l : 0] = '\0';
	x->mode = mode >= 0 ? mode : (flags & O_ACCMODE);
	if (x->path[0] != '/')
		return sbx_fail(err, SBX_UNSUPPORTED, "hibernate",
				"the init holds %s, which CRIU cannot name", x->path);
	return 0;
}

/* The files the init holds on mounts outside its mount namespace (its
 * executable and its fds), which CRIU cannot dump but names external. */
static int init_externals(pid_t init, struct ext *e, int *n, struct sbx_err *err)
{
	*n = 0;
	char p[64];
	/* Its executable: the mount id as our own open of it shows. */
	snprintf(p, sizeof(p), "/proc/%d/exe", (int)init);
	SBX_AUTOCLOSE int xfd = open(p, O_RDONLY | O_CLOEXEC);
	if (xfd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "hibernate", "open the init's executable");
	if (add_ext(init, getpid(), xfd, O_RDONLY, e, n, err) < 0)
		return -1;
	snprintf(p, sizeof(p), "/proc/%d/fd", (int)init);
	DIR *d = opendir(p);
	if (!d)
		return sbx_fail_errno(err, SBX_INTERNAL, "hibernate", "list the init's fds");
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d)))
		if (de->d_name[0] != '.')
			rc = add_ext(init, init, atoi(de->d_name), -1, e, n, err);
	closedir(d);
	return rc;
}

/* The pid namespace `pid` is in, as the nsfs link names it ("" if gone). */
static void pid_ns(pid_t pid, char *out, size_t cap)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)pid);
	ssize_t n = readlink(p, out, cap - 1);
	out[n > 0 ? n : 0] = '\0';
}

/* Will `pid` (a process of the sandbox) come back from a dump of the
 * init's tree, or not matter?  Its parents are walked up: reaching the
 * init, yes.  Reaching a process whose parent is outside the sandbox's
 * pid namespace (started from the host): only the fork server, sbx-forkd
 * (the server and its handlers: started again on demand), may be left
 * out, not what it runs (a detached process of sbx-proc, or a command
 * running now), which would die with the tree.  `forkd`: every process
 * walked so far was sbx-forkd.  One gone meanwhile (a `sleep` ending)
 * loses nothing. */
static int in_tree(pid_t init, const char *ns, pid_t pid, int depth, int forkd)
{
	if (pid == init)
		return 1;
	char p[64], line[256], name[32] = "";
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return errno == ENOENT || errno == ESRCH;
	pid_t pp = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "PPid:", 5) == 0)
			pp = (pid_t)atoi(line + 5);
		else if (strncmp(line, "Name:\t", 6) == 0)
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(line + 6, "\n"), line + 6);
	}
	fclose(f);
	char pns[64];
	pid_ns(pp, pns, sizeof(pns));
	forkd = forkd && strcmp(name, "sbx-forkd") == 0;
	if (pp <= 0 || strcmp(pns, ns) != 0)
		return forkd;
	return depth < 64 && in_tree(init, ns, pp, depth + 1, forkd);
}

/* CRIU dumps the init's tree; a process of the sandbox's pid namespace
 * outside it (a detached process of sbx-proc, whose parent sbx-procd
 * lives in the host's pid namespace) would not be dumped and would die
 * with the init: such a sandbox is refused, nothing of it lost.  Every
 * process of the host is looked at (its pid namespace link), as the
 * cgroups do not say it (sbx-proc's have their own). */
static int tree_is_whole(const struct local_rec *r, const char *id, struct sbx_err *err)
{
	char ns[64];
	pid_ns(r->init_pid, ns, sizeof(ns));
	if (!ns[0])
		return sbx_fail(err, SBX_TERMINAL, "hibernate", "sandbox %s is dead (its init is gone)", id);
	DIR *d = opendir("/proc");
	if (!d)
		return sbx_fail_errno(err, SBX_INTERNAL, "hibernate", "list /proc");
	struct dirent *de;
	int whole = 1;
	long bad = 0;
	while (whole && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		char pns[64];
		pid_ns((pid_t)pid, pns, sizeof(pns));
		if (strcmp(pns, ns) == 0 && !(whole = in_tree(r->init_pid, ns, (pid_t)pid, 0, 1)))
			bad = pid;
	}
	closedir(d);
	if (!whole)
		return sbx_fail(err, SBX_UNSUPPORTED, "hibernate",
				"sandbox %s runs a detached process (sbx-proc) or a command (pid %ld), "
				"which CRIU would not dump: not hibernated (docs/local.md, Hibernate)",
				id, bad);
	return 0;
}

/* The root overlay's options (the super options of the init's "/"). */
static char *init_overlay_opts(pid_t init)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mountinfo", (int)init);
	FILE *f = fopen(p, "re");
	if (!f)
		return NULL;
	char line[8192];
	char *opts = NULL;
	while (!opts && fgets(line, sizeof(line), f)) {
		char *fields[8] = {0};
		int i = 0;
		for (char *save = NULL, *t = strtok_r(line, " \n", &save); t && i < 8;
		     t = strtok_r(NULL, " \n", &save)) {
			if (i < 5) {
				fields[i++] = t;
				continue;
			}
			if (strcmp(t, "-") == 0) {
				char *type = strtok_r(NULL, " \n", &save);
				(void)strtok_r(NULL, " \n", &save);      /* source */
				char *super = strtok_r(NULL, " \n", &save);
				/* Without the generic "rw" the kernel shows first:
				 * overlay's own parser refuses it (EINVAL). */
				if (strcmp(fields[4], "/") == 0 && type && strcmp(type, "overlay") == 0 && super)
					opts = sbx_xstrdup(strncmp(super, "rw,", 3) == 0 ? super + 3 : super);
				break;
			}
		}
	}
	fclose(f);
	return opts;
}

/* Run argv (criu, nft), its output to `log` (or /dev/null), nothing else
 * of the caller's open in it; in the child, `pre(arg)` first (NULL:
 * none), which returns <0 to fail.  Returns the exit status, or -1 when
 * it could not be run.  The caller's other descriptors stay out because
 * CRIU's restore forks the sandbox's tasks from itself: one killed midway
 * leaves them holding whatever it held (a caller's pipe never reaching
 * EOF). */
static int run(char *const argv[], const char *log, int (*pre)(void *), void *arg)
{
	pid_t c = fork();
	if (c < 0)
		return -1;
	if (c == 0) {
		int o = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (o < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0)
			_exit(127);
		close_range(3, ~0U, 0);
		if (pre && pre(arg) < 0)
			_exit(126);
		static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
		execvpe(argv[0], argv, envp);
		_exit(127);
	}
	int st;
	while (waitpid(c, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The first "Error" line of a CRIU log, for a message. */
static void log_error(const char *log, char *out, size_t cap)
{
	snprintf(out, cap, "see %s", log);
	FILE *f = fopen(log, "re");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		/* CRIU probes which iptables it has (iptables-save -V, then the
		 * legacy ones): a missing tool is logged as three Errors (the
		 * execvp, the child's status, "-V failed") but is not fatal (no
		 * iptables: none to dump), so they are never the cause; nor is
		 * a child's status line, which follows the line naming it. */
		if (strstr(line, "tables-save") || strstr(line, "tables-legacy-save") ||
		    strstr(line, "exited, status="))
			continue;
		if (strstr(line, "Error") || strncmp(line, "sbx: ", 5) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, cap, "%s", line);
			break;
		}
	}
	fclose(f);
}

static int enter_net(void *arg)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/net", *(int *)arg);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -1 : setns(fd, CLONE_NEWNET);
}

/* Delete CRIU's network lock table "inet CRIU-<pid_dumped>" in the netns
 * of `in`: CRIU 3.17 leaves it after a restore (it unlocks the new init's
 * name) and after a dump killed midway; it drops every packet. */
static void unlock_net(pid_t in, pid_t dumped)
{
	char table[32];
	snprintf(table, sizeof(table), "CRIU-%d", (int)dumped);
	char *nft[] = {"nft", "delete", "table", "inet", table, NULL};
	int pid = (int)in;
	(void)run(nft, NULL, enter_net, &pid);
}

static int dump_locked(struct local_rec *r, const char *id, struct sbx_err *err)
{
	enum local_state st = local_rec_state(r);
	if (st == LOCAL_HIBERNATED)
		return 0;
	if (st != LOCAL_RUNNING)
		return sbx_fail(err, SBX_CONFLICT, "hibernate", "sandbox %s is no longer running", id);
	pid_t init = r->init_pid;
	struct ext e[MAX_EXT];
	int n;
	if (init_externals(init, e, &n, err) < 0)
		return -1;
	SBX_AUTOFREE char *opts = init_overlay_opts(init);
	if (!opts)
		return sbx_fail(err, SBX_INTERNAL, "hibernate", "the root overlay of %s not found", id);
	SBX_AUTOFREE char *tmp = sbx_xasprintf("%s/" LOCAL_HIBERNATE_DIR ".tmp", r->dir);
	SBX_AUTOFREE char *fin = sbx_xasprintf("%s/" LOCAL_HIBERNATE_DIR, r->dir);
	struct sbx_err e2 = {0};
	if (access(tmp, F_OK) == 0)     /* a dump that died: its lock may hold */
		unlock_net(init, init);
	(void)sbx_rm_rf(tmp, &e2);
	(void)sbx_rm_rf(fin, &e2);           /* a stale one of a live init */
	if (mkdir(tmp, 0700) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "hibernate", "mkdir %s", tmp);
	json_object *j = json_object_new_object();
	sbx_json_set_int(j, "init_pid", init);
	sbx_json_set_str(j, "overlay", opts);
	json_object *xs = json_object_new_array();
	for (int i = 0; i < n; i++) {
		json_object *x = json_object_new_object();
		sbx_json_set_str(x, "key", e[i].key);
		sbx_json_set_str(x, "path", e[i].path);
		sbx_json_set_int(x, "mode", e[i].mode);
		json_object_array_add(xs, x);
	}
	json_object_object_add(j, "externals", xs);
	SBX_AUTOFREE char *meta = sbx_xasprintf("%s/sbx-hibernate.json", tmp);
	const char *txt = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
	int wrc = sbx_write_file_atomic(meta, txt, strlen(txt), 0600, 0, err);
	json_object_put(j);
	if (wrc < 0)
		return -1;
	char pidarg[32];
	snprintf(pidarg, sizeof(pidarg), "%d", (int)init);
	char *argv[16 + 2 * MAX_EXT];
	char extarg[MAX_EXT][64];
	int a = 0;
	argv[a++] = "criu";
	argv[a++] = "dump";
	argv[a++] = "--tree";
	argv[a++] = pidarg;
	argv[a++] = "-D";
	argv[a++] = tmp;
	argv[a++] = "-o";
	argv[a++] = "dump.log";
	argv[a++] = "--manage-cgroups";
	argv[a++] = "--external";
	argv[a++] = "mnt[]:sm";
	argv[a++] = "--network-lock";
	argv[a++] = "nftables";
	for (int i = 0; i < n; i++) {
		snprintf(extarg[i], sizeof(extarg[i]), "file[%s]", e[i].key);
		argv[a++] = "--external";
		argv[a++] = extarg[i];
	}
	argv[a] = NULL;
	int rc = run(argv, NULL, NULL, NULL);
	if (rc != 0) {
		char why[600];
		SBX_AUTOFREE char *log = sbx_xasprintf("%s/dump.log", tmp);
		/* The failed dump's log is kept (the last one) for whoever looks
		 * into it; the images go. */
		SBX_AUTOFREE char *kept = sbx_xasprintf("%s/" LOCAL_HIBERNATE_DIR "-dump.log", r->dir);
		const char *shown = rename(log, kept) == 0 ? kept : log;
		log_error(shown, why, sizeof(why));
		(void)sbx_rm_rf(tmp, &e2);
		return sbx_fail(err, SBX_INTERNAL, "hibernate", "criu dump of %s failed (%d; %s): %s",
				id, rc, shown, why);
	}
	if (rename(tmp, fin) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "hibernate", "rename %s", tmp);
	return 0;
}

int local_hibernate_dump_locked(struct local_rec *r, const char *id, struct sbx_err *err)
{
	return dump_locked(r, id, err);
}

int local_hibernate_refused(const struct local_rec *r, const char *id, struct sbx_err *err)
{
	SBX_AUTOFREE char *np = sbx_xasprintf("%s/netpolicy.json", r->dir);
	if (access(np, F_OK) == 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "hibernate",
				"sandbox %s has a network policy (its egress broker and slirp live "
				"outside it): not hibernated yet (docs/local.md, Hibernate)", id);
	return tree_is_whole(r, id, err);
}

void local_hibernate_tidy(struct local_rec *r)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/" LOCAL_HIBERNATE_DIR ".tmp", r->dir);
	if (access(tmp, F_OK) < 0)
		return;
	SBX_AUTOFREE char *lp = sbx_xasprintf("%s/hibernate.lock", r->dir);
	SBX_AUTOCLOSE int fd = open(lp, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	struct sbx_err e = {0};
	/* A dump holds the lock for its whole run: one that does not is dead. */
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || access(tmp, F_OK) < 0 ||
	    local_rec_state(r) != LOCAL_RUNNING)
		return;
	unlock_net(r->init_pid, r->init_pid);
	(void)sbx_rm_rf(tmp, &e);
}

int local_hibernate_lock(const char *dir, struct sbx_err *err)
{
	return hib_lock(dir, err);
}

/* The restore's child, before criu runs: a private mount namespace
 * without tracefs, the root overlay mounted at <dir>/root, the external
 * files opened at the descriptors --inherit-fd names. */
struct restore_ctx {
	const char *root, *opts;
	struct ext *e;
	int n, fd0;
};

static int restore_pre(void *arg)
{
	struct restore_ctx *c = arg;
	/* The files first, in the host's mount namespace: the restored init
	 * holds them on the host's mounts, where the next dump finds them by
	 * their paths again (opened in the private namespace below they
	 * would be on its copies, which die with it). */
	for (int i = 0; i < c->n; i++) {
		int fd = open(c->e[i].path, c->e[i].mode | O_NOFOLLOW);
		if (fd < 0 || dup2(fd, c->fd0 + i) < 0) {
			dprintf(2, "sbx: open %s: %m\n", c->e[i].path);
			return -1;
		}
		if (fd != c->fd0 + i)
			close(fd);
	}
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		dprintf(2, "sbx: a private mount namespace: %m\n");
		return -1;
	}
	(void)umount2("/sys/kernel/tracing", MNT_DETACH);
	if (mount("overlay", c->root, "overlay", MS_NOSUID | MS_NODEV, c->opts) < 0) {
		dprintf(2, "sbx: mount the overlay at %s (%s): %m\n", c->root, c->opts);
		return -1;
	}
	return 0;
}

/* Kill what an earlier restore that died left in the sandbox's cgroup. */
static void kill_leftovers(const struct local_rec *r)
{
	if (!r->cg[CG_V2])
		return;
	SBX_AUTOFREE char *k = sbx_xasprintf("%s/cgroup.kill", r->cg[CG_V2]);
	SBX_AUTOFREE char *ev = sbx_xasprintf("%s/cgroup.events", r->cg[CG_V2]);
	struct sbx_err e = {0};
	int fd = open(k, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "1", 1);
		close(fd);
	}
	for (int i = 0; i < 500; i++) {
		SBX_AUTOFREE char *s = NULL;
		size_t n;
		if (sbx_read_file(ev, 4096, &s, &n, &e) < 0 || strstr(s, "populated 0"))
			return;
		usleep(10000);
	}
}

static int restore_locked(struct local_rec *r, const char *id,
			  struct sbx_err *err)
{
	if (local_rec_state(r) != LOCAL_HIBERNATED)
		return 0;       /* restored by someone else meanwhile, or gone */
	SBX_AUTOFREE char *fin = sbx_xasprintf("%s/" LOCAL_HIBERNATE_DIR, r->dir);
	SBX_AUTOFREE char *meta = sbx_xasprintf("%s/sbx-hibernate.json", fin);
	json_object *j = json_object_from_file(meta);
	if (!j)
		return sbx_fail(err, SBX_INTERNAL, "resume", "%s unreadable", meta);
	struct ext e[MAX_EXT];
	int n = 0;
	json_object *xs = NULL;
	if (!json_object_object_get_ex(j, "externals", &xs) || !json_object_is_type(xs, json_type_array))
		xs = NULL;
	for (size_t i = 0; xs && i < json_object_array_length(xs) && n < MAX_EXT; i++) {
		json_object *x = json_object_array_get_idx(xs, i);
		snprintf(e[n].key, sizeof(e[n].key), "%s", sbx_json_str(x, "key") ?: "");
		snprintf(e[n].path, sizeof(e[n].path), "%s", sbx_json_str(x, "path") ?: "");
		e[n].mode = (int)sbx_json_int(x, "mode", 0);
		n++;
	}
	int old = (int)sbx_json_int(j, "init_pid", 0);
	SBX_AUTOFREE char *opts = sbx_xstrdup(sbx_json_str(j, "overlay") ?: "");
	json_object_put(j);
	kill_leftovers(r);
	/* The overlay is volatile: its workdir keeps a marker after the
	 * unmount that refuses the next mount until it is removed. */
	char *wd = strstr(opts, "workdir=");
	if (wd) {
		SBX_AUTOFREE char *w = sbx_xstrdup(wd + 8);
		w[strcspn(w, ",")] = '\0';
		SBX_AUTOFREE char *vol = sbx_xasprintf("%s/work/incompat/volatile", w);
		struct sbx_err e2 = {0};
		(void)sbx_rm_rf(vol, &e2);
	}
	SBX_AUTOFREE char *root = sbx_xasprintf("%s/root", r->dir);
	SBX_AUTOFREE char *pidf = sbx_xasprintf("%s/restored.pid", fin);
	unlink(pidf);
	struct restore_ctx c = {.root = root, .opts = opts, .e = e, .n = n, .fd0 = 100};
	char *argv[16 + 2 * MAX_EXT];
	char inh[MAX_EXT][96];
	int a = 0;
	argv[a++] = "criu";
	argv[a++] = "restore";
	argv[a++] = "-d";
	argv[a++] = "-D";
	argv[a++] = fin;
	argv[a++] = "-o";
	argv[a++] = "restore.log";
	argv[a++] = "--pidfile";
	argv[a++] = pidf;
	argv[a++] = "--manage-cgroups";
	argv[a++] = "--external";
	argv[a++] = "mnt[]";
	argv[a++] = "--root";
	argv[a++] = root;
	for (int i = 0; i < n; i++) {
		snprintf(inh[i], sizeof(inh[i]), "fd[%d]:file[%s]", c.fd0 + i, e[i].key);
		argv[a++] = "--inherit-fd";
		argv[a++] = inh[i];
	}
	argv[a] = NULL;
	SBX_AUTOFREE char *prelog = sbx_xasprintf("%s/restore-sbx.log", fin);
	int rc = run(argv, prelog, restore_pre, &c);
	SBX_AUTOFREE char *pidtxt = NULL;
	size_t pl;
	struct sbx_err e3 = {0};
	if (rc != 0 || sbx_read_file(pidf, 64, &pidtxt, &pl, &e3) < 0) {
		char why[600];
		SBX_AUTOFREE char *log = sbx_xasprintf("%s/%s", fin, rc == 126 ? "restore-sbx.log" :
								     "restore.log");
		log_error(log, why, sizeof(why));
		return sbx_fail(err, SBX_INTERNAL, "resume", "criu restore of %s failed (%d): %s", id,
				rc, why);
	}
	int pid = atoi(pidtxt);
	/* CRIU 3.17 names its lock table by the dumped init's host pid and
	 * unlocks the new one's: the old table is restored with the netns
	 * and drops every packet until it goes (fixed in CRIU 4.1). */
	unlock_net(pid, old);
	sbx_json_set_int(r->j, "init_pid", pid);
	sbx_json_set_int(r->j, "init_start", (int64_t)local_pid_start(pid));
	if (local_rec_write(r->dir, r->j, err) < 0)
		return -1;
	r->init_pid = pid;
	SBX_AUTOFREE char *done = sbx_xasprintf("%s/" LOCAL_HIBERNATE_DIR ".done", r->dir);
	struct sbx_err e4 = {0};
	(void)sbx_rm_rf(done, &e4);
	if (rename(fin, done) == 0)
		(void)sbx_rm_rf(done, &e4);
	return 0;
}

int local_hibernate_restore(struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, id, &r, err) < 0)
		return -1;
	int lk = hib_lock(r.dir, err);
	int rc = lk < 0 ? -1 : restore_locked(&r, id, err);
	if (lk >= 0)
		close(lk);
	local_rec_free(&r);
	return rc;
}
