/* docker-container.c - one container of the Docker backend (see
 * docker-container.h): the ownership check every call makes (the
 * sbx.managed label), the handle built from labels and state, and the
 * moves that keep a container usable (unpause, start) or end it.  Requests
 * go through the transport (docker-api.h). */
#include "metadata.h"
#include "docker-container.h"

#include <string.h>

#include "docker-api.h"
#include "docker-gate.h"
#include "doc.h"
#include "util.h"

const struct sbx_state_word docker_state_words[] = {
	{"dead", SBX_STATE_TERMINAL}, {NULL, SBX_STATE_UNKNOWN},
};

enum sbx_state docker_map_state(const char *s)
{
	if (!s)
		return SBX_STATE_UNKNOWN;
	if (!strcmp(s, "running"))
		return SBX_STATE_RUNNING;
	if (!strcmp(s, "paused"))
		return SBX_STATE_PAUSED;
	if (!strcmp(s, "created") || !strcmp(s, "restarting") || !strcmp(s, "removing"))
		return SBX_STATE_TRANSITIONING;
	if (!strcmp(s, "exited"))
		return SBX_STATE_TERMINAL;
	if (!strcmp(s, "dead"))      /* the engine's own word, kept (docker_state_words) */
		return SBX_STATE_TERMINAL;
	return SBX_STATE_UNKNOWN;
}

int docker_internal_label(const char *k)
{
	return !strcmp(k, DOCKER_LABEL_TTL) || !strcmp(k, DOCKER_LABEL_NO_RESUME) ||
	       !strcmp(k, DOCKER_LABEL_TEMPLATE) || !strcmp(k, DOCKER_LABEL_EGRESS) ||
	       sbx_str_starts(k, DOCKER_LABEL_SNAPSHOT);
}

/* See docker-container.h.  (`out` parameters may be uninitialised.) */
void docker_fill_sandbox(struct sbx_backend *b, struct sbx_sandbox *sb, const char *id,
			 const char *image, json_object *labels, const char *state,
			 int64_t created)
{
	memset(sb, 0, sizeof(*sb));   /* `out` parameters may be uninitialised */
	sb->id = sbx_xstrdup(id);
	sb->backend = sbx_xstrdup("docker");
	sb->profile = sbx_xstrdup(b->profile && b->profile->name ? b->profile->name : "default");
	/* The template as create named it (the label), not the engine's
	 * idea of the image: podman reports a name where an id was given. */
	const char *tpl = sbx_json_str(labels, DOCKER_LABEL_TEMPLATE);
	if (tpl && *tpl)
		image = tpl;
	sb->template_id = image ? sbx_xstrdup(image) : NULL;
	sb->state = docker_map_state(state);
	if (state && !strcmp(state, "dead"))
		sb->state_word = sbx_xstrdup("dead");
	sb->created_at = created;
	sb->metadata = json_object_new_object();
	if (labels) {
		json_object_object_foreach(labels, k, v) {
			/* Empty labels are blanked ones inherited from a
			 * snapshot image (see docker_snapshot_create). */
			if (docker_internal_label(k) || !json_object_is_type(v, json_type_string) ||
			    !*json_object_get_string(v))
				continue;
			json_object_object_add(sb->metadata, k, json_object_get(v));
		}
	}
	const char *t = sbx_json_str(labels, SBX_MD_TENANT), *s = sbx_json_str(labels, SBX_MD_SESSION);
	sb->tenant = t && *t ? sbx_xstrdup(t) : NULL;
	sb->session = s && *s ? sbx_xstrdup(s) : NULL;
}

