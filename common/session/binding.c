/* binding.c - session bindings and the tenant's bound set (see binding.h).
 *
 * Every write is one Lua script touching only keys of one tenant (one hash
 * slot), so a binding and the bound set never disagree, even on a crash
 * between two steps: there are no two steps.  Scripts never re-encode the
 * JSON (cjson would turn integers into floats); C builds the whole value. */
#include "binding.h"

#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "doc.h"
#include "events.h"
#include "keys.h"
#include "metadata.h"
#include "util.h"

/* Fence check shared by the locked scripts: KEYS[2] lock, KEYS[3] fence
 * counter, ARGV[1] token ('' = no lock held: skip), ARGV[2] fence.  The
 * counter check subsumes "the stored binding's fence is higher" (a stored
 * fence never exceeds the counter); STORED_FENCE_CHECK states it anyway,
 * for bindings written by other tools. */
#define STORED_FENCE_CHECK                                                      \
	"if ARGV[1] ~= '' and (tonumber(v.fence) or 0) > tonumber(ARGV[2]) then return {-2} end\n"

#define FENCE_CHECK                                                             \
	"if ARGV[1] ~= '' then\n"                                               \
	"  if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {-1} end\n"     \
	"  if tonumber(redis.call('GET', KEYS[3]) or '0') ~= tonumber(ARGV[2]) then return {-2} end\n" \
	"end\n"

/* After FENCE_CHECK: load the binding of KEYS[1] into `v`, or return {0}
 * when there is none, it does not decode, or it binds another sandbox than
 * ARGV[3]; then STORED_FENCE_CHECK. */
#define LOAD_OWN_BINDING                                                        \
	"local raw = redis.call('GET', KEYS[1])\n"                              \
	"if not raw then return {0} end\n"                                      \
	"local ok, v = pcall(cjson.decode, raw)\n"                              \
	"if not ok or type(v) ~= 'table' or v.sandbox_id ~= ARGV[3] then return {0} end\n" \
	STORED_FENCE_CHECK

/* KEYS: binding, lock, fence, bound, usage, paused.  ARGV: token, fence,
 * json, sandbox_id, session.  The session's quota slot (quota.h) becomes a
 * running one in the same script: the pending slot its resolve took, or a
 * new one (a claim). */
static struct sbx_script create_script = {.src =
	FENCE_CHECK
	"local cur = redis.call('GET', KEYS[1])\n"
	"if cur then return {0, cur} end\n"
	"redis.call('SET', KEYS[1], ARGV[3])\n"
	"redis.call('SADD', KEYS[4], ARGV[4])\n"
	"redis.call('HSET', KEYS[5], ARGV[5], 'running')\n"
	"redis.call('HDEL', KEYS[6], ARGV[5])\n"
	"return {1}\n", .durable = 1};

/* KEYS: binding, lock, fence, bound, usage, paused.  ARGV: token, fence,
 * sandbox_id, 'end' or '', session.  With 'end' the session is over and
 * its fence counter goes too (sbx_binding_end: why that is safe).  The
 * session's quota slot goes with the binding, unless it is pending (a
 * resolve that drops a gone sandbox's binding keeps the slot it took). */
static struct sbx_script delete_script = {.src =
	FENCE_CHECK
	LOAD_OWN_BINDING
	"redis.call('DEL', KEYS[1])\n"
	"redis.call('SREM', KEYS[4], ARGV[3])\n"
	"local q = redis.call('HGET', KEYS[5], ARGV[5])\n"
	"if q == 'running' or (q and string.sub(q, 1, 6) == 'paused') then\n"
	"  redis.call('HDEL', KEYS[5], ARGV[5])\n"
	"end\n"
	"redis.call('HDEL', KEYS[6], ARGV[5])\n"
	"if ARGV[4] == 'end' then redis.call('DEL', KEYS[3]) end\n"
	"return {1}\n", .durable = 1};

/* KEYS: binding, lock, fence, bound, usage, paused.  ARGV: token, fence,
 * from sandbox_id, json, to sandbox_id.  The quota slot stays as it is:
 * the session still has one sandbox. */
