/* resolve.c - session resolve: the session's one sandbox (DESIGN §6,
 * reference §3.5, §3.7, §3.9).
 *
 * Promise: whatever crashes where, and however many processes resolve the
 * same session at once, the session ends up with exactly one bound sandbox,
 * and a sandbox this code creates is either bound or findable by its
 * ownership metadata (so the next resolve claims it, or the reaper removes
 * it).  Every decision is taken under the session's lifecycle lock and every
 * binding write is fenced, so a holder that lost its lock cannot undo a
 * newer holder's work.  Errors other than not_found/terminal never replace
 * a binding: a flaky backend or Redis keeps the sandbox. */
#include "session.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "grant.h"
#include "doc.h"
#include "events.h"
#include "image.h"
#include "keys.h"
#include "host.h"
#include "keyspace.h"
#include "lease.h"
#include "lock.h"
#include "fault.h"
#include "pager.h"
#include "quota.h"
#include "util.h"

struct rs {
	struct sbx_backend *b;
	struct sbx_redis *r;
	const struct sbx_resolve_req *req;
	const char *tenant, *session, *profile;
	unsigned caps;
	const char *host;        /* host-local backends: this host's id (host.h) */
	struct sbx_lock *lock;
	char run_id[17];
	char keyspace[SBX_KEYSPACE_LEN + 1];   /* "" until needed (keyspace.h) */
	int rebuilding;          /* a stale sandbox was removed: result is "rebuilt" */
};

/* SBX_FAULT kills here; SBX_STOP stops here (fencing tests): fault.h. */
static void point(const char *name)
{
	sbx_fault(name);
}

static const struct sbx_quota no_quota = SBX_QUOTA_NONE_INIT;

/* The profile's quota (quota.h: a tenant's own overrides it in Redis). */
static const struct sbx_quota *quota_of(const struct rs *c)
{
	return c->b->profile ? &c->b->profile->quota : &no_quota;
}

static int gone_state(enum sbx_state s)
{
	return s == SBX_STATE_TERMINAL;
}

static void fill_owner(struct rs *c, struct sbx_sandbox *sb)
{
	if (!sb->tenant)
		sb->tenant = sbx_xstrdup(c->tenant);
	if (!sb->session && c->session)
		sb->session = sbx_xstrdup(c->session);
}

/* The session's event (events.h): written, or counted as not written. */
static void event(struct rs *c, const char *type, const char *sandbox, const char *how,
		  const char *why)
{
	struct sbx_event ev = {.type = type, .tenant = c->tenant, .session = c->session,
			       .sandbox = sandbox, .how = how, .why = why};
	sbx_event_emit(c->r, &ev);
}

/* Remove a sandbox under lock `l` (sbx_session_remove: `where` is the test
 * point, the lock's token and fence are verified right before the delete),
 * treating "already gone" as done.  -1 when the lock was lost (conflict,
 * nothing deleted) or the backend failed. */
static int remove_sandbox(struct rs *c, struct sbx_lock *l, const char *id, const char *where,
			  struct sbx_err *err)
{
	int gone = 0;
	if (sbx_session_remove(c->b, l, id, where, &gone, err) < 0)
		return sbx_err_may_replace_binding(err) ? 0 : -1;
	if (!gone)
		event(c, "killed", id, NULL, strstr(where, "rebuild") ? "rebuild"
					   : strstr(where, "duplicate") ? "duplicate" : "cleanup");
	return 0;
}

/* Drop a binding that names `id` (the sandbox is gone or being replaced).
 * Under our lock nobody else can have changed it, so "no match" means the
 * world moved under us: conflict, as in the reference. */
static int drop_binding(struct rs *c, const char *id, struct sbx_err *err)
{
	int rc = sbx_binding_delete_if_match(c->r, c->lock, c->tenant, c->session, id, err);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return sbx_fail(err, SBX_CONFLICT, "resolve",
				"the session's binding changed during replacement");
	return 0;
}

