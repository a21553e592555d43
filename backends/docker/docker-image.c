/* docker-image.c - snapshots and templates of the Docker backend: both are
 * images.  A snapshot is a commit of a sandbox's container (the image id,
 * "sha256:...", is a template id) labelled sbx.snapshot=1 and tagged
 * sbx-snap:<name>; snapshot images never appear as templates.  A template
 * is any other tagged image, or a rootfs tar imported as one.  Deleting
 * checks which of the two an id is, so neither command removes the other's
 * images; an image in use by a container is a conflict. */
#include "docker-image.h"

#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "docker-api.h"
#include "docker-container.h"
#include "docker-gate.h"
#include "doc.h"
#include "tar.h"
#include "util.h"

/* ---- snapshots -------------------------------------------------------- */

/* A Docker tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; everything else → '-'. */
static char *tag_of(const char *name)
{
	size_t n = strlen(name);
	if (n > 120)
		n = 120;
	char *t = sbx_xmalloc(n + 2);
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		t[j++] = isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-' ? c : '-';
	}
	t[j] = 0;
	if (!j || t[0] == '.' || t[0] == '-') {
		memmove(t + 1, t, j + 1);
		t[0] = '_';
	}
	return t;
}

/* The commit's labels as `changes` query parameters, one `LABEL "k"="v"`
 * Dockerfile instruction each: podman ignores the body's Labels, both
 * engines honour these.  One parameter per label, because podman misreads
 * several pairs in one instruction when a value is empty.  Keys and values
 * are quoted, `"` and `\` escaped; a newline would end the instruction, so
 * it is refused (invalid_request).  Returns "&changes=...&changes=..." or
 * NULL with err. */
static char *commit_changes(json_object *labels, struct sbx_err *err)
{
	size_t len = 0, cap = 256;
	char *q = sbx_xmalloc(cap);
	q[0] = 0;
	json_object_object_foreach(labels, k, v) {
		const char *parts[2] = {k, json_object_get_string(v)};
		char ins[2 * 4096 + 32];
		size_t n = 0;
		memcpy(ins, "LABEL ", 6);
		n = 6;
		for (int i = 0; i < 2; i++) {
			const char *s = parts[i];
			if (strlen(s) > 2000 || strpbrk(s, "\r\n")) {
				free(q);
				sbx_fail(err, SBX_INVALID_REQUEST, "snapshot",
					 "label '%.64s' cannot be committed (a newline, or longer than 2000 bytes)", k);
				return NULL;
			}
			ins[n++] = '"';
			for (; *s; s++) {
				if (*s == '"' || *s == '\\')
					ins[n++] = '\\';
				ins[n++] = *s;
			}
			ins[n++] = '"';
			if (i == 0)
				ins[n++] = '=';
		}
		ins[n] = 0;
		SBX_AUTOFREE char *e = sbx_http_escape(ins);
		size_t el = strlen(e);
		while (len + el + 10 >= cap)
			q = sbx_xrealloc(q, cap *= 2);
		len += (size_t)sprintf(q + len, "&changes=%s", e);
	}
	return q;
}

