/* local-egress.h - the egress filter of a local sandbox with internet on.
 *
 * slirp4netns forwards whatever the sandbox sends, to any destination its
 * own (host-side) sockets can reach: the metadata address, the host's own
 * addresses, the LAN.  It filters nothing by destination, and a filter on
 * slirp's host-side sockets would also cut the sandbox's DNS, which slirp
 * forwards to the host's resolver (often at a private address).  So the
 * filter lives in the sandbox's network namespace, where the sandbox's
 * real destinations are seen: an nftables table (family inet, output hook)
 * that refuses every non-internet range and the host's own addresses and
 * networks, except slirp's DNS (10.0.2.3 port 53) and the CIDRs a profile
 * allow-lists.  Root inside the sandbox has neither NET_ADMIN nor NET_RAW
 * (local-exec.c), so it can neither change the table nor route around it.
 *
 * The filter must be in place before slirp attaches the sandbox's tap
 * device: until then the namespace has only lo, so there is no moment at
 * which a refused destination is reachable. */
#ifndef SBX_LOCAL_EGRESS_H
#define SBX_LOCAL_EGRESS_H

#include <sys/types.h>

#include "err.h"

/* The sandbox's resolver: the one nameserver of every local sandbox's
 * /etc/resolv.conf (written at create, local-layer.c), and the one
 * destination of slirp's network the filter lets through (port 53, UDP
 * and TCP).  It is slirp4netns's DNS forwarder (its default --cidr
 * 10.0.2.0/24), which asks the host's resolver from the host's network
 * namespace, wherever that resolver sits (127.0.0.53, 169.254.169.253, a
 * 10.x address): the sandbox never talks to the host's resolver itself.
 * Without egress there is no route to it, and a lookup fails at once. */
#define LOCAL_SANDBOX_RESOLVER "10.0.2.3"

/* Install the filter in the network namespace of the init `pid` (host
 * pid, started at `start` per local_pid_start), letting `allow` (a
 * NULL-terminated list of canonical CIDRs, or NULL) through.  The host's
 * addresses are those of the caller's network namespace, where slirp will
 * run.  0 when the table is in place; -1 otherwise (unsupported when
 * nftables is missing or the kernel refuses the rules, terminal when the
 * init is gone), and then nothing was installed that outlives the
 * sandbox.  `id` names the sandbox in errors. */
int local_egress_install(pid_t pid, unsigned long long start, char *const *allow,
			 const char *id, struct sbx_err *err);

/* The rules themselves (nft syntax), for the install above and for the
 * unit test.  `host` is a NULL-terminated list of extra CIDRs to refuse
 * (the host's addresses and networks).  malloc'd. */
char *local_egress_rules(char *const *allow, char *const *host);

/* The TCP port of the egress broker (local-broker.h), on
 * LOCAL_SANDBOX_RESOLVER inside the sandbox. */
#define LOCAL_EGRESS_BROKER_PORT 1

/* A sandbox with a network policy: no slirp; in its namespace
 * LOCAL_SANDBOX_RESOLVER/32 on lo, a default route into lo, and the
 * broker's table (local_egress_broker_rules): every TCP connection not to
 * 127/8 is rewritten to the broker's port, everything else but UDP to
 * the resolver address port 53 and lo is refused.  Fail closed, as
 * local_egress_install. */
int local_egress_install_broker(pid_t pid, unsigned long long start, const char *id,
				struct sbx_err *err);
char *local_egress_broker_rules(void);

/* 1 when an address must not be dialled for a sandbox (the refused
 * ranges above, the SSRF guard's never-allowed ones, the host's `host`
 * CIDRs), *why naming the class; 0 when it may, or when a CIDR of
 * `allow` (egress_allow) contains it. */
struct sockaddr;
int local_egress_refused(const struct sockaddr *sa, char *const *allow, char *const *host,
			 const char **why);

/* The host's addresses and on-link networks, as refused (NULL-terminated,
 * malloc'd; NULL when getifaddrs fails), and its release. */
char **local_egress_host_cidrs(void);
void local_egress_strv_free(char **v);

#endif
