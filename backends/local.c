/* local.c - the local backend: sandboxes as Linux namespaces + overlayfs
 * on this machine, no daemon.  This file holds the vtable and the sandbox
 * lifecycle (create, get, list, connect, pause/resume, timeouts, remove);
 * the init is sbx-init (libexec/sbx-init.c, started by local-init.c),
 * exec lives in local-exec.c, files and images in their own files.  The
 * on-disk layout and the cgroup layout are described in local-sb.h.
 *
 * Promises:
 *  - State is on disk only; any process can pick up any sandbox.
 *  - A create killed at any point (SIGKILL included) leaves a directory
 *    with a record that `list` shows (state dead) and `remove` cleans: the
 *    record is written before anything else exists, and every other
 *    resource is found from the id alone.
 *  - remove is idempotent: a sandbox that is already gone is success with
 *    *gone = 1.
 *  - The host never holds a mount of a sandbox: the overlay exists only in
 *    the sandbox's mount namespace, which dies with its last process. */
#include "local-sb.h"
#include "local-egress.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>


#include "doc.h"
#include "local-devices.h"
#include "local-hostview.h"
#include "local-image.h"
#include "local-quota.h"
#include "local-seccomp.h"
#include "fault.h"
#include "fingerprint.h"
#include "util.h"

#define HOST_TEMPLATE "host"
#define SANDBOX_UID 1000

static struct local *L(struct sbx_backend *b) { return b->priv; }

static int valid_id(const char *id)
{
	if (!id || strncmp(id, "sb-", 3) != 0 || strlen(id) > 64)
		return 0;
	for (const char *p = id + 3; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return 0;
	return id[3] != '\0';
}

static char *sb_dir(struct sbx_backend *b, const char *id)
{
	return sbx_xasprintf("%s/sandboxes/%s", L(b)->dir, id);
}

/* ---- cgroups ---- */

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Value of `key` in a "key value" cgroup file (cgroup.events), or -1. */
static long cg_field(const char *file, const char *key)
{
	char buf[1024];
	if (read_small(file, buf, sizeof(buf)) < 0)
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

static int mkdir_ok(const char *p, unsigned mode)
{
	return mkdir(p, mode) == 0 || errno == EEXIST ? 0 : -1;
}

/* Remove a cgroup directory and its children, deepest first.  A v1
 * directory can stay busy for a moment after its last task died. */
static void cg_rmdir_tree(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.') {
			SBX_AUTOFREE char *c = sbx_xasprintf("%s/%s", path, e->d_name);
			cg_rmdir_tree(c);
		}
	closedir(d);
	for (int i = 0; i < 200; i++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return;
		if (errno != EBUSY)
			return;
		struct timespec ts = {0, 10 * 1000000};
		nanosleep(&ts, NULL);
	}
}

/* ---- records ---- */

unsigned long long local_pid_start(pid_t pid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if (read_small(p, buf, sizeof(buf)) < 0)
		return 0;
	char *s = strrchr(buf, ')');
	if (!s)
		return 0;
	/* Field 3 (state) follows ") "; starttime is field 22. */
	char state = s[2];
	if (state == 'Z' || state == 'X')
		return 0;
	s += 2;
	for (int f = 3; f < 22 && s; f++) {
		s = strchr(s, ' ');
		if (s)
			s++;
	}
	return s ? strtoull(s, NULL, 10) : 0;
}

/* Field 3 of /proc/PID/stat (R, S, D, T, t, Z...), or 0. */
static char pid_state(pid_t pid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if (read_small(p, buf, sizeof(buf)) < 0)
		return 0;
	char *s = strrchr(buf, ')');
	return s && s[1] == ' ' ? s[2] : 0;
}

/* The init is stopped: by a signal (T) or by a tracer (t). */
static int init_stopped(pid_t pid)
{
	char st = pid_state(pid);
	return st == 'T' || st == 't';
}

int local_pid_alive(pid_t pid, unsigned long long start)
{
	if (pid <= 0)
		return 0;
	unsigned long long now = local_pid_start(pid);
	return now != 0 && (start == 0 || now == start);
}

static int rec_write(const char *dir, json_object *j, struct sbx_err *err)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/.sandbox.json.%d", dir, (int)getpid());
	snprintf(dst, sizeof(dst), "%s/sandbox.json", dir);
	const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
	/* No fsync: the record describes processes, and a power loss kills
	 * those anyway; rename keeps it whole against a crashed writer. */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "state", "write %s", tmp);
	if (sbx_write_all(fd, s, strlen(s)) < 0 || sbx_write_all(fd, "\n", 1) < 0) {
		close(fd);
		unlink(tmp);
		return sbx_fail_errno(err, SBX_INTERNAL, "state", "write %s", tmp);
	}
	close(fd);
	if (rename(tmp, dst) < 0) {
		unlink(tmp);
		return sbx_fail_errno(err, SBX_INTERNAL, "state", "rename %s", dst);
	}
	return 0;
}

void local_rec_free(struct local_rec *r)
{
	free(r->dir);
	json_object_put(r->j);
	for (int i = 0; i < LOCAL_NCG; i++)
		free(r->cg[i]);
	memset(r, 0, sizeof(*r));
}

static const char *const cg_keys[LOCAL_NCG] = {"v2", "memory", "pids", "cpu",
							   "devices"};

int local_rec_load(struct sbx_backend *b, const char *id, struct local_rec *r,
		   struct sbx_err *err)
{
	memset(r, 0, sizeof(*r));
	if (!valid_id(id))
		return sbx_fail(err, SBX_NOT_FOUND, "get", "no sandbox %s", id ? id : "(null)");
	r->dir = sb_dir(b, id);
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/sandbox.json", r->dir);
	SBX_AUTOFREE char *data = NULL;
	size_t len;
	struct sbx_err e2 = {0};
	if (sbx_read_file(path, 1 << 20, &data, &len, &e2) < 0) {
		int gone = access(r->dir, F_OK) < 0;
		local_rec_free(r);
		if (gone)
			return sbx_fail(err, SBX_NOT_FOUND, "get", "no sandbox %s", id);
		/* A directory without a record: a create that died before its
		 * first write.  Present it as a dead sandbox. */
		r->dir = sb_dir(b, id);
		r->j = json_object_new_object();
		sbx_json_set_str(r->j, "id", id);
		sbx_json_set_str(r->j, "state", "creating");
	} else {
		r->j = json_tokener_parse(data);
		if (!r->j || !json_object_is_type(r->j, json_type_object)) {
			json_object_put(r->j);
			r->j = json_object_new_object();
			sbx_json_set_str(r->j, "id", id);
			sbx_json_set_str(r->j, "state", "creating");
		}
	}
	/* The record names every cgroup the sandbox has (one it does not
	 * name did not exist when it was made: an older sandbox has no
	 * devices cgroup); without a record they are derived from the id. */
	json_object *cg = sbx_json_obj(r->j, "cgroups");
	for (int i = 0; i < LOCAL_NCG; i++) {
		const char *p = cg ? sbx_json_str(cg, cg_keys[i]) : NULL;
		r->cg[i] = p ? sbx_xstrdup(p) : cg ? NULL : local_cg_path(b, i, id);
	}
	r->init_pid = (pid_t)sbx_json_int(r->j, "init_pid", 0);
	return 0;
}

