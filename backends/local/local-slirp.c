/* local-slirp.c - egress on: slirp4netns attached to a local sandbox's
 * network namespace, started once the egress filter (local-egress.c) is
 * in place.  Never the host's network namespace: a sandbox must not
 * reach the Redis that holds its own binding. */
#include "local-slirp.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper.h"
#include "util.h"

char *local_find_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	SBX_AUTOFREE char *copy = sbx_xstrdup(path);
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *p = sbx_xasprintf("%s/%s", d, prog);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return NULL;
}

/* Egress on: slirp4netns attached to the init's net ns, host loopback
 * off, in the sandbox's top cgroup (so remove's cgroup.kill ends it).
 * slirp runs as host root: --enable-sandbox puts it in an empty mount
 * namespace with every capability but NET_BIND_SERVICE dropped, and
 * --enable-seccomp limits its syscalls.  The destination filter is not
 * slirp's (it has none): see local-egress.h. */
void local_net_helper_detach(const struct local_rec *r)
{
	char me[32];
	snprintf(me, sizeof(me), "%d", (int)getpid());
	(void)local_cg_write(r->cg[CG_V2], "cgroup.procs", me);
	sbx_helper_detach();
}

int local_slirp_start(const char *slirp, const struct local_rec *r, pid_t init,
		       struct sbx_err *err)
{
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "pipe");
	pid_t c = fork();
	if (c < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "fork");
	if (c == 0) {
		local_net_helper_detach(r);
		char fd[16], ipid[32];
		int rfd = dup(ready[1]);   /* without O_CLOEXEC: slirp writes it */
		/* Nothing else of the caller's lives on in slirp (host root, for
		 * the sandbox's life): not a pipeline's pipe, not a file the
		 * caller held open without O_CLOEXEC. */
		if (rfd > 3)
			close_range(3, (unsigned)rfd - 1, 0);
		close_range((unsigned)rfd + 1, ~0U, 0);
		snprintf(fd, sizeof(fd), "%d", rfd);
		snprintf(ipid, sizeof(ipid), "%d", (int)init);
		/* None of the caller's environment (a Redis password, an API
		 * key) lives on in slirp: it needs nothing from it. */
		static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
		execle(slirp, "slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback",
		       "--enable-sandbox", "--enable-seccomp", "--ready-fd", fd, ipid, "tap0",
		       (char *)NULL, envp);
		_exit(127);
	}
	close(ready[1]);
	waitpid(c, NULL, 0);
	char buf[8];
	struct pollfd pf = {.fd = ready[0], .events = POLLIN};
	int ok = poll(&pf, 1, 10000) > 0 && read(ready[0], buf, 1) == 1;
	close(ready[0]);
	if (!ok)
		return sbx_fail(err, SBX_INTERNAL, "create", "slirp4netns did not come up");
	return 0;
}
