/* checkpoint-gc.c - retention of a session's checkpoints: entries taken
 * out of the history into the tenant's pending hash, then their snapshots
 * deleted (see checkpoint-gc.h for the two steps and the crash argument).
 *
 * Promise: an entry leaves the history only by the fenced unlist script,
 * under the session's lifecycle lock, in the same script that records it
 * as pending, so no crash loses track of a snapshot; a pending entry goes
 * only after its snapshot is deleted (or found gone). */
#include "checkpoint-gc.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "fault.h"
#include "keys.h"
#include "lock.h"
#include "pager.h"
#include "util.h"

/* KEYS: history, lock, fence, pending, binding.  ARGV: token, fence,
 * keep, cutoff_ns, session.  Reply: {ended, raw entry...} or -1/-2 (lock
 * or fence lost).  The pending value is the entry with its session
 * prepended as text (cjson would round the nanoseconds). */
static struct sbx_script unlist_script = {.src =
	"if redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end\n"
	"if tonumber(redis.call('GET', KEYS[3]) or '0') ~= tonumber(ARGV[2]) then return -2 end\n"
	"local ended = redis.call('EXISTS', KEYS[5]) == 0\n"
	"local keep = tonumber(ARGV[3])\n"
	"local len = redis.call('LLEN', KEYS[1])\n"
	"local drop = len\n"
	"if not ended then if keep <= 0 then drop = 0 else drop = len - keep end end\n"
	"local out = {ended and 1 or 0}\n"
	"for i = 1, drop do\n"
	"  local raw = redis.call('LINDEX', KEYS[1], 0)\n"
	"  local ok, v = pcall(cjson.decode, raw)\n"
	"  if not ok or type(v) ~= 'table' or type(v.snapshot) ~= 'string' then break end\n"
	"  if (tonumber(v.taken_at_ns) or 0) > tonumber(ARGV[4]) then break end\n"
	"  redis.call('HSET', KEYS[4], v.snapshot,\n"
	"             '{\"session\":' .. cjson.encode(ARGV[5]) .. ',' .. string.sub(raw, 2))\n"
	"  redis.call('LPOP', KEYS[1])\n"
	"  out[#out + 1] = raw\n"
	"end\n"
	"return out\n", .durable = 1};

void sbx_ckpt_outs_free(struct sbx_ckpt_out *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].session);
		free(v[i].snapshot);
	}
	free(v);
}

/* One entry (a history's, or a pending one with its session) into *o;
 * -1 when it is not one. */
static int out_decode(const char *raw, size_t len, const char *session, struct sbx_ckpt_out *o)
{
	json_object *j;
	struct sbx_err e = {0};
	memset(o, 0, sizeof(*o));
	if (sbx_json_parse_object(raw, len, &j, &e) < 0)
		return -1;
	const char *snap = sbx_json_str(j, "snapshot"), *s = session ? session : sbx_json_str(j, "session");
	int rc = snap && s ? 0 : -1;
	if (rc == 0) {
		o->snapshot = sbx_xstrdup(snap);
		o->session = sbx_xstrdup(s);
		o->n = sbx_json_int(j, "n", 0);
		o->taken_at_ns = sbx_json_int(j, "taken_at_ns", 0);
	}
	json_object_put(j);
	return rc;
}

struct sess_list {
	const char *prefix, *tenant;
	char **v;
	size_t n;
};

static int sess_key(const char *key, size_t len, void *ctx, struct sbx_err *err)
{
	(void)len;
	(void)err;
	struct sess_list *l = ctx;
	size_t sl = 0;
	char *s = sbx_key_session_of(key, l->prefix, l->tenant, strlen(l->tenant), &sl);
	if (!s || memchr(s, '\0', sl)) {
		free(s);
		return 0;
	}
	for (size_t i = 0; i < l->n; i++)      /* SCAN may return a key twice */
		if (strcmp(l->v[i], s) == 0) {
			free(s);
			return 0;
		}
	l->v = sbx_xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = s;
	return 0;
}