/* The template for a new sandbox: the tenant's image when its fingerprint
 * equals this backend's, else the base.  *gen = the image generation (0
 * when none).  `strict` (installers) refuses a mismatched image instead of
 * silently installing on the base, which would drop the tenant's skills. */
static int choose_template(struct rs *c, const char *base, char **out, int64_t *gen, int strict,
			   struct sbx_err *err)
{
	struct sbx_image im;
	*out = NULL;
	*gen = 0;
	int found = sbx_image_get(c->r, c->tenant, &im, err);
	if (found < 0)
		return -1;     /* fail closed: never guess the image */
	char fp[65] = "";
	int have_fp = 0;
	if (c->b->ops->fingerprint) {
		if (sbx_call(c->b, fingerprint, err, fp) < 0) {
			if (found)
				sbx_image_clear(&im);
			return -1;
		}
		have_fp = fp[0] != '\0';
	}
	if (strict && !have_fp) {
		if (found)
			sbx_image_clear(&im);
		return sbx_fail(err, SBX_INVALID_REQUEST, "resolve",
				"this profile has no backend fingerprint: skill images are refused");
	}
	if (found && have_fp && strcmp(im.fingerprint, fp) == 0) {
		*out = sbx_xstrdup(im.snapshot_id);
		*gen = im.generation;
	} else if (found && strict) {
		sbx_image_clear(&im);
		return sbx_fail(err, SBX_INVALID_REQUEST, "resolve",
				"the tenant's skill image was built for another backend identity "
				"(fingerprint mismatch); refusing to install over the base template");
	} else {
		*out = sbx_xstrdup(base ? base : "");
	}
	if (found)
		sbx_image_clear(&im);
	return 0;
}

/* The keyspace id, read once per resolve and only on the paths that create
 * or claim: a bound session costs no extra round trip. */
static int need_keyspace(struct rs *c, struct sbx_err *err)
{
	return c->keyspace[0] ? 0 : sbx_keyspace_id(c->r, c->keyspace, err);
}

/* The metadata that says who owns a sandbox; c->keyspace must be set. */
static json_object *ownership(struct rs *c, json_object *base)
{
	json_object *md = json_object_new_object();
	if (base) {
		json_object_object_foreach(base, k, v)
			json_object_object_add(md, k, json_object_get(v));
	}
	sbx_json_set_str(md, SBX_MD_MANAGED, "1");
	sbx_json_set_str(md, SBX_MD_TENANT, c->tenant);
	sbx_json_set_str(md, SBX_MD_PROFILE, c->profile);
	sbx_json_set_str(md, SBX_MD_KEYSPACE, c->keyspace);
	sbx_json_set_str(md, SBX_MD_CREATED_BY, c->run_id);
	if (c->session) {
		sbx_json_set_str(md, SBX_MD_SESSION, c->session);
		sbx_json_set_str(md, SBX_MD_BINDING_VERSION, "1");
	}
	return md;
}

/* Bind `sb` (fenced SET NX).  On any failure the caller decides about the
 * sandbox; here we only report.  1 bound, -1 error. */
