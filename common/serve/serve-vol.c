/* serve-vol.c - Cube's volume calls (and E2B's, in beta) over
 * common/volume: GET and POST /volumes, GET and DELETE /volumes/{id}, and
 * the `volumeMounts` of a create turned into the backend's mounts.
 *
 * Promises: a volume belongs to the tenant of the key that made it
 * (serve_tenant): another key's volume is a 404 on every call and is not
 * found when a create names it (400); a volume's id is its name (Cube's
 * rule when a name is given; an omitted name is a UUIDv4, both name and
 * id); names are ^[A-Za-z0-9_-]+$ of at most 128 bytes and mount paths
 * pass the CLI's rule (sbx_vol_spec_parse) before anything reaches Redis
 * or the backend; DELETE of a volume a live sandbox mounts is 409 (users
 * whose sandbox is gone are dropped first, as sbx-vol rm does).  The files
 * live where the server's profile keeps volumes (volume.h: a host folder,
 * or the upstream service's volume when the backend keeps them), so the
 * same tenant's volumes are seen by `sbx-vol --tenant e2b-<key id>` on
 * the server's host.  There is no content route: `token` is always "". */
#include "serve-int.h"

#include <stdio.h>
#include <string.h>

#include "doc.h"
#include "util.h"

#define VOL_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

/* Cube's name rule, a subset of the library's (no '.'). */
static int name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n > 0 && n <= SBX_VOL_NAME_MAX && strspn(s, VOL_NAME_CHARS) == n;
}

static int name_check(const char *s, struct sbx_err *err)
{
	if (name_ok(s))
		return 0;
	return sbx_fail(err, SBX_INVALID_REQUEST, "volume",
			"a volume name is 1..%d of [a-zA-Z0-9_-]", SBX_VOL_NAME_MAX);
}

static int is_unset(json_object *v)
{
	return !v || (json_object_is_type(v, json_type_string) && !*json_object_get_string(v));
}

/* The request's tenant and this worker's Redis. */
static struct sbx_redis *vol_redis(const struct serve_req *r, char tenant[24], struct sbx_err *err)
{
	serve_tenant(r->team, tenant);
	return serve_redis(r->cfg, err);
}

static json_object *vol_json(const char *name, int with_token)
{
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "volumeID", name);
	sbx_json_set_str(j, "name", name);
	if (with_token)
		sbx_json_set_str(j, "token", "");
	return j;
}

/* A UUIDv4 spelt as Cube spells an omitted name. */
static int uuid4(char out[37], struct sbx_err *err)
{
	char h[33];
	if (sbx_random_hex(h, 16, err) < 0)
		return -1;
	h[12] = '4';
	h[16] = "89ab"[h[16] % 4];
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
	return 0;
}

/* POST /volumes {name?, driver?}: 201 {volumeID, name, token}. */
static int vol_create(const struct serve_req *r, struct sbx_redis *rd, const char *tenant,
		      json_object **out, struct sbx_err *err)
{
	json_object *in = NULL;
	struct sbx_err pe = {0};
	if (r->body_len && sbx_json_parse_object(r->body, r->body_len, &in, &pe) < 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "volume",
				"the body is not a JSON object (%s)", pe.msg);
	if (!in)
		in = json_object_new_object();
	int rc = 0;
	json_object_object_foreach(in, k, v) {
		if (!strcmp(k, "name") || is_unset(v))
			continue;
		/* a driver is a plugin of Cube's nodes: this server has one
		 * kind of volume, a folder beside the backend, and says so
		 * rather than make a volume of another kind than asked */
		rc = sbx_fail(err, SBX_INVALID_REQUEST, "volume", "sbx-serve does not implement '%.64s'", k);
		break;
	}
	json_object *nv = NULL;
	char gen[37];
	const char *name = NULL;
	if (rc == 0 && json_object_object_get_ex(in, "name", &nv) && nv) {
		if (!json_object_is_type(nv, json_type_string))
			rc = sbx_fail(err, SBX_INVALID_REQUEST, "volume", "name must be a string");
		else
			name = json_object_get_string(nv);
	}
	if (rc == 0 && !name)
		rc = uuid4(gen, err), name = gen;
	struct sbx_vol made = {0};
	struct sbx_backend *b = NULL;
	if (rc == 0 && (name_check(name, err) < 0 || serve_open_backend(r, &b, err) < 0 ||
			sbx_vol_create(rd, r->cfg->profile, tenant, name, 0, &made, err) < 0))
		rc = -1;
	/* a backend whose service keeps volumes (a server in front of e2b or
	 * cube) gets the volume made there too, as sbx-vol create does */
	if (rc == 0 && sbx_vol_is_remote(b))
		rc = sbx_vol_make_remote(rd, b, r->cfg->profile, tenant, name, err);
	sbx_backend_close(b);
	if (rc == 0)
		*out = vol_json(name, 1);
	sbx_vol_clear(&made);
	json_object_put(in);
	return rc;
}

