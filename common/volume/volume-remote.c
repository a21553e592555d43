/* volume-remote.c - volumes a service keeps (e2b, cube: backend.h
 * volume_make): the service's volume made and dropped beside the record,
 * and files moved in and out through a helper sandbox that mounts it
 * (volume.h says why and what is not promised there). */
#include "volume.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "path.h"
#include "util.h"

int sbx_vol_make_remote(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_profile *p,
			const char *tenant, const char *name, struct sbx_err *err)
{
	SBX_AUTOFREE char *rn = sbx_vol_remote_name(r->prefix, tenant, name, err);
	if (rn && sbx_call(b, volume_make, err, rn) == 0)
		return 0;
	struct sbx_err e = {0};
	(void)sbx_vol_remove(r, p, tenant, name, &e);   /* no record without its volume */
	return -1;
}

int sbx_vol_remove_remote(struct sbx_redis *r, struct sbx_backend *b,
			  const struct sbx_profile *p, const char *tenant, const char *name,
			  struct sbx_err *err)
{
	struct sbx_vol v = {0};
	if (sbx_vol_load(r, p, tenant, name, &v, err) < 0)
		return -1;
	long long users = v.users;
	sbx_vol_clear(&v);
	if (users)
		return sbx_fail_reason(err, SBX_CONFLICT, SBX_R_IN_USE, "volume",
				       "volume %s is mounted by %lld sandbox(es)", name, users);
	SBX_AUTOFREE char *rn = sbx_vol_remote_name(r->prefix, tenant, name, err);
	if (!rn || sbx_call(b, volume_drop, err, rn) < 0)
		return -1;
	return sbx_vol_remove(r, p, tenant, name, err);
}

/* A sandbox mounting the volume writable at SBX_VOL_HELPER_DIR; *full is
 * `path` (the one path rule's) below it.  Removed by helper_close. */
static int helper_open(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_vol *v,
		       const char *path, struct sbx_sandbox *sb, char **full, struct sbx_err *err)
{
	*full = NULL;
	SBX_AUTOFREE char *np = sbx_path_norm(path, "volume", err);
	if (!np)
		return -1;
	if (!strcmp(np, "/"))
		return sbx_fail(err, SBX_INVALID_REQUEST, "volume", "the volume's root is not a file");
	SBX_AUTOFREE char *rn = sbx_vol_remote_name(r->prefix, v->tenant, v->name, err);
	if (!rn)
		return -1;
	struct sbx_vol_mount m = {.name = v->name, .path = SBX_VOL_HELPER_DIR, .remote = rn};
	json_object *md = json_object_new_object();
	sbx_json_set_str(md, "sbx.volume", v->name);
	struct sbx_create_req req = {.timeout = {.seconds = 600}, .metadata = md,
				     .volumes = &m, .nvolumes = 1};
	int rc = sbx_backend_create(b, &req, sb, err);
	json_object_put(md);
	if (rc == 0)
		*full = sbx_xasprintf("%s%s", SBX_VOL_HELPER_DIR, np);
	return rc;
}

static void helper_close(struct sbx_backend *b, struct sbx_sandbox *sb)
{
	struct sbx_err e = {0};
	int gone = 0;
	if (sb->id)
		(void)sbx_call(b, remove, &e, sb->id, &gone);
	sbx_sandbox_clear(sb);
}

int sbx_vol_put_remote(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_vol *v,
		       const char *path, const void *data, size_t len, unsigned mode,
		       struct sbx_err *err)
{
	struct sbx_sandbox sb = {0};
	SBX_AUTOFREE char *full = NULL;
	int rc = helper_open(r, b, v, path, &sb, &full, err);
	if (rc == 0)
		rc = sbx_call(b, file_write, err, &sb, full, data, len, mode, 0);
	helper_close(b, &sb);
	return rc;
}

int sbx_vol_get_remote(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_vol *v,
		       const char *path, size_t max, char **data, size_t *len, unsigned *mode,
		       struct sbx_err *err)
{
	struct sbx_sandbox sb = {0};
	SBX_AUTOFREE char *full = NULL;
	struct sbx_dirent e = {0};
	int rc = helper_open(r, b, v, path, &sb, &full, err);
	if (rc == 0)
		rc = sbx_call(b, file_stat, err, &sb, full, 0, &e);
	if (rc == 0 && e.type != SBX_FT_FILE)
		rc = sbx_fail(err, SBX_INVALID_REQUEST, "get", "%s is not a regular file", path);
	if (rc == 0) {
		*mode = e.mode;
		rc = sbx_call(b, file_read, err, &sb, full, max, 0, data, len);
	}
	free(e.name), free(e.path), free(e.link_target);
	helper_close(b, &sb);
	return rc;
}
