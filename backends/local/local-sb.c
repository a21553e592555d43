/* local-sb.c - the local sandbox store: one directory and one record per
 * sandbox under <state>/local/sandboxes/ (layout in local-sb.h), the
 * state a record and its processes give, and the queries over all of
 * them (get, list, the templates in use).
 *
 * Promises:
 *  - A record is replaced whole (tmp + rename), never torn.
 *  - A directory without a readable record (a create that died before
 *    its first write) reads as a dead sandbox, so list shows it and remove
 *    can clean it; ids that are not sbx's own form are not_found, so no id
 *    reaches a path outside the store.
 *  - Nothing here changes a sandbox: reading its state has no side
 *    effect (local-state.c is where a stopped init is continued). */
#include "local-sb.h"
#include "metadata.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doc.h"
#include "local-idle.h"
#include "local-pid.h"
#include "util.h"

int local_sb_valid_id(const char *id)
{
	if (!id || strncmp(id, "sb-", 3) != 0 || strlen(id) > 64)
		return 0;
	for (const char *p = id + 3; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return 0;
	return id[3] != '\0';
}

char *local_sb_dir(struct sbx_backend *b, const char *id)
{
	return sbx_xasprintf("%s/sandboxes/%s", local_of(b)->dir, id);
}

int local_rec_write(const char *dir, json_object *j, struct sbx_err *err)
{
	/* No fsync: the record describes processes, and a power loss kills
	 * those anyway; rename keeps it whole against a crashed writer. */
	SBX_AUTOFREE char *dst = sbx_xasprintf("%s/sandbox.json", dir);
	return sbx_json_write_file(dst, j, 0600, SBX_WRITE_NOSYNC, err);
}

void local_rec_free(struct local_rec *r)
{
	free(r->dir);
	json_object_put(r->j);
	for (int i = 0; i < LOCAL_NCG; i++)
		free(r->cg[i]);
	memset(r, 0, sizeof(*r));
}

const char *const local_cg_keys[LOCAL_NCG] = {"v2", "memory", "pids", "cpu",
							   "devices"};

int local_rec_load(struct sbx_backend *b, const char *id, struct local_rec *r,
		   struct sbx_err *err)
{
	memset(r, 0, sizeof(*r));
	if (!local_sb_valid_id(id))
		return sbx_fail(err, SBX_NOT_FOUND, "get", "no sandbox %s", id ? id : "(null)");
	r->dir = local_sb_dir(b, id);
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
		r->dir = local_sb_dir(b, id);
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
		const char *p = cg ? sbx_json_str(cg, local_cg_keys[i]) : NULL;
		r->cg[i] = p ? sbx_xstrdup(p) : cg ? NULL : local_cg_path(b, i, id);
	}
	r->init_pid = (pid_t)sbx_json_int(r->j, "init_pid", 0);
	return 0;
}

const struct sbx_state_word local_state_words[] = {
	{"dead", SBX_STATE_TERMINAL}, {"stopped", SBX_STATE_RUNNING},
	{"hibernated", SBX_STATE_PAUSED}, {NULL, SBX_STATE_UNKNOWN},
};

enum sbx_state local_state_is(enum local_state st)
{
	switch (st) {
	case LOCAL_TRANSITIONING: return SBX_STATE_TRANSITIONING;
	case LOCAL_RUNNING: case LOCAL_STOPPED: return SBX_STATE_RUNNING;
	case LOCAL_PAUSED: case LOCAL_HIBERNATED: return SBX_STATE_PAUSED;
	case LOCAL_TERMINAL: case LOCAL_DEAD: return SBX_STATE_TERMINAL;
	}
	return SBX_STATE_UNKNOWN;
}

const char *local_state_word(enum local_state st)
{
	return st == LOCAL_DEAD ? "dead" : st == LOCAL_STOPPED ? "stopped" :
	       st == LOCAL_HIBERNATED ? "hibernated" : NULL;
}

