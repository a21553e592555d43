/* sbx-egress - the egress broker of one sandbox with a network policy
 * (backends/local/local-broker.h).  Started by a create; not for users.
 *
 * Two ways in, one broker:
 *   sbx-egress DIR PID START RFD RESOLVER [ALLOW...]
 *     a local sandbox: its namespace was set up by the create
 *     (local_egress_install_broker) and PID is its init;
 *   sbx-egress --container ID PID DIR RFD RESOLVER [ALLOW...]
 *     a container of a local Docker engine (backends/docker/docker-egress.h):
 *     PID is the container's init as the engine reports it.  The broker
 *     first proves that PID is still the container's (its cgroup names
 *     ID), sets up the namespace itself (the same table, address and
 *     route as a local sandbox's), then runs as above.  RESOLVER "host"
 *     means the host's first IPv4 nameserver.
 * Either way the broker ends when the init does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "local-broker.h"
#include "local-egress.h"
#include "local-pid.h"
#include "util.h"

/* 1 when /proc/PID/cgroup names the container `id` (64 hex): the pid
 * still belongs to it, not to whoever took the pid after it. */
static int in_container(pid_t pid, const char *id)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strlen(id) == 64 && strstr(buf, id) != NULL;
}

static int container_main(int argc, char **argv)
{
	if (argc < 7)
		return 64;
	const char *id = argv[2];
	pid_t pid = (pid_t)atoi(argv[3]);
	int rfd = atoi(argv[5]);
	unsigned long long start = pid > 0 ? local_pid_start(pid) : 0;
	if (!start || !in_container(pid, id) || local_pid_start(pid) != start) {
		dprintf(rfd, "the container's init (pid %d) is gone", (int)pid);
		return 1;
	}
	struct sbx_err err = {0};
	if (local_egress_install_broker(pid, start, id, &err) < 0) {
		dprintf(rfd, "%s", err.msg);
		return 1;
	}
	SBX_AUTOFREE char *host_res = NULL;
	const char *res = argv[6];
	if (!strcmp(res, "host") && !(res = host_res = local_broker_host_resolver())) {
		dprintf(rfd, "a network policy needs a resolver: the host has no IPv4 nameserver "
			     "and the profile no egress_resolver");
		return 1;
	}
	char st[32];
	snprintf(st, sizeof(st), "%llu", start);
	char **av = sbx_xcalloc((size_t)argc + 1, sizeof(char *));
	int k = 0;
	av[k++] = argv[0];
	av[k++] = argv[4];   /* DIR */
	av[k++] = argv[3];   /* PID */
	av[k++] = st;
	av[k++] = argv[5];   /* RFD */
	av[k++] = (char *)res;
	for (int i = 7; i < argc; i++)
		av[k++] = argv[i];
	return local_broker_main(k, av);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--container"))
		return container_main(argc, argv);
	return local_broker_main(argc, argv);
}
