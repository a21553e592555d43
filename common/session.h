/* session.h - one session = one sandbox, across turns, processes, hosts
 * and crashes (DESIGN §6).  Implemented in resolve.c on top of binding.c,
 * lock.c, lease.c and image.c.
 *
 * Test hooks (environment): SBX_FAULT=<point> kills the process with
 * SIGKILL at a named point (fault.h); SBX_STOP=<point> stops it with
 * SIGSTOP there instead (for fencing tests: the holder is frozen while its
 * lock expires).  Points, in order: resolve:after-lock,
 * resolve:during-rebuild (old sandbox deleted, binding not yet),
 * resolve:before-create (claim found nothing), resolve:after-backend-create,
 * resolve:before-bind, resolve:after-bind. */
#ifndef SBX_SESSION_H
#define SBX_SESSION_H

#include <stdint.h>

#include "backend.h"
#include "redis.h"

struct sbx_resolve_req {
	const char *tenant;
	const char *session;                 /* NULL with skill_image */
	int skill_image;                     /* installer: start from the tenant's image, no binding */
	const struct sbx_create_req *create; /* options for a sandbox that must be created (may be NULL) */
	/* Added by the sessions work: how long to wait for the session's
	 * lifecycle lock.  0 = $SBX_LOCK_WAIT, else 90 s; < 0 = try once
	 * (busy is a conflict, exit 75). */
	int64_t lock_wait_ms;
};

/* Resolve the session's sandbox (see resolve.c for the contract).  *how is
 * "bound", "claimed", "created" or "rebuilt" (static string). */
int sbx_session_resolve(struct sbx_backend *b, struct sbx_redis *r,
			const struct sbx_resolve_req *req, struct sbx_sandbox *out,
			const char **how, struct sbx_err *err);

/* Ownership metadata keys every session sandbox carries. */
#define SBX_MD_MANAGED "sbx.managed"
#define SBX_MD_TENANT "sbx.tenant"
#define SBX_MD_SESSION "sbx.session"
#define SBX_MD_PROFILE "sbx.profile"
#define SBX_MD_BINDING_VERSION "sbx.binding_version"
#define SBX_MD_CREATED_BY "sbx.created_by"
#define SBX_MD_PURPOSE "sbx.purpose"                  /* "skill-install" for installers */
#define SBX_MD_IMAGE_GENERATION "sbx.image_generation" /* installers: the image they started from */

#endif
