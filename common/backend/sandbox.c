/* sandbox.c - the handle and the backend value types: names, conversion to
 * and from documents (each type's one document shape), and freeing. */
#include "backend.h"

#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "util.h"

static const char *const state_names[] = {
	[SBX_STATE_UNKNOWN] = "unknown", [SBX_STATE_RUNNING] = "running",
	[SBX_STATE_PAUSED] = "paused", [SBX_STATE_TRANSITIONING] = "transitioning",
	[SBX_STATE_TERMINAL] = "terminal",
};

const char *sbx_state_name(enum sbx_state s)
{
	return (unsigned)s < SBX_ARRAY_LEN(state_names) ? state_names[s] : "unknown";
}

enum sbx_state sbx_state_from_name(const char *s)
{
	for (size_t i = 0; s && i < SBX_ARRAY_LEN(state_names); i++)
		if (strcmp(s, state_names[i]) == 0)
			return (enum sbx_state)i;
	return SBX_STATE_UNKNOWN;
}

const char *sbx_ftype_name(enum sbx_ftype t)
{
	switch (t) {
	case SBX_FT_FILE: return "file";
	case SBX_FT_DIR: return "dir";
	case SBX_FT_SYMLINK: return "symlink";
	default: return "other";
	}
}

const char *sbx_sandbox_state(const struct sbx_sandbox *sb)
{
	return sb->state_word ? sb->state_word : sbx_state_name(sb->state);
}

void sbx_sandbox_clear(struct sbx_sandbox *sb)
{
	free(sb->state_word);
	free(sb->id);
	free(sb->backend);
	free(sb->profile);
	free(sb->template_id);
	free(sb->tenant);
	free(sb->session);
	json_object_put(sb->metadata);
	json_object_put(sb->extra);
	memset(sb, 0, sizeof(*sb));
}

static const char *const core_keys[] = {
	"id", "backend", "profile", "template", "state", "tenant", "session",
	"metadata", "created_at",
};

json_object *sbx_sandbox_to_json(const struct sbx_sandbox *sb)
{
	json_object *o = json_object_new_object();
	char when[32];
	/* Backend-private fields first, so the core fields always win. */
	if (sb->extra) {
		json_object_object_foreach(sb->extra, k, v)
			json_object_object_add(o, k, json_object_get(v));
	}
	sbx_json_set_str(o, "id", sb->id);
	sbx_json_set_str(o, "backend", sb->backend);
	sbx_json_set_str(o, "profile", sb->profile);
	sbx_json_set_str(o, "template", sb->template_id);
	sbx_json_set_str(o, "state", sbx_sandbox_state(sb));
	sbx_json_set_str(o, "tenant", sb->tenant);
	sbx_json_set_str(o, "session", sb->session);
	json_object_object_add(o, "metadata",
			       sb->metadata ? json_object_get(sb->metadata) : json_object_new_object());
	sbx_time_iso(sb->created_at, when, sizeof(when));
	sbx_json_set_str(o, "created_at", sb->created_at ? when : NULL);
	return o;
}

static char *dup_or_null(json_object *o, const char *k)
{
	const char *s = sbx_json_str(o, k);
	return s ? sbx_xstrdup(s) : NULL;
}

int sbx_sandbox_from_json(json_object *o, struct sbx_sandbox *sb, struct sbx_err *err)
{
	memset(sb, 0, sizeof(*sb));
	if (!o || !json_object_is_type(o, json_type_object))
		return sbx_fail(err, SBX_INVALID_REQUEST, "input", "the document has no sandbox object");
	const char *id = sbx_json_str(o, "id");
	if (!id || !*id)
		return sbx_fail(err, SBX_INVALID_REQUEST, "input", "the sandbox object has no id");
	sb->id = sbx_xstrdup(id);
	sb->backend = dup_or_null(o, "backend");
	sb->profile = dup_or_null(o, "profile");
	sb->template_id = dup_or_null(o, "template");
	sb->tenant = dup_or_null(o, "tenant");
	sb->session = dup_or_null(o, "session");
	/* A backend's own word is kept as it is (what it counts as is the
	 * backend's to say, on its next get). */
	const char *st = sbx_json_str(o, "state");
	sb->state = sbx_state_from_name(st);
	if (st && sb->state == SBX_STATE_UNKNOWN && strcmp(st, "unknown") != 0)
		sb->state_word = sbx_xstrdup(st);
	json_object *md = sbx_json_obj(o, "metadata");
	sb->metadata = md ? json_object_get(md) : json_object_new_object();
	const char *when = sbx_json_str(o, "created_at");
	sb->created_at = when ? sbx_time_parse_iso(when) : 0;
	if (sb->created_at < 0)
		sb->created_at = 0;
	json_object_object_foreach(o, k, v) {
		size_t i;
		for (i = 0; i < SBX_ARRAY_LEN(core_keys); i++)
			if (strcmp(k, core_keys[i]) == 0)
				break;
		if (i < SBX_ARRAY_LEN(core_keys))
			continue;
		if (!sb->extra)
			sb->extra = json_object_new_object();
		json_object_object_add(sb->extra, k, json_object_get(v));
	}
	return 0;
}