static struct sbx_script move_script = {.src =
	FENCE_CHECK
	LOAD_OWN_BINDING
	"redis.call('SET', KEYS[1], ARGV[4])\n"
	"redis.call('SREM', KEYS[4], ARGV[3])\n"
	"redis.call('SADD', KEYS[4], ARGV[5])\n"
	"return {1}\n", .durable = 1};

/* KEYS: binding, lock, fence.  ARGV: token, fence, sandbox_id, json */
static struct sbx_script stale_script = {.src =
	FENCE_CHECK
	LOAD_OWN_BINDING
	"if v.stale_at ~= nil and v.stale_at ~= cjson.null then return {0} end\n"
	"redis.call('SET', KEYS[1], ARGV[4])\n"
	"return {1}\n", .durable = 1};

void sbx_binding_clear(struct sbx_binding *b)
{
	free(b->backend);
	free(b->tenant);
	free(b->session);
	free(b->sandbox_id);
	free(b->template_id);
	free(b->profile);
	free(b->host);
	json_object_put(b->grant);
	memset(b, 0, sizeof(*b));
}

void sbx_binding_json(const struct sbx_binding *b, json_object *o)
{
	char when[32];
	sbx_json_set_str(o, "sandbox_id", b->sandbox_id);
	sbx_json_set_str(o, "backend", b->backend);
	sbx_json_set_str(o, "profile", b->profile);
	sbx_json_set_str(o, "template", b->template_id);
	sbx_json_set_int(o, "fence", b->fence);
	sbx_time_iso(b->created_at, when, sizeof(when));
	sbx_json_set_str(o, "created_at", when);
	if (b->stale_at) {
		sbx_time_iso(b->stale_at, when, sizeof(when));
		sbx_json_set_str(o, "stale_at", when);
	}
}

char *sbx_binding_encode(const struct sbx_binding *b)
{
	json_object *o = json_object_new_object();
	char when[32];
	json_object_object_add(o, "version", json_object_new_int(SBX_BINDING_VERSION));
	sbx_json_set_str(o, "backend", b->backend);
	sbx_json_set_str(o, "tenant", b->tenant);
	sbx_json_set_str(o, "session", b->session);
	sbx_json_set_str(o, "sandbox_id", b->sandbox_id);
	sbx_json_set_str(o, "template", b->template_id ? b->template_id : "");
	sbx_time_iso(b->created_at, when, sizeof(when));
	sbx_json_set_str(o, "created_at", when);
	json_object_object_add(o, "fence", json_object_new_int64(b->fence));
	sbx_json_set_str(o, "profile", b->profile ? b->profile : "default");
	if (b->host)
		sbx_json_set_str(o, "host", b->host);
	if (b->stale_at) {
		sbx_time_iso(b->stale_at, when, sizeof(when));
		sbx_json_set_str(o, "stale_at", when);
	}
	if (b->grant)
		json_object_object_add(o, "grant", json_object_get(b->grant));
	char *s = sbx_xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

/* A required string field, non-empty unless allow_empty. */
static const char *req_str(json_object *o, const char *k, int allow_empty)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	const char *s = json_object_get_string(v);
	return (!allow_empty && !*s) ? NULL : s;
}

