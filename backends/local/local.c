/* local.c - the local backend: sandboxes as Linux namespaces + overlayfs
 * on this machine, no daemon.  This file holds the vtable and the
 * lifecycle: create (step by step), remove, connect, pause, timeouts.  The
 * rest of the backend, one concept a file (the map is in
 * docs/design.md):
 *
 *   local-sb.c      the sandbox store: records, states, get, list
 *   local-state.c   bring a sandbox to the state a command needs
 *   local-pid.c     who a pid is; the init held by pidfd
 *   local-cgroup.c  cgroups and limits        local-devices.c  /dev allow-list
 *   local-layer.c   the layers of the root    local-hostview.c the host mask
 *   local-quota.c   the disk budget           local-seccomp.c  the filter
 *   local-init.c    start sbx-init            local-slirp.c    egress on
 *   local-egress.c  the egress filter
 *   local-spawn.c   enter a sandbox           local-exec.c     exec
 *   local-proc*.c   detached processes (supervised by sbx-procd)
 *   local-files.c   files, confined           local-copy.c     tree copies
 *   local-image.c   templates and snapshots
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

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doc.h"
#include "fault.h"
#include "fingerprint.h"
#include "local-criu.h"
#include "local-devices.h"
#include "local-hibernate.h"
#include "local-broker.h"
#include "egress-secrets.h"
#include "spool.h"
#include "netpolicy.h"
#include "local-egress.h"
#include "local-exec.h"
#include "local-files.h"
#include "local-idle.h"
#include "local-image.h"
#include "local-init.h"
#include "local-layer.h"
#include "local-pid.h"
#include "local-proc-output.h"
#include "local-proc-start.h"
#include "local-proc.h"
#include "local-quota.h"
#include "local-seccomp.h"
#include "local-slirp.h"
#include "local-state.h"
#include "local-shared.h"
#include "util.h"

static int mkdir_ok(const char *p, unsigned mode)
{
	return mkdir(p, mode) == 0 || errno == EEXIST ? 0 : -1;
}

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
	return local_cg_limit(r->cg, lim, err);
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

/* The same for a file whose mtime means "the last time this kept the
 * sandbox awake" (local-idle.h): made at the epoch, so a new sandbox was
 * last kept awake by its create ("command"), not by an exec never run. */
static int touch_never(const char *dir, const char *name)
{
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	struct timespec ts[2] = {{0, 0}, {0, 0}};
	int rc = futimens(fd, ts);
	close(fd);
	return rc;
}

static int local_remove(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);

/* The checks a create makes before anything exists; *slirp is the
 * slirp4netns to run when egress is on. */
static int create_check(struct sbx_backend *b, const struct sbx_create_req *req, char **slirp,
			struct sbx_err *err)
{
	*slirp = NULL;
	if (req->net.allow_internet && !req->net.policy && !(*slirp = local_find_in_path("slirp4netns")))
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"egress needs slirp4netns, which is not installed");
	if (req->net.allow_public)   /* never a silent no-op (tests/caps.bats) */
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the local backend has no inbound access by URL (allow_public)");
	if (!local_cg_v2_mount())
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "no cgroup2 hierarchy is mounted");
	if (strpbrk(local_of(b)->dir, ":,"))
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the state dir must not contain ':' or ',' (overlay options)");
	return 0;
}

/* Step 1: the directory and a "creating" record naming the template and
 * the cgroups: from here on, list sees the sandbox, remove can clean it,
 * and an image delete sees the template in use. */