int docker_inspect(struct sbx_backend *b, const char *id, const char *op, json_object **out,
		   struct sbx_err *err)
{
	if (docker_check_ref(id, "sandbox id", op, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/json", id);
	json_object *j;
	if (docker_api(b, op, "GET", path, NULL, &j, err) < 0) {
		if (err->kind == SBX_NOT_FOUND)
			snprintf(err->msg, sizeof(err->msg), "no sandbox %s", id);
		return -1;
	}
	json_object *labels = sbx_json_obj(sbx_json_obj(j, "Config"), "Labels");
	const char *managed = sbx_json_str(labels, DOCKER_LABEL_MANAGED);
	if (!j || !managed || !*managed) {
		json_object_put(j);
		return sbx_fail(err, SBX_NOT_FOUND, op, "no sandbox %s (not an sbx container)", id);
	}
	*out = j;
	return 0;
}

static int full_hex_id(const char *s)
{
	return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

char *docker_full_id(struct sbx_backend *b, const char *id, const char *op, struct sbx_err *err)
{
	if (full_hex_id(id))
		return sbx_xstrdup(id);
	json_object *j;
	if (docker_inspect(b, id, op, &j, err) < 0)
		return NULL;
	const char *f = sbx_json_str(j, "Id");
	char *out = full_hex_id(f) ? sbx_xstrdup(f) : NULL;
	json_object_put(j);
	if (!out)
		sbx_fail(err, SBX_INTERNAL, op, "docker reported no full id for sandbox %s", id);
	return out;
}

const char *docker_inspect_status(json_object *j)
{
	return sbx_json_str(sbx_json_obj(j, "State"), "Status");
}

void docker_fill_from_inspect(struct sbx_backend *b, struct sbx_sandbox *sb, json_object *j)
{
	json_object *cfg = sbx_json_obj(j, "Config");
	const char *created = sbx_json_str(j, "Created");
	int64_t t = created ? sbx_time_parse_iso(created) : -1;
	docker_fill_sandbox(b, sb, sbx_json_str(j, "Id"), sbx_json_str(cfg, "Image"),
		     sbx_json_obj(cfg, "Labels"), docker_inspect_status(j), t > 0 ? t : 0);
}

int docker_container_post(struct sbx_backend *b, const char *id, const char *what,
			  const char *op, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/%s", id, what);
	return docker_api(b, op, "POST", path, NULL, NULL, err);
}

/* docker_ensure_running, and with `resume` docker_resume: connect (sbx-ctl
 * resume, a session resolve) unpauses whatever the sandbox's auto_resume
 * says. */
static int ensure_running(struct sbx_backend *b, const char *id, int resume, struct sbx_err *err)
{
	json_object *j;
	if (docker_inspect(b, id, "connect", &j, err) < 0)
		return -1;
	SBX_AUTOFREE char *st = sbx_xstrdup(docker_inspect_status(j) ? docker_inspect_status(j) : "");
	const char *nr = sbx_json_str(sbx_json_obj(sbx_json_obj(j, "Config"), "Labels"), DOCKER_LABEL_NO_RESUME);
	int on_use = !(nr && !strcmp(nr, "1"));
	json_object_put(j);
	if (!strcmp(st, "running"))
		return 0;
	if (!strcmp(st, "paused") && !resume && !on_use)
		return sbx_fail(err, SBX_CONFLICT, "resume",
				"sandbox %s is paused and does not resume on use (auto_resume off); "
				"run sbx-ctl resume first", id);
	if (!strcmp(st, "paused")) {
		struct sbx_err e2 = {0};
		/* Another resume may win the race: runc then says the
		 * container is "not paused" or "a running process". */
		if (docker_container_post(b, id, "unpause", "resume", &e2) < 0 &&
		    e2.reason != SBX_R_NOT_PAUSED) {
			*err = e2;
			return -1;
		}
		return 0;
	}
	if (!strcmp(st, "exited") || !strcmp(st, "created")) {
		if (docker_container_post(b, id, "start", "connect", err) < 0) {
			if (err->kind == SBX_CONFLICT || err->kind == SBX_NOT_FOUND)
				return -1;
			err->kind = SBX_TERMINAL;
			sbx_err_prefix(err, "sandbox %s cannot be restarted", id);
			return -1;
		}
		return 0;
	}
	if (!strcmp(st, "restarting"))
		return sbx_fail(err, SBX_CONFLICT, "connect", "sandbox %s is restarting", id);
	return sbx_fail(err, SBX_TERMINAL, "connect", "sandbox %s is %s", id, *st ? st : "in an unknown state");
}

int docker_ensure_running(struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	return ensure_running(b, id, 0, err);
}

int docker_resume(struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	return ensure_running(b, id, 1, err);
}

int docker_container_remove(struct sbx_backend *b, const char *id, int *gone,
			    struct sbx_err *err)
{
	json_object *j;
	*gone = 0;
	if (docker_inspect(b, id, "remove", &j, err) < 0) {
		if (err->kind == SBX_NOT_FOUND && err->http_status == 404) {
			sbx_err_clear(err);
			*gone = 1;
			return 0;
		}
		return -1;
	}
	SBX_AUTOFREE char *full = sbx_xstrdup(sbx_json_str(j, "Id"));
	json_object_put(j);
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s?force=1&v=1", full);
	if (docker_api(b, "remove", "DELETE", path, NULL, NULL, err) < 0) {
		if (err->http_status == 404) {
			sbx_err_clear(err);
			*gone = 1;
			docker_gate_forget(b, full);
			return 0;
		}
		if (err->reason == SBX_R_IN_PROGRESS) {
			sbx_err_clear(err);
			return 0;
		}
		return -1;
	}
	docker_gate_forget(b, full);
	return 0;
}
