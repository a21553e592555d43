/* local-cgroup.h - the cgroups of a local sandbox (local-cgroup.c).
 * Private to the local backend.
 *
 * Sandbox <id> owns
 *   <v2>/<parent>/<id>      the init (PID 1), the supervisors of its
 *                           detached processes (sbx-procd) and, when egress
 *                           is on, slirp4netns; on a unified-only host also
 *                           the limits (memory.max, pids.max, cpu.max)
 *   <v2>/<parent>/<id>/work every exec'd or started process (what pause
 *                           freezes)
 *   <v2>/<parent>/<id>/work/x-<pid>-*  one per exec or process that has
 *                           a timeout (cgroup.kill); <pid> made it
 *   <v1:memory|pids|cpu>/sbx/<id>   hybrid hosts: the resource limits
 *   <v1:devices>/sbx/<id>   the device allow-list (local-devices.c), which
 *                           <v2>/<parent>/<id>/work holds as a BPF program
 * where <v2> is the cgroup2 mount (/sys/fs/cgroup/unified on hybrid hosts,
 * /sys/fs/cgroup on pure v2 ones) and the v1 roots are the controllers'
 * mounts.  <parent> is the profile's cgroup_parent, else
 * system.slice/sbx.service on a unified systemd host, else "sbx"; the v1
 * ones hang from a fixed "sbx" parent at each hierarchy's root.  Never
 * below the caller's cgroup: a sandbox outlives the process that made it,
 * and a caller's cgroup may be torn down with that caller.  The paths are
 * derived from the id alone, so a crash before the record was complete
 * still leaves everything findable. */
#ifndef SBX_LOCAL_CGROUP_H
#define SBX_LOCAL_CGROUP_H

#include <json-c/json.h>

#include "backend.h"

#define LOCAL_NCG 5          /* v2 + memory + pids + cpu + devices */
enum { CG_V2, CG_MEMORY, CG_PIDS, CG_CPU, CG_DEVICES };

/* local_cg_path: root of sandbox <id>'s cgroup in hierarchy `which` for
 * backend b's profile (its cgroup parent), or NULL when that hierarchy is
 * not there (the v1 ones on a unified host).  malloc'd.
 * local_cg_unified: the host has the unified hierarchy only (the v2
 * layout); else v1 limits (hybrid).  local_cg_prepare: before the
 * sandbox's cgroups are made, the v2 parent exists, holds no process and
 * hands the controllers `lim` needs to its children (unsupported when it
 * cannot).  local_cg_limit: write `lim` on the sandbox's cgroups (its
 * LOCAL_NCG dirs, in CG_* order, NULL where absent).
 * local_cg_info: the layout in use, for sbx-ctl caps. */
const char *local_cg_v2_mount(void);
int local_cg_unified(void);
/* Write `v` to <dir>/<file> (a cgroup control file) in one write(2).  0,
 * or -1 with errno set.  No allocation: usable between fork and exec. */
int local_cg_write(const char *dir, const char *file, const char *v);
char *local_cg_path(struct sbx_backend *b, int which, const char *id);
int local_cg_prepare(struct sbx_backend *b, const struct sbx_limits *lim, struct sbx_err *err);
int local_cg_limit(char *const cg_dirs[LOCAL_NCG], const struct sbx_limits *lim,
		   struct sbx_err *err);
json_object *local_cg_info(struct sbx_backend *b);
/* Wait until `key` in <cg>/cgroup.events equals `want` (or the file is
 * gone).  0, or -1 with errno ETIMEDOUT after timeout_ms. */
int local_cg_wait(const char *cg, const char *key, long want, int timeout_ms);
/* Remove the empty x-* cgroups under `work` (<v2>/.../<id>/work) that
 * execs and process starts left behind: their processes are gone, or their
 * maker is.  Never one whose maker still lives, as a rule: between its
 * mkdir and its command joining, a fresh cgroup is empty too.  With
 * `mine`, the caller's own empty ones go as well: a long-lived caller (an
 * sbx-serve worker) would keep one per timed start otherwise, and the
 * caller (the library is single-threaded) is not between a mkdir and a
 * join while it calls this.  A group that holds a process stays (EBUSY). */
void local_cg_sweep_x(const char *work, int mine);
/* Remove a cgroup directory and its children, deepest first (a v1
 * directory can stay busy for a moment after its last task died). */
void local_cg_rmdir_tree(const char *path);

#endif
