/* local-cgroup.c - where a local sandbox's cgroups live, and how its
 * memory, pids and CPU limits are enforced.
 *
 * Two layouts, chosen by the host:
 *
 *  v2  the unified hierarchy only (/sys/fs/cgroup is cgroup2: Debian 12,
 *      Ubuntu 22.04 and later, Fedora).  Sandbox <id> is <parent>/<id>,
 *      with memory.max (and memory.swap.max = 0), pids.max and cpu.max on
 *      it; cgroup.freeze and cgroup.kill come from the same tree.  <parent>
 *      is a delegated cgroup that holds no process itself: the profile's
 *      cgroup_parent, else system.slice/sbx.service on a systemd host
 *      (dist/systemd/sbx.service: Delegate=yes, runs nothing; it must be
 *      active: sbx never creates a cgroup inside systemd's tree on its
 *      own), else "sbx" at the root, which sbx creates.  Not a slice:
 *      systemd ignores Delegate= on slices and rewrites their
 *      cgroup.subtree_control on every reload.  Never the caller's own cgroup: a login or cron
 *      scope dies with its session, and would take the sandboxes with it.
 *  v1  hybrid hosts (cgroup2 at /sys/fs/cgroup/unified, usually with no
 *      controllers): freeze and kill through the v2 tree as above, the
 *      limits through the v1 memory, pids and cpu controllers at
 *      <ctrl>/sbx/<id> (the fallback).
 *
 * The "no internal process" rule of v2 holds in both: <parent> enables
 * the controllers for its children and holds no process; <id> holds the
 * init and enables none, so the init and <id>/work (every exec) share the
 * limits of <id>. */
#include "local-cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "doc.h"
#include "local-pid.h"
#include "local-sb.h"
#include "util.h"

const char *local_cg_v2_mount(void)
{
	static const char *m;
	static int done;
	if (!done) {
		done = 1;
		if (access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0)
			m = "/sys/fs/cgroup/unified";
		else if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
			m = "/sys/fs/cgroup";
	}
	return m;
}

int local_cg_unified(void)
{
	struct statfs s;
	return statfs("/sys/fs/cgroup", &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC;
}

/* The v2 parent of every sandbox cgroup of this profile, absolute; NULL
 * without a cgroup2 mount.  *systemd_default is set when it is the
 * systemd unit's cgroup, which sbx does not create. */
static char *v2_parent(const struct sbx_backend *b, int *systemd_default)
{
	const char *m = local_cg_v2_mount();
	*systemd_default = 0;
	if (!m)
		return NULL;
	const char *rel = local_conf_of(b)->cgroup_parent;
	if (rel) {
		while (*rel == '/')
			rel++;
		return sbx_xasprintf("%s/%s", m, rel);
	}
	if (local_cg_unified() && access("/run/systemd/system", F_OK) == 0) {
		*systemd_default = 1;
		return sbx_xasprintf("%s/system.slice/sbx.service", m);
	}
	return sbx_xasprintf("%s/sbx", m);
}

char *local_cg_path(struct sbx_backend *b, int which, const char *id)
{
	static const char *const v1[] = {
		[CG_MEMORY] = "/sys/fs/cgroup/memory", [CG_PIDS] = "/sys/fs/cgroup/pids",
		[CG_CPU] = "/sys/fs/cgroup/cpu", [CG_DEVICES] = "/sys/fs/cgroup/devices",
	};
	if (which == CG_V2) {
		int sd;
		SBX_AUTOFREE char *parent = v2_parent(b, &sd);
		return parent ? sbx_xasprintf("%s/%s", parent, id) : NULL;
	}
	if (local_cg_unified())
		return NULL;
	char probe[PATH_MAX];
	snprintf(probe, sizeof(probe), "%s/cgroup.procs", v1[which]);
	if (access(probe, F_OK) < 0)
		return NULL;
	return sbx_xasprintf("%s/sbx/%s", v1[which], id);
}

int local_cg_write(const char *dir, const char *file, const char *v)
{
	char p[PATH_MAX];
	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, file) >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return local_write_small(p, v);
}

/* Contents of <dir>/<file> (at most 4 KiB), "" when unreadable. */
static void cg_read(const char *dir, const char *file, char *buf, size_t len)
{
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", dir, file);
	buf[0] = '\0';
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
}

static int has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *s = list; (s = strstr(s, w)); s += n)
		if ((s == list || s[-1] == ' ') && (s[n] == '\0' || s[n] == ' ' || s[n] == '\n'))
			return 1;
	return 0;
}

