/* local-sb.h - private to the local backend's lifecycle files (local.c,
 * local-init.c, local-exec.c): the on-disk sandbox record and the cgroup
 * paths that belong to one sandbox.  Other backend files use local.h.
 *
 * On-disk layout, one directory per sandbox:
 *
 *   <state>/local/sandboxes/<id>/
 *       sandbox.json   the record (written by tmp + rename, never torn)
 *       activity       mtime = last command (the idle timer reads it)
 *       busy           flock(LOCK_SH) held by every running exec
 *       killed         present when the idle timer killed the sandbox
 *       upper/ work/   the overlay's writable layer and its workdir
 *       root/          the mount point of the merged tree (inside the
 *                      sandbox's mount namespace only: the host never has
 *                      a mount here, so nothing can be leaked on the host)
 *
 * Cgroups: sandbox <id> owns
 *   <v2>/<parent>/<id>      the init (PID 1) and, when egress is on,
 *                           slirp4netns; on a unified-only host also the
 *                           limits (memory.max, pids.max, cpu.max)
 *   <v2>/<parent>/<id>/work every exec'd process (what pause freezes)
 *   <v2>/<parent>/<id>/work/x-*  one per exec that has a timeout (cgroup.kill)
 *   <v1:memory|pids|cpu>/sbx/<id>   hybrid hosts: the resource limits
 *   <v1:devices>/sbx/<id>   the device allow-list (local-devices.c), which
 *                           <v2>/<parent>/<id>/work holds as a BPF program
 * where <v2> is the cgroup2 mount (/sys/fs/cgroup/unified on hybrid hosts,
 * /sys/fs/cgroup on pure v2 ones) and the v1 roots are the controllers'
 * mounts.  <parent> is the profile's cgroup_parent, else
 * system.slice/sbx.service on a unified systemd host, else "sbx"
 * (local-cgroup.c); the v1 ones hang from a fixed "sbx" parent at each
 * hierarchy's root.  Never below the caller's cgroup: a sandbox outlives
 * the process that made it, and a caller's cgroup may be torn down with
 * that caller.  The paths
 * are derived from the id alone, so a crash before the record was
 * complete still leaves everything findable. */
#ifndef SBX_LOCAL_SB_H
#define SBX_LOCAL_SB_H

#include <sys/types.h>
#include <json-c/json.h>

#include "local.h"

#define LOCAL_NCG 5          /* v2 + memory + pids + cpu + devices */
enum { CG_V2, CG_MEMORY, CG_PIDS, CG_CPU, CG_DEVICES };

struct local_rec {
	char *dir;               /* <state>/local/sandboxes/<id> */
	json_object *j;          /* the parsed record (owned) */
	char *cg[LOCAL_NCG];     /* absolute cgroup dirs, NULL when absent */
	pid_t init_pid;          /* 0 while creating */
};

/* Cgroups (local-cgroup.c).  local_cg_path: root of sandbox <id>'s
 * cgroup in hierarchy `which` for backend b's profile (its cgroup parent),
 * or NULL when that hierarchy is not there (the v1 ones on a unified host).
 * malloc'd.  local_cg_unified: the host has the unified hierarchy only (the
 * v2 layout); else v1 limits (hybrid).  local_cg_prepare: before the
 * sandbox's cgroups are made, the v2 parent exists, holds no process and
 * hands the controllers `lim` needs to its children (unsupported when it
 * cannot).  local_cg_limit: write `lim` on the sandbox's cgroups.
 * local_cg_info: the layout in use, for sbx-ctl caps. */
const char *local_cg_v2_mount(void);
int local_cg_unified(void);
/* Write `v` to <dir>/<file> (a cgroup control file) in one write(2).  0,
 * or -1 with errno set.  No allocation: usable between fork and exec. */
int local_cg_write(const char *dir, const char *file, const char *v);
char *local_cg_path(struct sbx_backend *b, int which, const char *id);
int local_cg_prepare(struct sbx_backend *b, const struct sbx_limits *lim, struct sbx_err *err);
int local_cg_limit(const struct local_rec *r, const struct sbx_limits *lim, struct sbx_err *err);
json_object *local_cg_info(struct sbx_backend *b);
/* Wait until `key` in <cg>/cgroup.events equals `want` (or the file is
 * gone).  0, or -1 with errno ETIMEDOUT after timeout_ms. */
