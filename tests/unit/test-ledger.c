/* test-ledger.c - the skill ledger protocol against a real redis-server (on
 * a private unix socket) and the real local backend: install -> snapshot ->
 * pointer, a real SIGKILL at each fault point followed by recovery, the
 * lost pointer race, an orphan that appears under a failed row's planned
 * name, and the reaper's list of referenced snapshots.  Skips when there is
 * no redis-server or the local backend cannot make sandboxes (not root). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

#include "backend.h"
#include "config.h"
#include "doc.h"
#include "image.h"
#include "ledger.h"
#include "ledger-recover.h"
#include "redis.h"
#include "skill.h"
#include "util.h"

static char dir[] = "/tmp/sbx-test-ledger.XXXXXX";
static char sock[256];
static pid_t redis_pid;
static const char *T = "t1";

static void stop_redis(void)
{
	if (redis_pid > 0) {
		kill(redis_pid, SIGTERM);
		waitpid(redis_pid, NULL, 0);
		redis_pid = 0;
	}
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "%s/state", dir);
	umount2(cmd, MNT_DETACH);
	snprintf(cmd, sizeof(cmd), "rm -rf --one-file-system %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", dir);
}

static int start_redis(void)
{
	snprintf(sock, sizeof(sock), "%s/redis.sock", dir);
	redis_pid = fork();
	if (redis_pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", sock,
		       "--save", "", "--appendonly", "no", "--dir", dir, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;
		if (stat(sock, &st) == 0)
			return 0;
		usleep(20000);
	}
	return -1;
}

struct env {
	struct sbx_profile *p;
	struct sbx_backend *b;
	struct sbx_redis *r;
};

static int env_open(struct env *e, struct sbx_err *err)
{
	memset(e, 0, sizeof(*e));
	char url[300];
	snprintf(url, sizeof(url), "unix://%s", sock);
	if (sbx_config_load(NULL, &e->p, err) < 0 || sbx_backend_open(e->p, &e->b, err) < 0)
		return -1;
	return sbx_redis_open_url(url, NULL, 5000, &e->r, err);
}

static void env_close(struct env *e)
{
	if (e->r)
		sbx_redis_close(e->r);
	if (e->b)
		sbx_backend_close(e->b);
	if (e->p)
		sbx_profile_free(e->p);
}

/* Remove every sandbox of this test's private state dir (the crashed
 * children's installers included: nobody else would). */
static void remove_all(struct env *e)
{
	struct sbx_err err = {0};
	struct sbx_list_filter f = {0};
	char *token = NULL;
	for (int pages = 0; pages < 100; pages++) {
		struct sbx_page pg = {0};
		if (sbx_call(e->b, list, &err, &f, token, &pg) < 0)
			break;
		for (size_t i = 0; i < pg.n; i++) {
			int gone;
			sbx_call(e->b, remove, &err, pg.items[i].id, &gone);
		}
		free(token);
		token = pg.next;
		pg.next = NULL;
		sbx_page_clear(&pg);
		if (!token)
			break;
	}
	free(token);
}

static int sh(struct env *e, struct sbx_sandbox *sb, int root, const char *script,
	      struct sbx_exec_result *res)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct sbx_exec_req req = {.argv = argv, .as_root = root, .raw_out_fd = -1,
				   .raw_err_fd = -1, .raw_in_fd = -1};
	struct sbx_err err = {0};
	memset(res, 0, sizeof(*res));
	if (sbx_call(e->b, exec, &err, sb, &req, res) < 0) {
		printf("# exec: %s\n", err.msg);
		return -1;
	}
	return res->exit_code;
}

/* An installer sandbox on the tenant's current image with skill `name`
 * placed (a script that prints "hello <name>"). */
static int installer(struct env *e, const char *name, struct sbx_sandbox *sb)
{
	struct sbx_err err = {0};
	struct sbx_image im = {0};
	int have = sbx_image_get(e->r, T, &im, &err);
	struct sbx_create_req req = {.template_id = have > 0 ? im.snapshot_id : "host"};
	int rc = sbx_call(e->b, create, &err, &req, sb);
	sbx_image_clear(&im);
	if (rc < 0) {
		printf("# create: %s\n", err.msg);
		return -1;
	}
	char script[512];
	snprintf(script, sizeof(script),
		 "mkdir -p /opt/sbx/skills/%s/bin && printf '#!/bin/sh\\necho hello %s\\n' "
		 ">/opt/sbx/skills/%s/bin/run && chmod 755 /opt/sbx/skills/%s/bin/run && "
		 "echo junk >/workspace/junk && echo junk >/tmp/junk", name, name, name, name);
	struct sbx_exec_result res;
	rc = sh(e, sb, 1, script, &res);
	sbx_exec_result_clear(&res);
	return rc == 0 ? 0 : -1;
}