/* v2: make <parent> fit to hold sandbox cgroups with these limits: it
 * exists (only sbx's own "sbx" or a configured parent is created; the
 * systemd slice must be installed), holds no process, and enables the
 * controllers that the limits need for its children.  A controller the
 * parent does not get from above is enabled from the root only when the
 * parent sits right below the root (sbx's own layout); deeper, it is the
 * delegation's job (Delegate=yes) and its absence is unsupported. */
static int prepare_parent(const char *parent, int systemd_default, const struct sbx_limits *lim,
			  struct sbx_err *err)
{
	const char *m = local_cg_v2_mount();
	if (access(parent, F_OK) < 0) {
		if (systemd_default)
			return sbx_fail(err, SBX_UNSUPPORTED, "create",
					"the cgroup parent %s does not exist: enable and start sbx.service "
					"(Delegate=yes), or set the profile's cgroup_parent", parent);
		if (mkdir(parent, 0755) < 0 && errno != EEXIST)
			return sbx_fail_errno(err, SBX_UNSUPPORTED, "create", "mkdir %s", parent);
	}
	char buf[4096];
	cg_read(parent, "cgroup.procs", buf, sizeof(buf));
	if (buf[0])
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the cgroup parent %s holds processes itself; sandboxes need a "
				"delegated parent of their own (cgroup_parent)", parent);
	const char *need[3];
	size_t n = 0;
	if (lim->memory_bytes > 0)
		need[n++] = "memory";
	if (lim->pids > 0)
		need[n++] = "pids";
	if (lim->cpus > 0)
		need[n++] = "cpu";
	SBX_AUTOFREE char *up = sbx_xstrdup(parent);
	*strrchr(up, '/') = '\0';
	for (size_t i = 0; i < n; i++) {
		char sub[512], avail[512], plus[32];
		cg_read(parent, "cgroup.subtree_control", sub, sizeof(sub));
		if (has_word(sub, need[i]))
			continue;
		snprintf(plus, sizeof(plus), "+%s", need[i]);
		cg_read(parent, "cgroup.controllers", avail, sizeof(avail));
		if (!has_word(avail, need[i]) && strcmp(up, m) == 0)
			(void)local_cg_write(up, "cgroup.subtree_control", plus);
		cg_read(parent, "cgroup.controllers", avail, sizeof(avail));
		if (!has_word(avail, need[i]))
			return sbx_fail(err, SBX_UNSUPPORTED, "create",
					"the %s controller is not delegated to the cgroup parent %s "
					"(Delegate=yes, see sbx(7))", need[i], parent);
		if (local_cg_write(parent, "cgroup.subtree_control", plus) < 0)
			return sbx_fail_errno(err, SBX_UNSUPPORTED, "create",
					      "enable the %s controller in %s", need[i], parent);
	}
	return 0;
}

int local_cg_prepare(struct sbx_backend *b, const struct sbx_limits *lim, struct sbx_err *err)
{
	if (!local_cg_unified())
		return 0;   /* v1: the limits' parents are made with the cgroups */
	int sd;
	SBX_AUTOFREE char *parent = v2_parent(b, &sd);
	if (!parent)
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "no cgroup2 hierarchy is mounted");
	return prepare_parent(parent, sd, lim, err);
}

static int set_limit(const char *cg, const char *file, const char *v, const char *what,
		     struct sbx_err *err)
{
	if (local_cg_write(cg, file, v) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "set the %s limit (%s/%s)", what,
				      cg, file);
	return 0;
}

