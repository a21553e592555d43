/* local-stubs.c - weak placeholders for the local backend's internal
 * interface while its files are being written; each real definition
 * overrides its stub.  To be deleted once all exist. */
#include "local.h"

__attribute__((weak)) int local_sb_ensure_running(struct sbx_backend *b, const char *id, pid_t *init_pid, struct sbx_err *err)
{ (void)b; (void)id; (void)init_pid; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_sb_ensure_running", "not implemented yet"); }

__attribute__((weak)) int local_sb_freeze(struct sbx_backend *b, const char *id, int freeze, struct sbx_err *err)
{ (void)b; (void)id; (void)freeze; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_sb_freeze", "not implemented yet"); }

__attribute__((weak)) int local_sb_rootfd(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{ (void)b; (void)sb; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_sb_rootfd", "not implemented yet"); }

__attribute__((weak)) void local_sb_touch(struct sbx_backend *b, const char *id)
{ (void)b; (void)id;  }

__attribute__((weak)) int local_sb_templates_in_use(struct sbx_backend *b, char ***ids, size_t *n, struct sbx_err *err)
{ (void)b; (void)ids; (void)n; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_sb_templates_in_use", "not implemented yet"); }

__attribute__((weak)) int local_image_layers(struct sbx_backend *b, const char *template_id, json_object **layers, struct sbx_err *err)
{ (void)b; (void)template_id; (void)layers; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_image_layers", "not implemented yet"); }

__attribute__((weak)) int local_image_dependents(struct sbx_backend *b, const char *template_id, char ***ids, size_t *n, struct sbx_err *err)
{ (void)b; (void)template_id; (void)ids; (void)n; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_image_dependents", "not implemented yet"); }

__attribute__((weak)) int local_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err)
{ (void)b; (void)sb; (void)path; (void)data; (void)len; (void)mode; (void)as_root; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_file_write", "not implemented yet"); }

__attribute__((weak)) int local_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, size_t max, char **data, size_t *len, struct sbx_err *err)
{ (void)b; (void)sb; (void)path; (void)max; (void)data; (void)len; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_file_read", "not implemented yet"); }

__attribute__((weak)) int local_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, struct sbx_dirent **out, size_t *n, struct sbx_err *err)
{ (void)b; (void)sb; (void)path; (void)out; (void)n; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_file_list", "not implemented yet"); }

__attribute__((weak)) int local_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, struct sbx_dirent *out, struct sbx_err *err)
{ (void)b; (void)sb; (void)path; (void)out; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_file_stat", "not implemented yet"); }

__attribute__((weak)) int local_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, unsigned mode, int as_root, struct sbx_err *err)
{ (void)b; (void)sb; (void)path; (void)mode; (void)as_root; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_file_mkdir", "not implemented yet"); }

__attribute__((weak)) int local_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int recursive, int as_root, struct sbx_err *err)
{ (void)b; (void)sb; (void)path; (void)recursive; (void)as_root; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_file_remove", "not implemented yet"); }

__attribute__((weak)) int local_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from, const char *to, int as_root, struct sbx_err *err)
{ (void)b; (void)sb; (void)from; (void)to; (void)as_root; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_file_move", "not implemented yet"); }

__attribute__((weak)) int local_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd, int as_root, struct sbx_err *err)
{ (void)b; (void)sb; (void)dir; (void)fd; (void)as_root; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_tar_put", "not implemented yet"); }

__attribute__((weak)) int local_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd, struct sbx_err *err)
{ (void)b; (void)sb; (void)path; (void)fd; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_tar_get", "not implemented yet"); }

__attribute__((weak)) int local_snapshot_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name, struct sbx_snapshot_ref *out, struct sbx_err *err)
{ (void)b; (void)sb; (void)name; (void)out; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_snapshot_create", "not implemented yet"); }

__attribute__((weak)) int local_snapshot_list(struct sbx_backend *b, const char *page_token, struct sbx_snapshot_ref **out, size_t *n, char **next, struct sbx_err *err)
{ (void)b; (void)page_token; (void)out; (void)n; (void)next; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_snapshot_list", "not implemented yet"); }

__attribute__((weak)) int local_snapshot_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{ (void)b; (void)id; (void)gone; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_snapshot_delete", "not implemented yet"); }

__attribute__((weak)) int local_template_list(struct sbx_backend *b, struct sbx_template **out, size_t *n, struct sbx_err *err)
{ (void)b; (void)out; (void)n; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_template_list", "not implemented yet"); }

__attribute__((weak)) int local_template_get(struct sbx_backend *b, const char *id, struct sbx_template *out, struct sbx_err *err)
{ (void)b; (void)id; (void)out; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_template_get", "not implemented yet"); }

__attribute__((weak)) int local_template_import(struct sbx_backend *b, const char *name, int fd, const char *dir, struct sbx_template *out, struct sbx_err *err)
{ (void)b; (void)name; (void)fd; (void)dir; (void)out; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_template_import", "not implemented yet"); }

__attribute__((weak)) int local_template_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{ (void)b; (void)id; (void)gone; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_template_delete", "not implemented yet"); }

__attribute__((weak)) int local_exec(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req, struct sbx_exec_result *res, struct sbx_err *err)
{ (void)b; (void)sb; (void)req; (void)res; (void)err; return sbx_fail(err, SBX_UNSUPPORTED, "local_exec", "not implemented yet"); }