static int create_record(struct sbx_backend *b, const struct sbx_create_req *req,
			 const char *id, const char *tpl, struct local_rec *r, struct sbx_err *err)
{
	SBX_AUTOFREE char *parent = sbx_xasprintf("%s/sandboxes", local_of(b)->dir);
	if (sbx_mkdir_p(parent, 0700, err) < 0)
		return -1;
	r->dir = local_sb_dir(b, id);
	if (mkdir(r->dir, 0700) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "mkdir %s", r->dir);
	for (int i = 0; i < LOCAL_NCG; i++)
		r->cg[i] = local_cg_path(b, i, id);
	json_object *j = r->j = json_object_new_object();
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
	/* A sandbox whose egress is intercepted: its secrets' placeholders
	 * and the CA bundle's variables (egress-secrets.h) in its env. */
	json_object *env = sbx_egress_l7_env(b->profile ? b->profile->raw : NULL, req->net.policy,
					     req->net.headers, req->env);
	if (env)
		json_object_object_add(j, "env", env);
	json_object *to = sbx_json_child(j, "timeout");
	sbx_json_set_int(to, "seconds", req->timeout.seconds);
	sbx_json_set_str(to, "on_timeout", sbx_on_timeout_word(req->timeout.on_timeout_pause,
							     req->timeout.on_timeout_hibernate));
	sbx_json_set_bool(to, "auto_resume", req->timeout.auto_resume);
	sbx_json_set_bool(j, "resume_on_use", req->timeout.auto_resume);
	json_object *lim = sbx_json_child(j, "limits");
	sbx_json_set_int(lim, "memory_bytes", req->limits.memory_bytes);
	sbx_json_set_int(lim, "pids", req->limits.pids);
	json_object_object_add(lim, "cpus", json_object_new_double(req->limits.cpus));
	sbx_json_set_int(lim, "disk_bytes", req->limits.disk_bytes);
	sbx_json_set_int(lim, "shm_bytes", req->limits.shm_bytes);
	sbx_json_set_bool(sbx_json_child(j, "network"), "allow_internet",
			  req->net.allow_internet || req->net.policy);
	/* audit.json for every sandbox: its broker's and its detached
	 * processes' supervisors' spool (sbx-procd). */
	if ((req->net.policy && local_broker_policy_write(r->dir, NULL, req->net.policy, err) < 0) ||
	    sbx_spool_conf_write(r->dir, b->profile ? b->profile->audit_maxlen : 0,
				 b->profile && b->profile->audit_required, err) < 0)
		return -1;
	sbx_json_set_bool(sbx_json_child(j, "security"), "allow_userns",
			  local_conf_of(b)->allow_userns);
	json_object *cg = sbx_json_child(j, "cgroups");
	for (int i = 0; i < LOCAL_NCG; i++)
		if (r->cg[i])
			sbx_json_set_str(cg, local_cg_keys[i], r->cg[i]);
	return local_rec_write(r->dir, j, err);
}

/* Step 2: cgroups with their limits, the seccomp filter of every exec,
 * the idle policy and the activity files. */
static int create_cgroups(struct sbx_backend *b, const struct sbx_create_req *req,
			  struct local_rec *r, struct sbx_err *err)
{
	SBX_AUTOFREE char *filter = sbx_xasprintf("%s/seccomp.bpf", r->dir);
	SBX_AUTOFREE char *filters = sbx_xasprintf("%s/seccomp", local_of(b)->dir);
	if (local_seccomp_write(filter, filters, local_conf_of(b)->allow_userns, err) < 0 ||
	    local_policy_write(r->dir, &req->timeout, err) < 0 ||
	    touch_file(r->dir, "activity") < 0 || touch_never(r->dir, "busy") < 0 ||
	    touch_never(r->dir, "busy-proc") < 0 ||
	    make_cgroups(b, r, &req->limits, err) < 0) {
		if (err->kind == SBX_OK)        /* touch_file sets only errno */
			sbx_fail_errno(err, SBX_INTERNAL, "create", "state files");
		return -1;
	}
	return 0;
}

/* Step 4: the init, then (egress on) the egress filter and slirp.  The
 * filter comes before slirp: until slirp attaches the tap, the namespace
 * has only lo, so nothing is reachable unfiltered. */
