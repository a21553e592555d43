/* serve-state.c - what sbx-serve keeps beside the backend: per sandbox its
 * E2B record (owner key, absolute end time, autoPause, the template alias
 * asked for), per snapshot the sandbox it came from, and the secret its
 * access tokens are derived from.  And the sweeper that enforces end times.
 *
 * Layout, under the serve folder (0700):
 *     secret                     32 random bytes, hex (0600, made once)
 *     sandboxes/<id>.json        the record, replaced atomically
 *     snapshots/<id>.json        {"sandbox", "team"}
 * Ids are checked (serve_id_ok) before they become file names.
 *
 * The E2B timeout is an absolute end time (now + timeout, moved by
 * setTimeout and connect).  It is kept here and enforced by the sweeper
 * (once a second): at the end time the sandbox is killed, or paused when
 * autoPause (a paused sandbox has no end time until it is resumed).  The
 * backend's own idle timer is set to the same number of seconds with the
 * same action each time the end moves: an idle timer fires no earlier than
 * the end time, so it is only the backstop for a server that is down. */
#include "serve-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/file.h>


#include "doc.h"
#include "sha.h"
#include "util.h"

void serve_rec_clear(struct serve_rec *rec)
{
	free(rec->alias);
	json_object_put(rec->fork_recipe);
	memset(rec, 0, sizeof(*rec));
}

static char *rec_path(const char *dir, const char *sub, const char *id)
{
	return sbx_xasprintf("%s/%s/%s.json", dir, sub, id);
}

int serve_rec_load(const char *dir, const char *id, struct serve_rec *rec, struct sbx_err *err)
{
	memset(rec, 0, sizeof(*rec));
	if (!serve_id_ok(id))
		return sbx_fail(err, SBX_NOT_FOUND, "sandbox", "Sandbox \"%.80s\" doesn't exist or you don't have access to it", id);
	SBX_AUTOFREE char *p = rec_path(dir, "sandboxes", id);
	json_object *j = json_object_from_file(p);
	if (!j)
		return sbx_fail(err, SBX_NOT_FOUND, "sandbox", "Sandbox \"%s\" doesn't exist or you don't have access to it", id);
	snprintf(rec->team, sizeof(rec->team), "%s", sbx_json_str(j, "team") ? sbx_json_str(j, "team") : "");
	rec->end_at_ms = sbx_json_int(j, "end_at_ms", 0);
	rec->started_at_ms = sbx_json_int(j, "started_at_ms", 0);
	rec->auto_pause = sbx_json_bool(j, "auto_pause", 0);
	rec->auto_resume = sbx_json_bool(j, "auto_resume", 0);
	rec->allow_public = sbx_json_bool(j, "allow_public", 1);
	const char *a = sbx_json_str(j, "alias");
	rec->alias = a ? sbx_xstrdup(a) : NULL;
	json_object *fr = sbx_json_obj(j, "fork_recipe");
	rec->fork_recipe = fr ? json_object_get(fr) : NULL;
	int bash = sbx_json_bool(j, "bash", -1);
	rec->bash = bash < 0 ? SERVE_BASH_UNKNOWN : bash ? SERVE_BASH_YES : SERVE_BASH_NO;
	json_object_put(j);
	return 0;
}

int serve_rec_save(const char *dir, const char *id, const struct serve_rec *rec, struct sbx_err *err)
{
	if (!serve_id_ok(id))
		return sbx_fail(err, SBX_INVALID_REQUEST, "sandbox", "invalid sandbox id");
	SBX_AUTOFREE char *d = sbx_xasprintf("%s/sandboxes", dir);
	if (sbx_mkdir_p(d, 0700, err) < 0)
		return -1;
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "team", rec->team);
	sbx_json_set_int(j, "end_at_ms", rec->end_at_ms);
	sbx_json_set_int(j, "started_at_ms", rec->started_at_ms);
	sbx_json_set_bool(j, "auto_pause", rec->auto_pause);
	sbx_json_set_bool(j, "auto_resume", rec->auto_resume);
	sbx_json_set_bool(j, "allow_public", rec->allow_public);
	sbx_json_set_str(j, "alias", rec->alias);
	if (rec->fork_recipe)
		json_object_object_add(j, "fork_recipe", json_object_get(rec->fork_recipe));
	if (rec->bash != SERVE_BASH_UNKNOWN)
		sbx_json_set_bool(j, "bash", rec->bash == SERVE_BASH_YES);
	SBX_AUTOFREE char *p = rec_path(dir, "sandboxes", id);
	int rc = sbx_json_write_file(p, j, 0600, 0, err);
	json_object_put(j);
	return rc;
}

