/* docker-sweep.c - the Docker backend's idle policy: kill, never pause (a
 * paused container still holds its memory).  A container idle past its
 * sbx.idle-ttl-seconds label is removed; "gone" means "rebuild on next
 * use".  Activity is the mtime of the marker every exec touches, read
 * through the archive API's stat header, so the sweep never runs anything
 * in a container, an exec or a detached process still running (the
 * daemon says so), and a turn lease held (the caller's idle_seen: Redis).
 * See docker-sweep.h. */
#include "docker-sweep.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "docker-api.h"
#include "docker-container.h"
#include "docker-proc.h"
#include "doc.h"
#include "fault.h"
#include "metadata.h"
#include "tar.h"
#include "util.h"

#define SWEEP_INTERVAL_S 60
#define MARKER_SKEW_S 120

/* Last activity of a container: the marker's mtime, or `fallback` when the
 * marker is missing or too far in the future (a clock trick must not keep
 * a container alive).  -1 when the container is gone. */
static int64_t last_activity(struct sbx_backend *b, const char *id, int64_t fallback,
			     int64_t now, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/archive?path=%s", id, DOCKER_MARKER);
	/* The sweep runs inside a session's resolve: one wedged container
	 * (docs/docker.md, "Pause and exec") must not hold every resolve
	 * for the connection's 120 s.  A stat answers in milliseconds. */
	struct sbx_http_req req = {.method = "HEAD", .path = path, .timeout_ms = 10000};
	struct sbx_http_resp resp = {0};
	if (docker_raw(b, "reap", &req, &resp, err) < 0)
		return -2;
	int64_t t = fallback;
	if (resp.status == 200) {
		SBX_AUTOFREE char *h = sbx_http_header(&resp, "X-Docker-Container-Path-Stat");
		if (h) {
			unsigned char dec[1024];
			size_t hn = strlen(h);
			long n = hn / 4 * 3 < sizeof(dec) ? sbx_base64_decode(dec, h, hn) : -1;
			if (n > 0) {
				dec[n] = 0;
				json_object *j = json_tokener_parse((char *)dec);
				const char *mt = sbx_json_str(j, "mtime");
				int64_t m = mt ? sbx_time_parse_iso(mt) : -1;
				if (m > 0 && m <= now + MARKER_SKEW_S)
					t = m;
				json_object_put(j);
			}
		}
	} else if (resp.status == 404) {
		/* No marker, or no container: tell them apart by the body. */
		if (resp.body && strstr(resp.body, "No such container"))
			t = -1;
	} else {
		docker_status_err("reap", &resp, err);
		t = -2;
	}
	sbx_http_resp_clear(&resp);
	return t;
}

/* 1 when an exec of the container is running now (a long sbx-exec keeps
 * it from the sweep, as on the local backend; sbx(7), IDLE).  The daemon
 * lists its exec instances in the container's ExecIDs (finished ones
 * too, for a while), so each is asked; at most EXEC_ASK_MAX of them.  -1
 * with e when the container cannot be looked at: the sweep then keeps it
 * (it deletes only what it has seen idle; a loaded engine that times out
 * is no reason to kill).  *up: whether the container runs at all (State
 * Running; paused counts): one that does not runs no exec or process. */