static int create_init(struct sbx_backend *b, const struct sbx_create_req *req, const char *id,
		       const char *opts, const char *host_view, const char *slirp,
		       const struct local_shared *sh, struct local_rec *r, struct sbx_err *err)
{
	struct local_init_cfg ic = {.id = id, .dir = r->dir, .overlay_opts = opts, .cg = r->cg,
				    .ncg = LOCAL_NCG, .host_view = host_view,
				    .shm_bytes = req->limits.shm_bytes,
				    .sysfs = slirp ? NULL : sh->sysfs, .empty = sh->empty,
				    .dev = sh->dev, .volumes = req->volumes,
				    .nvolumes = req->nvolumes};
	pid_t pid;
	if (local_init_start(&ic, &pid, err) < 0)
		return -1;
	r->init_pid = pid;
	sbx_json_set_int(r->j, "init_pid", pid);
	unsigned long long start = local_pid_start(pid);
	sbx_json_set_int(r->j, "init_start", (int64_t)start);
	sbx_fault("local:after-init");
	if (slirp && (local_egress_install(pid, start, local_conf_of(b)->egress_allow, id, err) < 0 ||
		      local_slirp_start(slirp, r, pid, err) < 0))
		return -1;
	if (req->net.policy) {
		const char *res = local_conf_of(b)->egress_resolver;
		SBX_AUTOFREE char *host_res = res ? NULL : local_broker_host_resolver();
		if (!res && !(res = host_res))
			return sbx_fail(err, SBX_UNSUPPORTED, "create",
					"a network policy needs a resolver: the host has no IPv4 nameserver "
					"and the profile no egress_resolver");
		char *keys = NULL;
		int rc = sbx_egress_keys_doc(b->profile, req->net.policy, req->net.headers, &keys, err);
		if (rc == 0)
			rc = local_egress_install_broker(pid, start, id, err);
		if (rc == 0)
			rc = local_broker_start(r, pid, start, res, local_conf_of(b)->egress_allow, keys, err);
		sbx_secret_free(keys);
		if (rc < 0)
			return -1;
	}
	return 0;
}

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
	const char *tpl = req->template_id && *req->template_id ? req->template_id
								 : LOCAL_HOST_TEMPLATE;
	SBX_AUTOFREE char *slirp = NULL;
	if (create_check(b, req, &slirp, err) < 0)
		return -1;
	sbx_fault("local:before-record");
	if (create_record(b, req, id, tpl, r, err) < 0)
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
	struct local_layers l;
	if (local_layers_resolve(b, tpl, &l, err) < 0)
		return -1;
	json_object *la = json_object_new_array();
	for (size_t i = 0; i < l.n; i++)
		json_object_array_add(la, json_object_new_string(l.dir[i]));
	json_object_object_add(r->j, "layers", la);   /* written with the ready record */

	if (create_cgroups(b, req, r, err) < 0) {
		local_layers_free(&l);
		return -1;
	}
	sbx_fault("local:after-cgroup");

	/* 3. The writable layer and the overlay over the stack (over the
	 * shared host view, when it is there). */
	struct local_shared sh;
	local_shared_get(&sh);
	SBX_AUTOFREE char *opts = NULL;
	SBX_AUTOFREE char *host_view = NULL;
	int disk_enforced;
	if (local_layers_mount_opts(b, r->dir, id, req, &l, sh.host_view, &opts, &host_view,
				    &disk_enforced, err) < 0)
		return -1;
	sbx_json_set_bool(sbx_json_child(r->j, "limits"), "disk_enforced", disk_enforced);
	sbx_fault("local:after-upper");

	if (create_init(b, req, id, opts, host_view, slirp, &sh, r, err) < 0)
		return -1;

	/* 5. Ready. */
	sbx_json_set_str(r->j, "state", "ready");
	json_object_object_del(r->j, "creator_pid");
	json_object_object_del(r->j, "creator_start");
	if (local_rec_write(r->dir, r->j, err) < 0)
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
	/* E2B's lists (sbx-serve) become the policy they mean. */
	struct sbx_create_req mapped;
	struct sbx_netpolicy np = {0};
	int rc = local_broker_map_e2b(req, &mapped, &np, err);
	if (rc > 0)
		req = &mapped;
	if (rc < 0 || do_create(b, req, id, &r, err) < 0) {
		sbx_np_clear(&np);
		/* Undo what exists; the error that matters is the first one. */
		if (r.dir) {
			struct sbx_err e2 = {0};
			int gone;
			local_remove(b, id, &gone, &e2);
		}
		local_rec_free(&r);
		return -1;
	}
	sbx_np_clear(&np);
	local_rec_to_sandbox(b, &r, out);
	local_rec_free(&r);
	return 0;
}

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
			if (local_read_small(p, buf, sizeof(buf)) == 0)
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
	local_init_signal(r->init_pid, (unsigned long long)sbx_json_int(r->j, "init_start", 0),
			  SIGKILL, NULL);
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
	if (!local_sb_valid_id(id)) {
		*gone = 1;
		return 0;
	}
	struct local_rec r;
	struct sbx_err e2 = {0};
	int have_rec = local_rec_load(b, id, &r, &e2) == 0;
	if (!have_rec) {
		memset(&r, 0, sizeof(r));
		r.dir = local_sb_dir(b, id);
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
			local_cg_rmdir_tree(r.cg[i]);
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

static int refresh(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	struct sbx_sandbox fresh;
	if (local_sb_get(b, sb->id, &fresh, err) < 0)
		return -1;
	/* Keep whatever the document carried that we do not own; what the
	 * record says now replaces what we do (local_sb_extra_merge). */
	json_object *extra = sb->extra ? json_object_get(sb->extra) : NULL;
	sbx_sandbox_clear(sb);
	json_object *merged = local_sb_extra_merge(extra, fresh.extra);
	*sb = fresh;
	sb->extra = merged;
	return 0;
}

static int local_connect(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	pid_t pid;
	unsigned long long start;
	if (local_sb_running(b, sb->id, 1, &pid, &start, err) < 0)
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
	enum local_state st;
	int rc = local_rec_state_cont(b, &r, "pause", &st, err);
	local_rec_free(&r);
	if (rc < 0)
		return -1;
	if (st == LOCAL_HIBERNATED)          /* paused already, and more */
		return refresh(b, sb, err);
	if (st != LOCAL_RUNNING && st != LOCAL_PAUSED)
		return local_state_error(sb->id, st, "pause", err);
	if (st == LOCAL_RUNNING && local_sb_freeze(b, sb->id, 1, err) < 0)
		return -1;
	return refresh(b, sb, err);
}

/* The pause is a freeze: the memory stays where it is (counted by the
 * profile's memory limit), so what a paused sandbox holds beyond a
 * running one's budget is its writable layer on disk. */
static int local_paused_bytes(struct sbx_backend *b, struct sbx_sandbox *sb, int64_t *bytes,
			      struct sbx_err *err)
{
	if (!local_sb_valid_id(sb->id))
		return sbx_fail(err, SBX_NOT_FOUND, "sandbox", "no sandbox %s", sb->id);
	SBX_AUTOFREE char *upper = local_sb_upper(b, sb->id);
	return local_layer_bytes(upper, bytes, err);
}

static int local_set_timeout(struct sbx_backend *b, struct sbx_sandbox *sb,
			     const struct sbx_timeout_policy *t, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	enum local_state st;
	if (local_rec_state_cont(b, &r, "timeout", &st, err) < 0) {
		local_rec_free(&r);
		return -1;
	}
	if (st != LOCAL_RUNNING && st != LOCAL_PAUSED) {
		local_rec_free(&r);
		return local_state_error(sb->id, st, "timeout", err);
	}
	json_object *to = sbx_json_child(r.j, "timeout");
	struct sbx_timeout_policy pol = *t;
	if (pol.auto_resume < 0)     /* keep */
		pol.auto_resume = sbx_json_bool(r.j, "resume_on_use", 1);
	t = &pol;
	sbx_json_set_int(to, "seconds", t->seconds);
	sbx_json_set_str(to, "on_timeout", sbx_on_timeout_word(t->on_timeout_pause, t->on_timeout_hibernate));
	sbx_json_set_bool(to, "auto_resume", t->auto_resume);
	sbx_json_set_bool(r.j, "resume_on_use", t->auto_resume);
	int rc = local_rec_write(r.dir, r.j, err);
	if (rc == 0)
		rc = local_policy_write(r.dir, t, err);
	if (rc == 0) {
		/* The timer restarts from now. */
		local_sb_touch(b, sb->id);
		local_init_signal(r.init_pid, (unsigned long long)sbx_json_int(r.j, "init_start", 0),
				  SIGHUP, "local:timeout-signal");
	}
	local_rec_free(&r);
	return rc < 0 ? -1 : refresh(b, sb, err);
}

/* ---- configuration: the profile keys the local backend owns ---- */

static const char *const local_config_keys[] = {
	"allow_userns", "cgroup_parent", "egress_allow", "egress_resolver", "egress_secrets",
	"egress_upstream_ca", NULL,
};

static void local_config_free(void *conf)
{
	struct local_conf *c = conf;
	if (!c)
		return;
	free(c->cgroup_parent);
	sbx_strv_free(c->egress_allow);
	free(c->egress_resolver);
	free(c);
}

static int local_config_load(const struct sbx_profile *p, json_object *o, void **conf,
			     struct sbx_err *err)
{
	struct local_conf *c = sbx_xcalloc(1, sizeof(*c));
	*conf = c;
	c->allow_userns = sbx_json_bool(o, "allow_userns", 0);
	const char *cg = sbx_json_str(o, "cgroup_parent");
	if (cg && (strstr(cg, "..") || !cg[0]))
		return sbx_fail_config(err, "config", "profile '%s': cgroup_parent must be a path "
				       "below the cgroup2 mount, without '..'", p->name);
	c->cgroup_parent = cg ? sbx_xstrdup(cg) : NULL;
	if (sbx_egress_secrets_check(p->name, o, err) < 0)
		return -1;
	return sbx_config_egress(p->name, o, &c->egress_resolver, &c->egress_allow, err);
}

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
	       SBX_CAP_METADATA | SBX_CAP_LIST | SBX_CAP_TEMPLATES | SBX_CAP_TIMEOUT | SBX_CAP_NETPOLICY |
	       SBX_CAP_INSTALL | SBX_CAP_PROCESS | SBX_CAP_FLATTEN |
	       SBX_CAP_HOST_LOCAL | SBX_CAP_TEMPLATE_IMPORT | SBX_CAP_TIMEOUT_POLICY | SBX_CAP_VOLUMES |
	       SBX_CAP_TTY;
}