void serve_rec_remove(const char *dir, const char *id)
{
	if (!serve_id_ok(id))
		return;
	SBX_AUTOFREE char *p = rec_path(dir, "sandboxes", id);
	unlink(p);
}

/* The secret, made on first use (O_EXCL: two servers starting at once
 * agree on one). */
static int secret(const char *dir, char out[65], struct sbx_err *err)
{
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/secret", dir);
	char *data;
	size_t len;
	for (int tries = 0; tries < 50; tries++) {
		if (sbx_read_file(p, 128, &data, &len, err) == 0 && len >= 64) {
			memcpy(out, data, 64);
			out[64] = '\0';
			sbx_secret_free(data);
			return 0;
		}
		if (len < 64 && tries)
			sbx_sleep_ms(10);           /* being written */
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0) {
			char hex[65];
			if (sbx_random_hex(hex, 32, err) < 0 || sbx_write_all(fd, hex, 64) < 0) {
				close(fd);
				unlink(p);
				return sbx_fail_errno(err, SBX_INTERNAL, "serve", "cannot write %s", p);
			}
			fsync(fd);
			close(fd);
		}
	}
	return sbx_fail(err, SBX_INTERNAL, "serve", "cannot read the token secret %s", p);
}

int serve_token(const char *dir, const char *kind, const char *id, char out[65], struct sbx_err *err)
{
	char key[65];
	if (secret(dir, key, err) < 0)
		return -1;
	SBX_AUTOFREE char *msg = sbx_xasprintf("%s:%s", kind, id);
	unsigned char mac[SBX_SHA256_LEN];
	sbx_hmac_sha256(key, 64, msg, strlen(msg), mac);
	explicit_bzero(key, sizeof(key));
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
	return 0;
}

int serve_snap_note(const char *dir, const char *snap_id, const char *sandbox_id, const char *team,
		    struct sbx_err *err)
{
	SBX_AUTOFREE char *d = sbx_xasprintf("%s/snapshots", dir);
	if (!serve_id_ok(snap_id) && strlen(snap_id) > 128)
		return 0;
	for (const char *c = snap_id; *c; c++)
		if (*c == '/' || *c == '\0')
			return 0;
	if (sbx_mkdir_p(d, 0700, err) < 0)
		return -1;
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "sandbox", sandbox_id);
	sbx_json_set_str(j, "team", team);
	SBX_AUTOFREE char *p = rec_path(dir, "snapshots", snap_id);
	int rc = sbx_json_write_file(p, j, 0600, 0, err);
	json_object_put(j);
	return rc;
}

int serve_snap_owner(const char *dir, const char *snap_id, char sandbox[72], char team[17])
{
	sandbox[0] = team[0] = '\0';
	if (strchr(snap_id, '/') || strlen(snap_id) > 128 || snap_id[0] == '.')
		return -1;
	SBX_AUTOFREE char *p = rec_path(dir, "snapshots", snap_id);
	json_object *j = json_object_from_file(p);
	if (!j)
		return -1;
	snprintf(sandbox, 72, "%s", sbx_json_str(j, "sandbox") ? sbx_json_str(j, "sandbox") : "");
	snprintf(team, 17, "%s", sbx_json_str(j, "team") ? sbx_json_str(j, "team") : "");
	json_object_put(j);
	return 0;
}

int serve_team_lock(const char *dir, const char *team, struct sbx_err *err)
{
	SBX_AUTOFREE char *d = sbx_xasprintf("%s/teams", dir);
	if (sbx_mkdir_p(d, 0700, err) < 0)
		return -1;
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/%s.lock", d, team[0] ? team : "none");
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "cannot open %s", p);
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			close(fd);
			return sbx_fail_errno(err, SBX_INTERNAL, "create", "cannot lock %s", p);
		}
	return fd;
}

/* E2B's pause keeps the sandbox's memory: hibernated (processes and
 * memory on disk, the RAM freed: issue 33) where the backend can here,
 * else frozen in RAM.  A sandbox that the hibernate refuses (unsupported:
 * it runs a detached process or has a network policy, docs/local.md) or
 * fails on (a dump that fails leaves the tree running) is frozen instead:
 * a pause must still pause, and the sweeper would otherwise try the same
 * failing dump at every pass.  Either way the next command finds its
 * processes as they were, which is what E2B's pause promises. */