int docker_snapshot_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
			   struct sbx_snapshot_ref *out, struct sbx_err *err)
{
	json_object *j;
	memset(out, 0, sizeof(*out));
	if (!sb->id)
		return sbx_fail(err, SBX_INVALID_REQUEST, "snapshot", "the sandbox has no id");
	if (docker_ensure_running(b, sb->id, err) < 0)
		return -1;
	if (docker_inspect(b, sb->id, "snapshot", &j, err) < 0)
		return -1;
	SBX_AUTOFREE char *id = sbx_xstrdup(sbx_json_str(j, "Id"));
	/* The parent as create named it (podman's Config.Image is a name). */
	const char *tl = sbx_json_str(sbx_json_obj(sbx_json_obj(j, "Config"), "Labels"), DOCKER_LABEL_TEMPLATE);
	SBX_AUTOFREE char *parent = sbx_xstrdup(tl && *tl ? tl
					: sbx_json_str(sbx_json_obj(j, "Config"), "Image") ?: "");
	/* Commit merges the container's labels into the image, and an image's
	 * labels pass down to every container made from it; a label cannot
	 * be removed, only overridden.  So each of the source's labels is
	 * blanked in the image (empty labels are not metadata, see
	 * docker_fill_sandbox): a sandbox made from a skill snapshot must not carry
	 * the tenant, session or run of the sandbox the skill was installed in. */
	json_object *labels = json_object_new_object();
	json_object *src = sbx_json_obj(sbx_json_obj(j, "Config"), "Labels");
	if (src) {
		json_object_object_foreach(src, k, v) {
			(void)v;
			json_object_object_add(labels, k, json_object_new_string(""));
		}
	}
	json_object_put(j);
	char rnd[17];
	SBX_AUTOFREE char *gen = NULL;
	if (!name || !*name) {
		if (sbx_random_hex(rnd, 8, err) < 0)
			return -1;
		gen = sbx_xasprintf("snap-%s", rnd);
		name = gen;
	}
	SBX_AUTOFREE char *tag = tag_of(name);
	SBX_AUTOFREE char *qtag = sbx_http_escape(tag);
	json_object_object_add(labels, DOCKER_LABEL_SNAPSHOT, json_object_new_string("1"));
	json_object_object_add(labels, DOCKER_LABEL_SNAPSHOT_NAME, json_object_new_string(name));
	json_object_object_add(labels, DOCKER_LABEL_SNAPSHOT_PARENT, json_object_new_string(parent));
	SBX_AUTOFREE char *changes = commit_changes(labels, err);
	json_object_put(labels);
	if (!changes)
		return -1;
	/* An empty JSON body: podman refuses a commit without one. */
	json_object *body = json_object_new_object();
	SBX_AUTOFREE char *path = sbx_xasprintf("/commit?container=%s&repo=sbx-snap&tag=%s&pause=true%s",
						id, qtag, changes);
	json_object *resp = NULL;
	/* The commit pauses the container: not while an exec starts. */
	int rc = docker_gate_enter(b, id, 1, DOCKER_GATE_PAUSE_WAIT_MS, err);
	if (rc == 0) {
		rc = docker_api(b, "snapshot", "POST", path, body, &resp, err);
		docker_gate_leave(id);
	}
	json_object_put(body);
	if (rc < 0)
		return -1;
	const char *iid = sbx_json_str(resp, "Id");
	if (!iid) {
		json_object_put(resp);
		return sbx_fail(err, SBX_INTERNAL, "snapshot", "docker commit returned no image id");
	}
	/* podman answers the bare hex; the listings say sha256: on both. */
	out->id = strchr(iid, ':') ? sbx_xstrdup(iid) : sbx_xasprintf("sha256:%s", iid);
	out->name = sbx_xstrdup(name);
	out->parent = *parent ? sbx_xstrdup(parent) : NULL;
	out->created_at = sbx_now_ms() / 1000;
	out->size_bytes = -1;
	out->layers = -1;
	json_object_put(resp);
	/* The layer count as the engine has it, and the size of the layer
	 * this commit added (the history's newest entry: the container's
	 * writable layer), not the image's Size, which counts every layer
	 * under it too.  Best effort: the snapshot exists whatever this says. */
	SBX_AUTOFREE char *ipath = sbx_xasprintf("/images/%s/json", out->id);
	SBX_AUTOFREE char *hpath = sbx_xasprintf("/images/%s/history", out->id);
	json_object *im;
	struct sbx_err quiet = {0};
	if (docker_api(b, "snapshot", "GET", ipath, NULL, &im, &quiet) == 0) {
		json_object *rootfs = sbx_json_obj(im, "RootFS"), *ls = NULL;
		if (rootfs && json_object_object_get_ex(rootfs, "Layers", &ls) &&
		    json_object_is_type(ls, json_type_array))
			out->layers = (int)json_object_array_length(ls);
		json_object_put(im);
	}
	sbx_err_clear(&quiet);
	if (docker_api(b, "snapshot", "GET", hpath, NULL, &im, &quiet) == 0) {
		if (json_object_is_type(im, json_type_array) && json_object_array_length(im) > 0)
			out->size_bytes = sbx_json_int(json_object_array_get_idx(im, 0), "Size", -1);
		json_object_put(im);
	}
	return 0;
}