/* Hibernate works where CRIU does on this host (local-criu.h). */
static int local_hibernate_check(struct sbx_backend *b, struct sbx_err *err)
{
	return local_criu_check(local_of(b)->dir, err);
}

/* Hibernate (local-hibernate.h).  The state is read, the refusals asked
 * (a refused paused sandbox is never thawed), a paused sandbox thawed
 * for the dump (CRIU seizes the tasks) and frozen again when it fails,
 * all under the sandbox's hibernate lock, which a resume on use of
 * a paused sandbox takes too (local_sb_running): with
 * SBX_HIBERNATE_IF_PAUSED, "still paused" holds until the dump is whole,
 * and a command that comes meanwhile waits for it, then restores.
 *
 * From before the thaw to the end, the sandbox is held awake as an exec
 * holds it (a shared flock on `busy`, local-idle.h; its mtime untouched:
 * a dump is not work).  Otherwise its idle timer, whose time is up, would
 * freeze the tree again within a second of the thaw, and a task frozen
 * before CRIU stops it never stops: the dump waits for it forever. */
static int local_hibernate_op(struct sbx_backend *b, struct sbx_sandbox *sb, unsigned flags,
			      struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	int lk = local_hibernate_lock(r.dir, err);
	enum local_state st = LOCAL_DEAD;
	int rc = lk < 0 ? -1 : local_rec_state_cont(b, &r, "hibernate", &st, err);
	if (rc == 0 && st == LOCAL_HIBERNATED) {
		/* already */
	} else if (rc == 0 && st != LOCAL_RUNNING && st != LOCAL_PAUSED) {
		rc = local_state_error(sb->id, st, "hibernate", err);
	} else if (rc == 0 && st == LOCAL_RUNNING && (flags & SBX_HIBERNATE_IF_PAUSED)) {
		rc = sbx_fail(err, SBX_CONFLICT, "hibernate", "sandbox %s is no longer paused", sb->id);
	} else if (rc == 0) {
		struct sbx_err e = {0};
		SBX_AUTOFREE char *busyp = sbx_xasprintf("%s/busy", r.dir);
		SBX_AUTOCLOSE int awake = open(busyp, O_RDONLY | O_CLOEXEC);
		if (awake >= 0)
			flock(awake, LOCK_SH);
		rc = local_hibernate_refused(&r, sb->id, err);
		if (rc == 0 && st == LOCAL_PAUSED)
			rc = local_sb_freeze(b, sb->id, 0, err);
		if (rc == 0)
			sbx_fault("local:hibernate-thawed");
		if (rc == 0 && (rc = local_hibernate_dump_locked(&r, sb->id, err)) < 0 &&
		    st == LOCAL_PAUSED)
			(void)local_sb_freeze(b, sb->id, 1, &e);
	}
	if (lk >= 0)
		close(lk);
	local_rec_free(&r);
	return rc < 0 ? -1 : refresh(b, sb, err);
}