int sbx_binding_decode(const char *raw, size_t len, const char *tenant, const char *session,
		       struct sbx_binding *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	json_object *o;
	struct sbx_err e = {0};
	if (sbx_json_parse_object(raw, len, &o, &e) < 0)
		return sbx_fail(err, SBX_INTERNAL, "binding",
				"the session's binding in Redis is not a JSON object (%s)", e.msg);
	const char *why = NULL;
	json_object *v;
	const char *backend = req_str(o, "backend", 0), *t = req_str(o, "tenant", 0),
		   *s = req_str(o, "session", 0), *id = req_str(o, "sandbox_id", 0),
		   *tpl = req_str(o, "template", 1), *ca = req_str(o, "created_at", 0),
		   *prof = req_str(o, "profile", 0), *host = req_str(o, "host", 0);
	if (!json_object_object_get_ex(o, "version", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) != SBX_BINDING_VERSION)
		why = "version is not 1";
	else if (!backend || !t || !s || !id || !tpl || !ca || !prof)
		why = "a required field is missing or not a string";
	else if (strcmp(t, tenant) || strcmp(s, session))
		why = "it names another tenant or session than its key";
	else if (!json_object_object_get_ex(o, "fence", &v) || !json_object_is_type(v, json_type_int) ||
		 json_object_get_int64(v) < 0)
		why = "fence is not a non-negative integer";
	if (!why) {
		out->fence = json_object_get_int64(v);
		out->created_at = sbx_time_parse_iso(ca);
		if (out->created_at < 0)
			why = "created_at is not an ISO-8601 UTC time";
	}
	if (!why && !host && json_object_object_get_ex(o, "host", &v))
		why = "host is not a non-empty string";
	json_object *grant = NULL;
	if (!why && json_object_object_get_ex(o, "grant", &grant) && grant &&
	    !json_object_is_type(grant, json_type_object))
		why = "grant is not an object";
	if (!why && json_object_object_get_ex(o, "stale_at", &v) && !json_object_is_type(v, json_type_null)) {
		const char *st = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
		out->stale_at = st ? sbx_time_parse_iso(st) : -1;
		if (out->stale_at < 0)
			why = "stale_at is not an ISO-8601 UTC time";
		else if (out->stale_at == 0)
			out->stale_at = 1;     /* 1970 exactly still means "stale" */
	}
	if (why) {
		json_object_put(o);
		memset(out, 0, sizeof(*out));
		return sbx_fail(err, SBX_INTERNAL, "binding", "the session's binding is malformed: %s", why);
	}
	out->version = SBX_BINDING_VERSION;
	out->backend = sbx_xstrdup(backend);
	out->tenant = sbx_xstrdup(t);
	out->session = sbx_xstrdup(s);
	out->sandbox_id = sbx_xstrdup(id);
	out->template_id = sbx_xstrdup(tpl);
	out->profile = sbx_xstrdup(prof);
	out->host = host ? sbx_xstrdup(host) : NULL;
	out->grant = grant ? json_object_get(grant) : NULL;
	json_object_put(o);
	return 0;
}

int sbx_binding_get(struct sbx_redis *r, const char *tenant, const char *session,
		    struct sbx_binding *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	SBX_AUTOFREE char *key = sbx_key_session(r->prefix, tenant, strlen(tenant), session,
						 strlen(session), SBX_KEY_BINDING);
	const char *argv[] = {"GET", key};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, err, 2, argv, NULL) < 0)
		return -1;
	int rc = 0;
	if (rep->type == REDIS_REPLY_STRING)
		rc = sbx_binding_decode(rep->str, rep->len, tenant, session, out, err) < 0 ? -1 : 1;
	else if (rep->type != REDIS_REPLY_NIL)
		rc = sbx_fail(err, SBX_INTERNAL, "binding", "the session's binding is not a string");
	freeReplyObject(rep);
	return rc;
}

struct wkeys {
	char *binding, *lock, *fence, *bound, *usage, *paused;
};

static void wkeys_init(struct wkeys *k, struct sbx_redis *r, const char *tenant,
		       const char *session)
{
	size_t tl = strlen(tenant), sl = strlen(session);
	k->binding = sbx_key_session(r->prefix, tenant, tl, session, sl, SBX_KEY_BINDING);
	k->lock = sbx_key_session(r->prefix, tenant, tl, session, sl, SBX_KEY_LOCK);
	k->fence = sbx_key_session(r->prefix, tenant, tl, session, sl, SBX_KEY_FENCE);
	k->bound = sbx_key_tenant(r->prefix, tenant, tl, SBX_KEY_BOUND);
	k->usage = sbx_key_tenant(r->prefix, tenant, tl, SBX_KEY_USAGE);
	k->paused = sbx_key_tenant(r->prefix, tenant, tl, SBX_KEY_PAUSED);
}

static void wkeys_free(struct wkeys *k)
{
	free(k->binding);
	free(k->lock);
	free(k->fence);
	free(k->bound);
	free(k->usage);
	free(k->paused);
}