enum local_state local_rec_state(const struct local_rec *r)
{
	const char *st = sbx_json_str(r->j, "state");
	if (!st || strcmp(st, "ready") != 0) {
		pid_t c = (pid_t)sbx_json_int(r->j, "creator_pid", 0);
		unsigned long long cs = (unsigned long long)sbx_json_int(r->j, "creator_start", 0);
		return local_pid_alive(c, cs) ? LOCAL_TRANSITIONING : LOCAL_DEAD;
	}
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/killed", r->dir);
	if (access(p, F_OK) == 0)
		return LOCAL_TERMINAL;
	if (!local_pid_alive(r->init_pid,
			     (unsigned long long)sbx_json_int(r->j, "init_start", 0))) {
		/* Gone, unless a whole dump holds its tree (local-hibernate.h). */
		snprintf(p, sizeof(p), "%s/" LOCAL_HIBERNATE_DIR, r->dir);
		return access(p, F_OK) == 0 ? LOCAL_HIBERNATED : LOCAL_DEAD;
	}
	/* Before paused: a stopped init keeps no timer and reaps nothing,
	 * whatever its sandbox's processes do. */
	if (local_pid_stopped(r->init_pid))
		return LOCAL_STOPPED;
	if (r->cg[CG_V2]) {
		char buf[16];
		snprintf(p, sizeof(p), "%s/work/cgroup.freeze", r->cg[CG_V2]);
		if (local_read_small(p, buf, sizeof(buf)) == 0 && buf[0] == '1')
			return LOCAL_PAUSED;
	}
	return LOCAL_RUNNING;
}

/* What last kept the sandbox awake (local-idle.h's rule, the one the
 * init's timer applies): `awake_by` names the signal, and `awake` is
 * true while it holds the sandbox awake now.  Of a sandbox its idle timer
 * paused, the marker the init wrote says what it was at the pause, and
 * `paused_by` is "idle".  Nothing for a sandbox that is gone. */
static void idle_show(const struct local_rec *r, enum local_state ls, json_object *extra)
{
	if (ls != LOCAL_RUNNING && ls != LOCAL_PAUSED && ls != LOCAL_STOPPED)
		return;
	SBX_AUTOCLOSE int dfd = open(r->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	char mark[32] = {0};
	SBX_AUTOCLOSE int mfd = openat(dfd, LOCAL_IDLE_MARKER, O_RDONLY | O_CLOEXEC);
	ssize_t n = mfd >= 0 ? read(mfd, mark, sizeof(mark) - 1) : -1;
	if (ls == LOCAL_PAUSED && n > 0) {
		mark[strcspn(mark, "\n")] = '\0';
		for (int i = 0; i < LOCAL_AWAKE_N; i++)
			if (!strcmp(mark, local_awake_name(i)))
				sbx_json_set_str(extra, "awake_by", local_awake_name(i));
		sbx_json_set_str(extra, "paused_by", "idle");
		return;
	}
	struct local_idle st;
	local_idle_probe(dfd, sbx_now_ms(), &st);
	sbx_json_set_str(extra, "awake_by", local_awake_name(st.by));
	sbx_json_set_bool(extra, "awake", ls == LOCAL_RUNNING && st.held);
}

/* The keys of extra that local_rec_to_sandbox writes (idle_show's too). */
static const char *const owned_extra[] = {"network_policy", "awake_by", "awake", "paused_by",
					  "on_timeout"};

json_object *local_sb_extra_merge(json_object *kept, json_object *fresh)
{
	if (!kept)
		return fresh;
	for (size_t i = 0; i < sizeof(owned_extra) / sizeof(owned_extra[0]); i++)
		json_object_object_del(kept, owned_extra[i]);
	if (fresh) {
		json_object_object_foreach(fresh, k, v)
			json_object_object_add(kept, k, json_object_get(v));
		json_object_put(fresh);
	}
	return kept;
}

void local_rec_to_sandbox(struct sbx_backend *b, const struct local_rec *r,
			   struct sbx_sandbox *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->id = sbx_xstrdup(sbx_json_str(r->j, "id"));
	sb->backend = sbx_xstrdup("local");
	sb->profile = sbx_xstrdup(b->profile && b->profile->name ? b->profile->name : "default");
	const char *t = sbx_json_str(r->j, "template");
	sb->template_id = t ? sbx_xstrdup(t) : NULL;
	enum local_state ls = local_rec_state(r);
	sb->state = local_state_is(ls);
	sb->state_word = local_state_word(ls) ? sbx_xstrdup(local_state_word(ls)) : NULL;
	json_object *md = sbx_json_obj(r->j, "metadata");
	sb->metadata = md ? json_object_get(md) : json_object_new_object();
	const char *s = sbx_json_str(sb->metadata, SBX_MD_TENANT);
	sb->tenant = s ? sbx_xstrdup(s) : NULL;
	s = sbx_json_str(sb->metadata, SBX_MD_SESSION);
	sb->session = s ? sbx_xstrdup(s) : NULL;
	sb->created_at = sbx_json_int(r->j, "created_at", 0);
	/* Every use touches the activity file (local_sb_touch). */
	struct stat st;
	SBX_AUTOFREE char *act = sbx_xasprintf("%s/activity", r->dir);
	if (stat(act, &st) == 0)
		sb->active_at = st.st_mtime;
	/* A sandbox with a network policy shows it as the broker sees it
	 * (sbx-ctl network replaces the file; local-broker.h). */
	SBX_AUTOFREE char *pol = sbx_xasprintf("%s/netpolicy.json", r->dir);
	json_object *np = access(pol, F_OK) == 0 ? json_object_from_file(pol) : NULL;
	sb->extra = json_object_new_object();
	if (np)
		json_object_object_add(sb->extra, "network_policy", np);
	/* What its idle timer does, when it has one: "hibernate" is what the
	 * reaper's hibernate pass looks for (reap.h). */
	json_object *to = sbx_json_obj(r->j, "timeout");
	const char *idle_act = to && sbx_json_int(to, "seconds", 0) > 0 ? sbx_json_str(to, "on_timeout")
									   : NULL;
	if (idle_act)
		sbx_json_set_str(sb->extra, "on_timeout", idle_act);
	idle_show(r, ls, sb->extra);
}

int local_sb_get(struct sbx_backend *b, const char *id, struct sbx_sandbox *out,
		     struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, id, &r, err) < 0)
		return -1;
	local_rec_to_sandbox(b, &r, out);
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

