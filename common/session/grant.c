/* grant.c - a session's grant: written from the create request that made
 * its sandbox, read back into the request for a rewind or a fork (see
 * grant.h for the stored form).
 *
 * Promise: a request rebuilt from a grant gives what the grant says and
 * nothing more: no field of it is read from anywhere else but the
 * profile (when there is no grant), and a grant that does not parse is
 * an error, never a fallback to wider defaults. */
#include "grant.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "util.h"

json_object *sbx_grant_of(const struct sbx_create_req *cr)
{
	json_object *g = json_object_new_object();
	if (cr->env && json_object_object_length(cr->env))
		json_object_object_add(g, "env", json_object_get(cr->env));
	if (cr->nvolumes) {
		json_object *vs = json_object_new_array();
		for (size_t i = 0; i < cr->nvolumes; i++) {
			const struct sbx_vol_mount *m = &cr->volumes[i];
			SBX_AUTOFREE char *spec = sbx_xasprintf("%s:%s%s", m->name, m->path,
							       m->read_only ? ":ro" : "");
			json_object_array_add(vs, json_object_new_string(spec));
		}
		json_object_object_add(g, "volumes", vs);
	}
	json_object *l = json_object_new_object();
	sbx_json_set_int(l, "memory_bytes", cr->limits.memory_bytes);
	sbx_json_set_int(l, "pids", cr->limits.pids);
	json_object_object_add(l, "cpus", json_object_new_double(cr->limits.cpus));
	sbx_json_set_int(l, "disk_bytes", cr->limits.disk_bytes);
	sbx_json_set_int(l, "shm_bytes", cr->limits.shm_bytes);
	json_object_object_add(g, "limits", l);
	json_object *t = json_object_new_object();
	sbx_json_set_int(t, "seconds", cr->timeout.seconds);
	sbx_json_set_bool(t, "pause", cr->timeout.on_timeout_pause);
	if (cr->timeout.on_timeout_hibernate)
		sbx_json_set_bool(t, "hibernate", 1);
	sbx_json_set_bool(t, "auto_resume", cr->timeout.auto_resume > 0);
	json_object_object_add(g, "timeout", t);
	json_object *n = json_object_new_object();
	sbx_json_set_bool(n, "allow_internet", cr->net.allow_internet);
	sbx_json_set_bool(n, "allow_public", cr->net.allow_public);
	if (cr->net.policy)
		json_object_object_add(n, "policy", sbx_np_to_json(cr->net.policy));
	if (cr->net.allow_out)
		json_object_object_add(n, "allow_out", json_object_get(cr->net.allow_out));
	if (cr->net.deny_out)
		json_object_object_add(n, "deny_out", json_object_get(cr->net.deny_out));
	json_object_object_add(g, "network", n);
	return g;
}

void sbx_grant_req_clear(struct sbx_grant_req *g)
{
	sbx_np_clear(&g->np);
	for (size_t i = 0; i < SBX_VOLUMES_MAX; i++) {
		sbx_vol_clear(&g->vols[i]);
		free(g->paths[i]);
	}
	json_object_put(g->grant);
	memset(g, 0, sizeof(*g));
}

/* The profile's defaults, as sbx-create gives a session sandbox without
 * flags (the limits, idle timer, network and its policy, environment). */
static void from_profile(const struct sbx_profile *p, struct sbx_grant_req *g)
{
	struct sbx_create_req *cr = &g->cr;
	if (!p)
		return;
	cr->limits = p->limits;
	cr->timeout.seconds = p->idle_timeout_ms / 1000;
	cr->timeout.on_timeout_pause = p->on_timeout_pause;
	cr->timeout.on_timeout_hibernate = p->on_timeout_hibernate;
	cr->timeout.auto_resume = p->auto_resume;
	cr->net.allow_internet = p->allow_internet;
	cr->net.allow_public = p->allow_public;
	cr->env = sbx_json_obj(p->raw, "env");
	json_object *pnp = sbx_json_obj(p->raw, "network_policy");
	struct sbx_err e = {0};      /* checked when the profile loaded */
	if (pnp && sbx_np_from_json(pnp, &g->np, &e) == 0) {
		if (!g->np.dflt_set)
			sbx_np_finish(&g->np);
		cr->net.policy = &g->np;
		cr->net.allow_internet = 1;
	}
}

