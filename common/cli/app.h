/* app.h - what a program opens on the way in and closes on the way out:
 * the profile, the backend, and (lazily) Redis.  One place so that every
 * program resolves "which profile" the same way: --profile, else the
 * profile recorded in the document's sandbox handle, else $SBX_PROFILE,
 * else the config file's default.
 *
 * A stream may mix documents of several profiles: each document is acted
 * on with its own profile's backend and Redis.  Each profile is loaded and
 * opened once per run and kept until sbx_app_close; `profile`, `backend`
 * and `redis` below are those of the profile the last call selected. */
#ifndef SBX_APP_H
#define SBX_APP_H

#include "backend.h"
#include "config.h"
#include "redis.h"

#define SBX_APP_PROFILES_MAX 16   /* profiles one run may open */

struct sbx_app_slot {
	char *asked;                  /* the name asked for; "" = no name */
	size_t same;                  /* the slot that holds its profile (itself or an earlier one) */
	struct sbx_profile *profile;
	struct sbx_backend *backend;
	struct sbx_redis *redis;
	struct sbx_idle_seen seen;    /* the leases of `redis`, once both are open:
				       * the backend's idle_seen (lease.h) */
};

struct sbx_app {
	const char *profile_flag;     /* --profile, or NULL */
	struct sbx_profile *profile;  /* the selected slot's, or NULL */
	struct sbx_backend *backend;
	struct sbx_redis *redis;
	struct sbx_app_slot slots[SBX_APP_PROFILES_MAX];
	size_t nslots, cur;
};

/* Select the profile for a document: --profile, else `sandbox`'s (a
 * document's handle, may be NULL), else the default.  Loads it the first
 * time it is named.  Does not open anything. */
int sbx_app_use(struct sbx_app *a, json_object *sandbox, struct sbx_err *err);
/* sbx_app_use, then open that profile's backend (once).  Once a slot has
 * both its backend and its Redis, the backend's idle_seen is that Redis's
 * leases (sbx_turn_idle_seen): a sweep the backend runs then sees them. */
int sbx_app_backend(struct sbx_app *a, json_object *sandbox, struct sbx_backend **out,
		    struct sbx_err *err);
/* Open Redis of the selected profile (the default when none was selected
 * yet); later calls for the same profile return the same connection. */
int sbx_app_redis(struct sbx_app *a, struct sbx_redis **out, struct sbx_err *err);
void sbx_app_close(struct sbx_app *a);

#endif