int sbx_checkpoint_sessions(struct sbx_redis *r, const char *tenant, char ***out, size_t *n,
			    struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	if (sbx_ids_check(tenant, NULL, NULL, err) < 0)
		return -1;
	SBX_AUTOFREE char *pat = sbx_key_session_pattern(r->prefix, tenant, strlen(tenant),
							 SBX_KEY_CHECKPOINTS);
	struct sess_list l = {.prefix = r->prefix, .tenant = tenant};
	if (sbx_redis_scan(r, pat, 200, sess_key, &l, err) < 0) {
		for (size_t i = 0; i < l.n; i++)
			free(l.v[i]);
		free(l.v);
		return -1;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

/* The plan, read without the lock: what the script would take out now. */
static int plan(struct sbx_redis *r, const char *tenant, const char *session, int64_t keep,
		int64_t cutoff_ns, struct sbx_ckpt_out **out, size_t *n, int *ended,
		struct sbx_err *err)
{
	SBX_AUTOFREE char *bk = sbx_key_session(r->prefix, tenant, strlen(tenant), session,
						strlen(session), SBX_KEY_BINDING);
	redisReply *rep;
	const char *argv[] = {"EXISTS", bk};
	if (sbx_redis_cmd(r, &rep, err, 2, argv, NULL) < 0)
		return -1;
	*ended = rep->type == REDIS_REPLY_INTEGER && rep->integer == 0;
	freeReplyObject(rep);
	struct sbx_checkpoint *v;
	size_t nv;
	if (sbx_checkpoint_list(r, tenant, session, &v, &nv, err) < 0)
		return -1;
	size_t drop = *ended ? nv : keep <= 0 || (size_t)keep >= nv ? 0 : nv - (size_t)keep;
	*out = sbx_xcalloc(drop + 1, sizeof(**out));
	for (size_t i = 0; i < drop && v[i].taken_at_ns <= cutoff_ns; i++) {
		(*out)[i] = (struct sbx_ckpt_out){.session = sbx_xstrdup(session),
			.snapshot = sbx_xstrdup(v[i].snapshot), .n = v[i].n,
			.taken_at_ns = v[i].taken_at_ns};
		(*n)++;
	}
	sbx_checkpoints_free(v, nv);
	return 1;
}

/* Under the lock: the script, its reply into *out. */
static int unlist_locked(struct sbx_redis *r, struct sbx_lock *l, const char *tenant,
			 const char *session, int64_t keep, int64_t cutoff_ns,
			 struct sbx_ckpt_out **out, size_t *n, int *ended, const char **why,
			 struct sbx_err *err)
{
	size_t tl = strlen(tenant), sl = strlen(session);
	SBX_AUTOFREE char *hk = sbx_key_session(r->prefix, tenant, tl, session, sl, SBX_KEY_CHECKPOINTS);
	SBX_AUTOFREE char *bk = sbx_key_session(r->prefix, tenant, tl, session, sl, SBX_KEY_BINDING);
	SBX_AUTOFREE char *pk = sbx_key_tenant(r->prefix, tenant, tl, SBX_KEY_CHECKPOINTS_GC);
	char fence[24], kp[24], cut[24];
	snprintf(fence, sizeof(fence), "%lld", (long long)l->fence);
	snprintf(kp, sizeof(kp), "%lld", (long long)keep);
	snprintf(cut, sizeof(cut), "%lld", (long long)cutoff_ns);
	const char *keys[] = {hk, l->tk.key, l->fence_key, pk, bk};
	const char *args[] = {l->tk.token, fence, kp, cut, session};
	redisReply *rep;
	if (sbx_redis_eval(r, &unlist_script, &rep, 5, keys, 5, args, err) < 0)
		return -1;
	if (rep->type == REDIS_REPLY_INTEGER) {
		freeReplyObject(rep);
		l->tk.lost = 1;
		*why = "lock-lost";
		return 0;
	}
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) {
		freeReplyObject(rep);
		return sbx_fail(err, SBX_INTERNAL, "checkpoint", "unexpected reply from the unlist");
	}
	*ended = rep->element[0]->type == REDIS_REPLY_INTEGER && rep->element[0]->integer == 1;
	*out = sbx_xcalloc(rep->elements, sizeof(**out));
	for (size_t i = 1; i < rep->elements; i++) {
		redisReply *e = rep->element[i];
		if (e->type == REDIS_REPLY_STRING && out_decode(e->str, e->len, session, &(*out)[*n]) == 0)
			(*n)++;
	}
	freeReplyObject(rep);
	sbx_fault("reap:checkpoint-unlisted");
	return 1;
}

int sbx_checkpoint_unlist(struct sbx_redis *r, const char *tenant, const char *session,
			  int64_t keep, int64_t cutoff_ns, int unlist, struct sbx_ckpt_out **out,
			  size_t *n, int *ended, const char **why, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	*ended = 0;
	*why = NULL;
	if (sbx_ids_check(tenant, "session", session, err) < 0)
		return -1;
	if (!unlist)
		return plan(r, tenant, session, keep, cutoff_ns, out, n, ended, err);
	struct sbx_lock *l = NULL;
	struct sbx_err e = {0};
	if (sbx_lock_acquire(r, tenant, strlen(tenant), session, strlen(session), 0, &l, &e) < 0) {
		if (e.kind != SBX_CONFLICT) {
			*err = e;
			return -1;
		}
		*why = "locked";
		return 0;
	}
	int rc = unlist_locked(r, l, tenant, session, keep, cutoff_ns, out, n, ended, why, err);
	struct sbx_err ignored = {0};
	sbx_lock_release(l, &ignored);
	return rc;
}

static int newest_first(const void *a, const void *b)
{
	const struct sbx_ckpt_out *x = a, *y = b;
	if (x->taken_at_ns != y->taken_at_ns)
		return x->taken_at_ns > y->taken_at_ns ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->snapshot, y->snapshot);
}

