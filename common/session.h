/* session.h - one session = one sandbox, across turns, processes, hosts
 * and crashes (DESIGN §6).  Implemented in resolve.c on top of binding.c,
 * lock.c and lease.c.  (Owner: the sessions work; this first version only
 * fixes the entry point that sbx-create calls.) */
#ifndef SBX_SESSION_H
#define SBX_SESSION_H

#include "backend.h"
#include "redis.h"

struct sbx_resolve_req {
	const char *tenant;
	const char *session;                 /* NULL with skill_image */
	int skill_image;                     /* installer: start from the tenant's image, no binding */
	const struct sbx_create_req *create; /* options for a sandbox that must be created */
};

/* Resolve the session's sandbox (see resolve.c for the contract).  *how is
 * "bound", "claimed", "created" or "rebuilt" (static string). */
int sbx_session_resolve(struct sbx_backend *b, struct sbx_redis *r,
			const struct sbx_resolve_req *req, struct sbx_sandbox *out,
			const char **how, struct sbx_err *err);

#endif