static int bind_session(struct rs *c, const struct sbx_sandbox *sb, const char *template_id,
		const struct sbx_create_req *cr, struct sbx_err *err)
{
	json_object *grant = cr ? sbx_grant_of(cr) : NULL;
	struct sbx_binding nb = {
		.backend = c->b->ops->name ? (char *)c->b->ops->name : "",
		.tenant = (char *)c->tenant,
		.session = (char *)c->session,
		.sandbox_id = sb->id,
		.template_id = (char *)(template_id ? template_id : (sb->template_id ? sb->template_id : "")),
		.profile = (char *)c->profile,
		.host = (char *)c->host,
		.created_at = sb->created_at > 0 ? sb->created_at : sbx_now_ms() / 1000,
		.grant = grant,
	};
	/* The tenant index lives in another hash slot, so it cannot join the
	 * binding script; registering first is harmless if we die after. */
	SBX_AUTOFREE char *tenants = sbx_key_tenants(c->r->prefix);
	const char *sadd[] = {"SADD", tenants, c->tenant};
	redisReply *rep;
	if (sbx_redis_cmd(c->r, &rep, err, 3, sadd, NULL) < 0) {
		json_object_put(grant);
		return -1;
	}
	freeReplyObject(rep);
	point("resolve:before-bind");
	struct sbx_binding existing;
	int rc = sbx_binding_create(c->r, c->lock, &nb, &existing, err);
	json_object_put(grant);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		int ours = existing.sandbox_id && strcmp(existing.sandbox_id, sb->id) == 0;
		sbx_binding_clear(&existing);
		if (ours)
			return 1;
		return sbx_fail(err, SBX_CONFLICT, "resolve",
				"another process bound the session meanwhile");
	}
	point("resolve:after-bind");
	return 1;
}

/* Step 1: the session has a binding.  Returns 1 with *out filled (bound),
 * 0 to go on (binding dropped, or a stale sandbox removed), -1 error (the
 * binding is kept). */
static int use_binding(struct rs *c, const struct sbx_binding *bd, const struct sbx_turn *turn,
		       int turn_ok, struct sbx_sandbox *out, struct sbx_err *err)
{
	if (strcmp(bd->backend, c->b->ops->name) || strcmp(bd->profile, c->profile)) {
		/* Bound under another backend or profile: that sandbox is not
		 * ours to touch (other credentials).  Drop the binding only; its
		 * own profile's reaper collects the sandbox, now unbound. */
		return drop_binding(c, bd->sandbox_id, err) < 0 ? -1 : 0;
	}
	if (c->host && bd->host && strcmp(bd->host, c->host)) {
		/* The sandbox lives on another host: this host's backend cannot
		 * see it, and "not found here" must not read as "gone" (a
		 * rebuild would orphan it).  The binding is kept. */
		return sbx_fail(err, SBX_CONFLICT, "resolve",
				"session %s of tenant %s is bound to sandbox %s on host '%s'; this "
				"is host '%s': resolve it there (or end it there with sbx-ctl kill)",
				c->session, c->tenant, bd->sandbox_id, bd->host, c->host);
	}
	struct sbx_sandbox sb = {0};
	int gone = 0;
	if (sbx_call(c->b, get, err, bd->sandbox_id, &sb) < 0) {
		if (!sbx_err_may_replace_binding(err))
			return -1;
		gone = 1;
	} else if (gone_state(sb.state)) {
		gone = 1;
	}
	if (gone) {
		/* Ended outside sbx (an idle kill, a crash, a hand): what we
		 * saw, not who did it. */
		sbx_sandbox_clear(&sb);
		if (drop_binding(c, bd->sandbox_id, err) < 0)
			return -1;
		event(c, "killed", bd->sandbox_id, NULL, "found-gone");
		return 0;
	}
	if (bd->stale_at) {
		/* Rebuild when no turn is active or this is the turn's first
		 * resolve; an unreadable lease keeps the sandbox. */
		int rebuild = turn_ok && (!turn->active || turn->rebuild);
		if (rebuild) {
			/* Sandbox first, binding second: a crash in between leaves
			 * a binding to a gone sandbox (dropped next time), never an
			 * unbound stale sandbox that a claim would re-adopt. */
			if (remove_sandbox(c, c->lock, bd->sandbox_id, "resolve:before-rebuild-delete",
					   err) < 0) {
				sbx_sandbox_clear(&sb);
				return -1;
			}
			point("resolve:during-rebuild");
			sbx_sandbox_clear(&sb);
			if (drop_binding(c, bd->sandbox_id, err) < 0)
				return -1;
			c->rebuilding = 1;
			return 0;
		}
	}
	int was_paused = sb.state == SBX_STATE_PAUSED;
	/* A paused sandbox takes a running slot before it is thawed; the
	 * binding stays whatever the quota says. */
	SBX_AUTOFREE char *before = NULL;
	if (was_paused &&
	    sbx_quota_resume(c->r, quota_of(c), c->tenant, c->session, &before, err) < 0) {
		sbx_sandbox_clear(&sb);
		return -1;
	}
	if (sbx_call(c->b, connect, err, &sb) < 0) {
		sbx_quota_restore(c->r, c->tenant, c->session, before);
		sbx_sandbox_clear(&sb);
		if (!sbx_err_may_replace_binding(err))
			return -1;
		return drop_binding(c, bd->sandbox_id, err) < 0 ? -1 : 0;
	}
	if (was_paused)
		event(c, "resumed", sb.id, NULL, "resolve");
	fill_owner(c, &sb);
	*out = sb;
	return 1;
}