static enum sbx_state rec_state(const struct local_rec *r)
{
	const char *st = sbx_json_str(r->j, "state");
	if (!st || strcmp(st, "ready") != 0) {
		pid_t c = (pid_t)sbx_json_int(r->j, "creator_pid", 0);
		unsigned long long cs = (unsigned long long)sbx_json_int(r->j, "creator_start", 0);
		return local_pid_alive(c, cs) ? SBX_STATE_TRANSITIONING : SBX_STATE_DEAD;
	}
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/killed", r->dir);
	if (access(p, F_OK) == 0)
		return SBX_STATE_TERMINAL;
	if (!local_pid_alive(r->init_pid,
			     (unsigned long long)sbx_json_int(r->j, "init_start", 0)))
		return SBX_STATE_DEAD;
	/* Before paused: a stopped init keeps no timer and reaps nothing,
	 * whatever its sandbox's processes do. */
	if (init_stopped(r->init_pid))
		return SBX_STATE_STOPPED;
	if (r->cg[CG_V2]) {
		char buf[16];
		snprintf(p, sizeof(p), "%s/work/cgroup.freeze", r->cg[CG_V2]);
		if (read_small(p, buf, sizeof(buf)) == 0 && buf[0] == '1')
			return SBX_STATE_PAUSED;
	}
	return SBX_STATE_RUNNING;
}

static void rec_to_sandbox(struct sbx_backend *b, const struct local_rec *r,
			   struct sbx_sandbox *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->id = sbx_xstrdup(sbx_json_str(r->j, "id"));
	sb->backend = sbx_xstrdup("local");
	sb->profile = sbx_xstrdup(b->profile && b->profile->name ? b->profile->name : "default");
	const char *t = sbx_json_str(r->j, "template");
	sb->template_id = t ? sbx_xstrdup(t) : NULL;
	sb->state = rec_state(r);
	json_object *md = sbx_json_obj(r->j, "metadata");
	sb->metadata = md ? json_object_get(md) : json_object_new_object();
	const char *s = sbx_json_str(sb->metadata, "sbx.tenant");
	sb->tenant = s ? sbx_xstrdup(s) : NULL;
	s = sbx_json_str(sb->metadata, "sbx.session");
	sb->session = s ? sbx_xstrdup(s) : NULL;
	sb->created_at = sbx_json_int(r->j, "created_at", 0);
}

/* ---- preparing the writable layer ---- */

struct layers {
	char **dir;              /* top-most first */
	size_t n;
	int host;                /* the bottom layer is the host's "/" */
};

static void layers_free(struct layers *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->dir[i]);
	free(l->dir);
	memset(l, 0, sizeof(*l));
}

/* Where `rel` (no leading slash) is found in the layer stack: the first
 * (top-most) layer that has it.  0 and *st, or -1. */
static int lower_stat(const struct layers *l, const char *rel, struct stat *st, char **found)
{
	for (size_t i = 0; i < l->n; i++) {
		SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", strcmp(l->dir[i], "/") ? l->dir[i] : "",
						      rel);
		if (lstat(p, st) == 0) {
			if (found)
				*found = sbx_xstrdup(p);
			return 0;
		}
	}
	return -1;
}

/* mkdir -p of `rel` inside the upper layer; each created directory copies
 * the owner and mode of the lower directory it shadows (so that /var or
 * /etc look the same), or gets root 0755 when the lower has none. */
static int upper_mkdirs(const char *upper, const struct layers *l, const char *rel,
			struct sbx_err *err)
{
	char path[PATH_MAX], r[PATH_MAX];
	snprintf(r, sizeof(r), "%s", rel);
	for (char *s = r;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		snprintf(path, sizeof(path), "%s/%s", upper, r);
		if (mkdir(path, 0755) == 0) {
			struct stat st;
			if (lower_stat(l, r, &st, NULL) == 0 && S_ISDIR(st.st_mode)) {
				if (chown(path, st.st_uid, st.st_gid) < 0 ||
				    chmod(path, st.st_mode & 07777) < 0)
					return sbx_fail_errno(err, SBX_INTERNAL, "create", "prepare %s", path);
			}
		} else if (errno != EEXIST) {
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir %s", path);
		}
		if (c == '\0')
			break;
		*s = c;
	}
	return 0;
}

static int upper_dir(const char *upper, const struct layers *l, const char *rel, unsigned mode,
		     uid_t uid, gid_t gid, int opaque, struct sbx_err *err)
{
	if (upper_mkdirs(upper, l, rel, err) < 0)
		return -1;
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", upper, rel);
	if (chown(p, uid, gid) < 0 || chmod(p, mode) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "prepare %s", p);
	if (opaque && setxattr(p, "trusted.overlay.opaque", "y", 1, 0) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "make %s opaque", p);
	return 0;
}

/* /etc/passwd and /etc/group must name uid/gid 1000 "user": keep the
 * template's entries except any other claim on that name or number. */
static int upper_account(const char *upper, const struct layers *l, const char *file,
			 const char *line, struct sbx_err *err)
{
	SBX_AUTOFREE char *found = NULL;
	SBX_AUTOFREE char *data = NULL;
	struct stat st;
	size_t len = 0;
	SBX_AUTOFREE char *rel = sbx_xasprintf("etc/%s", file);
	if (lower_stat(l, rel, &st, &found) == 0 && S_ISREG(st.st_mode)) {
		struct sbx_err e2 = {0};
		if (sbx_read_file(found, 4 << 20, &data, &len, &e2) < 0)
			data = NULL;
	}
	if (data && strstr(data, line) && (data == strstr(data, line) || strstr(data, line)[-1] == '\n'))
		return 0;
	size_t cap = len + strlen(line) + 64;
	char *out = sbx_xmalloc(cap);
	size_t o = 0;
	if (!data || !strstr(data, "root:"))
		o += (size_t)snprintf(out, cap, "%s", strcmp(file, "passwd") == 0
				      ? "root:x:0:0:root:/root:/bin/sh\n" : "root:x:0:\n");
	for (char *s = data, *nl; s && *s; s = nl ? nl + 1 : NULL) {
		nl = strchr(s, '\n');
		size_t ll = nl ? (size_t)(nl - s) : strlen(s);
		/* name:x:id:... -- drop "user" and anything with id 1000. */
		const char *c1 = memchr(s, ':', ll);
		const char *c2 = c1 ? memchr(c1 + 1, ':', ll - (size_t)(c1 + 1 - s)) : NULL;
		int drop = (c1 && c1 - s == 4 && strncmp(s, "user", 4) == 0) ||
			   (c2 && strncmp(c2 + 1, "1000:", 5) == 0);
		if (!drop && ll) {
			memcpy(out + o, s, ll);
			o += ll;
			out[o++] = '\n';
		}
	}
	o += (size_t)snprintf(out + o, cap - o, "%s", line);
	if (upper_mkdirs(upper, l, "etc", err) < 0) {
		free(out);
		return -1;
	}
	SBX_AUTOFREE char *dst = sbx_xasprintf("%s/etc/%s", upper, file);
	int fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc = fd < 0 || sbx_write_all(fd, out, o) < 0 ? -1 : 0;
	if (fd >= 0)
		close(fd);
	free(out);
	if (rc < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "write %s", dst);
	return 0;
}