static int local_health(struct sbx_backend *b, struct sbx_err *err)
{
	if (geteuid() != 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "health",
				"the local backend needs root (or user namespaces: not implemented)");
	if (!local_cg_v2_mount())
		return sbx_fail(err, SBX_UNAVAILABLE, "health", "no cgroup2 hierarchy is mounted");
	if (sbx_mkdir_p(local_of(b)->dir, 0700, err) < 0)
		return -1;
	if (access(local_of(b)->dir, W_OK) < 0)
		return sbx_fail_errno(err, SBX_UNAVAILABLE, "health", "%s", local_of(b)->dir);
	return 0;
}

/* For sbx-ctl caps: the cgroup layout, and whether the state dir can
 * hold a disk budget. */
static json_object *local_limits_info(struct sbx_backend *b)
{
	json_object *o = local_cg_info(b);
	sbx_json_set_bool(o, "disk_enforced", local_quota_enforced(local_of(b)->dir));
	return o;
}

/* Local recipe of the skill-image fingerprint (common/config/fingerprint.h):
 * ("local", "", state dir). */
static int local_fingerprint(struct sbx_backend *b, char out[65], struct sbx_err *err)
{
	return sbx_fingerprint("local", "", b->profile->state_dir ? b->profile->state_dir
								   : "/var/lib/sbx", out, err);
}