void sbx_exec_result_clear(struct sbx_exec_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* Free the strings at `offs` in each of n elements of `size` bytes, then
 * the array: the three arrays below hold three strings each. */
static void free_array(void *arr, size_t n, size_t size, const size_t offs[3])
{
	for (size_t i = 0; arr && i < n; i++)
		for (size_t k = 0; k < 3; k++)
			free(*(char **)((char *)arr + i * size + offs[k]));
	free(arr);
}

void sbx_dirents_free(struct sbx_dirent *e, size_t n)
{
	static const size_t offs[3] = {offsetof(struct sbx_dirent, name), offsetof(struct sbx_dirent, path),
				       offsetof(struct sbx_dirent, link_target)};
	free_array(e, n, sizeof(*e), offs);
}

void sbx_snapshot_refs_free(struct sbx_snapshot_ref *r, size_t n)
{
	static const size_t offs[3] = {offsetof(struct sbx_snapshot_ref, id),
				       offsetof(struct sbx_snapshot_ref, name),
				       offsetof(struct sbx_snapshot_ref, parent)};
	free_array(r, n, sizeof(*r), offs);
}

void sbx_templates_free(struct sbx_template *t, size_t n)
{
	static const size_t offs[3] = {offsetof(struct sbx_template, id), offsetof(struct sbx_template, name),
				       offsetof(struct sbx_template, kind)};
	free_array(t, n, sizeof(*t), offs);
}

/* ---- the document shapes of the value types (backend.h) ----------------- */

/* A name from inside the sandbox: any bytes but NUL (doc.h). */
static void set_name(json_object *o, const char *key, const char *s)
{
	if (s)
		sbx_json_set_bytes(o, key, s, strlen(s));
}

static void set_time(json_object *o, const char *key, int64_t t)
{
	char when[32];
	sbx_time_iso(t, when, sizeof(when));
	sbx_json_set_str(o, key, when);
}

void sbx_dirent_json(const struct sbx_dirent *e, json_object *o)
{
	char mode[16];
	set_name(o, "name", e->name);
	set_name(o, "path", e->path);
	sbx_json_set_str(o, "type", sbx_ftype_name(e->type));
	sbx_json_set_int(o, "size", e->size);
	set_time(o, "mtime", e->mtime);
	snprintf(mode, sizeof(mode), "%04o", e->mode);
	sbx_json_set_str(o, "mode", mode);
	sbx_json_set_int(o, "uid", e->uid);
	sbx_json_set_int(o, "gid", e->gid);
	set_name(o, "link_target", e->link_target);
}

void sbx_snapshot_size_json(const struct sbx_snapshot_ref *r, json_object *o)
{
	if (r->layers >= 0)
		sbx_json_set_int(o, "layers", r->layers);
	if (r->size_bytes >= 0)
		sbx_json_set_int(o, "size_bytes", r->size_bytes);
}

void sbx_snapshot_ref_json(const struct sbx_snapshot_ref *r, json_object *o)
{
	sbx_json_set_str(o, "id", r->id);
	sbx_json_set_str(o, "name", r->name ? r->name : r->id);
	if (r->parent)
		sbx_json_set_str(o, "parent", r->parent);
	sbx_snapshot_size_json(r, o);
	if (r->created_at > 0)
		set_time(o, "created_at", r->created_at);
}

void sbx_template_json(const struct sbx_template *t, const char *backend, json_object *o)
{
	sbx_json_set_str(o, "id", t->id);
	sbx_json_set_str(o, "name", t->name ? t->name : t->id);
	sbx_json_set_str(o, "kind", t->kind ? t->kind : "unknown");
	sbx_json_set_str(o, "backend", backend);
	if (t->created_at > 0)
		set_time(o, "created_at", t->created_at);
	if (t->size_bytes >= 0)
		sbx_json_set_int(o, "size_bytes", t->size_bytes);
}

void sbx_page_clear(struct sbx_page *p)
{
	for (size_t i = 0; p->items && i < p->n; i++)
		sbx_sandbox_clear(&p->items[i]);
	free(p->items);
	free(p->next);
	memset(p, 0, sizeof(*p));
}

static const struct { unsigned bit; const char *name; } cap_names[] = {
	{SBX_CAP_EXEC, "exec"}, {SBX_CAP_FILES, "files"}, {SBX_CAP_PAUSE, "pause"},
	{SBX_CAP_SNAPSHOTS, "snapshots"}, {SBX_CAP_METADATA, "metadata"},
	{SBX_CAP_LIST, "list"}, {SBX_CAP_TEMPLATES, "templates"},
	{SBX_CAP_TIMEOUT, "set_timeout"}, {SBX_CAP_NETPOLICY, "network_policy"},
	{SBX_CAP_INBOUND_TOKEN, "inbound_token"}, {SBX_CAP_IDLE_KILL, "idle_kill"},
	{SBX_CAP_INSTALL, "install"}, {SBX_CAP_PROCESS, "process"},
	{SBX_CAP_HOST_LOCAL, "host_local"}, {SBX_CAP_FLATTEN, "flatten"},
	{SBX_CAP_TEMPLATE_IMPORT, "template_import"}, {SBX_CAP_TIMEOUT_POLICY, "timeout_policy"},
	{SBX_CAP_VOLUMES, "volumes"}, {SBX_CAP_TTY, "tty"},
	{SBX_CAP_CHECKPOINT, "checkpoint"}, {SBX_CAP_FORK, "fork"},
	{SBX_CAP_HIBERNATE, "hibernate"},
};

json_object *sbx_caps_to_json(unsigned caps)
{
	json_object *o = json_object_new_object();
	for (size_t i = 0; i < SBX_ARRAY_LEN(cap_names); i++)
		sbx_json_set_bool(o, cap_names[i].name, (caps & cap_names[i].bit) != 0);
	return o;
}