int docker_snapshot_list(struct sbx_backend *b, const char *page_token,
			 struct sbx_snapshot_ref **out, size_t *n, char **next, struct sbx_err *err)
{
	(void)page_token;
	*out = NULL;
	*n = 0;
	if (next)
		*next = NULL;
	json_object *arr;
	size_t m;
	if (docker_get_listing(b, "snapshot_list", "/images/json?",
			       "{\"label\":[\"" DOCKER_LABEL_SNAPSHOT "=1\"]}", &arr, &m, err) < 0)
		return -1;
	*out = sbx_xcalloc(m ? m : 1, sizeof(**out));
	for (size_t i = 0; i < m; i++) {
		json_object *im = json_object_array_get_idx(arr, i);
		json_object *labels = sbx_json_obj(im, "Labels");
		struct sbx_snapshot_ref *r = &(*out)[(*n)++];
		r->id = sbx_xstrdup(sbx_json_str(im, "Id") ?: "");
		const char *nm = sbx_json_str(labels, DOCKER_LABEL_SNAPSHOT_NAME);
		const char *pa = sbx_json_str(labels, DOCKER_LABEL_SNAPSHOT_PARENT);
		r->name = nm ? sbx_xstrdup(nm) : NULL;
		r->parent = pa && *pa ? sbx_xstrdup(pa) : NULL;
		r->created_at = sbx_json_int(im, "Created", 0);
		r->size_bytes = sbx_json_int(im, "Size", -1);
		r->layers = -1;
	}
	json_object_put(arr);
	return 0;
}

/* DELETE /images/{id}: gone → *gone = 1; in use by a container → conflict. */
static int image_delete(struct sbx_backend *b, const char *id, const char *op, int want_snapshot,
			int *gone, struct sbx_err *err)
{
	*gone = 0;
	if (docker_check_ref(id, "image id", op, err) < 0)
		return -1;
	SBX_AUTOFREE char *ipath = sbx_xasprintf("/images/%s/json", id);
	json_object *j;
	if (docker_api(b, op, "GET", ipath, NULL, &j, err) < 0) {
		if (err->http_status == 404) {
			sbx_err_clear(err);
			*gone = 1;
			return 0;
		}
		return -1;
	}
	int is_snap = sbx_json_str(sbx_json_obj(sbx_json_obj(j, "Config"), "Labels"), DOCKER_LABEL_SNAPSHOT) != NULL;
	json_object_put(j);
	if (want_snapshot && !is_snap)
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "%s is a template, not a snapshot", id);
	if (!want_snapshot && is_snap)
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "%s is a snapshot; delete it with the snapshot commands", id);
	SBX_AUTOFREE char *path = sbx_xasprintf("/images/%s", id);
	if (docker_api(b, op, "DELETE", path, NULL, NULL, err) < 0) {
		if (err->http_status == 404) {
			sbx_err_clear(err);
			*gone = 1;
			return 0;
		}
		return -1;
	}
	return 0;
}

int docker_snapshot_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	return image_delete(b, id, "snapshot_delete", 1, gone, err);
}

/* ---- templates ----------------------------------------------------------- */

/* An image name as the user gave it: podman stores `sbx/base:latest` as
 * `docker.io/sbx/base:latest` and `x:1` as `docker.io/library/x:1`. */
static const char *short_name(const char *tag)
{
	if (sbx_str_starts(tag, "docker.io/library/"))
		return tag + strlen("docker.io/library/");
	if (sbx_str_starts(tag, "docker.io/"))
		return tag + strlen("docker.io/");
	return tag;
}

int docker_template_list(struct sbx_backend *b, struct sbx_template **out, size_t *n,
			 struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	json_object *arr;
	if (docker_api(b, "template_list", "GET", "/images/json", NULL, &arr, err) < 0)
		return -1;
	size_t m = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	size_t cap = 0;
	for (size_t i = 0; i < m; i++) {
		json_object *im = json_object_array_get_idx(arr, i);
		json_object *tags = NULL;
		if (sbx_json_str(sbx_json_obj(im, "Labels"), DOCKER_LABEL_SNAPSHOT) ||
		    !json_object_object_get_ex(im, "RepoTags", &tags) ||
		    !json_object_is_type(tags, json_type_array))
			continue;
		for (size_t t = 0; t < json_object_array_length(tags); t++) {
			const char *tag = json_object_get_string(json_object_array_get_idx(tags, t));
			if (!tag || !strcmp(tag, "<none>:<none>"))
				continue;
			tag = short_name(tag);
			if (sbx_str_starts(tag, "sbx-snap:"))
				continue;
			if (*n == cap) {
				cap = cap ? 2 * cap : 8;
				*out = sbx_xrealloc(*out, cap * sizeof(**out));
			}
			struct sbx_template *tp = &(*out)[(*n)++];
			memset(tp, 0, sizeof(*tp));
			tp->id = sbx_xstrdup(tag);
			tp->name = sbx_xstrdup(tag);
			tp->kind = sbx_xstrdup("image");
			tp->created_at = sbx_json_int(im, "Created", 0);
			tp->size_bytes = sbx_json_int(im, "Size", -1);
		}
	}
	json_object_put(arr);
	return 0;
}