static int cmp_candidates(const void *x, const void *y)
{
	const struct sbx_sandbox *a = x, *b = y;
	/* Oldest first; an unknown time (0) sorts last; ties by id. */
	if (a->created_at != b->created_at) {
		if (!a->created_at)
			return 1;
		if (!b->created_at)
			return -1;
		return a->created_at < b->created_at ? -1 : 1;
	}
	return strcmp(a->id ? a->id : "", b->id ? b->id : "");
}

static int metadata_matches(json_object *want, json_object *have)
{
	json_object_object_foreach(want, k, v) {
		const char *h = sbx_json_str(have, k);
		if (!h || strcmp(h, json_object_get_string(v)))
			return 0;
	}
	return 1;
}

/* Step 2: claim a sandbox of this session by metadata (a crash between
 * create and bind, or a lost binding).  1 claimed (*out), 0 none, -1 error:
 * a failing list creates nothing (fail closed). */
static int claim(struct rs *c, struct sbx_sandbox *out, struct sbx_err *err)
{
	if ((c->caps & (SBX_CAP_METADATA | SBX_CAP_LIST)) != (SBX_CAP_METADATA | SBX_CAP_LIST))
		return 0;
	if (need_keyspace(c, err) < 0)
		return -1;
	json_object *want = json_object_new_object();
	sbx_json_set_str(want, SBX_MD_MANAGED, "1");
	sbx_json_set_str(want, SBX_MD_TENANT, c->tenant);
	sbx_json_set_str(want, SBX_MD_SESSION, c->session);
	sbx_json_set_str(want, SBX_MD_PROFILE, c->profile);
	sbx_json_set_str(want, SBX_MD_KEYSPACE, c->keyspace);   /* never another keyspace's */
	sbx_json_set_str(want, SBX_MD_BINDING_VERSION, "1");
	struct sbx_list_filter f = {
		.metadata = want,
		.states = (1u << SBX_STATE_RUNNING) | (1u << SBX_STATE_PAUSED),
	};
	struct sbx_sandbox *all = NULL;
	size_t n = 0;
	int rc = sbx_list_all(c->b, &f, &all, &n, NULL, err);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!metadata_matches(want, all[i].metadata))
			rc = sbx_fail(err, SBX_INTERNAL, "resolve",
				      "the backend ignored the metadata filter; refusing to adopt");
	ssize_t adopted = -1;
	if (rc == 0 && n) {
		qsort(all, n, sizeof(*all), cmp_candidates);
		for (size_t i = 0; i < n; i++) {
			if (!all[i].id || !*all[i].id || gone_state(all[i].state))
				continue;
			if (sbx_call(c->b, connect, err, &all[i]) < 0) {
				if (sbx_err_may_replace_binding(err))
					continue;
				rc = -1;
				break;
			}
			adopted = (ssize_t)i;
			break;
		}
	}
	if (rc == 0 && adopted >= 0) {
		/* Duplicates: every other live candidate.  Deleting them is best
		 * effort (the reaper finishes the job), but a lost lock ends the
		 * resolve: they, and the one we meant to adopt, may be the next
		 * holder's by now. */
		for (size_t i = 0; rc == 0 && i < n; i++) {
			if ((ssize_t)i == adopted || !all[i].id || gone_state(all[i].state))
				continue;
			struct sbx_err e = {0}, lost = {0};
			if (remove_sandbox(c, c->lock, all[i].id, "resolve:before-duplicate-delete",
					   &e) < 0 && sbx_lock_check(c->lock, &lost) < 0) {
				*err = e;
				rc = -1;
			}
		}
		if (rc == 0)    /* on failure keep it: it is findable by metadata */
			rc = bind_session(c, &all[adopted], NULL, NULL, err) < 0 ? -1 : 1;
	}
	if (rc == 1) {
		*out = all[adopted];
		memset(&all[adopted], 0, sizeof(all[adopted]));
		fill_owner(c, out);
	}
	for (size_t i = 0; i < n; i++)
		sbx_sandbox_clear(&all[i]);
	free(all);
	json_object_put(want);
	return rc;
}