/* Everything the sandbox's root needs in its own layer: the standard
 * directories and the account.  (What a sandbox over the host must not see
 * is hidden below this layer, by the host mask: local-hostview.c.) */
static int prepare_upper(const char *upper, const struct layers *l, struct sbx_err *err)
{
	static const char *const mnt[] = {"proc", "sys", "dev"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(mnt); i++)
		if (upper_mkdirs(upper, l, mnt[i], err) < 0)
			return -1;
	struct stat st;
	if (upper_dir(upper, l, "tmp", 01777, 0, 0, 0, err) < 0)
		return -1;
	if (lower_stat(l, "var/tmp", &st, NULL) == 0 && S_ISDIR(st.st_mode) &&
	    upper_dir(upper, l, "var/tmp", 01777, 0, 0, 0, err) < 0)
		return -1;
	if (upper_dir(upper, l, "workspace", 0755, SANDBOX_UID, SANDBOX_UID, 0, err) < 0 ||
	    upper_dir(upper, l, "workspace/input", 0755, SANDBOX_UID, SANDBOX_UID, 0, err) < 0 ||
	    upper_dir(upper, l, "workspace/output", 0755, SANDBOX_UID, SANDBOX_UID, 0, err) < 0 ||
	    upper_dir(upper, l, "home/user", 0755, SANDBOX_UID, SANDBOX_UID, 0, err) < 0 ||
	    upper_dir(upper, l, "opt/sbx/skills", 0755, 0, 0, 0, err) < 0)
		return -1;
	if (lower_stat(l, "root", &st, NULL) < 0 &&
	    upper_dir(upper, l, "root", 0700, 0, 0, 0, err) < 0)
		return -1;
	if (upper_account(upper, l, "passwd", "user:x:1000:1000:user:/home/user:/bin/sh\n", err) < 0 ||
	    upper_account(upper, l, "group", "user:x:1000:\n", err) < 0)
		return -1;
	return 0;
}

/* The template's read-only layers, top-most first.  The builtin `host`
 * template is the host's "/" when no image module answers for it.  An
 * unknown template is invalid_request (a bad create, not a missing
 * sandbox). */
static int resolve_layers(struct sbx_backend *b, const char *tpl, struct layers *l,
			  struct sbx_err *err)
{
	json_object *arr = NULL;
	memset(l, 0, sizeof(*l));
	struct sbx_err e2 = {0};
	if (local_image_layers(b, tpl, &arr, &e2) < 0) {
		if (e2.kind == SBX_UNSUPPORTED && strcmp(tpl, HOST_TEMPLATE) == 0) {
			l->dir = sbx_xcalloc(1, sizeof(char *));
			l->dir[0] = sbx_xstrdup("/");
			l->n = 1;
			l->host = 1;
			return 0;
		}
		*err = e2;
		if (err->kind == SBX_NOT_FOUND)
			err->kind = SBX_INVALID_REQUEST;   /* a missing template, not sandbox */
		return -1;
	}
	size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	if (n == 0) {
		json_object_put(arr);
		return sbx_fail(err, SBX_INTERNAL, "create", "template %s has no layers", tpl);
	}
	l->dir = sbx_xcalloc(n, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(arr, i));
		if (!s || s[0] != '/' || strpbrk(s, ":,")) {
			json_object_put(arr);
			layers_free(l);
			return sbx_fail(err, SBX_INTERNAL, "create", "template %s: bad layer path", tpl);
		}
		l->dir[l->n++] = sbx_xstrdup(s);
	}
	json_object_put(arr);
	l->host = strcmp(l->dir[l->n - 1], "/") == 0;
	return 0;
}

/* ---- create ---- */

static int make_cgroups(struct sbx_backend *b, struct local_rec *r, const struct sbx_limits *lim,
			struct sbx_err *err)
{
	if (local_cg_prepare(b, lim, err) < 0)
		return -1;
	for (int i = 0; i < LOCAL_NCG; i++) {
		if (!r->cg[i])
			continue;
		SBX_AUTOFREE char *parent = sbx_xstrdup(r->cg[i]);
		*strrchr(parent, '/') = '\0';
		if (mkdir_ok(parent, 0755) < 0 || mkdir_ok(r->cg[i], 0755) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir %s", r->cg[i]);
	}
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/work", r->cg[CG_V2]);
	if (mkdir_ok(p, 0755) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir %s", p);
	/* Before any process joins: the init's first mknod is checked (v1).
	 * The v2 program goes on <cg>/work, where every exec'd process
	 * lives, not on <cg>: slirp4netns, a host helper that opens
	 * /dev/net/tun, runs there (and joins no v1 cgroup). */
	if (local_devices_limit(r->cg[CG_DEVICES], p, err) < 0)
		return -1;
	return local_cg_limit(r, lim, err);
}

int local_policy_write(const char *dir, const struct sbx_timeout_policy *t, struct sbx_err *err)
{
	char buf[128], tmp[PATH_MAX], dst[PATH_MAX];
	int n = snprintf(buf, sizeof(buf), "%lld %d %d\n", (long long)t->seconds,
			 t->on_timeout_pause ? 1 : 0, t->auto_resume ? 1 : 0);
	snprintf(tmp, sizeof(tmp), "%s/.policy.%d", dir, (int)getpid());
	snprintf(dst, sizeof(dst), "%s/policy", dir);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || sbx_write_all(fd, buf, (size_t)n) < 0) {
		if (fd >= 0)
			close(fd);
		return sbx_fail_errno(err, SBX_INTERNAL, "timeout", "write %s", tmp);
	}
	close(fd);
	if (rename(tmp, dst) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "timeout", "rename %s", dst);
	return 0;
}

static int touch_file(const char *dir, const char *name)
{
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static char *find_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	SBX_AUTOFREE char *copy = sbx_xstrdup(path);
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *p = sbx_xasprintf("%s/%s", d, prog);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return NULL;
}

/* Egress on: slirp4netns attached to the init's net ns, host loopback
 * off, in the sandbox's top cgroup (so remove's cgroup.kill ends it).
 * slirp runs as host root: --enable-sandbox puts it in an empty mount
 * namespace with every capability but NET_BIND_SERVICE dropped, and
 * --enable-seccomp limits its syscalls.  The destination filter is not
 * slirp's (it has none): see local-egress.h. */
static int start_slirp(const char *slirp, const struct local_rec *r, pid_t init,
		       struct sbx_err *err)
{
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "pipe");
	pid_t c = fork();
	if (c < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "fork");
	if (c == 0) {
		setsid();
		char pid[32], fd[16], ipid[32];
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		(void)local_cg_write(r->cg[CG_V2], "cgroup.procs", pid);
		if (fork() != 0)
			_exit(0);
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		int rfd = dup(ready[1]);   /* without O_CLOEXEC: slirp writes it */
		/* Nothing else of the caller's lives on in slirp (host root, for
		 * the sandbox's life): not a pipeline's pipe, not a file the
		 * caller held open without O_CLOEXEC. */
		if (rfd > 3)
			close_range(3, (unsigned)rfd - 1, 0);
		close_range((unsigned)rfd + 1, ~0U, 0);
		snprintf(fd, sizeof(fd), "%d", rfd);
		snprintf(ipid, sizeof(ipid), "%d", (int)init);
		/* None of the caller's environment (a Redis password, an API
		 * key) lives on in slirp: it needs nothing from it. */
		static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
		execle(slirp, "slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback",
		       "--enable-sandbox", "--enable-seccomp", "--ready-fd", fd, ipid, "tap0",
		       (char *)NULL, envp);
		_exit(127);
	}
	close(ready[1]);
	waitpid(c, NULL, 0);
	char buf[8];
	struct pollfd pf = {.fd = ready[0], .events = POLLIN};
	int ok = poll(&pf, 1, 10000) > 0 && read(ready[0], buf, 1) == 1;
	close(ready[0]);
	if (!ok)
		return sbx_fail(err, SBX_INTERNAL, "create", "slirp4netns did not come up");
	return 0;
}