/* Run a fenced script; returns the reply's first integer (>= 0) or -1.
 * -1/-2 from the script (token gone / fence moved on) become conflict. */
static int run_fenced(struct sbx_redis *r, struct sbx_script *s, struct sbx_lock *lock,
		      struct wkeys *k, int nargs_extra, const char **extra, redisReply **keep,
		      struct sbx_err *err)
{
	if (lock && sbx_lock_check(lock, err) < 0)
		return -1;
	char fence[24];
	snprintf(fence, sizeof(fence), "%lld", lock ? (long long)lock->fence : 0LL);
	const char *keys[] = {k->binding, k->lock, k->fence, k->bound, k->usage, k->paused};
	const char *args[6] = {lock ? lock->tk.token : "", fence};
	for (int i = 0; i < nargs_extra; i++)
		args[2 + i] = extra[i];
	redisReply *rep;
	if (sbx_redis_eval(r, s, &rep, 6, keys, 2 + nargs_extra, args, err) < 0)
		return -1;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
	    rep->element[0]->type != REDIS_REPLY_INTEGER) {
		freeReplyObject(rep);
		return sbx_fail(err, SBX_INTERNAL, "binding", "unexpected reply from a binding script");
	}
	long long v = rep->element[0]->integer;
	if (v < 0) {
		freeReplyObject(rep);
		if (lock)
			lock->tk.lost = 1;
		return sbx_fail(err, SBX_CONFLICT, "lock",
				v == -1 ? "lock ownership lost (the lock expired or was taken over)"
					: "lock ownership lost (a newer holder has a higher fence)");
	}
	if (keep)
		*keep = rep;
	else
		freeReplyObject(rep);
	return (int)v;
}

int sbx_binding_create(struct sbx_redis *r, struct sbx_lock *lock, struct sbx_binding *b,
		       struct sbx_binding *existing, struct sbx_err *err)
{
	if (existing)
		memset(existing, 0, sizeof(*existing));
	b->version = SBX_BINDING_VERSION;
	b->fence = lock ? lock->fence : 0;
	SBX_AUTOFREE char *json = sbx_binding_encode(b);
	struct wkeys k;
	wkeys_init(&k, r, b->tenant, b->session);
	const char *extra[] = {json, b->sandbox_id, b->session};
	redisReply *rep = NULL;
	int rc = run_fenced(r, &create_script, lock, &k, 3, extra, &rep, err);
	wkeys_free(&k);
	if (rc < 0)
		return -1;
	if (rc == 0 && existing && rep->elements >= 2 && rep->element[1]->type == REDIS_REPLY_STRING &&
	    sbx_binding_decode(rep->element[1]->str, rep->element[1]->len, b->tenant, b->session,
			       existing, err) < 0) {
		freeReplyObject(rep);
		return -1;
	}
	freeReplyObject(rep);
	return rc;
}

int sbx_binding_move(struct sbx_redis *r, struct sbx_lock *lock, const char *from_id,
		     struct sbx_binding *b, struct sbx_err *err)
{
	b->version = SBX_BINDING_VERSION;
	b->fence = lock->fence;
	SBX_AUTOFREE char *json = sbx_binding_encode(b);
	struct wkeys k;
	wkeys_init(&k, r, b->tenant, b->session);
	const char *extra[] = {from_id, json, b->sandbox_id};
	int rc = run_fenced(r, &move_script, lock, &k, 3, extra, NULL, err);
	wkeys_free(&k);
	return rc;
}

static int delete_binding(struct sbx_redis *r, struct sbx_lock *lock, const char *tenant,
			  const char *session, const char *sandbox_id, int end, struct sbx_err *err)
{
	struct wkeys k;
	wkeys_init(&k, r, tenant, session);
	const char *extra[] = {sandbox_id, end ? "end" : "", session};
	int rc = run_fenced(r, &delete_script, lock, &k, 3, extra, NULL, err);
	wkeys_free(&k);
	return rc;
}