static int snap(struct env *e, struct sbx_sandbox *sb, const char *name, json_object **out,
		struct sbx_err *err)
{
	struct sbx_skill_snap_req q = {.tenant = T, .skill = name, .clean_scratch = 1,
				       .grace_ms = SBX_LEDGER_GRACE_DEFAULT_MS};
	*out = json_object_new_object();
	return sbx_skill_snapshot(e->b, e->r, sb, &q, *out, err);
}

/* Run the install of `name` in a child that SIGKILLs itself at `fault`. */
static int crash_at(const char *name, const char *fault)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct env e;
		struct sbx_err err = {0};
		struct sbx_sandbox sb = {0};
		if (env_open(&e, &err) < 0 || installer(&e, name, &sb) < 0)
			_exit(3);
		setenv("SBX_FAULT", fault, 1);
		json_object *out;
		snap(&e, &sb, name, &out, &err);
		_exit(4);      /* the fault point was not reached */
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

static int snapshot_exists(struct env *e, const char *x)
{
	struct sbx_err err = {0};
	return sbx_ledger_find_snapshot(e->b, x, NULL, &err);
}

/* The one consistent state after a recovery: the row is ready with a
 * snapshot that exists and the pointer on it, or failed with no snapshot
 * under its planned name. */
static void check_consistent(struct env *e, const char *name, const char *what)
{
	struct sbx_err err = {0};
	struct sbx_ledger_row row;
	int have = sbx_ledger_get(e->r, T, name, &row, &err);
	ok(have == 1, "%s: the row exists", what);
	if (have != 1)
		return;
	struct sbx_image im = {0};
	sbx_image_get(e->r, T, &im, &err);
	if (!strcmp(row.state, "ready")) {
		ok(row.snapshot_id && snapshot_exists(e, row.snapshot_id) == 1,
		   "%s: ready row's snapshot exists", what);
		is_str(im.snapshot_id, row.snapshot_id, "%s: the pointer is on it", what);
		ok(row.published, "%s: published", what);
	} else {
		is_str(row.state, "failed", "%s: otherwise the row failed", what);
		is_int(snapshot_exists(e, row.planned_name), 0, "%s: and left no snapshot", what);
	}
	sbx_image_clear(&im);
	sbx_ledger_row_clear(&row);
}

static size_t nlist(json_object *o, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
		return (size_t)-1;
	return json_object_array_length(v);
}

static size_t nacts(json_object *rep)
{
	return nlist(rep, "actions");
}

static json_object *recover(struct env *e, int *rc)
{
	struct sbx_err err = {0};
	json_object *rep = json_object_new_object();
	*rc = sbx_ledger_recover(e->b, e->r, T, SBX_LEDGER_GRACE_DEFAULT_MS, 0, rep, &err);
	if (*rc < 0)
		printf("# recover: %s\n", err.msg);
	return rep;
}