int serve_pause(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	struct sbx_err why = {0};
	if (sbx_backend_hibernate_check(b, &why) == 0 && sbx_call(b, hibernate, &why, sb, 0u) == 0)
		return 0;
	return sbx_call(b, pause, err, sb);
}

/* One record past its end: pause it (autoPause) or kill it. */
static void sweep_one(const char *dir, const struct sbx_serve_cfg *cfg, struct sbx_backend *b,
		      const char *id, struct serve_rec *rec)
{
	struct sbx_err err = {0};
	struct sbx_sandbox sb = {0};
	if (sbx_call(b, get, &err, id, &sb) < 0) {
		if (err.kind == SBX_NOT_FOUND || err.kind == SBX_TERMINAL)
			serve_rec_remove(dir, id);
		return;
	}
	if (rec->auto_pause) {
		int running = sb.state == SBX_STATE_RUNNING;
		if (running && serve_pause(b, &sb, &err) < 0) {
			sbx_sandbox_clear(&sb);
			return;
		}
		if (running)
			serve_event(cfg, rec->team, id, "paused", "timeout", NULL);
		rec->end_at_ms = 0;
		serve_rec_save(dir, id, rec, &err);
	} else {
		int gone;
		if (sbx_call(b, remove, &err, id, &gone) == 0) {
			serve_rec_remove(dir, id);
			serve_event(cfg, rec->team, id, "killed", "timeout", NULL);
		}
	}
	sbx_sandbox_clear(&sb);
}

int serve_sweep_once(const char *dir, const struct sbx_serve_cfg *cfg, struct sbx_err *err)
{
	SBX_AUTOFREE char *d = sbx_xasprintf("%s/sandboxes", dir);
	DIR *dh = opendir(d);
	if (!dh)
		return 0;
	struct sbx_backend *b = NULL;
	int64_t now = sbx_now_ms();
	struct dirent *e;
	while ((e = readdir(dh))) {
		char id[80];
		size_t n = strlen(e->d_name);
		if (n < 6 || n > 70 || strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		snprintf(id, sizeof(id), "%.*s", (int)(n - 5), e->d_name);
		struct serve_rec rec;
		if (serve_rec_load(dir, id, &rec, err) < 0)
			continue;
		if (rec.end_at_ms && rec.end_at_ms <= now) {
			if (!b && sbx_backend_open(cfg->profile, &b, err) < 0) {
				serve_rec_clear(&rec);
				closedir(dh);
				return -1;
			}
			sweep_one(dir, cfg, b, id, &rec);
		}
		serve_rec_clear(&rec);
	}
	closedir(dh);
	sbx_backend_close(b);
	return 0;
}

/* ---- the backend and a sandbox of the request ---- */

int serve_open_backend(const struct serve_req *r, struct sbx_backend **b, struct sbx_err *err)
{
	return sbx_backend_open(r->cfg->profile, b, err);
}

static int not_found(struct sbx_err *err, const char *id)
{
	return sbx_fail(err, SBX_NOT_FOUND, "sandbox",
			"Sandbox \"%.80s\" doesn't exist or you don't have access to it", id);
}

int serve_load_sandbox(const struct serve_req *r, struct sbx_backend *b, const char *id,
		       struct sbx_sandbox *sb, struct serve_rec *rec, struct sbx_err *err)
{
	if (!serve_id_ok(id))
		return sbx_fail(err, SBX_INVALID_REQUEST, "sandbox", "Invalid sandbox ID");
	if (serve_rec_load(r->serve_dir, id, rec, err) < 0)
		return -1;
	if (r->team[0] && strcmp(rec->team, r->team) != 0) {
		serve_rec_clear(rec);
		return not_found(err, id);
	}
	if (sbx_call(b, get, err, id, sb) < 0) {
		if (err->kind == SBX_TERMINAL || err->kind == SBX_NOT_FOUND) {
			serve_rec_remove(r->serve_dir, id);
			not_found(err, id);
		}
		serve_rec_clear(rec);
		return -1;
	}
	if (sb->state == SBX_STATE_TERMINAL) {
		sbx_sandbox_clear(sb);
		serve_rec_clear(rec);
		return not_found(err, id);
	}
	return 0;
}

