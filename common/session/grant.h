/* grant.h - what a session's create was granted, kept in its binding, so
 * that a sandbox made for the session later (a rewind) or for a fork of
 * it has the same, not the profile's defaults (grant.c).
 *
 * The stored form, the binding's optional "grant" object (binding.h):
 *
 *   {"env": {...}, "volumes": ["NAME:/PATH[:ro]", ...],
 *    "limits": {"memory_bytes", "pids", "cpus", "disk_bytes", "shm_bytes"},
 *    "timeout": {"seconds", "pause", "hibernate"?, "auto_resume"},
 *    "network": {"allow_internet", "allow_public", "policy"?, "allow_out"?,
 *                "deny_out"?}}
 *
 * env is the environment the create gave every command (the profile's
 * with --env over it): its values are kept in Redis with the binding, as
 * sbx-serve keeps a create's envVars in its record.  A binding written
 * before grants (or by a claim of a sandbox a crashed resolve left) has
 * none: a rewind then gives the profile's defaults, as before. */
#ifndef SBX_GRANT_H
#define SBX_GRANT_H

#include <stddef.h>
#include <json-c/json.h>

#include "backend.h"
#include "err.h"
#include "netpolicy.h"
#include "redis.h"
#include "volume.h"

/* The grant of create request `cr` (a new object). */
json_object *sbx_grant_of(const struct sbx_create_req *cr);

/* A create request rebuilt from a grant, with what it points to. */
struct sbx_grant_req {
	struct sbx_create_req cr;
	struct sbx_netpolicy np;
	struct sbx_vol vols[SBX_VOLUMES_MAX];
	char *paths[SBX_VOLUMES_MAX];
	struct sbx_vol_mount mounts[SBX_VOLUMES_MAX];
	size_t nvolumes;
	json_object *grant;      /* a reference held while cr points into it */
};

/* Fill g->cr from `grant` (NULL: the profile's defaults, as sbx-create
 * gives a session sandbox without flags), template_id left NULL.  Its
 * volumes are the tenant's, looked up again (sbx_vol_mounts: one removed
 * since is not_found); with `writable_volumes` 0 only its read-only ones
 * are mounted (a fork shares nothing writable with its source).  A
 * malformed grant is internal.  Clear with sbx_grant_req_clear, also
 * after a failure. */
int sbx_grant_request(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		      json_object *grant, int writable_volumes, struct sbx_grant_req *g,
		      struct sbx_err *err);
void sbx_grant_req_clear(struct sbx_grant_req *g);

#endif