int main(void)
{
	if (getuid() != 0 || system("command -v redis-server >/dev/null") != 0) {
		printf("1..0 # SKIP needs root and redis-server\n");
		return 0;
	}
	if (!mkdtemp(dir))
		return 1;
	chmod(dir, 0755);
	char path[300];
	snprintf(path, sizeof(path), "%s/state", dir);
	mkdir(path, 0700);
	/* Snapshots over the builtin `host` template need their layers on
	 * another filesystem than / (local-image.c): a tmpfs will do. */
	if (mount("tmpfs", path, "tmpfs", 0, "size=2g,mode=0700") < 0) {
		printf("1..0 # SKIP cannot mount a tmpfs for the state dir\n");
		return 0;
	}
	setenv("SBX_STATE_DIR", path, 1);
	snprintf(path, sizeof(path), "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	fputs("{}\n", f);
	fclose(f);
	setenv("SBX_CONFIG", path, 1);
	setenv("SBX_BACKEND", "local", 1);
	unsetenv("SBX_FAULT");
	atexit(stop_redis);
	if (start_redis() < 0) {
		printf("1..0 # SKIP redis-server did not start\n");
		return 0;
	}

	struct env e;
	struct sbx_err err = {0};
	if (env_open(&e, &err) < 0) {
		printf("1..0 # SKIP %s\n", err.msg);
		return 0;
	}
	struct sbx_sandbox sb = {0};
	if (installer(&e, "alpha", &sb) < 0) {
		printf("1..0 # SKIP the local backend cannot run sandboxes here\n");
		sbx_sandbox_clear(&sb);
		env_close(&e);
		return 0;
	}

	/* 1. A clean install. */
	json_object *out;
	int rc = snap(&e, &sb, "alpha", &out, &err);
	ok(rc == 0, "install alpha: %s", rc ? err.msg : "ok");
	json_object *s = sbx_json_obj(out, "snapshot");
	const char *sid = sbx_json_str(s, "id");
	ok(sid && *sid, "the result names the snapshot id");
	is_int(sbx_json_int(s, "generation", 0), 1, "first row is generation 1");
	ok(sbx_str_starts(sbx_json_str(s, "name") ? sbx_json_str(s, "name") : "", "sbx-sk-t1-g1-"),
	   "planned name sbx-sk-<tenant>-g<gen>-<hex>: %s", sbx_json_str(s, "name"));
	ok(sbx_json_int(s, "layers", 0) >= 2, "layers reported (%lld)",
	   (long long)sbx_json_int(s, "layers", 0));
	ok(sbx_json_int(s, "image_bytes", -1) >= sbx_json_int(s, "size_bytes", 0) &&
	   sbx_json_int(s, "size_bytes", 0) > 0, "layer and image sizes reported");
	char *pn = NULL;
	sbx_skill_planned_name("Tenant With Spaces and a long name", 7, &pn, &err);
	ok(pn && strlen(pn) == strlen("sbx-sk-h0123456789ab-g7-01234567") &&
	   sbx_str_starts(pn, "sbx-sk-h"), "an unusual tenant is hashed in the name: %s", pn);
	free(pn);
	struct sbx_image im = {0};
	is_int(sbx_image_get(e.r, T, &im, &err), 1, "the tenant has an image");
	is_str(im.snapshot_id, sid, "the pointer is on the new snapshot");
	is_int(im.generation, 1, "pointer generation 1");
	is_str(im.base_template, "host", "base template recorded");
	sbx_image_clear(&im);
	check_consistent(&e, "alpha", "clean install");
	json_object_put(out);
	int gone;
	sbx_call(e.b, remove, &err, sb.id, &gone);
	sbx_sandbox_clear(&sb);

	/* 2. The image seals the skill and holds no scratch. */
	sbx_image_get(e.r, T, &im, &err);
	struct sbx_create_req creq = {.template_id = im.snapshot_id};
	sbx_call(e.b, create, &err, &creq, &sb);
	sbx_image_clear(&im);
	struct sbx_exec_result res;
	is_int(sh(&e, &sb, 0, "/opt/sbx/skills/alpha/bin/run", &res), 0, "uid 1000 runs the skill");
	ok(res.out && !strcmp(res.out, "hello alpha\n"), "and it answers");
	sbx_exec_result_clear(&res);
	ok(sh(&e, &sb, 0, "echo x >/opt/sbx/skills/alpha/bin/run", &res) != 0,
	   "uid 1000 cannot write the skill");
	sbx_exec_result_clear(&res);
	ok(sh(&e, &sb, 0, "touch /opt/sbx/skills/alpha/new", &res) != 0,
	   "nor add files to it");
	sbx_exec_result_clear(&res);
	is_int(sh(&e, &sb, 0, "test ! -e /workspace/junk && test ! -e /tmp/junk && "
		  "test -d /workspace/input && test -w /workspace/output", &res), 0,
	       "scratch was cleared, input/output recreated writable");
	sbx_exec_result_clear(&res);
	sbx_call(e.b, remove, &err, sb.id, &gone);
	sbx_sandbox_clear(&sb);

	/* 3. A stale installer (started before the image moved) is refused. */
	struct sbx_sandbox old = {0};
	struct sbx_create_req hreq = {.template_id = "host"};
	sbx_call(e.b, create, &err, &hreq, &old);
	rc = snap(&e, &old, "beta", &out, &err);
	ok(rc < 0 && err.kind == SBX_CONFLICT, "an installer not on the current image: conflict");
	json_object_put(out);
	sbx_call(e.b, remove, &err, old.id, &gone);
	sbx_sandbox_clear(&old);

	/* 4. Crash at each step, then recover: one consistent state, and a
	 * second recovery changes nothing. */
	static const char *const faults[] = {"snap:after-ledger", "snap:after-snapshot",
					     "snap:after-record", "snap:after-pointer"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(faults); i++) {
		char name[32];
		snprintf(name, sizeof(name), "crash%zu", i);
		ok(crash_at(name, faults[i]), "killed at %s", faults[i]);
		int rrc;
		json_object *rep = recover(&e, &rrc);
		ok(rrc == 0, "recover after %s", faults[i]);
		ok(nacts(rep) == 1,
		   "one action after %s: %s", faults[i], json_object_to_json_string(rep));
		json_object_put(rep);
		check_consistent(&e, name, faults[i]);
		struct sbx_ledger_row row;
		sbx_ledger_get(e.r, T, name, &row, &err);
		is_str(row.state, i == 0 ? "failed" : "ready", "after %s the row is %s", faults[i],
		       i == 0 ? "failed" : "ready");
		sbx_ledger_row_clear(&row);
		rep = recover(&e, &rrc);
		ok(rrc == 0 && nacts(rep) == 0,
		   "a second recovery after %s does nothing", faults[i]);
		json_object_put(rep);
	}
	/* 4b. Killed between the pointer move and the publish, and another
	 * install stacks on it before any recovery: that row won. */
	ok(crash_at("desc", "snap:after-pointer"), "killed desc after its pointer move");
	{
		struct sbx_sandbox nx = {0};
		installer(&e, "next", &nx);
		struct sbx_image cur = {0};
		sbx_image_get(e.r, T, &cur, &err);
		struct sbx_ledger_row nr = {
			.skill = "next", .state = "snapshotting", .op = "install",
			.fingerprint = cur.fingerprint, .base_template = "host", .parent = nx.template_id,
			.sandbox_id = nx.id, .generation = 50, .image_generation = cur.generation,
			.created_at = sbx_now_ms(),
		};
		sbx_skill_planned_name(T, 50, &nr.planned_name, &err);
		struct sbx_snapshot_ref nref = {0};
		ok(sbx_ledger_begin(e.r, T, &nr, &err) == 0 &&
		   sbx_call(e.b, snapshot_create, &err, &nx, nr.planned_name, &nref) == 0 &&
		   sbx_ledger_mark_ready(e.r, T, "next", nr.planned_name, nref.id, &err) == 1,
		   "a second install stacks on desc's image without recovering first");
		nr.state = "ready";
		nr.snapshot_id = nref.id;
		ok(sbx_ledger_publish(e.b, e.r, T, &nr, 0, NULL, &err) == 1, "and publishes");
		int rrc;
		json_object *rep = recover(&e, &rrc);
		struct sbx_ledger_row d;
		sbx_ledger_get(e.r, T, "desc", &d, &err);
		ok(rrc == 0 && !strcmp(d.state, "ready") && d.published && d.snapshot_id &&
		   snapshot_exists(&e, d.snapshot_id) == 1,
		   "recovery sees desc was superseded, not lost: ready, published, kept");
		sbx_ledger_row_clear(&d);
		json_object_put(rep);
		free(nr.planned_name);
		free(nref.id);
		free(nref.name);
		free(nref.parent);
		sbx_image_clear(&cur);
		sbx_call(e.b, remove, &err, nx.id, &gone);
		sbx_sandbox_clear(&nx);
	}

	/* Cumulative: the last image holds every skill that became ready. */
	sbx_image_get(e.r, T, &im, &err);
	creq.template_id = im.snapshot_id;
	sbx_call(e.b, create, &err, &creq, &sb);
	sbx_image_clear(&im);
	is_int(sh(&e, &sb, 0, "/opt/sbx/skills/alpha/bin/run && /opt/sbx/skills/crash1/bin/run && /opt/sbx/skills/crash2/bin/run && "
		  "/opt/sbx/skills/crash3/bin/run && /opt/sbx/skills/desc/bin/run && "
		  "/opt/sbx/skills/next/bin/run && test ! -e /opt/sbx/skills/crash0", &res), 0,
	       "the image holds alpha and the recovered installs, not the failed one");
	sbx_exec_result_clear(&res);
	sbx_call(e.b, remove, &err, sb.id, &gone);
	sbx_sandbox_clear(&sb);

	/* 5. The pointer race: a row begun on generation N whose snapshot is
	 * made after the image moved past N loses; recovery deletes it. */
	sbx_image_get(e.r, T, &im, &err);
	struct sbx_ledger_row row = {
		.skill = "racer", .state = "snapshotting", .op = "install",
		.fingerprint = im.fingerprint, .base_template = "host", .parent = im.snapshot_id,
		.sandbox_id = "none", .owner = "elsewhere:1:1", .generation = 100,
		.image_generation = im.generation - 1,
		.created_at = sbx_now_ms() - 3600 * 1000,   /* another host's, past grace */
	};
	sbx_skill_planned_name(T, 100, &row.planned_name, &err);
	ok(sbx_ledger_begin(e.r, T, &row, &err) == 0, "begin a racer row");
	installer(&e, "racer", &sb);
	struct sbx_snapshot_ref ref = {0};
	ok(sbx_call(e.b, snapshot_create, &err, &sb, row.planned_name, &ref) == 0,
	   "its snapshot exists");
	int rrc;
	json_object *rep = recover(&e, &rrc);
	struct sbx_ledger_row now;
	sbx_ledger_get(e.r, T, "racer", &now, &err);
	is_str(now.state, "failed", "the racer lost: failed");
	is_int(snapshot_exists(&e, ref.id), 0, "and its snapshot was deleted");
	struct sbx_image im2 = {0};
	sbx_image_get(e.r, T, &im2, &err);
	is_str(im2.snapshot_id, im.snapshot_id, "the pointer did not move");
	sbx_image_clear(&im2);
	sbx_ledger_row_clear(&now);
	json_object_put(rep);
	free(ref.id);
	free(ref.name);
	free(ref.parent);

	/* 6. An orphan that appears later under a failed row's planned name. */
	row.skill = "late";
	row.owner = NULL;
	free(row.planned_name);
	sbx_skill_planned_name(T, 101, &row.planned_name, &err);
	row.image_generation = im.generation;
	sbx_ledger_begin(e.r, T, &row, &err);
	sbx_ledger_mark_failed(e.r, T, "late", row.planned_name, "client died", &err);
	memset(&ref, 0, sizeof(ref));
	sbx_call(e.b, snapshot_create, &err, &sb, row.planned_name, &ref);
	rep = recover(&e, &rrc);
	is_int(snapshot_exists(&e, ref.id), 0, "a late snapshot under a failed row is deleted");
	json_object_put(rep);
	rep = recover(&e, &rrc);
	is_int(nacts(rep), 0, "then nothing to do");
	json_object_put(rep);
	free(row.planned_name);
	free(ref.id);
	free(ref.name);
	free(ref.parent);
	sbx_call(e.b, remove, &err, sb.id, &gone);
	sbx_sandbox_clear(&sb);

	/* 7. What the reaper must keep. */
	char **ids;
	size_t n;
	ok(sbx_ledger_referenced(e.r, NULL, &ids, &n, &err) == 0, "referenced ids");
	int has = 0;
	for (size_t i = 0; i < n; i++)
		has |= im.snapshot_id && !strcmp(ids[i], im.snapshot_id);
	ok(has, "include the image's snapshot (%zu ids)", n);
	sbx_ledger_ids_free(ids, n);
	sbx_image_clear(&im);

	/* 8. Status view and the rm guard. */
	json_object *st = json_object_new_object();
	is_int(sbx_skill_status(e.b, e.r, T, st, &err), 0, "status: no warning");
	ok(nlist(st, "installed") >= 3, "status lists installs");
	json_object_put(st);
	out = json_object_new_object();
	ok(sbx_skill_rm(e.b, e.r, T, "crash3", 0, out, &err) < 0 && err.kind == SBX_CONFLICT,
	   "the image's snapshot is not removed without --force");
	json_object_put(out);

	remove_all(&e);
	env_close(&e);
	return tap_done();
}