/* The whole of one of the tenant's checkpoint hashes (HGETALL of `kind`,
 * `what` naming it in errors): the reply, an array of field/value pairs,
 * for the caller to free; NULL with err set. */
static redisReply *tenant_hash(struct sbx_redis *r, const char *tenant, enum sbx_tenant_key kind,
			       const char *what, struct sbx_err *err)
{
	if (sbx_ids_check(tenant, NULL, NULL, err) < 0)
		return NULL;
	SBX_AUTOFREE char *key = sbx_key_tenant(r->prefix, tenant, strlen(tenant), kind);
	const char *argv[] = {"HGETALL", key};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, err, 2, argv, NULL) < 0)
		return NULL;
	if (rep->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(rep);
		sbx_fail(err, SBX_INTERNAL, "checkpoint", "the %s checkpoints are not a hash", what);
		return NULL;
	}
	return rep;
}

int sbx_checkpoint_pending(struct sbx_redis *r, const char *tenant, struct sbx_ckpt_out **out,
			   size_t *n, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	redisReply *rep = tenant_hash(r, tenant, SBX_KEY_CHECKPOINTS_GC, "pending", err);
	if (!rep)
		return -1;
	*out = sbx_xcalloc(rep->elements / 2 + 1, sizeof(**out));
	for (size_t i = 0; i + 1 < rep->elements; i += 2) {
		redisReply *v = rep->element[i + 1];
		if (v->type == REDIS_REPLY_STRING && out_decode(v->str, v->len, NULL, &(*out)[*n]) == 0)
			(*n)++;
	}
	freeReplyObject(rep);
	qsort(*out, *n, sizeof(**out), newest_first);
	return 0;
}

int sbx_checkpoint_collect(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
			   const char *snapshot, int *gone, struct sbx_err *err)
{
	*gone = 0;
	struct sbx_err e = {0};
	if (sbx_call(b, snapshot_delete, &e, snapshot, gone) < 0) {
		if (e.kind == SBX_CONFLICT)
			return 0;       /* stacked on, or a sandbox runs on it: not yet */
		*err = e;
		return -1;
	}
	sbx_fault("reap:checkpoint-deleted");
	SBX_AUTOFREE char *pk = sbx_key_tenant(r->prefix, tenant, strlen(tenant),
					       SBX_KEY_CHECKPOINTS_GC);
	const char *argv[] = {"HDEL", pk, snapshot};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, err, 3, argv, NULL) < 0)
		return -1;
	freeReplyObject(rep);
	return 1;
}

/* KEYS: the lock, the fence counter, the planned hash, the pending hash.
 * ARGV: token, fence, the planned name, the snapshot id ('' when none was
 * found), its pending entry. */
static struct sbx_script adopt_script = {.src =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end\n"
	"if tonumber(redis.call('GET', KEYS[2]) or '0') ~= tonumber(ARGV[2]) then return -2 end\n"
	"if redis.call('HEXISTS', KEYS[3], ARGV[3]) == 0 then return 0 end\n"
	"if ARGV[4] ~= '' then redis.call('HSET', KEYS[4], ARGV[4], ARGV[5]) end\n"
	"redis.call('HDEL', KEYS[3], ARGV[3])\n"
	"return 1\n", .durable = 1};