/* The vtable's hold: the `lease` file's mtime is the deadline
 * (local-idle.h), created on the first lease.  A sandbox that is gone is
 * not_found; one that is paused stays paused. */
static int local_hold(struct sbx_backend *b, const char *id, int64_t until_ms,
		      struct sbx_err *err)
{
	if (!local_sb_valid_id(id))
		return sbx_fail(err, SBX_NOT_FOUND, "lease", "no local sandbox %s", id);
	SBX_AUTOFREE char *dir = sbx_xasprintf("%s/sandboxes/%s", local_of(b)->dir, id);
	SBX_AUTOCLOSE int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return sbx_fail_errno(err, errno == ENOENT ? SBX_NOT_FOUND : SBX_INTERNAL, "lease",
				      "local sandbox %s", id);
	SBX_AUTOCLOSE int fd = openat(dfd, "lease", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "lease", "the lease file of %s", id);
	int64_t t = until_ms > 0 ? until_ms : sbx_now_ms();
	struct timespec ts[2] = {{t / 1000, (t % 1000) * 1000000}, {t / 1000, (t % 1000) * 1000000}};
	if (futimens(fd, ts) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "lease", "the lease file of %s", id);
	return 0;
}

/* The vtable's audit_dir: the sandbox's own folder (its broker spools
 * there, local-audit.h). */