#define EXEC_ASK_MAX 64
static int exec_running(struct sbx_backend *b, const char *id, int *up, struct sbx_err *e)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/json", id);
	json_object *c;
	if (docker_api(b, "reap", "GET", path, NULL, &c, e) < 0)
		return -1;
	*up = sbx_json_bool(sbx_json_obj(c, "State"), "Running", 0);
	json_object *ids = NULL;
	int running = 0;
	if (json_object_object_get_ex(c, "ExecIDs", &ids) && json_object_is_type(ids, json_type_array)) {
		size_t n = json_object_array_length(ids);
		for (size_t i = 0; i < n && i < EXEC_ASK_MAX && !running; i++) {
			const char *eid = json_object_get_string(json_object_array_get_idx(ids, i));
			/* The daemon's ids are hex; anything else is not put in a path. */
			if (!eid || !*eid || strspn(eid, "0123456789abcdef") != strlen(eid))
				continue;
			SBX_AUTOFREE char *ep = sbx_xasprintf("/exec/%s/json", eid);
			json_object *x;
			struct sbx_err xe = {0};
			int rc = sbx_fault_on("docker:exec-look")
				 ? sbx_fail(&xe, SBX_UNAVAILABLE, "reap", "docker: exec look failed (fault)")
				 : docker_api(b, "reap", "GET", ep, NULL, &x, &xe);
			if (rc < 0 && xe.kind == SBX_NOT_FOUND)
				continue;       /* an exec gone meanwhile */
			if (rc < 0) {
				/* not seen is not idle: the caller keeps the container */
				*e = xe;
				json_object_put(c);
				return -1;
			}
			running = sbx_json_bool(x, "Running", 0);
			json_object_put(x);
		}
	}
	json_object_put(c);
	return running;
}

/* 1 when a detached process (sbx-proc start) runs in the container: its
 * supervisor is in the container's process table, read with the engine's
 * top (`GET /containers/{id}/top`: dockerd runs ps on its host; podman
 * 4.3 runs the image's ps inside, which touches no marker).  The
 * supervisor's command line holds DOCKER_PROC_SUP_MARK (docker-proc.h)
 * until the process has ended and its exit is written.  -1 with e when
 * the table cannot be read, as exec_running. */
static int proc_running(struct sbx_backend *b, const char *id, struct sbx_err *e)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/top", id);
	json_object *t;
	if (docker_api(b, "reap", "GET", path, NULL, &t, e) < 0)
		return -1;
	json_object *rows = NULL;
	int running = 0;
	if (json_object_object_get_ex(t, "Processes", &rows) &&
	    json_object_is_type(rows, json_type_array)) {
		size_t n = json_object_array_length(rows);
		for (size_t i = 0; i < n && !running; i++) {
			json_object *row = json_object_array_get_idx(rows, i);
			if (!json_object_is_type(row, json_type_array))
				continue;
			size_t k = json_object_array_length(row);
			for (size_t j = 0; j < k && !running; j++) {
				const char *f = json_object_get_string(json_object_array_get_idx(row, j));
				running = f && strstr(f, DOCKER_PROC_SUP_MARK) != NULL;
			}
		}
	}
	json_object_put(t);
	return running;
}

/* 1 when a turn lease on the container's session is held, or cannot be
 * read: asked of b->idle_seen (backend.h; the reaper's Redis).  A session
 * sandbox swept where no idle_seen is set (a program without Redis) is
 * kept: only a sweep that sees leases judges it. */
static int lease_held(struct sbx_backend *b, json_object *labels)
{
	const char *tenant = sbx_json_str(labels, SBX_MD_TENANT);
	const char *session = sbx_json_str(labels, SBX_MD_SESSION);
	if (!tenant || !*tenant || !session || !*session)
		return 0;
	if (!b->idle_seen || !b->idle_seen->awake)
		return 1;
	return b->idle_seen->awake(b->idle_seen->ctx, tenant, session) != 0;
}

/* What keeps a container awake beyond its marker, by the names of sbx(7)
 * IDLE ("lease", "exec", "process", cheapest look first); NULL: nothing,
 * and *failed (with e) when a look failed: kept, not judged. */
static const char *kept_awake(struct sbx_backend *b, const char *id, json_object *labels,
			      int *failed, struct sbx_err *e)
{
	*failed = 0;
	if (lease_held(b, labels))
		return "lease";
	int up = 0;
	int r = exec_running(b, id, &up, e);
	if (r > 0)
		return "exec";
	/* a stopped container has no process table to read (the engine
	 * refuses top): nothing runs in it */
	if (r == 0 && up && (r = proc_running(b, id, e)) > 0)
		return "process";
	*failed = r < 0;
	return NULL;
}