static int local_remove(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);

/* Create sandbox `id` step by step, in an order that a SIGKILL at any
 * point leaves cleanable: (1) directory + "creating" record naming the
 * template and the cgroups, then the template's layers are resolved,
 * (2) cgroups and limits, (3) the writable layer, (4) the init, (5) the
 * "ready" record.  Before (5) the sandbox lists as transitioning while its
 * creator lives and as dead after.  Because the record precedes the
 * resolve, an image delete racing with us either removes the image before
 * we resolve it (we fail with invalid_request) or sees us and is refused:
 * layers are never deleted under a sandbox.  On failure r->dir is set
 * once something exists on disk; the caller removes it. */
static int do_create(struct sbx_backend *b, const struct sbx_create_req *req,
		     const char *id, struct local_rec *r, struct sbx_err *err)
{
	const char *tpl = req->template_id && *req->template_id ? req->template_id : HOST_TEMPLATE;
	SBX_AUTOFREE char *slirp = NULL;
	if (req->net.allow_internet && !(slirp = find_in_path("slirp4netns")))
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"egress needs slirp4netns, which is not installed");
	if ((req->net.allow_out && json_object_array_length(req->net.allow_out) > 0) ||
	    (req->net.deny_out && json_object_array_length(req->net.deny_out) > 0))
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the local backend has no allow_out/deny_out rules");
	if (!local_cg_v2_mount())
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "no cgroup2 hierarchy is mounted");
	if (strpbrk(L(b)->dir, ":,"))
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the state dir must not contain ':' or ',' (overlay options)");
	sbx_fault("local:before-record");

	/* 1. The directory and a "creating" record naming the template: from
	 * here on, list sees the sandbox, remove can clean it, and an image
	 * delete sees the template in use. */
	SBX_AUTOFREE char *parent = sbx_xasprintf("%s/sandboxes", L(b)->dir);
	if (sbx_mkdir_p(parent, 0700, err) < 0)
		return -1;
	r->dir = sb_dir(b, id);
	if (mkdir(r->dir, 0700) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir %s", r->dir);
	for (int i = 0; i < LOCAL_NCG; i++)
		r->cg[i] = local_cg_path(b, i, id);
	r->j = json_object_new_object();
	json_object *j = r->j;
	sbx_json_set_str(j, "id", id);
	sbx_json_set_str(j, "template", tpl);
	sbx_json_set_str(j, "state", "creating");
	sbx_json_set_int(j, "created_at", sbx_now_ms() / 1000);
	sbx_json_set_int(j, "creator_pid", getpid());
	sbx_json_set_int(j, "creator_start", (int64_t)local_pid_start(getpid()));
	json_object *md = json_object_new_object();
	if (req->metadata) {
		json_object_object_foreach(req->metadata, k, v)
			json_object_object_add(md, k, json_object_get(v));
	}
	json_object_object_add(j, "metadata", md);
	if (req->env)
		json_object_object_add(j, "env", json_object_get(req->env));
	json_object *to = sbx_json_child(j, "timeout");
	sbx_json_set_int(to, "seconds", req->timeout.seconds);
	sbx_json_set_str(to, "on_timeout", req->timeout.on_timeout_pause ? "pause" : "kill");
	sbx_json_set_bool(to, "auto_resume", req->timeout.auto_resume);
	sbx_json_set_bool(j, "resume_on_use", req->timeout.auto_resume);
	json_object *lim = sbx_json_child(j, "limits");
	sbx_json_set_int(lim, "memory_bytes", req->limits.memory_bytes);
	sbx_json_set_int(lim, "pids", req->limits.pids);
	json_object_object_add(lim, "cpus", json_object_new_double(req->limits.cpus));
	sbx_json_set_int(lim, "disk_bytes", req->limits.disk_bytes);
	sbx_json_set_int(lim, "shm_bytes", req->limits.shm_bytes);
	sbx_json_set_bool(sbx_json_child(j, "network"), "allow_internet", req->net.allow_internet);
	sbx_json_set_bool(sbx_json_child(j, "security"), "allow_userns", req->allow_userns);
	json_object *cg = sbx_json_child(j, "cgroups");
	for (int i = 0; i < LOCAL_NCG; i++)
		if (r->cg[i])
			sbx_json_set_str(cg, cg_keys[i], r->cg[i]);
	if (rec_write(r->dir, j, err) < 0)
		return -1;
	sbx_fault("local:after-mkdir");
	sbx_fault("local:recorded");

	/* The template's layers, only now: an image delete checks the
	 * sandbox records and removes the image under the images lock, and
	 * local_image_layers reads the image under that lock too.  A delete
	 * that comes first makes this fail cleanly (invalid_request, nothing
	 * mounted); one that comes later finds our record and is refused.
	 * Resolved before the record, a delete could slip in between and
	 * remove the layers we are about to mount. */
	struct layers l;
	if (resolve_layers(b, tpl, &l, err) < 0)
		return -1;
	json_object *la = json_object_new_array();
	for (size_t i = 0; i < l.n; i++)
		json_object_array_add(la, json_object_new_string(l.dir[i]));
	json_object_object_add(j, "layers", la);   /* written with the ready record */

	/* 2. Cgroups with their limits, and the seccomp filter of every exec. */
	SBX_AUTOFREE char *filter = sbx_xasprintf("%s/seccomp.bpf", r->dir);
	SBX_AUTOFREE char *filters = sbx_xasprintf("%s/seccomp", ((struct local *)b->priv)->dir);
	if (local_seccomp_write(filter, filters, req->allow_userns, err) < 0 ||
	    local_policy_write(r->dir, &req->timeout, err) < 0 ||
	    touch_file(r->dir, "activity") < 0 || touch_file(r->dir, "busy") < 0 ||
	    make_cgroups(b, r, &req->limits, err) < 0) {
		if (!err->msg[0])
			sbx_fail_errno(err, SBX_INTERNAL, "create", "state files");
		layers_free(&l);
		return -1;
	}
	sbx_fault("local:after-cgroup");

	/* 3. The writable layer. */
	SBX_AUTOFREE char *upper = sbx_xasprintf("%s/upper", r->dir);
	SBX_AUTOFREE char *work = sbx_xasprintf("%s/work", r->dir);
	SBX_AUTOFREE char *root = sbx_xasprintf("%s/root", r->dir);
	if (mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0 || mkdir(root, 0755) < 0) {
		layers_free(&l);
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir layers");
	}
	int disk_enforced;
	if (local_quota_apply(upper, work, id, req->limits.disk_bytes, req->disk_required,
			      &disk_enforced, err) < 0) {
		layers_free(&l);
		return -1;
	}
	sbx_json_set_bool(sbx_json_child(j, "limits"), "disk_enforced", disk_enforced);
	if (prepare_upper(upper, &l, err) < 0) {
		layers_free(&l);
		return -1;
	}
	/* Layers stacked over the host's "/" mount it through a view of its
	 * own (see mount_host_view in libexec/sbx-init.c), under the host mask
	 * that hides what the sandbox must not see (local-hostview.c), built
	 * now from the current configuration: [snapshot layers..., mask, view]. */
	SBX_AUTOFREE char *host_view = NULL;
	if (l.host) {
		host_view = sbx_xasprintf("%s/hostroot", r->dir);
		SBX_AUTOFREE char *empty = sbx_xasprintf("%s/hostempty", r->dir);
		SBX_AUTOFREE char *mask = NULL;
		SBX_AUTOFREE char *cache = sbx_xasprintf("%s/hostmasks", ((struct local *)b->priv)->dir);
		if (mkdir(host_view, 0755) < 0 || mkdir(empty, 0755) < 0) {
			layers_free(&l);
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir host view");
		}
		if (local_hostmask_get(cache, b->profile, &mask, err) < 0) {
			layers_free(&l);
			return -1;
		}
		l.dir = sbx_xrealloc(l.dir, (l.n + 1) * sizeof(char *));
		free(l.dir[l.n - 1]);
		l.dir[l.n - 1] = sbx_xstrdup(mask);
		l.dir[l.n++] = sbx_xstrdup(host_view);
	}
	size_t cap = 64 + strlen(upper) + strlen(work);
	for (size_t i = 0; i < l.n; i++)
		cap += strlen(l.dir[i]) + 1;
	SBX_AUTOFREE char *opts = sbx_xmalloc(cap);
	size_t o = (size_t)snprintf(opts, cap, "lowerdir=");
	for (size_t i = 0; i < l.n; i++)
		o += (size_t)snprintf(opts + o, cap - o, "%s%s", i ? ":" : "", l.dir[i]);
	snprintf(opts + o, cap - o, ",upperdir=%s,workdir=%s", upper, work);
	layers_free(&l);
	if (strlen(opts) >= 4000)
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "too many template layers for one mount");
	sbx_fault("local:after-upper");

	/* 4. The init. */
	struct local_init_cfg ic = {.id = id, .dir = r->dir, .overlay_opts = opts, .cg = r->cg,
				    .host_view = host_view,
				    .shm_bytes = req->limits.shm_bytes};
	pid_t pid;
	if (local_init_start(&ic, &pid, err) < 0)
		return -1;
	r->init_pid = pid;
	sbx_json_set_int(j, "init_pid", pid);
	unsigned long long start = local_pid_start(pid);
	sbx_json_set_int(j, "init_start", (int64_t)start);
	sbx_fault("local:after-init");
	/* The egress filter before slirp: until slirp attaches the tap, the
	 * namespace has only lo, so nothing is reachable unfiltered. */
	if (slirp && (local_egress_install(pid, start, b->profile->egress_allow, id, err) < 0 ||
		      start_slirp(slirp, r, pid, err) < 0))
		return -1;

	/* 5. Ready. */
	sbx_json_set_str(j, "state", "ready");
	json_object_object_del(j, "creator_pid");
	json_object_object_del(j, "creator_start");
	if (rec_write(r->dir, j, err) < 0)
		return -1;
	sbx_fault("local:after-ready");
	return 0;
}