static int local_audit_dir(struct sbx_backend *b, const char *id, char **dir, struct sbx_err *err)
{
	*dir = NULL;
	if (!local_sb_valid_id(id))
		return sbx_fail(err, SBX_NOT_FOUND, "audit", "no sandbox %s", id ? id : "(null)");
	*dir = local_sb_dir(b, id);
	return 0;
}

/* The vtable's idle_notes: take the init's log (local-idle.h) by
 * renaming it to a name of our own (two takers never share one), read at
 * most LOCAL_IDLE_LOG_MAX bytes of it, forget it.  A line not of the
 * log's grammar is skipped (the file is the host's, but a torn append is
 * possible). */
static int local_idle_notes(struct sbx_backend *b, const char *id, struct sbx_idle_note **out,
			    size_t *n, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	if (!local_sb_valid_id(id))
		return sbx_fail(err, SBX_NOT_FOUND, "idle", "no local sandbox %s", id);
	SBX_AUTOFREE char *log = sbx_xasprintf("%s/sandboxes/%s/" LOCAL_IDLE_LOG, local_of(b)->dir, id);
	SBX_AUTOFREE char *taken = sbx_xasprintf("%s.%d", log, (int)getpid());
	if (rename(log, taken) < 0)
		return errno == ENOENT ? 0 : sbx_fail_errno(err, SBX_INTERNAL, "idle", "take %s", log);
	SBX_AUTOFREE char *text = NULL;
	size_t len = 0;
	int rc = sbx_read_file(taken, 2 * LOCAL_IDLE_LOG_MAX, &text, &len, err);
	unlink(taken);
	if (rc < 0)
		return -1;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		struct sbx_idle_note nt = {0};
		long long at;
		char by[16] = "";
		if (sscanf(line, "P %lld %15s", &at, by) == 2)
			nt.resumed = 0;
		else if (sscanf(line, "R %lld", &at) == 1)
			nt.resumed = 1;
		else
			continue;
		nt.at_ms = at;
		snprintf(nt.awake_by, sizeof(nt.awake_by), "%s", by);
		*out = sbx_xrealloc(*out, (*n + 1) * sizeof(**out));
		(*out)[(*n)++] = nt;
	}
	return 0;
}

const struct sbx_backend_ops sbx_backend_local = {
	.name = "local",
	.config_keys = local_config_keys,
	.config_load = local_config_load,
	.config_free = local_config_free,
	.state_words = local_state_words,
	.open = local_open,
	.close = local_close,
	.caps = local_caps,
	.health = local_health,
	.limits_info = local_limits_info,
	.fingerprint = local_fingerprint,
	.create = local_create,
	.connect = local_connect,
	.get = local_sb_get,
	.list = local_sb_list,
	.remove = local_remove,
	.pause = local_pause,
	.paused_bytes = local_paused_bytes,
	.hibernate_check = local_hibernate_check,
	.hibernate = local_hibernate_op,
	.set_timeout = local_set_timeout,
	.hold = local_hold,
	.idle_notes = local_idle_notes,
	.audit_dir = local_audit_dir,
	.set_network = local_broker_set_network,
	.exec = local_exec,
	.proc_start = local_proc_start,
	.proc_list = local_proc_list,
	.proc_signal = local_proc_signal,
	.proc_input = local_proc_input,
	.proc_output = local_proc_output,
	.proc_resize = local_proc_resize,
	.proc_claim = local_proc_claim,
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
	.checkpoint_create = local_checkpoint_create,
	.snapshot_list = local_snapshot_list,
	.snapshot_delete = local_snapshot_delete,
	.snapshot_flatten = local_snapshot_flatten,
	.store_gc = local_store_gc,
	.template_list = local_template_list,
	.template_get = local_template_get,
	.template_import = local_template_import,
	.template_delete = local_template_delete,
};
