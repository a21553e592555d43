/* app.h - what a program opens on the way in and closes on the way out:
 * the profile, the backend, and (lazily) Redis.  One place so that every
 * program resolves "which profile" the same way: --profile, else the
 * profile recorded in the document's sandbox handle, else $SBX_PROFILE,
 * else the config file's default. */
#ifndef SBX_APP_H
#define SBX_APP_H

#include "backend.h"
#include "config.h"
#include "redis.h"

struct sbx_app {
	const char *profile_flag;     /* --profile, or NULL */
	struct sbx_profile *profile;
	struct sbx_backend *backend;
	struct sbx_redis *redis;
};

/* Open the profile and its backend once; later calls return the same.
 * `sandbox` (a document's handle, may be NULL) names a profile when no
 * --profile was given. */
int sbx_app_backend(struct sbx_app *a, json_object *sandbox, struct sbx_backend **out,
		    struct sbx_err *err);
/* Open Redis (after the profile); later calls return the same. */
int sbx_app_redis(struct sbx_app *a, struct sbx_redis **out, struct sbx_err *err);
void sbx_app_close(struct sbx_app *a);

#endif
