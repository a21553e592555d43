/* local-broker.h - the egress broker of a local sandbox with a network
 * policy (issue 28; docs/security.md, "Egress by name").
 *
 * For a sandbox with a policy the broker replaces slirp4netns: the
 * sandbox's network namespace has lo only, with 10.0.2.3/32 on it and a
 * default route into lo, and an nftables table (local-egress.c) that
 * rewrites every TCP connection not to 127/8 to 10.0.2.3:1 and refuses
 * every other packet but UDP to 10.0.2.3:53.  The broker holds the two
 * sockets bound there (it made them inside the namespace and went back to
 * the host's), so everything the sandbox sends out arrives at it, and
 * nothing else leaves: no tap, no route, no NET_ADMIN or NET_RAW inside.
 *
 *  - DNS (UDP 10.0.2.3:53): A queries for names the policy lets resolve
 *    are asked of the upstream resolver (a fresh query, not the
 *    sandbox's bytes) and answered; AAAA of such a name gets an empty
 *    answer (no IPv6 inside); a name the policy refuses gets NXDOMAIN,
 *    any other type or a malformed query REFUSED, at once.  The same
 *    over TCP to 10.0.2.3:53 (length-prefixed, several on a connection).
 *  - TCP: the original destination (SO_ORIGINAL_DST), and when a domain
 *    rule covers the port the name the client sends first (TLS SNI, HTTP
 *    Host, a CONNECT target).  A named connection goes to what the broker
 *    itself resolves the name to, never to the address the sandbox
 *    picked; an unnamed one to that address, judged by CIDR rules.  Every
 *    address is checked against the always-refused ranges and the host's
 *    addresses (local_egress_refused) before the dial, so no name opens
 *    them.  Refused: a TLS alert (access_denied) for a ClientHello, an
 *    HTTP 403 naming the rule for HTTP and CONNECT, a TCP reset otherwise.
 *  - The policy is <dir>/netpolicy.json, re-read when it changes (sbx-ctl
 *    network replaces it by rename): new connections and lookups see the
 *    new policy at once; established connections keep going.
 *
 * The broker runs as root without capabilities (dropped once the sockets
 * exist), in the sandbox's top cgroup (remove's cgroup.kill ends it). */
#ifndef SBX_LOCAL_BROKER_H
#define SBX_LOCAL_BROKER_H

#include <sys/types.h>

#include "err.h"
#include "local-sb.h"

#define LOCAL_POLICY_FILE "netpolicy.json"

/* Start sbx-egress for the sandbox of record `r` whose init is `init`
 * (started at `start`), asking `resolver` (an IPv4 address) for names and
 * letting the CIDRs `allow` (a profile's egress_allow) past the refused
 * ranges.  The namespace must be configured (local_egress_install_broker).
 * Returns once the broker holds its sockets; -1 otherwise. */
int local_broker_start(const struct local_rec *r, pid_t init, unsigned long long start,
		       const char *resolver, char *const *allow, const char *keys,
		       struct sbx_err *err);
/* `keys` (the broker's keys document, sbx_egress_keys_doc; NULL none)
 * is handed to the broker as its stdin (sbx_helper_memfd): it reads it
 * whole and closes it; never argv or environ (local-l7.h). */

/* The broker itself (backends/local/sbx-egress.c's main): argv as
 * local_broker_start passes it.  Returns the exit status. */
int local_broker_main(int argc, char **argv);

/* Store the policy with the sandbox: <dir>/netpolicy.json (what the
 * broker reads) and the record's network.policy (what sbx-ls shows), the
 * canonical document both. */
struct sbx_netpolicy;
struct sbx_create_req;
int local_broker_policy_write(const char *dir, json_object *rec, const struct sbx_netpolicy *p,
			      struct sbx_err *err);

/* A request with E2B's allowOut/denyOut (from sbx-serve) and no policy:
 * *out is the request with the policy they mean (sbx_np_from_e2b, in
 * `np`), and 1; 0 when there is nothing to map; -1 when they are not
 * valid. */
int local_broker_map_e2b(const struct sbx_create_req *req, struct sbx_create_req *out,
			 struct sbx_netpolicy *np, struct sbx_err *err);

/* The backend's set_network: replace <dir>/netpolicy.json (tmp, fsync,
 * rename) of a running or paused sandbox that was created with a policy;
 * the broker re-reads it on its next connection or lookup (a paused one
 * on thaw).  Established connections keep going.  A sandbox created
 * without a policy has no broker: unsupported. */
struct sbx_sandbox;
int local_broker_set_network(struct sbx_backend *b, struct sbx_sandbox *sb,
			     const struct sbx_netpolicy *p, struct sbx_err *err);

/* The host's resolver: the first IPv4 nameserver of /etc/resolv.conf
 * (malloc'd), or NULL. */
char *local_broker_host_resolver(void);

#endif