/* One idle candidate's line in the vtable report. */
static void report_item(json_object *arr, const char *id, int64_t idle_s, int deleted,
			const char *awake_by, const struct sbx_err *e)
{
	if (!arr)
		return;
	json_object *o = json_object_new_object();
	sbx_json_set_str(o, "id", id);
	sbx_json_set_int(o, "idle_seconds", idle_s);
	sbx_json_set_bool(o, "deleted", deleted);
	if (awake_by)
		sbx_json_set_str(o, "awake_by", awake_by);
	if (e) {
		json_object *eo = json_object_new_object();
		sbx_json_set_str(eo, "kind", sbx_kind_name(e->kind));
		sbx_json_set_str(eo, "message", e->msg);
		json_object_object_add(o, "error", eo);
	}
	json_object_array_add(arr, o);
}

/* The sweep.  `items` (an array, may be NULL) gets one object per
 * container past its TTL or that could not be judged: {"id",
 * "idle_seconds", "deleted"[, "awake_by"][, "error": {kind, message}]};
 * awake_by names what kept one past its TTL from the delete.  *checked counts
 * the containers that have an idle TTL. */
static int sweep(struct sbx_backend *b, int dry_run, json_object *items, int *checked,
		 struct sbx_err *err)
{
	json_object *arr;
	size_t m;
	*checked = 0;
	if (docker_get_listing(b, "reap", "/containers/json?all=1&",
			       "{\"label\":[\"" DOCKER_LABEL_MANAGED "\"]}", &arr, &m, err) < 0)
		return -1;
	for (size_t i = 0; i < m; i++) {
		json_object *c = json_object_array_get_idx(arr, i);
		const char *id = sbx_json_str(c, "Id");
		json_object *labels = sbx_json_obj(c, "Labels");
		const char *managed = sbx_json_str(labels, DOCKER_LABEL_MANAGED);
		const char *ttls = sbx_json_str(labels, DOCKER_LABEL_TTL);
		long long ttl = ttls ? strtoll(ttls, NULL, 10) : 0;
		if (!id || !managed || !*managed || ttl <= 0)
			continue;
		(*checked)++;
		int64_t created = sbx_json_int(c, "Created", 0);
		int64_t now = sbx_now_ms() / 1000;
		struct sbx_err e = {0};
		int64_t last = last_activity(b, id, created, now, &e);
		if (last == -2) {
			report_item(items, id, 0, 0, NULL, &e);
			continue;
		}
		if (last < 0 || now - last <= ttl)
			continue;
		int failed;
		const char *awake = kept_awake(b, id, labels, &failed, &e);
		if (failed) {
			report_item(items, id, now - last, 0, NULL, &e);
			continue;
		}
		if (awake || dry_run) {
			report_item(items, id, now - last, 0, awake, NULL);
			continue;
		}
		/* Re-check right before the delete: a command may have touched
		 * the marker since the first look. */
		now = sbx_now_ms() / 1000;
		last = last_activity(b, id, created, now, &e);
		if (last == -2) {
			report_item(items, id, 0, 0, NULL, &e);
			continue;
		}
		if (last < 0 || now - last <= ttl)
			continue;
		awake = kept_awake(b, id, labels, &failed, &e);
		if (awake || failed) {
			report_item(items, id, now - last, 0, awake, failed ? &e : NULL);
			continue;
		}
		int gone = 0;
		if (docker_container_remove(b, id, &gone, &e) < 0) {
			report_item(items, id, now - last, 0, NULL, &e);
			continue;
		}
		report_item(items, id, now - last, 1, NULL, NULL);
	}
	json_object_put(arr);
	return 0;
}