int sbx_binding_delete_if_match(struct sbx_redis *r, struct sbx_lock *lock, const char *tenant,
				const char *session, const char *sandbox_id, struct sbx_err *err)
{
	return delete_binding(r, lock, tenant, session, sandbox_id, 0, err);
}

/* Why removing the fence counter does not weaken fencing: every fenced
 * write checks the lock's token first and the counter second.  A counter
 * that is gone reads as 0, which no holder's fence equals (fences start at
 * 1), so every holder from before the removal is refused; a holder after
 * it starts a new sequence (1, 2...) that may repeat an old number, but
 * never with an old holder's token (128 random bits), so no old holder's
 * (token, fence) pair can pass.  And the counter goes only with the
 * binding, so no stored binding is left with a fence above the restarted
 * counter (STORED_FENCE_CHECK would otherwise refuse the next holder). */
int sbx_binding_end(struct sbx_redis *r, struct sbx_lock *lock, const char *tenant,
		    const char *session, const char *sandbox_id, struct sbx_err *err)
{
	return delete_binding(r, lock, tenant, session, sandbox_id, 1, err);
}

int sbx_binding_mark_stale(struct sbx_redis *r, struct sbx_lock *lock,
			   const struct sbx_binding *b, int64_t now, struct sbx_err *err)
{
	struct sbx_binding nb = *b;
	nb.stale_at = now > 0 ? now : 1;
	nb.fence = lock ? lock->fence : b->fence;
	SBX_AUTOFREE char *json = sbx_binding_encode(&nb);
	struct wkeys k;
	wkeys_init(&k, r, b->tenant, b->session);
	const char *extra[] = {b->sandbox_id, json};
	int rc = run_fenced(r, &stale_script, lock, &k, 2, extra, NULL, err);
	wkeys_free(&k);
	return rc;
}

int sbx_binding_owner(const struct sbx_sandbox *sb, const char **tenant, const char **session)
{
	const char *t = sb->tenant, *s = sb->session;
	if ((!t || !*t) && sb->metadata)
		t = sbx_json_str(sb->metadata, SBX_MD_TENANT);
	if ((!s || !*s) && sb->metadata)
		s = sbx_json_str(sb->metadata, SBX_MD_SESSION);
	if (!t || !*t || !s || !*s)
		return 0;
	*tenant = t;
	*session = s;
	return 1;
}

int sbx_binding_drop_for_sandbox(struct sbx_redis *r, const struct sbx_sandbox *sb,
				 struct sbx_err *err)
{
	const char *tenant, *session;
	if (!sb->id || !sbx_binding_owner(sb, &tenant, &session))
		return 0;
	if (sbx_ids_check(tenant, "session", session, err) < 0)
		return -1;
	return sbx_binding_end(r, NULL, tenant, session, sb->id, err);
}

int sbx_binding_holds(struct sbx_redis *r, struct sbx_lock *lock, const char *tenant,
		      const char *session, const char *id, const char **why, struct sbx_err *err)
{
	if (lock->binding_raw) {
		struct sbx_binding bd = {0};
		struct sbx_err de = {0};
		int named = 0;
		if (sbx_binding_decode(lock->binding_raw, lock->binding_len, tenant, session, &bd,
				       &de) < 0) {
			*why = "binding-unreadable";   /* fail closed */
			named = 1;
		} else if (bd.sandbox_id && strcmp(bd.sandbox_id, id) == 0) {
			*why = "bound";
			named = 1;
		}
		sbx_binding_clear(&bd);
		if (named)
			return 1;
	}
	SBX_AUTOFREE char *key = sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_BOUND);
	const char *argv[] = {"SISMEMBER", key, id};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, err, 3, argv, NULL) < 0)
		return -1;
	int member = rep->type == REDIS_REPLY_INTEGER && rep->integer;
	freeReplyObject(rep);
	if (member)
		*why = "bound";
	return member;
}

/* Read and drop `n` pending pipeline replies, so that the connection stays
 * usable after a reply we could not use. */
static void drain(struct sbx_redis *r, size_t n)
{
	struct sbx_err ignored = {0};
	while (n--) {
		redisReply *x;
		if (sbx_redis_read(r, &x, &ignored) < 0)
			return;
		freeReplyObject(x);
	}
}