/* The snapshot the backend lists under `name` (borrowed from v), or NULL. */
static const char *snap_named(const struct sbx_snapshot_ref *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].name && strcmp(v[i].name, name) == 0)
			return v[i].id;
	return NULL;
}

/* Under the session's lock (tried once): the script for one record.  1
 * done, 0 busy or lost, -1 error. */
static int adopt_one(struct sbx_redis *r, const char *tenant, const char *session,
		     const char *name, const char *snap, const char *entry, struct sbx_err *err)
{
	struct sbx_lock *l = NULL;
	struct sbx_err e = {0};
	if (sbx_lock_acquire(r, tenant, strlen(tenant), session, strlen(session), 0, &l, &e) < 0) {
		if (e.kind != SBX_CONFLICT) {
			*err = e;
			return -1;
		}
		return 0;
	}
	SBX_AUTOFREE char *plk = sbx_key_tenant(r->prefix, tenant, strlen(tenant),
						SBX_KEY_CHECKPOINTS_PLANNED);
	SBX_AUTOFREE char *pk = sbx_key_tenant(r->prefix, tenant, strlen(tenant),
					       SBX_KEY_CHECKPOINTS_GC);
	char fence[24];
	snprintf(fence, sizeof(fence), "%lld", (long long)l->fence);
	const char *keys[] = {l->tk.key, l->fence_key, plk, pk};
	const char *args[] = {l->tk.token, fence, name, snap ? snap : "", entry ? entry : ""};
	redisReply *rep;
	int rc = sbx_redis_eval(r, &adopt_script, &rep, 4, keys, 5, args, err);
	if (rc == 0) {
		rc = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1 ? 1 : 0;
		freeReplyObject(rep);
	}
	struct sbx_err ignored = {0};
	sbx_lock_release(l, &ignored);
	return rc;
}

int sbx_checkpoint_adopt(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
			 int64_t cutoff_ns, int doit, struct sbx_ckpt_out **out, size_t *n,
			 size_t *busy, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	*busy = 0;
	redisReply *rep = tenant_hash(r, tenant, SBX_KEY_CHECKPOINTS_PLANNED, "planned", err);
	if (!rep)
		return -1;
	struct sbx_snapshot_ref *snaps = NULL;
	size_t nsnaps = 0;
	int listed = 0, rc = 0;
	*out = sbx_xcalloc(rep->elements / 2 + 1, sizeof(**out));
	for (size_t i = 0; rc == 0 && i + 1 < rep->elements; i += 2) {
		redisReply *k = rep->element[i], *v = rep->element[i + 1];
		json_object *j = NULL;
		struct sbx_err pe = {0};
		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    sbx_json_parse_object(v->str, v->len, &j, &pe) < 0)
			continue;
		const char *session = sbx_json_str(j, "session");
		int64_t at = sbx_json_int(j, "planned_at_ns", 0);
		if (!session || at > cutoff_ns || sbx_ids_check(tenant, "session", session, &pe) < 0) {
			json_object_put(j);
			continue;
		}
		if (!listed && (rc = sbx_snapshots_all(b, &snaps, &nsnaps, err)) == 0)
			listed = 1;
		const char *snap = rc == 0 ? snap_named(snaps, nsnaps, k->str) : NULL;
		SBX_AUTOFREE char *entry = NULL;
		if (snap) {
			json_object *e = json_object_new_object();
			sbx_json_set_str(e, "session", session);
			sbx_json_set_str(e, "snapshot", snap);
			sbx_json_set_int(e, "taken_at_ns", at);
			entry = sbx_xstrdup(json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN));
			json_object_put(e);
		}
		int done = rc < 0 ? -1 : doit ? adopt_one(r, tenant, session, k->str, snap, entry, err) : 1;
		if (done < 0)
			rc = -1;
		else if (done == 0)
			(*busy)++;
		else if (snap)
			(*out)[(*n)++] = (struct sbx_ckpt_out){.session = sbx_xstrdup(session),
				.snapshot = sbx_xstrdup(snap), .taken_at_ns = at};
		json_object_put(j);
	}
	freeReplyObject(rep);
	sbx_snapshot_refs_free(snaps, nsnaps);
	if (rc < 0) {
		sbx_ckpt_outs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}