/* A new sandbox, running and ready for exec when this returns 0.  On
 * failure nothing of it is left (best effort; a crash leaves a dead
 * sandbox that list shows and remove cleans). */
static int local_create(struct sbx_backend *b, const struct sbx_create_req *req,
			struct sbx_sandbox *out, struct sbx_err *err)
{
	if (geteuid() != 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the local backend needs root (or user namespaces: not implemented)");
	char hex[13], id[16];
	if (sbx_random_hex(hex, 6, err) < 0)
		return -1;
	snprintf(id, sizeof(id), "sb-%s", hex);
	struct local_rec r = {0};
	if (do_create(b, req, id, &r, err) < 0) {
		/* Undo what exists; the error that matters is the first one. */
		if (r.dir) {
			struct sbx_err e2 = {0};
			int gone;
			local_remove(b, id, &gone, &e2);
		}
		local_rec_free(&r);
		return -1;
	}
	rec_to_sandbox(b, &r, out);
	local_rec_free(&r);
	return 0;
}

/* ---- get, list ---- */

static int local_get(struct sbx_backend *b, const char *id, struct sbx_sandbox *out,
		     struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, id, &r, err) < 0)
		return -1;
	rec_to_sandbox(b, &r, out);
	local_rec_free(&r);
	return 0;
}

static int md_match(json_object *md, json_object *want)
{
	if (!want)
		return 1;
	json_object_object_foreach(want, k, v) {
		const char *have = sbx_json_str(md, k);
		const char *w = json_object_get_string(v);
		if (!have || !w || strcmp(have, w) != 0)
			return 0;
	}
	return 1;
}