/* DELETE /volumes/{id}: prune the users the backend no longer has, then
 * remove (409 while one lives, 404 when there is none). */
static int vol_delete(const struct serve_req *r, struct sbx_redis *rd, const char *tenant,
		      const char *name, struct sbx_err *err)
{
	struct sbx_vol v = {0};
	if (sbx_vol_load(rd, r->cfg->profile, tenant, name, &v, err) < 0)
		return -1;
	long long users = v.users;
	sbx_vol_clear(&v);
	struct sbx_backend *b = NULL;
	int rc = serve_open_backend(r, &b, err);
	if (rc == 0 && users)
		rc = sbx_vol_prune(rd, b, tenant, name, err);
	if (rc == 0)
		rc = sbx_vol_is_remote(b) ? sbx_vol_remove_remote(rd, b, r->cfg->profile, tenant, name, err)
					  : sbx_vol_remove(rd, r->cfg->profile, tenant, name, err);
	sbx_backend_close(b);
	return rc;
}

static int vol_list(const struct serve_req *r, struct sbx_redis *rd, const char *tenant,
		    json_object **out, struct sbx_err *err)
{
	struct sbx_vol *v;
	size_t n;
	if (sbx_vol_list(rd, r->cfg->profile, tenant, &v, &n, err) < 0)
		return -1;
	*out = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(*out, vol_json(v[i].name, 0));
	sbx_vols_free(v, n);
	return 0;
}

int serve_api_volumes(const struct serve_req *r, struct serve_out *o, const char *id)
{
	struct sbx_err err = {0};
	char tenant[24];
	const char *m = r->method;
	int get = !strcmp(m, "GET");
	if (id ? !get && strcmp(m, "DELETE") : !get && strcmp(m, "POST"))
		return serve_reply_error(o, 405, "method not allowed");
	if (id && !name_ok(id))   /* never a key or a file name: as missing */
		return serve_reply_error(o, 404, "volume '%.128s' not found", id);
	struct sbx_redis *rd = vol_redis(r, tenant, &err);
	if (!rd)
		return serve_reply_err(o, &err);
	json_object *out = NULL;
	int rc, status = 200;
	if (!id && get) {
		rc = vol_list(r, rd, tenant, &out, &err);
	} else if (!id) {
		rc = vol_create(r, rd, tenant, &out, &err);
		status = 201;
	} else if (get) {
		struct sbx_vol v = {0};
		rc = sbx_vol_load(rd, r->cfg->profile, tenant, id, &v, &err);
		if (rc == 0)
			out = vol_json(v.name, 1);
		sbx_vol_clear(&v);
	} else {
		rc = vol_delete(r, rd, tenant, id, &err);
	}
	if (rc < 0)
		return serve_reply_err(o, &err);
	if (!out)
		return serve_reply(o, 204, NULL, NULL, 0);
	return serve_reply_json(o, status, out);
}

/* One {name, path, readOnly?} as the CLI's spec "NAME:PATH:ro|rw" (the
 * explicit suffix keeps a path that ends in ":ro" itself). */
static char *mount_spec(json_object *e, size_t i, struct sbx_err *err)
{
	if (!json_object_is_type(e, json_type_object)) {
		sbx_fail(err, SBX_INVALID_REQUEST, "create", "volumeMounts[%zu] is not an object", i);
		return NULL;
	}
	json_object_object_foreach(e, k, v) {
		(void)v;
		if (strcmp(k, "name") && strcmp(k, "path") && strcmp(k, "readOnly")) {
			sbx_fail(err, SBX_INVALID_REQUEST, "create",
				 "sbx-serve does not implement 'volumeMounts[%zu].%.64s'", i, k);
			return NULL;
		}
	}
	json_object *n = NULL, *p = NULL, *ro = NULL;
	json_object_object_get_ex(e, "name", &n);
	json_object_object_get_ex(e, "path", &p);
	json_object_object_get_ex(e, "readOnly", &ro);
	if (!json_object_is_type(n, json_type_string) || name_check(json_object_get_string(n), err) < 0) {
		if (!err->kind)
			sbx_fail(err, SBX_INVALID_REQUEST, "create", "volumeMounts[%zu].name must be a string", i);
		return NULL;
	}
	if (!json_object_is_type(p, json_type_string) || json_object_get_string(p)[0] != '/') {
		sbx_fail(err, SBX_INVALID_REQUEST, "create", "volumeMounts[%zu].path must be absolute", i);
		return NULL;
	}
	if (ro && !json_object_is_type(ro, json_type_boolean)) {
		sbx_fail(err, SBX_INVALID_REQUEST, "create", "volumeMounts[%zu].readOnly must be a boolean", i);
		return NULL;
	}
	return sbx_xasprintf("%s:%s:%s", json_object_get_string(n), json_object_get_string(p),
			     ro && json_object_get_boolean(ro) ? "ro" : "rw");
}

