/* local.h - internals shared by the local backend's files.
 *
 *   local.c        the vtable, sandbox lifecycle: create, connect, get,
 *                  list, remove, pause/resume, timeouts, capabilities
 *   local-init.c   start the tiny PID 1 inside each sandbox: sbx-init
 *                  (libexec/sbx-init.c, its own program; local-init.h)
 *   local-exec.c   exec: join the sandbox's namespaces and cgroup, drop
 *                  privileges, capture or stream output, kill on timeout
 *   local-files.c  the file operations, confined to the sandbox's root
 *   local-image.c  templates (the builtin `host`, imports) and snapshots:
 *                  immutable layer stacks
 *
 * State lives under <profile state_dir>/local/ (see local.c for the
 * layout).  Everything that is not in this header is private to its file. */
#ifndef SBX_LOCAL_H
#define SBX_LOCAL_H

#include <sys/types.h>
#include <json-c/json.h>

#include "backend.h"

struct local {
	char *dir;               /* <state_dir>/local */
};

/* The sandbox must be usable: running (a paused one is thawed first: this
 * is auto-resume).  Fails with terminal when its init is gone (state dead)
 * and not_found when no such sandbox exists.  Returns 0 and *init_pid. */
int local_sb_ensure_running(struct sbx_backend *b, const char *id, pid_t *init_pid,
			    struct sbx_err *err);
/* Freeze (1) or thaw (0) every process of the sandbox (cgroup freezer);
 * returns once the state is reached. */
int local_sb_freeze(struct sbx_backend *b, const char *id, int freeze, struct sbx_err *err);
/* Host path of the sandbox's own writable layer (the overlay upperdir).
 * Returned string is malloc'd. */
char *local_sb_upper(struct sbx_backend *b, const char *id);
/* An O_PATH | O_DIRECTORY fd on the sandbox's root as its own processes
 * see it (the merged overlay with /workspace etc.), resuming it first. */
int local_sb_rootfd(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);
/* Record activity now (resets the idle timer). */
void local_sb_touch(struct sbx_backend *b, const char *id);
/* The template id each existing sandbox was created from (for "in use"
 * checks): malloc'd array of malloc'd strings. */
int local_sb_templates_in_use(struct sbx_backend *b, char ***ids, size_t *n,
			      struct sbx_err *err);

/* Images (local-image.c).  Resolve a template or snapshot id into its layer
 * stack: a JSON array of absolute host directories, top-most first, ready
 * for overlay's lowerdir.  not_found for an unknown id. */
int local_image_layers(struct sbx_backend *b, const char *template_id, json_object **layers,
		       struct sbx_err *err);
/* Ids of the snapshots/templates whose layers stack on `template_id`
 * (for "in use" checks). */
int local_image_dependents(struct sbx_backend *b, const char *template_id, char ***ids,
			   size_t *n, struct sbx_err *err);

/* vtable entries implemented in local-files.c */
int local_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err);
int local_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    size_t max, int as_root, char **data, size_t *len, struct sbx_err *err);
int local_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int as_root, struct sbx_dirent **out, size_t *n, struct sbx_err *err);
int local_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int as_root, struct sbx_dirent *out, struct sbx_err *err);
int local_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     unsigned mode, int as_root, struct sbx_err *err);
int local_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		      int recursive, int as_root, struct sbx_err *err);
int local_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		    const char *to, int as_root, struct sbx_err *err);
int local_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		  int as_root, struct sbx_err *err);
int local_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		  int as_root, struct sbx_err *err);

/* vtable entries implemented in local-image.c */
int local_snapshot_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
			  struct sbx_snapshot_ref *out, struct sbx_err *err);
int local_snapshot_list(struct sbx_backend *b, const char *page_token,
			struct sbx_snapshot_ref **out, size_t *n, char **next, struct sbx_err *err);
int local_snapshot_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);
int local_template_list(struct sbx_backend *b, struct sbx_template **out, size_t *n,
			struct sbx_err *err);
int local_template_get(struct sbx_backend *b, const char *id, struct sbx_template *out,
		       struct sbx_err *err);
int local_template_import(struct sbx_backend *b, const char *name, int fd, const char *dir,
			  struct sbx_template *out, struct sbx_err *err);
int local_template_delete(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);

/* vtable entries implemented in local-exec.c */
int local_exec(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req,
	       struct sbx_exec_result *res, struct sbx_err *err);

#endif