/* The SCARD replies of the first pipeline, one per tenant. */
static int census_sizes(struct sbx_redis *r, struct sbx_bound_tenant *ts, size_t nt,
			size_t pending, struct sbx_err *err)
{
	for (size_t ti = 0; ti < nt; ti++) {
		redisReply *rep;
		if (sbx_redis_read(r, &rep, err) < 0)
			return -1;
		int ok = rep->type == REDIS_REPLY_INTEGER;
		ts[ti].members = ok ? (long)rep->integer : 0;
		freeReplyObject(rep);
		if (!ok) {
			drain(r, nt - ti - 1 + pending);
			return sbx_fail(err, SBX_INTERNAL, "redis", "unexpected SCARD reply "
					"(is the bound set of another type?)");
		}
	}
	return 0;
}

/* The SISMEMBER + EXISTS replies of probes ps[0..n). */
static int census_read(struct sbx_redis *r, struct sbx_bound_probe *ps, size_t n,
		       struct sbx_err *err)
{
	for (size_t q = 0; q < n; q++) {
		redisReply *m, *e;
		if (sbx_redis_read(r, &m, err) < 0)
			return -1;
		if (sbx_redis_read(r, &e, err) < 0) {
			freeReplyObject(m);
			return -1;
		}
		int ok = m->type == REDIS_REPLY_INTEGER && e->type == REDIS_REPLY_INTEGER;
		ps[q].bound = ok && m->integer;
		ps[q].locked = ok && e->integer;
		freeReplyObject(m);
		freeReplyObject(e);
		if (!ok) {
			drain(r, 2 * (n - q - 1));
			return sbx_fail(err, SBX_INTERNAL, "redis", "unexpected SISMEMBER/EXISTS reply "
					"(is the bound set of another type?)");
		}
	}
	return 0;
}

int sbx_bound_census(struct sbx_redis *r, struct sbx_bound_tenant *ts, size_t nt,
		     struct sbx_bound_probe *ps, size_t np, struct sbx_err *err)
{
	SBX_AUTOFREE char **bound = sbx_xcalloc(nt + 1, sizeof(char *));
	int rc = 0;
	for (size_t ti = 0; ti < nt && rc == 0; ti++) {
		bound[ti] = sbx_key_tenant(r->prefix, ts[ti].name, ts[ti].len, SBX_KEY_BOUND);
		const char *argv[] = {"SCARD", bound[ti]};
		rc = sbx_redis_append(r, 2, argv, NULL, err);
	}
	for (size_t i = 0, first = 1; rc == 0 && (first || i < np); first = 0) {
		size_t nb = np - i < SBX_CENSUS_BATCH ? np - i : SBX_CENSUS_BATCH;
		for (size_t q = i; q < i + nb && rc == 0; q++) {
			struct sbx_bound_probe *p = &ps[q];
			struct sbx_bound_tenant *t = &ts[p->t];
			SBX_AUTOFREE char *lock = sbx_key_session(r->prefix, t->name, t->len,
								  p->session, p->slen, SBX_KEY_LOCK);
			const char *m[] = {"SISMEMBER", bound[p->t], p->id};
			const char *e[] = {"EXISTS", lock};
			rc = sbx_redis_append(r, 3, m, NULL, err);
			if (rc == 0)
				rc = sbx_redis_append(r, 2, e, NULL, err);
		}
		if (rc == 0 && first)
			rc = census_sizes(r, ts, nt, 2 * nb, err);
		if (rc == 0)
			rc = census_read(r, ps + i, nb, err);
		i += nb;
	}
	for (size_t ti = 0; ti < nt; ti++)
		free(bound[ti]);
	return rc;
}

struct each_ctx {
	struct sbx_redis *r;
	const char *tenant;
	sbx_binding_fn fn;
	void *ctx;
};

static int each_key(const char *key, size_t len, void *vc, struct sbx_err *err)
{
	(void)len;
	struct each_ctx *c = vc;
	size_t sl = 0;
	SBX_AUTOFREE char *s = sbx_key_session_of(key, c->r->prefix, c->tenant, strlen(c->tenant),
						  &sl);
	return s ? c->fn(s, sl, c->ctx, err) : 0;  /* not one of ours: cannot happen */
}

