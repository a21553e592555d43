/* app.c - see app.h. */
#include "app.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "lease.h"
#include "util.h"

/* A slot with both its backend and its Redis: the backend sees its
 * session sandboxes' leases (backend.h, struct sbx_idle_seen). */
static void link_seen(struct sbx_app_slot *s)
{
	if (!s->backend || !s->redis)
		return;
	s->seen = sbx_turn_idle_seen(s->redis);
	s->backend->idle_seen = &s->seen;
}

static void select_slot(struct sbx_app *a, size_t i)
{
	i = a->slots[i].same;
	a->cur = i;
	a->profile = a->slots[i].profile;
	a->backend = a->slots[i].backend;
	a->redis = a->slots[i].redis;
}

/* Slots are keyed by the name asked for ("" for none), and a name that
 * loads a profile already open (the default asked for by its own name)
 * shares that slot's profile, backend and Redis: each profile is loaded
 * and opened once. */
int sbx_app_use(struct sbx_app *a, json_object *sandbox, struct sbx_err *err)
{
	const char *name = a->profile_flag;
	if (!name && sandbox) {
		const char *p = sbx_json_str(sandbox, "profile");
		if (p && *p && strcmp(p, "default") != 0)
			name = p;
	}
	const char *asked = name ? name : "";
	for (size_t i = 0; i < a->nslots; i++)
		if (strcmp(a->slots[i].asked, asked) == 0) {
			select_slot(a, i);
			return 0;
		}
	if (a->nslots == SBX_APP_PROFILES_MAX)
		return sbx_fail(err, SBX_CAPACITY, "profile",
				"the documents name more than %d profiles; split the stream",
				SBX_APP_PROFILES_MAX);
	struct sbx_profile *p;
	if (sbx_config_load(name, &p, err) < 0)
		return -1;
	if (sbx_backend_configure(p, err) < 0) {
		sbx_profile_free(p);
		return -1;
	}
	struct sbx_app_slot *s = &a->slots[a->nslots];
	s->asked = sbx_xstrdup(asked);
	s->profile = p;
	s->same = a->nslots;
	for (size_t i = 0; i < a->nslots; i++)
		if (a->slots[i].profile && strcmp(a->slots[i].profile->name, p->name) == 0) {
			/* Same profile: an alias without a profile of its own. */
			sbx_profile_free(p);
			s->profile = NULL;
			s->same = i;
			break;
		}
	select_slot(a, a->nslots++);
	return 0;
}

int sbx_app_backend(struct sbx_app *a, json_object *sandbox, struct sbx_backend **out,
		    struct sbx_err *err)
{
	if (sbx_app_use(a, sandbox, err) < 0)
		return -1;
	struct sbx_app_slot *s = &a->slots[a->cur];
	if (!s->backend) {
		if (sbx_backend_open(s->profile, &s->backend, err) < 0)
			return -1;
		a->backend = s->backend;
		link_seen(s);
	}
	*out = s->backend;
	return 0;
}

int sbx_app_redis(struct sbx_app *a, struct sbx_redis **out, struct sbx_err *err)
{
	if (!a->nslots && sbx_app_use(a, NULL, err) < 0)
		return -1;
	struct sbx_app_slot *s = &a->slots[a->cur];
	if (!s->redis) {
		if (sbx_redis_open(s->profile, &s->redis, err) < 0)
			return -1;
		a->redis = s->redis;
		link_seen(s);
	}
	*out = s->redis;
	return 0;
}

void sbx_app_close(struct sbx_app *a)
{
	for (size_t i = 0; i < a->nslots; i++) {
		struct sbx_app_slot *s = &a->slots[i];
		if (s->backend)
			s->backend->idle_seen = NULL;     /* its Redis goes first */
		if (s->redis)
			sbx_redis_close(s->redis);
		sbx_backend_close(s->backend);
		sbx_profile_free(s->profile);
		free(s->asked);
		memset(s, 0, sizeof(*s));
	}
	a->nslots = a->cur = 0;
	a->redis = NULL;
	a->backend = NULL;
	a->profile = NULL;
}