static void request_from(const struct sbx_resolve_req *req, const struct sbx_backend *b,
			 struct sbx_create_req *cr)
{
	if (req->create) {
		*cr = *req->create;
	} else {
		memset(cr, 0, sizeof(*cr));
		cr->template_id = b->profile ? b->profile->template_id : NULL;
	}
}

/* A sandbox we created could not be bound.  Delete it - but only if it is
 * still nobody's: a holder that lost its lock (SIGSTOP past the TTL) may
 * find that the next holder has meanwhile claimed this very sandbox by its
 * metadata.  So decide under the lock: our own when we still hold it, a
 * fresh one (2 s) when ours was lost; and the delete itself verifies that
 * lock's token and fence first (sbx_session_remove), since "still hold it"
 * is only the renewal thread's last word.  When the binding cannot be read, or
 * the lock cannot be had, keep the sandbox: it carries ownership metadata,
 * so the next resolve claims it or the reaper removes it. */
static void cleanup_ours(struct rs *c, const char *id)
{
	struct sbx_err e = {0};
	struct sbx_lock *fresh = NULL;
	struct sbx_lock *l = c->lock;
	if (c->lock->tk.lost) {
		if (sbx_lock_acquire(c->r, c->tenant, strlen(c->tenant), c->session,
				     strlen(c->session), 2000, &fresh, &e) < 0)
			return;
		l = fresh;
	}
	struct sbx_binding cur = {0};
	int found = 0, readable = 1;
	if (fresh) {
		if (fresh->binding_raw) {
			if (sbx_binding_decode(fresh->binding_raw, fresh->binding_len, c->tenant,
					       c->session, &cur, &e) == 0)
				found = 1;
			else
				readable = 0;
		}
	} else {
		found = sbx_binding_get(c->r, c->tenant, c->session, &cur, &e);
		readable = found >= 0;
	}
	int bound_to_it = found > 0 && cur.sandbox_id && strcmp(cur.sandbox_id, id) == 0;
	if (found > 0)
		sbx_binding_clear(&cur);
	if (readable && !bound_to_it)
		remove_sandbox(c, l, id, "resolve:before-cleanup-delete", &e);
	if (fresh)
		sbx_lock_release(fresh, &e);
}

/* Step 3: create and bind.  If binding fails, delete the sandbox we just
 * created (only ours, see cleanup_ours), so nothing unbound is left behind
 * by a clean error; a crash before the bind leaves it to the next
 * resolve's claim (or to the reaper). */
