/* e2b-sandbox.h - what the e2b backend's files share beyond the
 * transport: the handle made from E2B's JSON, the metadata spelling on
 * the wire, and the data-plane attach that exec and files start with.
 * cube.c reuses the e2b operations through this header and changes only
 * where Cube's wire differs (e2b_conn.cube). */
#ifndef SBX_E2B_SANDBOX_H
#define SBX_E2B_SANDBOX_H

#include "backend.h"
#include "e2b-api.h"
#include "e2b-wire.h"

/* E2B has no "never": a day, its plan maximum (Cube: -1). */
#define E2B_NEVER_SECONDS 86400

/* Fill *sb from Sandbox, SandboxDetail or ListedSandbox JSON
 * (e2b_wire_fill with this backend's name and profile): -1 (internal)
 * when the server's values fail their checks (e2b-wire.h). */
int e2b_fill(struct sbx_backend *b, struct sbx_sandbox *sb, json_object *j, struct sbx_err *err);

/* GET /sandboxes/{id} (the detail, with the access token) / POST
 * /sandboxes/{id}/connect (resumes, extends the end to now + the
 * sandbox's idle seconds, binds the data plane with the answer's token). */
int e2b_detail(struct sbx_backend *b, const char *id, const char *op, json_object **out,
	       struct sbx_err *err);
int e2b_connect_raw(struct sbx_backend *b, struct sbx_sandbox *sb, const char *op,
		    struct sbx_err *err);

/* Make the sandbox usable for envd calls: look it up (one GET), resume it
 * if it is paused and allows auto-resume (conflict if it does not), and
 * bind the data plane with its access token.  sb->state is refreshed. */
int e2b_attach(struct sbx_backend *b, struct sbx_sandbox *sb, const char *op, struct sbx_err *err);

int e2b_exec(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req,
	     struct sbx_exec_result *res, struct sbx_err *err);

int e2b_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		   const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err);
int e2b_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, size_t max,
		  int as_root, char **data, size_t *len, struct sbx_err *err);
int e2b_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int as_root,
		  struct sbx_dirent **out, size_t *n, struct sbx_err *err);
int e2b_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int as_root,
		  struct sbx_dirent *out, struct sbx_err *err);
int e2b_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		   unsigned mode, int as_root, struct sbx_err *err);
int e2b_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int recursive, int as_root, struct sbx_err *err);
int e2b_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		  const char *to, int as_root, struct sbx_err *err);
int e2b_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		int as_root, struct sbx_err *err);
int e2b_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		int as_root, struct sbx_err *err);

/* The shared lifecycle (e2b.c), for cube.c's table. */
int e2b_open_as(struct sbx_backend *b, int cube, struct sbx_err *err);
void e2b_close(struct sbx_backend *b);
int e2b_health(struct sbx_backend *b, struct sbx_err *err);
int e2b_fingerprint(struct sbx_backend *b, char out[65], struct sbx_err *err);
int e2b_create(struct sbx_backend *b, const struct sbx_create_req *req, struct sbx_sandbox *out,
	       struct sbx_err *err);
int e2b_connect(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);
int e2b_get(struct sbx_backend *b, const char *id, struct sbx_sandbox *out, struct sbx_err *err);
int e2b_list(struct sbx_backend *b, const struct sbx_list_filter *f, const char *page_token,
	     struct sbx_page *out, struct sbx_err *err);
int e2b_remove(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);
int e2b_pause(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);
int e2b_set_timeout(struct sbx_backend *b, struct sbx_sandbox *sb,
		    const struct sbx_timeout_policy *t, struct sbx_err *err);
int e2b_set_network(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_netpolicy *p,
		    struct sbx_err *err);
int e2b_snapshot_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
			struct sbx_snapshot_ref *out, struct sbx_err *err);
int e2b_snapshot_list(struct sbx_backend *b, const char *page_token, struct sbx_snapshot_ref **out,
		      size_t *n, char **next, struct sbx_err *err);
int e2b_snapshot_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);
int e2b_template_list(struct sbx_backend *b, struct sbx_template **out, size_t *n,
		      struct sbx_err *err);
int e2b_template_get(struct sbx_backend *b, const char *id, struct sbx_template *out,
		     struct sbx_err *err);
int e2b_template_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);

/* The operations both vtables share (e2b.c, cube.c): all but name, open
 * and caps. */
/* The service's volumes (e2b-volume.c; backend.h volume_make, volume_drop)
 * and a create's volumeMounts [{name, path, readOnly?}] (new array). */
int e2b_volume_make(struct sbx_backend *b, const char *remote, struct sbx_err *err);
int e2b_volume_drop(struct sbx_backend *b, const char *remote, struct sbx_err *err);
json_object *e2b_volume_mounts(const struct sbx_create_req *req);

#define E2B_OPS_COMMON                                                         \
	.config_keys = e2b_config_keys,                                              \
	.close = e2b_close, .health = e2b_health, .fingerprint = e2b_fingerprint,   \
	.create = e2b_create, .connect = e2b_connect, .get = e2b_get,               \
	.list = e2b_list, .remove = e2b_remove, .pause = e2b_pause,                 \
	.set_timeout = e2b_set_timeout, .set_network = e2b_set_network,            \
	.exec = e2b_exec,                                                           \
	.file_write = e2b_file_write, .file_read = e2b_file_read,                   \
	.file_list = e2b_file_list, .file_stat = e2b_file_stat,                     \
	.file_mkdir = e2b_file_mkdir, .file_remove = e2b_file_remove,               \
	.file_move = e2b_file_move, .tar_put = e2b_tar_put, .tar_get = e2b_tar_get, \
	.snapshot_create = e2b_snapshot_create, .snapshot_list = e2b_snapshot_list, \
	.snapshot_delete = e2b_snapshot_delete, .template_list = e2b_template_list, \
	.template_get = e2b_template_get, .template_delete = e2b_template_delete, \
	.volume_make = e2b_volume_make, .volume_drop = e2b_volume_drop

#endif