int docker_template_get(struct sbx_backend *b, const char *id, struct sbx_template *out,
			struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (docker_check_ref(id, "template id", "template_get", err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/images/%s/json", id);
	json_object *j;
	if (docker_api(b, "template_get", "GET", path, NULL, &j, err) < 0)
		return -1;
	json_object *labels = sbx_json_obj(sbx_json_obj(j, "Config"), "Labels");
	int snap = sbx_json_str(labels, DOCKER_LABEL_SNAPSHOT) != NULL;
	out->id = sbx_xstrdup(id);
	const char *nm = snap ? sbx_json_str(labels, DOCKER_LABEL_SNAPSHOT_NAME) : NULL;
	json_object *tags = NULL;
	if (!nm && json_object_object_get_ex(j, "RepoTags", &tags) &&
	    json_object_is_type(tags, json_type_array) && json_object_array_length(tags))
		nm = json_object_get_string(json_object_array_get_idx(tags, 0));
	if (nm)
		nm = short_name(nm);
	out->name = sbx_xstrdup(nm ? nm : id);
	out->kind = sbx_xstrdup(snap ? "snapshot" : "image");
	const char *created = sbx_json_str(j, "Created");
	int64_t t = created ? sbx_time_parse_iso(created) : -1;
	out->created_at = t > 0 ? t : 0;
	out->size_bytes = sbx_json_int(j, "Size", -1);
	json_object_put(j);
	return 0;
}

/* POST `path` (an /images/create?fromSrc=- request) with the tar on fd.
 * The daemon answers 200 and reports failures inside its progress stream
 * (JSON objects one after another), so the stream is read for "error". */
static int import_tar(struct sbx_backend *b, const char *op, const char *path, int fd,
		      struct sbx_err *err)
{
	const char *hdr[] = {"Content-Type: application/x-tar", NULL};
	struct sbx_http_req req = {
		.method = "POST", .path = path, .headers = hdr, .body_fd = fd, .timeout_ms = -1,
	};
	struct sbx_http_resp resp = {0};
	if (docker_raw_ok(b, op, &req, &resp, err) < 0)
		return -1;
	json_tokener *tok = json_tokener_new();
	const char *p = resp.body ? resp.body : "";
	const char *end = p + resp.len;
	int failed = 0;
	while (p < end && !failed) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (p >= end)
			break;
		json_object *o = json_tokener_parse_ex(tok, p, (int)(end - p));
		if (!o)
			break;
		p += json_tokener_get_parse_end(tok);
		const char *e = sbx_json_str(o, "error");
		if (e) {
			sbx_fail(err, SBX_INVALID_REQUEST, op, "docker: %s", e);
			failed = 1;
		}
		json_object_put(o);
		json_tokener_reset(tok);
	}
	json_tokener_free(tok);
	sbx_http_resp_clear(&resp);
	return failed ? -1 : 0;
}

/* Import a rootfs tar (from fd, or made from the host folder `dir`) as the
 * image `name` ("repo" or "repo:tag").  The daemon answers 200 and reports
 * failures inside its progress stream, so the stream is read for "error". */
int docker_template_import(struct sbx_backend *b, const char *name, int fd, const char *dir,
			   struct sbx_template *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (docker_check_ref(name, "template name", "template_import", err) < 0)
		return -1;
	if (strchr(name, '@') || name[0] == '/' || strstr(name, "sha256:"))
		return sbx_fail(err, SBX_INVALID_REQUEST, "template_import", "invalid template name '%s'", name);
	SBX_AUTOFREE char *repo = sbx_xstrdup(name);
	const char *tag = "latest";
	char *colon = strrchr(repo, ':');
	if (colon && !strchr(colon, '/')) {
		*colon = 0;
		tag = colon + 1;
	}
	for (char *p = repo; *p; p++)
		if (isupper((unsigned char)*p))
			return sbx_fail(err, SBX_INVALID_REQUEST, "template_import",
					"template name '%s' must be lower-case (a Docker repository)", name);
	if (!strncmp(repo, "sbx-snap", 8) && (!repo[8] || repo[8] == '/'))
		return sbx_fail(err, SBX_INVALID_REQUEST, "template_import", "sbx-snap is reserved for snapshots");
	SBX_AUTOCLOSE int tmp = -1;
	if (dir) {
		SBX_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return sbx_fail_errno(err, SBX_INVALID_REQUEST, "template_import", "%s", dir);
		tmp = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
		if (tmp < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "template_import", "temporary file");
		struct sbx_tar_writer w;
		sbx_tar_writer_init(&w, tmp);
		if (sbx_tar_write_tree(&w, dfd, "", err) < 0 || sbx_tar_write_end(&w, err) < 0)
			return -1;
		if (lseek(tmp, 0, SEEK_SET) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "template_import", "lseek");
		fd = tmp;
	}
	if (fd < 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "template_import", "no tar stream and no folder");
	/* body_fd 0 means "none" to http.c: stdin is passed as a dup. */
	SBX_AUTOCLOSE int body = fd == 0 ? dup(fd) : -1;
	/* repo=R:T and no tag parameter: podman ignores `tag` (and stores
	 * R:latest); both engines take the tag inside repo. */
	SBX_AUTOFREE char *ref = sbx_xasprintf("%s:%s", repo, tag);
	SBX_AUTOFREE char *qr = sbx_http_escape(ref);
	SBX_AUTOFREE char *path = sbx_xasprintf("/images/create?fromSrc=-&repo=%s", qr);
	if (import_tar(b, "template_import", path, fd == 0 ? body : fd, err) < 0)
		return -1;
	return docker_template_get(b, ref, out, err);
}

int docker_template_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	return image_delete(b, id, "template_delete", 0, gone, err);
}