static int cmp_sb(const void *a, const void *b)
{
	const struct sbx_sandbox *x = a, *y = b;
	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int local_list(struct sbx_backend *b, const struct sbx_list_filter *f,
		      const char *page_token, struct sbx_page *out, struct sbx_err *err)
{
	(void)page_token;
	memset(out, 0, sizeof(*out));
	SBX_AUTOFREE char *dir = sbx_xasprintf("%s/sandboxes", L(b)->dir);
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return sbx_fail_errno(err, SBX_INTERNAL, "list", "%s", dir);
	}
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!valid_id(e->d_name))
			continue;
		struct local_rec r;
		struct sbx_err e2 = {0};
		if (local_rec_load(b, e->d_name, &r, &e2) < 0)
			continue;   /* removed while we looked */
		struct sbx_sandbox sb;
		rec_to_sandbox(b, &r, &sb);
		local_rec_free(&r);
		if ((f && f->states && !(f->states & (1u << sb.state))) ||
		    (f && !md_match(sb.metadata, f->metadata))) {
			sbx_sandbox_clear(&sb);
			continue;
		}
		if (out->n == cap) {
			cap = cap ? cap * 2 : 16;
			out->items = sbx_xrealloc(out->items, cap * sizeof(*out->items));
		}
		out->items[out->n++] = sb;
	}
	closedir(d);
	if (out->n > 1)
		qsort(out->items, out->n, sizeof(*out->items), cmp_sb);
	return 0;
}

int local_sb_templates_in_use(struct sbx_backend *b, char ***ids, size_t *n, struct sbx_err *err)
{
	struct sbx_page p;
	*ids = NULL;
	*n = 0;
	if (local_list(b, NULL, NULL, &p, err) < 0)
		return -1;
	*ids = sbx_xcalloc(p.n + 1, sizeof(char *));
	for (size_t i = 0; i < p.n; i++)
		if (p.items[i].template_id)
			(*ids)[(*n)++] = sbx_xstrdup(p.items[i].template_id);
	sbx_page_clear(&p);
	return 0;
}

/* Send `sig` to the init recorded in `r` through a pidfd, opened on its
 * pid and then checked against the recorded start time: once the check
 * passes, the pidfd holds the init itself, so a pid the init left behind
 * and another process took gets nothing.  A record without a start time
 * gets nothing either (its init was already gone at create).  `stop`
 * names a stop point between the check and the signal, for tests. */
static void signal_init(const struct local_rec *r, int sig, const char *stop)
{
	unsigned long long start = (unsigned long long)sbx_json_int(r->j, "init_start", 0);
	if (r->init_pid <= 0 || start == 0)
		return;
	int fd = (int)syscall(SYS_pidfd_open, r->init_pid, 0);
	if (fd < 0)
		return;
	if (local_pid_alive(r->init_pid, start)) {
		if (stop)
			sbx_fault(stop);
		syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
	}
	close(fd);
}

/* ---- remove ---- */

/* Kill every process of the sandbox and wait until none is left. */
static void kill_all(const struct local_rec *r)
{
	const char *cg = r->cg[CG_V2];
	char p[PATH_MAX];
	if (cg && access(cg, F_OK) == 0) {
		if (local_cg_write(cg, "cgroup.kill", "1") < 0) {
			/* No cgroup.kill (kernel < 5.14): the init's death takes
			 * its pid namespace along; anything else by pid. */
			snprintf(p, sizeof(p), "%s/cgroup.procs", cg);
			char buf[4096];
			if (read_small(p, buf, sizeof(buf)) == 0)
				for (char *s = buf; *s;) {
					long pid = strtol(s, &s, 10);
					if (pid > 0)
						kill((pid_t)pid, SIGKILL);
					while (*s == '\n')
						s++;
					if (!pid)
						break;
				}
		}
		local_cg_wait(cg, "populated", 0, 10000);
	}
	signal_init(r, SIGKILL, NULL);
}

/* Remove sandbox `id` and everything it holds: SIGKILL to all its
 * processes through cgroup.kill (frozen ones included; the init's death
 * takes its mount namespace and so the overlay with it), then its cgroup
 * directories, then its state directory, the record last.  A remove that
 * dies midway is finished by the next one.  Works from the id alone when
 * the record is missing or torn.  Nothing left to remove: 0, *gone = 1. */
static int local_remove(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	*gone = 0;
	if (!valid_id(id)) {
		*gone = 1;
		return 0;
	}
	struct local_rec r;
	struct sbx_err e2 = {0};
	int have_rec = local_rec_load(b, id, &r, &e2) == 0;
	if (!have_rec) {
		memset(&r, 0, sizeof(r));
		r.dir = sb_dir(b, id);
		r.j = json_object_new_object();
		for (int i = 0; i < LOCAL_NCG; i++)
			r.cg[i] = local_cg_path(b, i, id);
	}
	int existed = have_rec;
	for (int i = 0; i < LOCAL_NCG; i++)
		if (r.cg[i] && access(r.cg[i], F_OK) == 0)
			existed = 1;
	if (!existed) {
		local_rec_free(&r);
		*gone = 1;
		return 0;
	}
	kill_all(&r);
	for (int i = 0; i < LOCAL_NCG; i++)
		if (r.cg[i])
			cg_rmdir_tree(r.cg[i]);
	int rc = 0;
	/* The record goes last, so that a remove that dies midway is found
	 * and finished by the next one. */
	if (sbx_rm_rf(r.dir, err) < 0)
		rc = -1;
	for (int i = 0; rc == 0 && i < LOCAL_NCG; i++)
		if (r.cg[i] && access(r.cg[i], F_OK) == 0)
			rc = sbx_fail(err, SBX_INTERNAL, "remove", "cgroup %s is still busy", r.cg[i]);
	local_rec_free(&r);
	return rc;
}

/* ---- pause, resume, activity ---- */

int local_sb_freeze(struct sbx_backend *b, const char *id, int freeze, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, id, &r, err) < 0)
		return -1;
	int rc = 0;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/work", r.cg[CG_V2] ? r.cg[CG_V2] : "/nonexistent");
	if (local_cg_write(p, "cgroup.freeze", freeze ? "1" : "0") < 0)
		rc = sbx_fail_errno(err, errno == ENOENT ? SBX_TERMINAL : SBX_INTERNAL,
				    freeze ? "pause" : "resume", "sandbox %s", id);
	else if (local_cg_wait(p, "frozen", freeze, 10000) < 0)
		rc = sbx_fail(err, SBX_TIMEOUT, freeze ? "pause" : "resume",
			      "sandbox %s did not %s in time", id, freeze ? "freeze" : "thaw");
	local_rec_free(&r);
	return rc;
}

void local_sb_touch(struct sbx_backend *b, const char *id)
{
	if (!valid_id(id))
		return;
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/sandboxes/%s/activity", L(b)->dir, id);
	utimensat(AT_FDCWD, p, NULL, 0);
}

static int state_error(const char *id, enum sbx_state st, const char *op, struct sbx_err *err)
{
	switch (st) {
	case SBX_STATE_DEAD:
		return sbx_fail(err, SBX_TERMINAL, op, "sandbox %s is dead (its init is gone)", id);
	case SBX_STATE_TERMINAL:
		return sbx_fail(err, SBX_TERMINAL, op, "sandbox %s was killed", id);
	case SBX_STATE_TRANSITIONING:
		return sbx_fail(err, SBX_CONFLICT, op, "sandbox %s is still being created", id);
	default:
		return sbx_fail(err, SBX_INTERNAL, op, "sandbox %s is in state %s", id,
				sbx_state_name(st));
	}
}