int local_sb_list(struct sbx_backend *b, const struct sbx_list_filter *f,
		      const char *page_token, struct sbx_page *out, struct sbx_err *err)
{
	(void)page_token;
	memset(out, 0, sizeof(*out));
	SBX_AUTOFREE char *dir = sbx_xasprintf("%s/sandboxes", local_of(b)->dir);
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return sbx_fail_errno(err, SBX_INTERNAL, "list", "%s", dir);
	}
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!local_sb_valid_id(e->d_name))
			continue;
		struct local_rec r;
		struct sbx_err e2 = {0};
		if (local_rec_load(b, e->d_name, &r, &e2) < 0)
			continue;   /* removed while we looked */
		struct sbx_sandbox sb;
		local_rec_to_sandbox(b, &r, &sb);
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
	if (local_sb_list(b, NULL, NULL, &p, err) < 0)
		return -1;
	*ids = sbx_xcalloc(p.n + 1, sizeof(char *));
	for (size_t i = 0; i < p.n; i++)
		if (p.items[i].template_id)
			(*ids)[(*n)++] = sbx_xstrdup(p.items[i].template_id);
	sbx_page_clear(&p);
	return 0;
}

void local_sb_touch(struct sbx_backend *b, const char *id)
{
	if (!local_sb_valid_id(id))
		return;
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/sandboxes/%s/activity", local_of(b)->dir, id);
	utimensat(AT_FDCWD, p, NULL, 0);
}

char *local_sb_upper(struct sbx_backend *b, const char *id)
{
	return sbx_xasprintf("%s/sandboxes/%s/upper", local_of(b)->dir, id);
}

int local_policy_write(const char *dir, const struct sbx_timeout_policy *t, struct sbx_err *err)
{
	char buf[128];
	int n = snprintf(buf, sizeof(buf), "%lld %d %d\n", (long long)t->seconds,
			 t->on_timeout_pause ? 1 : 0, t->auto_resume ? 1 : 0);
	SBX_AUTOFREE char *dst = sbx_xasprintf("%s/policy", dir);
	return sbx_write_file_atomic(dst, buf, (size_t)n, 0644, SBX_WRITE_NOSYNC, err);
}
