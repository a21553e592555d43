/* local-slirp.h - egress on: slirp4netns for a local sandbox
 * (local-slirp.c).  Private to the local backend. */
#ifndef SBX_LOCAL_SLIRP_H
#define SBX_LOCAL_SLIRP_H

#include <sys/types.h>

#include "local-sb.h"

/* The first executable `prog` in $PATH (malloc'd), or NULL. */
char *local_find_in_path(const char *prog);

/* In the child forked to run a host-side network helper of sandbox `r`
 * (slirp4netns, the egress broker): its own session, the sandbox's top
 * cgroup (so remove's cgroup.kill ends it too), forked once more so that
 * the caller's waitpid returns at once and the helper is nobody's child,
 * and stdin/stdout/stderr on /dev/null.  Returns in the grandchild; the
 * intermediate child exits here. */
void local_net_helper_detach(const struct local_rec *r);

/* Egress on: slirp4netns (at path `slirp`) attached to the net namespace
 * of the init `init`, host loopback off, in the sandbox's top cgroup (so
 * remove's cgroup.kill ends it).  slirp runs as host root:
 * --enable-sandbox puts it in an empty mount namespace with every
 * capability but NET_BIND_SERVICE dropped, and --enable-seccomp limits
 * its syscalls; it gets none of the caller's fds or environment.  The
 * destination filter is not slirp's (it has none): see local-egress.h.
 * Returns once slirp is ready. */
int local_slirp_start(const char *slirp, const struct local_rec *r, pid_t init,
		      struct sbx_err *err);

#endif
