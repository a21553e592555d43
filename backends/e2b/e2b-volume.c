/* e2b-volume.c - the service's volumes for the e2b and cube backends:
 * Cube's /volumes calls (E2B's volume API, in beta, has the same shape)
 * and the create's volumeMounts.  What a volume is, and why its record
 * stays in sbx's Redis, is volume.h's "Volumes a service keeps".
 *
 * Promises: a name goes out only as common/volume made it (Cube's rule),
 * and is percent-safe as it is; a make of a volume that exists and a
 * drop of one that is gone are successes, so a retried sbx-vol converges;
 * a drop the service refuses while a sandbox mounts it is conflict. */
#include "e2b-sandbox.h"

#include <string.h>

#include "doc.h"
#include "util.h"

int e2b_volume_make(struct sbx_backend *b, const char *remote, struct sbx_err *err)
{
	json_object *body = json_object_new_object(), *out = NULL;
	sbx_json_set_str(body, "name", remote);
	int rc = e2b_api(b, "volume", "POST", "/volumes", body, E2B_ONCE, &out, NULL, err);
	json_object_put(body);
	if (rc < 0 && err->http_status == 409) {
		sbx_err_clear(err);          /* made before: a retry */
		rc = 0;
	} else if (rc == 0) {
		const char *id = sbx_json_str(out, "volumeID");
		if (!id || strcmp(id, remote) != 0)
			rc = sbx_fail(err, SBX_INTERNAL, "volume",
				      "the service named volume %s otherwise", remote);
	}
	json_object_put(out);
	return rc;
}

int e2b_volume_drop(struct sbx_backend *b, const char *remote, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/volumes/%s", remote);
	int rc = e2b_api(b, "volume", "DELETE", path, NULL, E2B_IDEMPOTENT, NULL, NULL, err);
	if (rc < 0 && err->http_status == 404) {
		sbx_err_clear(err);          /* gone already */
		rc = 0;
	}
	return rc;
}

json_object *e2b_volume_mounts(const struct sbx_create_req *req)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < req->nvolumes; i++) {
		const struct sbx_vol_mount *m = &req->volumes[i];
		json_object *e = json_object_new_object();
		sbx_json_set_str(e, "name", m->remote ? m->remote : m->name);
		sbx_json_set_str(e, "path", m->path);
		if (m->read_only)           /* Cube's extension, omitted when false */
			sbx_json_set_bool(e, "readOnly", 1);
		json_object_array_add(a, e);
	}
	return a;
}