int local_cg_wait(const char *cg, const char *key, long want, int timeout_ms);
/* Load the record of sandbox `id`; not_found when it does not exist. */
int local_rec_load(struct sbx_backend *b, const char *id, struct local_rec *r,
		   struct sbx_err *err);
void local_rec_free(struct local_rec *r);
/* 1 if pid is alive and still the process that started at `start`
 * (field 22 of /proc/PID/stat; 0 = do not check).  A pid names whoever
 * holds it *now*: between this check and any later use of the pid, the
 * process may die and the pid go to another one.  Use a pidfd
 * (local_sb_init_pidfd) whenever the answer leads to acting on the
 * process. */
int local_pid_alive(pid_t pid, unsigned long long start);
unsigned long long local_pid_start(pid_t pid);

/* The init of a sandbox, held by pidfd, so that a recycled pid can never
 * make us act on another process.
 *
 * local_sb_init_pidfd: sandbox `id` is running when this returns (a paused
 * one is thawed first, like local_sb_ensure_running).  The pidfd is opened
 * first and the init's start time checked after, which proves that the
 * pidfd is the init and not a later holder of its pid (a later process
 * cannot have the init's earlier start time).  Fails with terminal when the
 * init is gone, not_found when there is no such sandbox.  Returns the
 * pidfd (the caller closes it) and *pid, the init's pid in our pid
 * namespace; `op` names the operation in errors.
 *
 * local_init_open: open /proc/<pid>/<what> (root, ns/mnt, ...) of that
 * init.  The path goes through the pid, so the open is proven afterwards:
 * when the init is still alive after the open, the pid was not recycled
 * before it, and the fd is the init's.  When the init died meanwhile the fd
 * is dropped and the error is terminal, whatever the open returned.
 *
 * local_init_alive: 1 while the process behind `pidfd` lives and is not
 * a zombie (a zombie still answers signals but has no root, no
 * namespaces).
 *
 * local_init_gone: after something failed on the init, 1 when it is dead
 * or dying.  Waits up to 200 ms for an exit in progress, which has taken
 * the root and namespaces away before the process turns zombie. */
int local_sb_init_pidfd(struct sbx_backend *b, const char *id, const char *op, pid_t *pid,
			struct sbx_err *err);
int local_init_open(int pidfd, pid_t pid, const char *what, int flags, const char *id,
		    const char *op, struct sbx_err *err);
int local_init_alive(int pidfd, pid_t pid);
int local_init_gone(int pidfd, pid_t pid);

/* What the init needs (local-init.c passes it to sbx-init, local-init.h).
 * Everything is prepared by create; the init only mounts, pivots and then
 * runs its loop.  None of it is secret. */
struct local_init_cfg {
	const char *id;
	const char *dir;         /* sandbox dir on the host */
	const char *overlay_opts;/* "lowerdir=...,upperdir=...,workdir=..." */
	char *const *cg;         /* LOCAL_NCG cgroup dirs to join (NULL = skip) */
	const char *host_view;   /* non-NULL: mount a read-only view of the host's
				  * "/" here first (it is the stack's bottom layer) */
	int64_t shm_bytes;       /* size of /dev/shm; 0 = sbx-init's default */
};
/* Start the init of a sandbox as a daemon: new mount, pid, uts, ipc, net
 * and cgroup namespaces, in the sandbox's cgroups, its root on the
 * overlay.  Returns once the init reports ready (0, *pid = its host pid) or
 * failed (-1; the init is gone or going; remove cleans what is left). */
int local_init_start(const struct local_init_cfg *c, pid_t *pid, struct sbx_err *err);

/* An O_PATH fd on <dir of /proc/self/exe>/../libexec/sbx/<name> (sbx-init,
 * sbx-procd): the helpers of the same installation as the running
 * program, never one an environment names.  Missing: unavailable. */
int local_libexec_open(const char *name, const char *op, struct sbx_err *err);

/* Idle-timer policy file the init reads on SIGHUP: "SECONDS PAUSE AUTORESUME". */
int local_policy_write(const char *dir, const struct sbx_timeout_policy *t,
		       struct sbx_err *err);

#endif
