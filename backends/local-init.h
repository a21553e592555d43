/* local-init.h - the contract between local-init.c (in the library, which
 * starts a sandbox's init) and sbx-init (the program that is that init,
 * libexec/sbx-init.c).
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
#define SBX_INIT_K_HOST_VIEW "host_view"   /* optional: mount the host view here */
#define SBX_INIT_K_SHM_SIZE  "shm_size"    /* optional: size of /dev/shm in bytes */
#define SBX_INIT_K_CG        "cg"          /* a cgroup dir to join (repeatable); the
					    * first is the cgroup2 one */

#endif
