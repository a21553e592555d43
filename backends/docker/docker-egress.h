/* docker-egress.h - egress of a Docker sandbox: the egress broker of the
 * local backend (libexec/sbx-egress, backends/local/local-broker.h), run
 * on the engine's host and attached to the container's network namespace
 * (docs/docker.md, "Egress").
 *
 * A container is always created with NetworkMode "none" (only lo).  With
 * egress on, after the start, sbx-egress --container joins the
 * namespace of the container's init (the engine's State.Pid, proven by its
 * cgroup), puts there what a local sandbox with a policy has (10.0.2.3/32
 * on lo, a default route into lo, the table that rewrites every TCP
 * connection to the broker and refuses every other packet but DNS to
 * 10.0.2.3), holds the two sockets and goes back to the host's namespace.
 * So the broker is the container's only way out and its resolver
 * (HostConfig.Dns), and the same rules hold as on local: the always-refused
 * ranges and the host's own addresses are never dialled unless the
 * profile's egress_allow names them, names are judged by the policy.
 * Without a policy the broker holds the open one (default allow, no
 * rules): the public internet over TCP, DNS through the broker, nothing
 * else (no UDP, no ICMP out).
 *
 * Needs a local engine (unix socket) and a caller that may enter the
 * container's namespace (root on the engine's host); otherwise egress is
 * unsupported.  The broker ends when the container's init does; a
 * container restarted by the engine or by a connect after its init ended
 * comes back without egress (lo only: fail closed). */
#ifndef SBX_DOCKER_EGRESS_H
#define SBX_DOCKER_EGRESS_H

#include <json-c/json.h>

#include "backend.h"
#include "err.h"
#include "netpolicy.h"

/* The container's resolver: the broker's DNS socket, as on local. */
#define DOCKER_SANDBOX_RESOLVER "10.0.2.3"

/* What a create asks of egress: 0 none; 1 egress, *use pointing at the
 * policy the broker will hold (the request's, or in `np` E2B's
 * allowOut/denyOut mapped as sbx_np_from_e2b does, or the open one) and
 * *named set when the request named one.  -1 unsupported (a remote
 * engine) or invalid.  The caller clears `np`. */
int docker_egress_plan(struct sbx_backend *b, const struct sbx_create_req *req,
		       struct sbx_netpolicy *np, const struct sbx_netpolicy **use, int *named,
		       struct sbx_err *err);

/* Store `p` for container `id` (<state_dir>/docker-egress/<id>/netpolicy.json)
 * and start its broker on the init `pid`, with the profile's secrets and
 * `headers` (struct sbx_network's) on its stdin when interception is
 * needed; returns once the broker holds its sockets in the container's
 * namespace, -1 otherwise (the caller removes the container: fail closed). */
int docker_egress_start(struct sbx_backend *b, const char *id, long pid,
			const struct sbx_netpolicy *p, json_object *headers, struct sbx_err *err);

/* The backend's set_network: replace the policy of a running or paused
 * sandbox created with one (tmp, fsync, rename); the broker re-reads it on
 * its next connection or lookup, established connections keep going.
 * A sandbox created without a policy is unsupported (as on local). */
int docker_egress_set_network(struct sbx_backend *b, struct sbx_sandbox *sb,
			      const struct sbx_netpolicy *p, struct sbx_err *err);

/* The stored policy of `id` as a document (for the handle), or NULL. */
json_object *docker_egress_policy_doc(struct sbx_backend *b, const char *id);

/* Forget `id`'s stored policy (after its removal). */
void docker_egress_forget(struct sbx_backend *b, const char *id);

/* The folder of the container's broker, where it spools its audit
 * records (spool.h); malloc'd, whether or not it exists. */
char *docker_egress_audit_dir(struct sbx_backend *b, const char *id);

#endif