/* ---- flatten ------------------------------------------------------------- */

/* The image's Env as `changes=ENV k="v"` parameters (import keeps no
 * config, commit kept the installer's environment); appended to *q. */
static int env_changes(json_object *env, char **q, struct sbx_err *err)
{
	size_t n = env && json_object_is_type(env, json_type_array) ? json_object_array_length(env) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *kv = json_object_get_string(json_object_array_get_idx(env, i));
		const char *eq = kv ? strchr(kv, '=') : NULL;
		if (!eq || eq == kv || strpbrk(kv, "\r\n") || strlen(kv) > 4000)
			return sbx_fail(err, SBX_INVALID_REQUEST, "snapshot_flatten",
					"an environment entry of the image cannot be carried over");
		for (const char *c = kv; c < eq; c++)
			if (!isalnum((unsigned char)*c) && *c != '_')
				return sbx_fail(err, SBX_INVALID_REQUEST, "snapshot_flatten",
						"environment name '%.*s' cannot be carried over", (int)(eq - kv), kv);
		char ins[8200];
		size_t m = (size_t)snprintf(ins, sizeof(ins), "ENV %.*s=\"", (int)(eq - kv), kv);
		for (const char *c = eq + 1; *c; c++) {
			if (*c == '"' || *c == '\\')
				ins[m++] = '\\';
			ins[m++] = *c;
		}
		ins[m++] = '"';
		ins[m] = 0;
		SBX_AUTOFREE char *e = sbx_http_escape(ins);
		char *nq = sbx_xasprintf("%s&changes=%s", *q, e);
		free(*q);
		*q = nq;
	}
	return 0;
}

/* Export the filesystem of a container made (never started) from image
 * `id` into the unnamed temp file *tmp; the container is removed again
 * whatever happens. */