/* The state of the sandbox of `r`, after continuing its init if it was
 * stopped (SIGSTOP from the host): a stopped init runs no idle timer and
 * reaps no orphans, so every command that uses the sandbox continues it
 * first.  The SIGCONT goes through a pidfd proven to be the init (opened,
 * then the start time checked), never to a later holder of its pid.
 * Activity is recorded first, so the idle timer does not fire the moment
 * the init wakes.  An init that stays stopped (held by a tracer) is a
 * conflict: nothing here can free it. */
static int rec_state_cont(struct sbx_backend *b, const struct local_rec *r, const char *op,
			  enum sbx_state *st, struct sbx_err *err)
{
	const char *id = sbx_json_str(r->j, "id");
	*st = rec_state(r);
	if (*st != SBX_STATE_STOPPED)
		return 0;
	local_sb_touch(b, id);
	unsigned long long start = (unsigned long long)sbx_json_int(r->j, "init_start", 0);
	SBX_AUTOCLOSE int fd = (int)syscall(SYS_pidfd_open, r->init_pid, 0);
	if (fd < 0 || start == 0 || !local_pid_alive(r->init_pid, start))
		return state_error(id, SBX_STATE_DEAD, op, err);
	if (syscall(SYS_pidfd_send_signal, fd, SIGCONT, NULL, 0) < 0)
		return sbx_fail_errno(err, errno == ESRCH ? SBX_TERMINAL : SBX_INTERNAL, op,
				      "continue the init of sandbox %s", id);
	/* SIGCONT wakes a signal-stopped task at once; a traced one stays. */
	for (int i = 0; i < 100 && init_stopped(r->init_pid); i++) {
		struct timespec ts = {0, 10 * 1000000};
		nanosleep(&ts, NULL);
	}
	if (init_stopped(r->init_pid))
		return sbx_fail(err, SBX_CONFLICT, op, "the init of sandbox %s is stopped and does "
				"not continue (held by a tracer?)", id);
	*st = rec_state(r);
	return 0;
}

/* The common part of ensure_running, init_pidfd and connect: sandbox `id`
 * is running when this returns 0, with the pid and start time its record
 * gives for the init.  Those name the init as it was when checked; see
 * local_sb_init_pidfd for holding it.  A paused sandbox is thawed when
 * `resume` (connect: sbx-ctl resume, a session resolve) or when its record
 * allows resume on use ("resume_on_use", absent in records older than the
 * flag: on); else it is a conflict that names sbx-ctl resume. */
static int sb_running(struct sbx_backend *b, const char *id, int resume, pid_t *pid,
		      unsigned long long *start, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, id, &r, err) < 0)
		return -1;
	enum sbx_state st;
	int rc = rec_state_cont(b, &r, "resume", &st, err);
	*pid = r.init_pid;
	*start = (unsigned long long)sbx_json_int(r.j, "init_start", 0);
	int on_use = sbx_json_bool(r.j, "resume_on_use", 1);
	local_rec_free(&r);
	if (rc < 0)
		return -1;
	if (st == SBX_STATE_PAUSED && !resume && !on_use)
		return sbx_fail(err, SBX_CONFLICT, "resume",
				"sandbox %s is paused and does not resume on use (auto_resume off); "
				"run sbx-ctl resume first", id);
	if (st == SBX_STATE_PAUSED) {
		/* Auto-resume.  Activity first, so the idle timer does not
		 * freeze it again before the caller gets to use it. */
		local_sb_touch(b, id);
		if (local_sb_freeze(b, id, 0, err) < 0)
			return -1;
	} else if (st != SBX_STATE_RUNNING) {
		return state_error(id, st, "resume", err);
	}
	if (geteuid() != 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "exec",
				"the local backend needs root (or user namespaces: not implemented)");
	return 0;
}

int local_sb_ensure_running(struct sbx_backend *b, const char *id, pid_t *init_pid,
			    struct sbx_err *err)
{
	unsigned long long start;
	return sb_running(b, id, 0, init_pid, &start, err);
}

static int dead_init(const char *id, const char *op, struct sbx_err *err)
{
	return sbx_fail(err, SBX_TERMINAL, op, "sandbox %s is dead (its init is gone)", id);
}

int local_sb_init_pidfd(struct sbx_backend *b, const char *id, const char *op, pid_t *pid,
			struct sbx_err *err)
{
	unsigned long long start;
	if (sb_running(b, id, 0, pid, &start, err) < 0)
		return -1;
	int fd = (int)syscall(SYS_pidfd_open, *pid, 0);
	if (fd < 0 && errno != ESRCH)
		return sbx_fail_errno(err, SBX_INTERNAL, op, "pidfd_open of the init of %s", id);
	/* After the open: the pid's holder now started when the init did,
	 * so it is the init, and so is what the pidfd holds.  A record
	 * without a start time cannot prove that: the init was already gone
	 * when create looked (local_pid_start gave 0). */
	if (fd < 0 || start == 0 || !local_pid_alive(*pid, start)) {
		if (fd >= 0)
			close(fd);
		return dead_init(id, op, err);
	}
	sbx_fault("local:init-pidfd");
	return fd;
}

int local_init_alive(int pidfd, pid_t pid)
{
	/* Signal 0 succeeds until the process is reaped, so its pid is not
	 * yet free and /proc/<pid> is still this process: a start time of
	 * 0 there means a zombie. */
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 && local_pid_start(pid) != 0;
}

int local_init_gone(int pidfd, pid_t pid)
{
	/* An init in the middle of exiting has already lost its root and
	 * namespaces but is not a zombie yet; a pidfd polls readable once the
	 * exit is complete, so give it a moment. */
	struct pollfd pf = {.fd = pidfd, .events = POLLIN};
	return poll(&pf, 1, 200) > 0 || !local_init_alive(pidfd, pid);
}

int local_init_open(int pidfd, pid_t pid, const char *what, int flags, const char *id,
		    const char *op, struct sbx_err *err)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, what);
	int fd = open(p, flags | O_CLOEXEC);
	int e = errno;
	/* Alive after the open means alive during it: the pid could not be
	 * anyone else's then, so fd is the init's.  Asked even when the open
	 * failed: a dead init is terminal, not an internal error. */
	if (fd >= 0 ? !local_init_alive(pidfd, pid) : local_init_gone(pidfd, pid)) {
		if (fd >= 0)
			close(fd);
		return dead_init(id, op, err);
	}
	if (fd < 0) {
		errno = e;
		return sbx_fail_errno(err, SBX_INTERNAL, op, "open %s of sandbox %s", what, id);
	}
	return fd;
}