static int create_and_bind(struct rs *c, struct sbx_sandbox *out, struct sbx_err *err)
{
	struct sbx_create_req cr;
	request_from(c->req, c->b, &cr);
	SBX_AUTOFREE char *tpl = NULL;
	int64_t gen = 0;
	if (c->req->fork_snapshot)
		cr.template_id = c->req->fork_snapshot;
	else if (choose_template(c, cr.template_id, &tpl, &gen, 0, err) < 0)
		return -1;
	else
		cr.template_id = *tpl ? tpl : cr.template_id;
	if (need_keyspace(c, err) < 0)
		return -1;
	cr.metadata = ownership(c, cr.metadata);
	point("resolve:before-create");
	struct sbx_sandbox sb = {0};
	int rc = sbx_backend_create(c->b, &cr, &sb, err);
	json_object_put(cr.metadata);
	if (rc < 0)
		return -1;
	event(c, "created", sb.id, NULL, NULL);
	point("resolve:after-backend-create");
	if (bind_session(c, &sb, cr.template_id, &cr, err) < 0) {
		cleanup_ours(c, sb.id);
		sbx_sandbox_clear(&sb);
		return -1;
	}
	fill_owner(c, &sb);
	*out = sb;
	return 0;
}

/* Installer sandbox for `sbx-create --tenant T --skill-image`: from the
 * tenant's current image (fingerprint-checked), tagged as an installer, no
 * binding (the reaper removes it once it is old and unbound). */
static int installer(struct rs *c, struct sbx_sandbox *out, const char **how,
		     struct sbx_err *err)
{
	struct sbx_create_req cr;
	request_from(c->req, c->b, &cr);
	SBX_AUTOFREE char *tpl = NULL;
	int64_t gen = 0;
	if (choose_template(c, cr.template_id, &tpl, &gen, 1, err) < 0)
		return -1;
	cr.template_id = *tpl ? tpl : cr.template_id;
	if (need_keyspace(c, err) < 0)
		return -1;
	cr.metadata = ownership(c, cr.metadata);
	sbx_json_set_str(cr.metadata, SBX_MD_PURPOSE, SBX_PURPOSE_SKILL_INSTALL);
	char g[24];
	snprintf(g, sizeof(g), "%lld", (long long)gen);
	sbx_json_set_str(cr.metadata, SBX_MD_IMAGE_GENERATION, g);
	int rc = sbx_backend_create(c->b, &cr, out, err);
	json_object_put(cr.metadata);
	if (rc < 0)
		return -1;
	event(c, "created", out->id, NULL, SBX_PURPOSE_SKILL_INSTALL);
	fill_owner(c, out);
	*how = "created";
	return 0;
}

/* Under the lock: steps 1-3.  The turn lease is observed (and its rebuild
 * ticket consumed) on every resolve, as in the reference: the first resolve
 * of a turn spends the ticket whether or not the binding is stale yet, so
 * an install that lands mid-turn waits for the next turn. */
static int resolve_locked(struct rs *c, struct sbx_sandbox *out, const char **how,
			  struct sbx_err *err)
{
	point("resolve:after-lock");
	struct sbx_binding bd = {0};
	int have = 0;
	if (c->lock->binding_raw) {
		if (sbx_binding_decode(c->lock->binding_raw, c->lock->binding_len, c->tenant,
				       c->session, &bd, err) < 0)
			return -1;      /* malformed: fail closed, never "absent" */
		have = 1;
	}
	struct sbx_turn turn = {0};
	struct sbx_err terr = {0};
	int turn_ok = sbx_turn_observe(c->r, c->tenant, c->session, &turn, &terr) == 0;
	if (!turn_ok && !c->r->c) {
		/* Not a lease problem: Redis itself is gone.  Nothing below
		 * could be recorded, so stop here (keeping everything). */
		*err = terr;
		sbx_binding_clear(&bd);
		return -1;
	}
	if (have && c->req->fork_snapshot) {
		sbx_binding_clear(&bd);
		return sbx_fail(err, SBX_CONFLICT, "fork", "session '%s' already has a sandbox: a fork makes a new session",
				c->session);
	}
	if (have) {
		int rc = use_binding(c, &bd, &turn, turn_ok, out, err);
		sbx_binding_clear(&bd);
		if (rc != 0) {
			if (rc > 0)
				*how = "bound";
			return rc < 0 ? -1 : 0;
		}
	}
	/* No binding: a new one needs a quota slot, taken before any backend
	 * work and given back if no binding comes of it. */
	if (sbx_quota_reserve(c->r, c->lock, quota_of(c), c->tenant, c->session, err) < 0)
		return -1;
	int rc = c->req->fork_snapshot ? 0 : claim(c, out, err);
	if (rc == 0)
		rc = create_and_bind(c, out, err);
	if (rc < 0) {
		sbx_quota_unreserve(c->r, c->lock, c->tenant, c->session);
		return -1;
	}
	if (rc > 0) {
		*how = "claimed";
		return 0;
	}
	*how = c->rebuilding ? "rebuilt" : "created";
	return 0;
}