int serve_vol_prepare(const struct serve_req *r, struct sbx_backend *b, json_object *in,
		      struct serve_vols *sv, struct sbx_create_req *req, struct sbx_err *err)
{
	json_object *vm = NULL;
	memset(sv, 0, sizeof(*sv));
	if (!json_object_object_get_ex(in, "volumeMounts", &vm) || !vm)
		return 0;
	if (!json_object_is_type(vm, json_type_array))
		return sbx_fail(err, SBX_INVALID_REQUEST, "create", "volumeMounts must be an array");
	size_t n = json_object_array_length(vm);
	if (!n)
		return 0;
	if (n > SBX_VOLUMES_MAX)
		return sbx_fail(err, SBX_INVALID_REQUEST, "create", "more than %d volumeMounts",
				SBX_VOLUMES_MAX);
	if (sbx_backend_require(b, SBX_CAP_VOLUMES, "create", err) < 0)
		return -1;
	char *specs[SBX_VOLUMES_MAX] = {0};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		if (!(specs[i] = mount_spec(json_object_array_get_idx(vm, i), i, err)))
			rc = -1;
	struct sbx_redis *rd = rc == 0 ? vol_redis(r, sv->tenant, err) : NULL;
	if (rc == 0 && !rd)
		rc = -1;
	if (rc == 0) {
		sv->n = n;      /* what sbx_vol_mounts filled is cleared by serve_vols_clear */
		rc = sbx_vol_mounts(rd, b, r->cfg->profile, sv->tenant, (const char *const *)specs, n,
				    sv->vols, sv->paths, sv->mounts, err);
	}
	for (size_t i = 0; i < n; i++)
		free(specs[i]);
	if (rc < 0)
		return -1;
	req->volumes = sv->mounts;
	req->nvolumes = n;
	return 0;
}

int serve_vol_attach(const struct serve_req *r, struct sbx_backend *b, struct serve_vols *sv,
		     const char *id, struct sbx_err *err)
{
	if (!sv->n)
		return 0;
	struct sbx_redis *rd = vol_redis(r, sv->tenant, err);
	if (!rd) {
		struct sbx_err e = {0};
		int gone = 0;
		(void)sbx_call(b, remove, &e, id, &gone);   /* no record of its mounts */
		return -1;
	}
	return sbx_vol_attach_all(b, rd, sv->tenant, sv->mounts, sv->n, id, err);
}

#define VOLS_KEY "sbx.serve.volumes"

void serve_vol_note(const struct serve_vols *sv, json_object *meta)
{
	if (!sv->n)
		return;
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < sv->n; i++) {
		json_object *e = json_object_new_object();
		sbx_json_set_str(e, "name", sv->mounts[i].name);
		sbx_json_set_str(e, "path", sv->mounts[i].path);
		if (sv->mounts[i].read_only)
			sbx_json_set_bool(e, "readOnly", 1);
		json_object_array_add(a, e);
	}
	sbx_json_set_str(meta, VOLS_KEY, json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
	json_object_put(a);
}

json_object *serve_vol_listed(const struct sbx_sandbox *sb)
{
	const char *s = sb->metadata ? sbx_json_str(sb->metadata, VOLS_KEY) : NULL;
	json_object *a = s ? json_tokener_parse(s) : NULL;
	if (a && !json_object_is_type(a, json_type_array)) {
		json_object_put(a);       /* not ours: a client cannot set sbx.* keys */
		a = NULL;
	}
	return a;
}

void serve_vols_clear(struct serve_vols *sv)
{
	for (size_t i = 0; i < sv->n; i++) {
		free(sv->paths[i]);
		sbx_vol_clear(&sv->vols[i]);
	}
	memset(sv, 0, sizeof(*sv));
}