int local_cg_limit(char *const cg_dirs[LOCAL_NCG], const struct sbx_limits *lim,
		   struct sbx_err *err)
{
	char v[64];
	long long quota = (long long)(lim->cpus * 100000.0);
	if (quota > 0 && quota < 1000)
		quota = 1000;   /* the kernel's minimum */
	if (local_cg_unified()) {
		const char *cg = cg_dirs[CG_V2];
		if (lim->memory_bytes > 0) {
			snprintf(v, sizeof(v), "%lld", (long long)lim->memory_bytes);
			if (set_limit(cg, "memory.max", v, "memory", err) < 0)
				return -1;
			/* No swap past the limit (the file exists with swap
			 * accounting only). */
			if (local_cg_write(cg, "memory.swap.max", "0") < 0 && errno != ENOENT)
				return sbx_fail_errno(err, SBX_INTERNAL, "create", "set memory.swap.max");
		}
		if (lim->pids > 0) {
			snprintf(v, sizeof(v), "%lld", (long long)lim->pids);
			if (set_limit(cg, "pids.max", v, "pids", err) < 0)
				return -1;
		}
		if (quota > 0) {
			snprintf(v, sizeof(v), "%lld 100000", quota);
			if (set_limit(cg, "cpu.max", v, "cpu", err) < 0)
				return -1;
		}
		return 0;
	}
	if (lim->memory_bytes > 0) {
		if (!cg_dirs[CG_MEMORY])
			return sbx_fail(err, SBX_UNSUPPORTED, "create", "no memory cgroup controller");
		snprintf(v, sizeof(v), "%lld", (long long)lim->memory_bytes);
		if (set_limit(cg_dirs[CG_MEMORY], "memory.limit_in_bytes", v, "memory", err) < 0)
			return -1;
	}
	if (lim->pids > 0) {
		if (!cg_dirs[CG_PIDS])
			return sbx_fail(err, SBX_UNSUPPORTED, "create", "no pids cgroup controller");
		snprintf(v, sizeof(v), "%lld", (long long)lim->pids);
		if (set_limit(cg_dirs[CG_PIDS], "pids.max", v, "pids", err) < 0)
			return -1;
	}
	if (quota > 0) {
		if (!cg_dirs[CG_CPU])
			return sbx_fail(err, SBX_UNSUPPORTED, "create", "no cpu cgroup controller");
		snprintf(v, sizeof(v), "%lld", quota);
		if (set_limit(cg_dirs[CG_CPU], "cpu.cfs_period_us", "100000", "cpu period", err) < 0 ||
		    set_limit(cg_dirs[CG_CPU], "cpu.cfs_quota_us", v, "cpu", err) < 0)
			return -1;
	}
	return 0;
}

json_object *local_cg_info(struct sbx_backend *b)
{
	json_object *o = json_object_new_object();
	int sd;
	SBX_AUTOFREE char *parent = v2_parent(b, &sd);
	int unified = local_cg_unified();
	sbx_json_set_str(o, "cgroup", !parent ? "none" : unified ? "v2" : "v1");
	if (parent)
		sbx_json_set_str(o, "cgroup_parent", parent);
	if (unified && parent) {
		char buf[512];
		cg_read(parent, "cgroup.subtree_control", buf, sizeof(buf));
		sbx_json_set_str(o, "cgroup_controllers", sbx_trim(buf));
	}
	return o;
}

/* Value of `key` in a "key value" cgroup file (cgroup.events), or -1. */
static long cg_field(const char *file, const char *key)
{
	char buf[1024];
	if (local_read_small(file, buf, sizeof(buf)) < 0)
		return -1;
	size_t kl = strlen(key);
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ')
			return strtol(l + kl + 1, NULL, 10);
	return -1;
}

/* Wait until `key` in cgroup.events of `cg` equals want (poll wakes on
 * every change of the file).  0, or -1 with errno = ETIMEDOUT. */
int local_cg_wait(const char *cg, const char *key, long want, int timeout_ms)
{
	char ev[PATH_MAX];
	snprintf(ev, sizeof(ev), "%s/cgroup.events", cg);
	int fd = open(ev, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int64_t deadline = sbx_mono_ms() + timeout_ms;
	for (;;) {
		long v = cg_field(ev, key);
		if (v == want || v < 0) {
			close(fd);
			return 0;
		}
		int64_t left = deadline - sbx_mono_ms();
		if (left <= 0)
			break;
		char buf[256];
		(void)!pread(fd, buf, sizeof(buf), 0);
		struct pollfd pf = {.fd = fd, .events = POLLPRI};
		poll(&pf, 1, left > 50 ? 50 : (int)left);
	}
	close(fd);
	errno = ETIMEDOUT;
	return -1;
}

/* 1 removed (or gone), 0 busy (try again), -1 another error. */
static int rmdir_done(void *path)
{
	if (rmdir(path) == 0 || errno == ENOENT)
		return 1;
	return errno == EBUSY ? 0 : -1;
}

/* Remove a cgroup directory and its children, deepest first.  A v1
 * directory can stay busy for a moment after its last task died (2 s at
 * most). */
void local_cg_rmdir_tree(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.') {
			SBX_AUTOFREE char *c = sbx_xasprintf("%s/%s", path, e->d_name);
			local_cg_rmdir_tree(c);
		}
	closedir(d);
	sbx_poll_until(2000, 10, rmdir_done, (void *)path);
}

void local_cg_sweep_x(const char *work, int mine)
{
	DIR *d = opendir(work);
	if (!d)
		return;
	pid_t self = getpid();
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || strncmp(e->d_name, "x-", 2) != 0)
			continue;
		pid_t maker = (pid_t)strtol(e->d_name + 2, NULL, 10);
		if (!(mine && maker == self) && local_pid_alive(maker, 0))
			continue;
		char p[4200];
		snprintf(p, sizeof(p), "%s/%s", work, e->d_name);
		rmdir(p);   /* EBUSY while its processes live */
	}
	closedir(d);
}