/* Release the lock with the `resolved` event in the same round trip (the
 * bound path stays at its round trips: docs/design.md), written only if
 * the lock was still ours. */
static int release_resolved(struct rs *c, const char *id, const char *how, struct sbx_err *err)
{
	struct sbx_event ev = {.type = "resolved", .tenant = c->tenant, .session = c->session,
			       .sandbox = id, .how = how};
	/* A bound resolve changed nothing: no audit record (and no round
	 * trip for it); a created, claimed or rebuilt one is a change. */
	if (strcmp(how, "bound") != 0)
		sbx_event_audit(c->r, &ev);
	struct sbx_event_xadd x;
	if (sbx_event_xadd(c->r, &ev, &x) <= 0)
		return sbx_lock_release(c->lock, err);
	char xerr[256];
	int rc = sbx_lock_release_rider(c->lock, x.key, "XADD", x.argc, x.argv, xerr, sizeof(xerr),
					err);
	sbx_event_xadd_done(&x, xerr);
	sbx_event_xadd_clear(&x);
	return rc;
}

int sbx_session_resolve(struct sbx_backend *b, struct sbx_redis *r,
			const struct sbx_resolve_req *req, struct sbx_sandbox *out,
			const char **how, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	*how = NULL;
	struct rs c = {
		.b = b, .r = r, .req = req, .tenant = req->tenant, .session = req->session,
		.profile = b->profile && b->profile->name ? b->profile->name : "default",
	};
	if (!req->tenant || sbx_id_check("tenant", req->tenant, strlen(req->tenant), err) < 0)
		return req->tenant ? -1 : sbx_fail(err, SBX_INVALID_REQUEST, "resolve", "no tenant");
	if (sbx_random_hex(c.run_id, 8, err) < 0)
		return -1;
	c.caps = sbx_backend_caps(b);
	SBX_AUTOFREE char *host = NULL;
	if (c.caps & SBX_CAP_HOST_LOCAL) {
		if (!(host = sbx_host_id(err)))
			return -1;
		c.host = host;
	}
	if (req->skill_image) {
		c.session = NULL;
		return installer(&c, out, how, err);
	}
	if (!req->session || sbx_id_check("session", req->session, strlen(req->session), err) < 0)
		return req->session ? -1 : sbx_fail(err, SBX_INVALID_REQUEST, "resolve", "no session");

	int64_t wait = req->lock_wait_ms;
	wait = wait < 0 ? 0 : wait == 0 ? sbx_lock_wait_ms(90000) : wait;
	if (sbx_lock_acquire(r, c.tenant, strlen(c.tenant), c.session, strlen(c.session), wait,
			     &c.lock, err) < 0)
		return -1;
	int rc = resolve_locked(&c, out, how, err);
	struct sbx_err rel = {0};
	if ((rc == 0 ? release_resolved(&c, out->id, *how, &rel) : sbx_lock_release(c.lock, &rel)) < 0 &&
	    rc == 0 && rel.kind == SBX_CONFLICT) {
		/* Our writes were fenced, so what we bound is consistent; but we
		 * can no longer vouch that nobody acted after us.  Report, as the
		 * reference does; a retry resolves to the bound sandbox. */
		sbx_sandbox_clear(out);
		*how = NULL;
		*err = rel;
		return -1;
	}
	if (rc < 0) {
		*how = NULL;
		return -1;
	}
	return 0;
}
