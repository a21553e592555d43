/* local-broker.c - the egress broker of a local sandbox with a network
 * policy (see local-broker.h for what it promises).
 *
 * One process per sandbox, one thread per TCP connection and per DNS
 * query (blocking I/O: a connection's name, lookup, dial and relay are a
 * straight line of code, and an idle sandbox costs one sleeping thread).
 * Threads get 128 KiB stacks. */
#include "local-broker.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doc.h"
#include "helper.h"
#include "local-dns.h"
#include "local-egress.h"
#include "local-init.h"
#include "local-pid.h"
#include "local-slirp.h"
#include "local-state.h"
#include "netpolicy.h"
#include "util.h"

/* ---- the creator's side ---------------------------------------------- */

char *local_broker_host_resolver(void)
{
	FILE *f = fopen("/etc/resolv.conf", "re");
	if (!f)
		return NULL;
	char line[512], *r = NULL;
	while (!r && fgets(line, sizeof(line), f)) {
		char ns[64];
		struct in_addr a;
		if (sscanf(line, " nameserver %63s", ns) == 1 && inet_pton(AF_INET, ns, &a) == 1)
			r = sbx_xstrdup(ns);
	}
	fclose(f);
	return r;
}

static void detach(void *r)
{
	local_net_helper_detach(r);
}

int local_broker_start(const struct local_rec *r, pid_t init, unsigned long long start,
		       const char *resolver, char *const *allow, const char *keys,
		       struct sbx_err *err)
{
	SBX_AUTOCLOSE int kfd = keys ? sbx_helper_memfd(keys) : -1;
	if (keys && kfd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "the egress broker's keys");
	SBX_AUTOCLOSE int exe = local_libexec_open("sbx-egress", "create", err);
	if (exe < 0)
		return -1;
	size_t na = 0;
	for (char *const *a = allow; a && *a; a++)
		na++;
	char pid[32], st[32], fd[16];
	snprintf(pid, sizeof(pid), "%d", (int)init);
	snprintf(st, sizeof(st), "%llu", start);
	const char **argv = sbx_xcalloc(na + 8, sizeof(char *));
	size_t k = 0;
	argv[k++] = "sbx-egress";
	argv[k++] = r->dir;
	argv[k++] = pid;
	argv[k++] = st;
	argv[k++] = fd;
	argv[k++] = resolver;
	for (char *const *a = allow; a && *a; a++)
		argv[k++] = *a;
	char why[256];
	int rc = sbx_helper_start_in(exe, argv, fd, kfd, detach, (void *)r, why, sizeof(why));
	free(argv);
	if (rc < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "start the egress broker");
	if (rc == SBX_HELPER_SILENT)
		return sbx_fail(err, SBX_INTERNAL, "create", "the egress broker did not come up");
	if (rc == SBX_HELPER_FAILED)
		return sbx_fail(err, SBX_INTERNAL, "create", "the egress broker failed: %s", why);
	return 0;
}

int local_broker_policy_write(const char *dir, json_object *rec, const struct sbx_netpolicy *p,
			      struct sbx_err *err)
{
	json_object *doc = sbx_np_to_json(p);
	const char *txt = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE);
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/" LOCAL_POLICY_FILE, dir);
	int rc = sbx_write_file_atomic(path, txt, strlen(txt), 0600, 0, err);
	if (rc == 0 && rec)
		json_object_object_add(sbx_json_child(rec, "network"), "policy", json_object_get(doc));
	json_object_put(doc);
	return rc;
}

int local_broker_map_e2b(const struct sbx_create_req *req, struct sbx_create_req *out,
			 struct sbx_netpolicy *np, struct sbx_err *err)
{
	int any = (req->net.allow_out && json_object_array_length(req->net.allow_out)) ||
		  (req->net.deny_out && json_object_array_length(req->net.deny_out));
	if (!any || req->net.policy)
		return 0;
	if (sbx_np_from_e2b(req->net.allow_out, req->net.deny_out, 1, np, err) < 0)
		return -1;
	*out = *req;
	out->net.policy = np;
	out->net.allow_internet = 1;
	return 1;
}

int local_broker_set_network(struct sbx_backend *b, struct sbx_sandbox *sb,
			     const struct sbx_netpolicy *p, struct sbx_err *err)
{
	struct local_rec r;
	if (local_rec_load(b, sb->id, &r, err) < 0)
		return -1;
	enum local_state st;
	int rc = local_rec_state_cont(b, &r, "network", &st, err);
	if (rc == 0 && st != LOCAL_RUNNING && st != LOCAL_PAUSED)
		rc = local_state_error(sb->id, st, "network", err);
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/" LOCAL_POLICY_FILE, r.dir);
	if (rc == 0 && access(path, F_OK) != 0)
		rc = sbx_fail(err, SBX_UNSUPPORTED, "network",
			      "%s was created without a network policy: its egress is all or nothing "
			      "(create it with --allow-out, --deny-out or --network-policy)", sb->id);
	if (rc == 0)
		rc = local_broker_policy_write(r.dir, NULL, p, err);
	local_rec_free(&r);
	return rc;
}

