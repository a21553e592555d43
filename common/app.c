/* app.c - see app.h. */
#include "app.h"

#include <string.h>

#include "doc.h"

static int app_profile(struct sbx_app *a, json_object *sandbox, struct sbx_err *err)
{
	if (a->profile)
		return 0;
	const char *name = a->profile_flag;
	if (!name && sandbox) {
		const char *p = sbx_json_str(sandbox, "profile");
		if (p && *p && strcmp(p, "default") != 0)
			name = p;
	}
	return sbx_config_load(name, &a->profile, err);
}

int sbx_app_backend(struct sbx_app *a, json_object *sandbox, struct sbx_backend **out,
		    struct sbx_err *err)
{
	if (!a->backend) {
		if (app_profile(a, sandbox, err) < 0)
			return -1;
		if (sbx_backend_open(a->profile, &a->backend, err) < 0)
			return -1;
	}
	*out = a->backend;
	return 0;
}

int sbx_app_redis(struct sbx_app *a, struct sbx_redis **out, struct sbx_err *err)
{
	if (!a->redis) {
		if (app_profile(a, NULL, err) < 0)
			return -1;
		if (sbx_redis_open(a->profile, &a->redis, err) < 0)
			return -1;
	}
	*out = a->redis;
	return 0;
}

void sbx_app_close(struct sbx_app *a)
{
	if (a->redis)
		sbx_redis_close(a->redis);
	sbx_backend_close(a->backend);
	sbx_profile_free(a->profile);
	a->redis = NULL;
	a->backend = NULL;
	a->profile = NULL;
}
