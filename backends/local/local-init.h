/* local-init.h - the contract between local-init.c (in the library, which
 * starts a sandbox's init) and sbx-init (the program that is that init,
 * backends/local/sbx-init.c).
 *
 * sbx-init is exec'd with argv {"sbx-init", NULL}, an empty environment,
 * /dev/null on fds 0-2 and exactly two more fds:
 *
 *   fd 3  the status pipe (write end): "P <pid>\n" (the init's host pid),
 *         then "K\n" (ready) or "E <errno> <what>\n" (failed); EOF when
 *         both sbx-init processes have let go of it
 *   fd 4  the configuration, a memfd read from offset 0 to its end:
 *         records "key=value\0", keys below; values are paths and mount
 *         options, never a secret
 *
 * Nothing reaches it through argv or the environment, so nothing of the
 * creator's (its command line, its environment with the Redis password or
 * an API key) is in /proc/<init>/cmdline or environ, and no copy of the
 * creator's memory lives on in the init. */
#ifndef SBX_LOCAL_INIT_H
#define SBX_LOCAL_INIT_H

#define SBX_INIT_FD_STATUS 3
#define SBX_INIT_FD_CONFIG 4
#define SBX_INIT_CONFIG_MAX (64 * 1024)

/* Configuration keys. */
#define SBX_INIT_K_ID        "id"          /* sandbox id: the hostname */
#define SBX_INIT_K_DIR       "dir"         /* the sandbox dir on the host */
#define SBX_INIT_K_OVERLAY   "overlay"     /* overlay mount options */
#define SBX_INIT_K_HOST_VIEW "host_view"   /* optional: the host view is here (mount
					    * it, unless it is the shared one) */
#define SBX_INIT_K_SHM_SIZE  "shm_size"    /* optional: size of /dev/shm in bytes */
/* The shared mounts (local-shared.h), each optional; sbx-init uses one only
 * if it is still mounted there, else makes its own. */
#define SBX_INIT_K_SYSFS     "sysfs"       /* bind as /sys; hold <sysfs>.net, its
					    * network namespace */
#define SBX_INIT_K_EMPTY     "empty"       /* an empty dir: /proc masks, view layer */
#define SBX_INIT_K_DEV       "dev"         /* bind as /dev */
#define SBX_INIT_K_CG        "cg"          /* a cgroup dir to join (repeatable); the
					    * first is the cgroup2 one */
#define SBX_INIT_K_VOLUME    "volume"      /* repeatable: "<r|w><path>\n<host dir>", a
					    * volume bound at <path> (read-only: r) */
#define SBX_INIT_K_CG_JOINED "cg_joined"   /* optional, "1": the launcher was born in
					    * the first cg (clone3), skip its move */

/* ---- The library's side (local-init.c); sbx-init does not use it. ---- */

#include <stdint.h>
#include <sys/types.h>

struct sbx_err;
struct sbx_vol_mount;

/* What the init needs (local-init.c passes it to sbx-init as above).
 * Everything is prepared by create; the init only mounts, pivots and then
 * runs its loop.  None of it is secret. */
struct local_init_cfg {
	const char *id;
	const char *dir;         /* sandbox dir on the host */
	const char *overlay_opts;/* "lowerdir=...,upperdir=...,workdir=..." */
	char *const *cg;         /* LOCAL_NCG cgroup dirs to join (NULL = skip),
				  * the cgroup2 one first */
	int ncg;
	const char *host_view;   /* non-NULL: a read-only view of the host's "/"
				  * is here, the stack's bottom layer (mounted
				  * first unless it is the shared one) */
	int64_t shm_bytes;       /* size of /dev/shm; 0 = sbx-init's default */
	const char *sysfs;       /* the shared mounts (local-shared.h), or NULL */
	const char *empty;
	const char *dev;
	const struct sbx_vol_mount *volumes;   /* bound in before the pivot */
	size_t nvolumes;
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

#endif