int sbx_bindings_each(struct sbx_redis *r, const char *tenant, sbx_binding_fn fn, void *ctx,
		      struct sbx_err *err)
{
	SBX_AUTOFREE char *pat = sbx_key_session_pattern(r->prefix, tenant, strlen(tenant),
							 SBX_KEY_BINDING);
	struct each_ctx c = {.r = r, .tenant = tenant, .fn = fn, .ctx = ctx};
	return sbx_redis_scan(r, pat, 200, each_key, &c, err);
}

struct stale_ctx {
	const char *tenant;
	int64_t now;
	long marked, failed;
	struct sbx_err first;
};


/* The sessions to mark, collected first so that no SCAN cursor stays
 * open while we wait for locks. */
struct stale_list {
	char **ids;
	size_t n, cap;
};

static int collect(const char *session, size_t slen, void *vctx, struct sbx_err *err)
{
	(void)err;
	struct stale_list *l = vctx;
	if (memchr(session, '\0', slen))
		return 0;
	for (size_t i = 0; i < l->n; i++)      /* SCAN may return a key twice */
		if (strcmp(l->ids[i], session) == 0)
			return 0;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->ids = sbx_xrealloc(l->ids, l->cap * sizeof(*l->ids));
	}
	l->ids[l->n++] = sbx_xstrdup(session);
	return 0;
}

static int mark_one(struct sbx_redis *r, struct stale_ctx *c, const char *session,
		    struct sbx_err *err)
{
	struct sbx_lock *lock = NULL;
	if (sbx_lock_acquire(r, c->tenant, strlen(c->tenant), session, strlen(session), 2000,
			     &lock, err) < 0)
		return -1;
	int rc = 0;
	if (lock->binding_raw) {
		struct sbx_binding b;
		rc = sbx_binding_decode(lock->binding_raw, lock->binding_len, c->tenant, session, &b, err);
		if (rc == 0 && !b.stale_at) {
			rc = sbx_binding_mark_stale(r, lock, &b, c->now, err);
			if (rc > 0) {
				c->marked++;
				struct sbx_event ev = {.type = "stale", .tenant = c->tenant,
						       .session = session, .sandbox = b.sandbox_id};
				sbx_event_emit(r, &ev);
			}
		}
		sbx_binding_clear(&b);   /* zeroed by a failed decode: safe either way */
	}
	struct sbx_err rel = {0};
	if (sbx_lock_release(lock, &rel) < 0 && rc >= 0) {
		*err = rel;
		rc = -1;
	}
	return rc < 0 ? -1 : 0;
}

int sbx_bindings_mark_stale(struct sbx_redis *r, const char *tenant, int64_t now,
			    long *marked, long *failed, struct sbx_err *err)
{
	struct stale_ctx c = {.tenant = tenant, .now = now};
	struct stale_list l = {0};
	*marked = *failed = 0;
	if (sbx_id_check("tenant", tenant, strlen(tenant), err) < 0)
		return -1;
	if (sbx_bindings_each(r, tenant, collect, &l, err) < 0) {
		for (size_t i = 0; i < l.n; i++)
			free(l.ids[i]);
		free(l.ids);
		return -1;
	}
	int broken = 0;
	for (size_t i = 0; i < l.n; i++) {
		struct sbx_err e = {0};
		/* A broken connection fails every later session too: count
		 * them as failed without trying N times. */
		if (broken || mark_one(r, &c, l.ids[i], &e) < 0) {
			c.failed++;
			if (!c.first.kind) {
				c.first = e;
				sbx_err_prefix(&c.first, "session %s", l.ids[i]);
			}
			broken = !r->c;
		}
		free(l.ids[i]);
	}
	*marked = c.marked;
	*failed = c.failed;
	if (c.failed) {
		*err = c.first;
		sbx_err_prefix(err, "%ld of %zu sessions not marked", c.failed, l.n);
	}
	free(l.ids);
	return c.failed ? -1 : 0;
}