/* An fd on the root of the init of sb, through a pidfd (see
 * local_init_open): never another process's root, even if the init dies
 * and its pid is reused while we open it. */
int local_sb_rootfd(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	pid_t pid;
	SBX_AUTOCLOSE int pidfd = local_sb_init_pidfd(b, sb->id, "files", &pid, err);
	if (pidfd < 0)
		return -1;
	int fd = local_init_open(pidfd, pid, "root", O_PATH | O_DIRECTORY, sb->id, "files", err);
	if (fd < 0)
		return -1;
	local_sb_touch(b, sb->id);
	return fd;
}

char *local_sb_upper(struct sbx_backend *b, const char *id)
{
	return sbx_xasprintf("%s/sandboxes/%s/upper", L(b)->dir, id);
}

static int refresh(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	struct sbx_sandbox fresh;
	if (local_get(b, sb->id, &fresh, err) < 0)
		return -1;
	/* Keep whatever the document carried that we do not own. */
	json_object *extra = sb->extra ? json_object_get(sb->extra) : NULL;
	sbx_sandbox_clear(sb);
	*sb = fresh;
	sb->extra = extra;
	return 0;
}

static int local_connect(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	pid_t pid;
	unsigned long long start;
	if (sb_running(b, sb->id, 1, &pid, &start, err) < 0)
		return -1;
	local_sb_touch(b, sb->id);
	return refresh(b, sb, err);
}

/* Freeze the sandbox's processes (not its init, which keeps the idle
 * timer).  Pausing a paused sandbox is a no-op; a dead one is terminal. */
static int local_pause(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	enum sbx_state st;
	int rc = rec_state_cont(b, &r, "pause", &st, err);
	local_rec_free(&r);
	if (rc < 0)
		return -1;
	if (st != SBX_STATE_RUNNING && st != SBX_STATE_PAUSED)
		return state_error(sb->id, st, "pause", err);
	if (st == SBX_STATE_RUNNING && local_sb_freeze(b, sb->id, 1, err) < 0)
		return -1;
	return refresh(b, sb, err);
}

static int local_set_timeout(struct sbx_backend *b, struct sbx_sandbox *sb,
			     const struct sbx_timeout_policy *t, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	enum sbx_state st;
	if (rec_state_cont(b, &r, "timeout", &st, err) < 0) {
		local_rec_free(&r);
		return -1;
	}
	if (st != SBX_STATE_RUNNING && st != SBX_STATE_PAUSED) {
		local_rec_free(&r);
		return state_error(sb->id, st, "timeout", err);
	}
	json_object *to = sbx_json_child(r.j, "timeout");
	struct sbx_timeout_policy pol = *t;
	if (pol.auto_resume < 0)     /* keep */
		pol.auto_resume = sbx_json_bool(r.j, "resume_on_use", 1);
	t = &pol;
	sbx_json_set_int(to, "seconds", t->seconds);
	sbx_json_set_str(to, "on_timeout", t->on_timeout_pause ? "pause" : "kill");
	sbx_json_set_bool(to, "auto_resume", t->auto_resume);
	sbx_json_set_bool(r.j, "resume_on_use", t->auto_resume);
	int rc = rec_write(r.dir, r.j, err);
	if (rc == 0)
		rc = local_policy_write(r.dir, t, err);
	if (rc == 0) {
		/* The timer restarts from now. */
		local_sb_touch(b, sb->id);
		signal_init(&r, SIGHUP, "local:timeout-signal");
	}
	local_rec_free(&r);
	return rc < 0 ? -1 : refresh(b, sb, err);
}

/* ---- backend ---- */

static int local_open(struct sbx_backend *b, struct sbx_err *err)
{
	(void)err;
	struct local *l = sbx_xcalloc(1, sizeof(*l));
	l->dir = sbx_xasprintf("%s/local", b->profile->state_dir ? b->profile->state_dir
								  : "/var/lib/sbx");
	b->priv = l;
	return 0;
}

static void local_close(struct sbx_backend *b)
{
	struct local *l = b->priv;
	if (l)
		free(l->dir);
	free(l);
	b->priv = NULL;
}

static unsigned local_caps(struct sbx_backend *b)
{
	(void)b;
	return SBX_CAP_EXEC | SBX_CAP_FILES | SBX_CAP_PAUSE | SBX_CAP_SNAPSHOTS |
	       SBX_CAP_METADATA | SBX_CAP_LIST | SBX_CAP_TEMPLATES | SBX_CAP_TIMEOUT |
	       SBX_CAP_INSTALL;
}

static int local_health(struct sbx_backend *b, struct sbx_err *err)
{
	if (geteuid() != 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "health",
				"the local backend needs root (or user namespaces: not implemented)");
	if (!local_cg_v2_mount())
		return sbx_fail(err, SBX_UNAVAILABLE, "health", "no cgroup2 hierarchy is mounted");
	if (sbx_mkdir_p(L(b)->dir, 0700, err) < 0)
		return -1;
	if (access(L(b)->dir, W_OK) < 0)
		return sbx_fail_errno(err, SBX_UNAVAILABLE, "health", "%s", L(b)->dir);
	return 0;
}

/* For sbx-ctl caps: the cgroup layout, and whether the state dir can
 * hold a disk budget. */
static json_object *local_limits_info(struct sbx_backend *b)
{
	json_object *o = local_cg_info(b);
	sbx_json_set_bool(o, "disk_enforced", local_quota_enforced(L(b)->dir));
	return o;
}

/* Local recipe of the skill-image fingerprint (common/fingerprint.h):
 * ("local", "", state dir). */
static int local_fingerprint(struct sbx_backend *b, char out[65], struct sbx_err *err)
{
	return sbx_fingerprint("local", "", b->profile->state_dir ? b->profile->state_dir
								   : "/var/lib/sbx", out, err);
}

const struct sbx_backend_ops sbx_backend_local = {
	.name = "local",
	.open = local_open,
	.close = local_close,
	.caps = local_caps,
	.health = local_health,
	.limits_info = local_limits_info,
	.fingerprint = local_fingerprint,
	.create = local_create,
	.connect = local_connect,
	.get = local_get,
	.list = local_list,
	.remove = local_remove,
	.pause = local_pause,
	.set_timeout = local_set_timeout,
	.exec = local_exec,
	.file_write = local_file_write,
	.file_read = local_file_read,
	.file_list = local_file_list,
	.file_stat = local_file_stat,
	.file_mkdir = local_file_mkdir,
	.file_remove = local_file_remove,
	.file_move = local_file_move,
	.tar_put = local_tar_put,
	.tar_get = local_tar_get,
	.snapshot_create = local_snapshot_create,
	.snapshot_list = local_snapshot_list,
	.snapshot_delete = local_snapshot_delete,
	.snapshot_flatten = local_snapshot_flatten,
	.store_gc = local_store_gc,
	.template_list = local_template_list,
	.template_get = local_template_get,
	.template_import = local_template_import,
	.template_delete = local_template_delete,
};