static int bad(struct sbx_err *err, const char *what)
{
	return sbx_fail(err, SBX_INTERNAL, "grant", "the session's grant in its binding is malformed: %s",
			what);
}

/* An optional member that must have type `t` when present. */
static int member(json_object *o, const char *k, json_type t, json_object **v)
{
	*v = NULL;
	if (!json_object_object_get_ex(o, k, v) || !*v)
		return 0;
	return json_object_is_type(*v, t) || (t == json_type_double && json_object_is_type(*v, json_type_int))
		? 0 : -1;
}

static int from_grant(json_object *g, struct sbx_grant_req *q, const char **specs, size_t *nspecs,
		      int writable_volumes, struct sbx_err *err)
{
	struct sbx_create_req *cr = &q->cr;
	json_object *env, *vols, *l, *t, *n, *pol, *ao, *dout, *v;
	if (member(g, "env", json_type_object, &env) < 0 ||
	    member(g, "volumes", json_type_array, &vols) < 0 ||
	    member(g, "limits", json_type_object, &l) < 0 ||
	    member(g, "timeout", json_type_object, &t) < 0 ||
	    member(g, "network", json_type_object, &n) < 0 || !l || !t || !n)
		return bad(err, "a member is missing or of the wrong type");
	cr->env = env;
	cr->limits.memory_bytes = sbx_json_int(l, "memory_bytes", 0);
	cr->limits.pids = sbx_json_int(l, "pids", 0);
	cr->limits.cpus = member(l, "cpus", json_type_double, &v) == 0 && v ? json_object_get_double(v) : 0;
	cr->limits.disk_bytes = sbx_json_int(l, "disk_bytes", 0);
	cr->limits.shm_bytes = sbx_json_int(l, "shm_bytes", 0);
	cr->timeout.seconds = sbx_json_int(t, "seconds", 0);
	cr->timeout.on_timeout_pause = sbx_json_bool(t, "pause", 0);
	cr->timeout.on_timeout_hibernate = cr->timeout.on_timeout_pause && sbx_json_bool(t, "hibernate", 0);
	cr->timeout.auto_resume = sbx_json_bool(t, "auto_resume", 0);
	cr->net.allow_internet = sbx_json_bool(n, "allow_internet", 0);
	cr->net.allow_public = sbx_json_bool(n, "allow_public", 0);
	if (member(n, "policy", json_type_object, &pol) < 0 ||
	    member(n, "allow_out", json_type_array, &ao) < 0 ||
	    member(n, "deny_out", json_type_array, &dout) < 0)
		return bad(err, "its network is of the wrong type");
	if (pol) {
		struct sbx_err e = {0};
		if (sbx_np_from_json(pol, &q->np, &e) < 0)
			return bad(err, "its network policy does not parse");
		cr->net.policy = &q->np;
	}
	cr->net.allow_out = ao;
	cr->net.deny_out = dout;
	*nspecs = 0;
	for (size_t i = 0; vols && i < json_object_array_length(vols); i++) {
		json_object *s = json_object_array_get_idx(vols, i);
		if (!json_object_is_type(s, json_type_string) || *nspecs == SBX_VOLUMES_MAX)
			return bad(err, "its volumes are not at most 16 strings");
		const char *spec = json_object_get_string(s);
		size_t sl = strlen(spec);
		int ro = sl > 3 && strcmp(spec + sl - 3, ":ro") == 0;
		if (ro || writable_volumes)
			specs[(*nspecs)++] = spec;
	}
	return 0;
}

int sbx_grant_request(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		      json_object *grant, int writable_volumes, struct sbx_grant_req *g,
		      struct sbx_err *err)
{
	memset(g, 0, sizeof(*g));
	if (!grant) {
		from_profile(b->profile, g);
		return 0;
	}
	g->grant = json_object_get(grant);
	const char *specs[SBX_VOLUMES_MAX];
	size_t n = 0;
	if (from_grant(grant, g, specs, &n, writable_volumes, err) < 0)
		return -1;
	if (!n)
		return 0;
	if (sbx_backend_require(b, SBX_CAP_VOLUMES, "create", err) < 0 ||
	    sbx_vol_mounts(r, b, b->profile, tenant, specs, n, g->vols, g->paths, g->mounts, err) < 0)
		return -1;
	g->cr.volumes = g->mounts;
	g->cr.nvolumes = g->nvolumes = n;
	return 0;
}