static int export_image(struct sbx_backend *b, const char *id, int *tmp, struct sbx_err *err)
{
	json_object *body = json_object_new_object(), *resp = NULL;
	json_object *ep = json_object_new_array(), *hc = json_object_new_object();
	json_object_array_add(ep, json_object_new_string("/bin/true"));
	json_object_object_add(body, "Image", json_object_new_string(id));
	json_object_object_add(body, "Entrypoint", ep);
	json_object_object_add(body, "Cmd", json_object_new_array());
	json_object_object_add(hc, "NetworkMode", json_object_new_string("none"));
	json_object_object_add(body, "HostConfig", hc);
	int rc = docker_api(b, "snapshot_flatten", "POST", "/containers/create", body, &resp, err);
	json_object_put(body);
	if (rc < 0)
		return -1;
	SBX_AUTOFREE char *cid = sbx_xstrdup(sbx_json_str(resp, "Id") ?: "");
	json_object_put(resp);
	if (!*cid)
		return sbx_fail(err, SBX_INTERNAL, "snapshot_flatten", "docker returned no container id");
	*tmp = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	rc = -1;
	if (*tmp < 0) {
		sbx_fail_errno(err, SBX_INTERNAL, "snapshot_flatten", "temporary file");
	} else {
		SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/export", cid);
		struct sbx_http_req req = {.method = "GET", .path = path, .out_fd = *tmp, .timeout_ms = -1};
		struct sbx_http_resp hr = {0};
		rc = docker_raw_ok(b, "snapshot_flatten", &req, &hr, err);
		sbx_http_resp_clear(&hr);
		if (rc == 0 && lseek(*tmp, 0, SEEK_SET) < 0)
			rc = sbx_fail_errno(err, SBX_INTERNAL, "snapshot_flatten", "lseek");
	}
	struct sbx_err quiet = {0};
	SBX_AUTOFREE char *del = sbx_xasprintf("/containers/%s?force=1&v=1", cid);
	docker_api(b, "snapshot_flatten", "DELETE", del, NULL, NULL, &quiet);
	return rc;
}

/* Flatten = the image's whole filesystem as one layer: exported from a
 * container made from `id`, imported as sbx-snap:<name> with the snapshot
 * labels and the source's Env (commit keeps it; an import has none).  The
 * result stands alone (no parent); the source is untouched. */
int docker_snapshot_flatten(struct sbx_backend *b, const char *id, const char *name,
			    struct sbx_snapshot_ref *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (docker_check_ref(id, "image id", "snapshot_flatten", err) < 0)
		return -1;
	SBX_AUTOFREE char *ipath = sbx_xasprintf("/images/%s/json", id);
	json_object *src;
	if (docker_api(b, "snapshot_flatten", "GET", ipath, NULL, &src, err) < 0)
		return -1;
	json_object *env = NULL;
	json_object_object_get_ex(sbx_json_obj(src, "Config"), "Env", &env);
	SBX_AUTOFREE char *gen = NULL;
	if (!name || !*name) {
		char rnd[17];
		if (sbx_random_hex(rnd, 8, err) < 0) {
			json_object_put(src);
			return -1;
		}
		name = gen = sbx_xasprintf("flat-%s", rnd);
	}
	json_object *labels = json_object_new_object();
	json_object_object_add(labels, DOCKER_LABEL_SNAPSHOT, json_object_new_string("1"));
	json_object_object_add(labels, DOCKER_LABEL_SNAPSHOT_NAME, json_object_new_string(name));
	json_object_object_add(labels, DOCKER_LABEL_SNAPSHOT_PARENT, json_object_new_string(""));
	char *changes = commit_changes(labels, err);
	json_object_put(labels);
	int rc = changes ? env_changes(env, &changes, err) : -1;
	json_object_put(src);
	SBX_AUTOFREE char *ch = changes;
	if (rc < 0)
		return -1;
	SBX_AUTOCLOSE int tmp = -1;
	if (export_image(b, id, &tmp, err) < 0)
		return -1;
	SBX_AUTOFREE char *tag = tag_of(name);
	SBX_AUTOFREE char *ref = sbx_xasprintf("sbx-snap:%s", tag);
	SBX_AUTOFREE char *qr = sbx_http_escape(ref);
	SBX_AUTOFREE char *path = sbx_xasprintf("/images/create?fromSrc=-&repo=%s%s", qr, ch);
	if (import_tar(b, "snapshot_flatten", path, tmp, err) < 0)
		return -1;
	SBX_AUTOFREE char *rpath = sbx_xasprintf("/images/%s/json", ref);
	json_object *im;
	if (docker_api(b, "snapshot_flatten", "GET", rpath, NULL, &im, err) < 0)
		return -1;
	const char *iid = sbx_json_str(im, "Id");
	out->id = !iid ? sbx_xstrdup("") : strchr(iid, ':') ? sbx_xstrdup(iid) : sbx_xasprintf("sha256:%s", iid);
	out->name = sbx_xstrdup(name);
	out->created_at = sbx_now_ms() / 1000;
	out->size_bytes = sbx_json_int(im, "Size", -1);
	out->layers = 1;
	json_object_put(im);
	if (!*out->id)
		return sbx_fail(err, SBX_INTERNAL, "snapshot_flatten", "the flattened image has no id");
	return 0;
}