int docker_hold(struct sbx_backend *b, const char *id, int64_t until_ms, struct sbx_err *err)
{
	if (until_ms > 0)
		return 0;               /* held: the sweep reads the lease in Redis */
	SBX_AUTOFREE char *full = docker_full_id(b, id, "lease", err);
	if (!full)
		return -1;
	SBX_AUTOCLOSE int tmp = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	if (tmp < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "lease", "temporary file");
	/* The marker as every exec leaves it: root's, mode 0666 (the exec's
	 * user touches it), its mtime now. */
	const char *slash = strrchr(DOCKER_MARKER, '/');
	SBX_AUTOFREE char *dir = sbx_xasprintf("%.*s", (int)(slash - DOCKER_MARKER), DOCKER_MARKER);
	struct sbx_tar_writer w;
	sbx_tar_writer_init(&w, tmp);
	struct sbx_tar_entry fe = {.name = (char *)slash + 1, .type = SBX_TAR_FILE, .mode = 0666,
				   .mtime = sbx_now_ms() / 1000};
	if (sbx_tar_write_header(&w, &fe, err) < 0 || sbx_tar_write_end(&w, err) < 0)
		return -1;
	if (lseek(tmp, 0, SEEK_SET) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "lease", "lseek");
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/archive?path=%s", full, dir);
	const char *hdr[] = {"Content-Type: application/x-tar", NULL};
	struct sbx_http_req hr = {.method = "PUT", .path = path, .headers = hdr, .body_fd = tmp,
				  .timeout_ms = 10000};
	struct sbx_http_resp resp = {0};
	if (docker_raw(b, "lease", &hr, &resp, err) < 0)
		return -1;
	int rc = 0;
	if (resp.status < 200 || resp.status >= 300)
		rc = docker_status_err("lease", &resp, err);
	sbx_http_resp_clear(&resp);
	return rc;
}

int docker_reap_idle(struct sbx_backend *b, int dry_run, json_object *report,
		     struct sbx_err *err)
{
	int checked;
	return sweep(b, dry_run, report && json_object_is_type(report, json_type_array) ? report : NULL,
		     &checked, err);
}

int sbx_docker_reap_idle(struct sbx_backend *b, int dry_run, json_object *report,
			 struct sbx_err *err)
{
	if (!b || !b->ops || strcmp(b->ops->name, "docker") != 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "reap", "idle sweep is a docker backend operation");
	json_object *items = json_object_new_array();
	int checked = 0;
	if (sweep(b, dry_run, items, &checked, err) < 0) {
		json_object_put(items);
		return -1;
	}
	if (report) {
		json_object *idle = json_object_new_array(), *deleted = json_object_new_array(),
			    *errors = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			json_object *it = json_object_array_get_idx(items, i);
			json_object *id = NULL, *eo = NULL;
			json_object_object_get_ex(it, "id", &id);
			if (sbx_json_str(it, "awake_by"))
				continue;       /* past its TTL, but kept awake: not idle */
			if (json_object_object_get_ex(it, "error", &eo)) {
				json_object *x = json_object_get(eo);
				json_object_object_add(x, "id", json_object_get(id));
				json_object_array_add(errors, x);
				continue;
			}
			json_object_array_add(idle, json_object_get(id));
			if (sbx_json_bool(it, "deleted", 0))
				json_object_array_add(deleted, json_object_get(id));
		}
		json_object_object_add(report, "checked", json_object_new_int(checked));
		json_object_object_add(report, "idle", idle);
		json_object_object_add(report, "deleted", deleted);
		json_object_object_add(report, "errors", errors);
	}
	json_object_put(items);
	return 0;
}

void docker_maybe_sweep(struct sbx_backend *b)
{
	const char *dir = b->profile ? b->profile->state_dir : NULL;
	if (!dir || getenv("SBX_DOCKER_NO_SWEEP"))
		return;
	struct sbx_err e = {0};
	if (sbx_mkdir_p(dir, 0700, &e) < 0)
		return;
	SBX_AUTOFREE char *stamp = sbx_xasprintf("%s/docker-sweep.stamp", dir);
	struct stat st;
	time_t now = time(NULL);
	if (stat(stamp, &st) == 0 && now - st.st_mtime < SWEEP_INTERVAL_S && st.st_mtime <= now)
		return;
	int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	futimens(fd, NULL);
	close(fd);
	sbx_docker_reap_idle(b, 0, NULL, &e);
}
