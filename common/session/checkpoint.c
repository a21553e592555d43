/* checkpoint.c - a session's history of checkpoints (see checkpoint.h):
 * taking one of the bound sandbox, appending it, reading the history.
 *
 * Promise: an entry is appended only after its snapshot is complete, by a
 * script that checks the lifecycle lock's token and fence, so the history
 * names only snapshots that exist (until someone deletes one by hand) and
 * a holder that lost its lock appends nothing (and deletes the snapshot it
 * made).  Before the snapshot exists, a fenced script records it as
 * planned in the tenant's <prefix>:{T}:checkpoints-planned: its snapshot
 * name (ckpt-<16 hex>, given to the backend) -> {session, planned_at_ns};
 * the append removes that record in the same script.  So a crash between
 * the snapshot and the append (test point checkpoint:snapshotted; before
 * the snapshot: checkpoint:planned) leaves a
 * planned record that names the session and the snapshot's name, which
 * the reaper resolves (checkpoint-gc.h, sbx_checkpoint_adopt). */
#include "checkpoint.h"

#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "doc.h"
#include "fault.h"
#include "host.h"
#include "keys.h"
#include "lock.h"
#include "util.h"

/* The two scripts share their first KEYS and ARGV and their first two
 * lines, the fence check (binding.c's): KEYS the lock, the fence counter,
 * the planned hash; ARGV the token, the fence, the planned name.  -1 or
 * -2: the lock was lost, nothing written (fenced_eval). */
#define FENCE_CHECK \
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end\n" \
	"if tonumber(redis.call('GET', KEYS[2]) or '0') ~= tonumber(ARGV[2]) then return -2 end\n"

/* Then KEYS[4] the history; ARGV[4] the entry as a JSON object without n.
 * Appends it with the next n, drops the planned record; returns n. */
static struct sbx_script append_script = {.src =
	FENCE_CHECK
	"redis.call('HDEL', KEYS[3], ARGV[3])\n"
	"local n = 1\n"
	"local last = redis.call('LINDEX', KEYS[4], -1)\n"
	"if last then\n"
	"  local ok, v = pcall(cjson.decode, last)\n"
	"  if ok and type(v) == 'table' and tonumber(v.n) then n = tonumber(v.n) + 1\n"
	"  else n = redis.call('LLEN', KEYS[4]) + 1 end\n"
	"end\n"
	"local e = '{\"n\":' .. n\n"
	"if string.len(ARGV[4]) > 2 then e = e .. ',' .. string.sub(ARGV[4], 2) else e = e .. '}' end\n"
	"redis.call('RPUSH', KEYS[4], e)\n"
	"return n\n", .durable = 1};

/* Then ARGV[4] the planned record: sets it; returns 1. */
static struct sbx_script plan_script = {.src =
	FENCE_CHECK
	"redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])\n"
	"return 1\n", .durable = 1};

void sbx_checkpoint_clear(struct sbx_checkpoint *c)
{
	free(c->label);
	free(c->snapshot);
	free(c->sandbox);
	free(c->checkpoint_of);
	memset(c, 0, sizeof(*c));
}

void sbx_checkpoints_free(struct sbx_checkpoint *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sbx_checkpoint_clear(&v[i]);
	free(v);
}

/* The stored form, without n when n is 0 (the append script adds it). */
static json_object *entry_json(const struct sbx_checkpoint *c)
{
	json_object *o = json_object_new_object();
	if (c->n)
		sbx_json_set_int(o, "n", c->n);
	if (c->label)
		sbx_json_set_str(o, "label", c->label);
	sbx_json_set_str(o, "snapshot", c->snapshot);
	sbx_json_set_str(o, "sandbox", c->sandbox);
	if (c->checkpoint_of)
		sbx_json_set_str(o, "checkpoint_of", c->checkpoint_of);
	sbx_json_set_int(o, "taken_at_ns", c->taken_at_ns);
	sbx_json_set_int(o, "size_bytes", c->size_bytes);
	return o;
}

void sbx_checkpoint_json(const struct sbx_checkpoint *c, json_object *o)
{
	json_object *e = entry_json(c);
	json_object_object_foreach(e, k, v)
		json_object_object_add(o, k, json_object_get(v));
	json_object_put(e);
	char when[32];
	sbx_time_iso(c->taken_at_ns / 1000000000LL, when, sizeof(when));
	sbx_json_set_str(o, "taken_at", when);
}

static int entry_decode(const char *raw, size_t len, struct sbx_checkpoint *c,
			struct sbx_err *err)
{
	memset(c, 0, sizeof(*c));
	json_object *o;
	struct sbx_err e = {0};
	if (sbx_json_parse_object(raw, len, &o, &e) < 0 || !sbx_json_str(o, "snapshot") ||
	    sbx_json_int(o, "n", 0) <= 0) {
		if (e.kind == SBX_OK)
			json_object_put(o);
		return sbx_fail(err, SBX_INTERNAL, "checkpoint",
				"a malformed entry in the session's history of checkpoints");
	}
	const char *label = sbx_json_str(o, "label"), *sb = sbx_json_str(o, "sandbox"),
		   *of = sbx_json_str(o, "checkpoint_of");
	c->n = sbx_json_int(o, "n", 0);
	c->label = label ? sbx_xstrdup(label) : NULL;
	c->snapshot = sbx_xstrdup(sbx_json_str(o, "snapshot"));
	c->sandbox = sb ? sbx_xstrdup(sb) : NULL;
	c->checkpoint_of = of ? sbx_xstrdup(of) : NULL;
	c->taken_at_ns = sbx_json_int(o, "taken_at_ns", 0);
	c->size_bytes = sbx_json_int(o, "size_bytes", -1);
	json_object_put(o);
	return 0;
}

static char *history_key(struct sbx_redis *r, const char *tenant, const char *session)
{
	return sbx_key_session(r->prefix, tenant, strlen(tenant), session, strlen(session),
			       SBX_KEY_CHECKPOINTS);
}

int sbx_checkpoint_list(struct sbx_redis *r, const char *tenant, const char *session,
			struct sbx_checkpoint **out, size_t *n, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	if (sbx_ids_check(tenant, "session", session, err) < 0)
		return -1;
	SBX_AUTOFREE char *key = history_key(r, tenant, session);
	const char *argv[] = {"LRANGE", key, "0", "-1"};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, err, 4, argv, NULL) < 0)
		return -1;
	if (rep->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(rep);
		return sbx_fail(err, SBX_INTERNAL, "checkpoint",
				"the session's history of checkpoints is not a list");
	}
	struct sbx_checkpoint *v = sbx_xmalloc((rep->elements + 1) * sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; i < rep->elements; i++) {
		redisReply *e = rep->element[i];
		if (e->type != REDIS_REPLY_STRING || entry_decode(e->str, e->len, &v[k], err) < 0) {
			if (e->type != REDIS_REPLY_STRING)
				sbx_fail(err, SBX_INTERNAL, "checkpoint", "a history entry is not a string");
			sbx_checkpoints_free(v, k);
			freeReplyObject(rep);
			return -1;
		}
		k++;
	}
	freeReplyObject(rep);
	*out = v;
	*n = k;
	return 0;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

int sbx_checkpoint_find(struct sbx_redis *r, const char *tenant, const char *session,
			const char *to, struct sbx_checkpoint *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	struct sbx_checkpoint *v;
	size_t n;
	if (sbx_checkpoint_list(r, tenant, session, &v, &n, err) < 0)
		return -1;
	int num = all_digits(to);
	int64_t want = num ? strtoll(to, NULL, 10) : 0;
	for (size_t i = n; i-- > 0;) {
		if (num ? v[i].n == want : (v[i].label && strcmp(v[i].label, to) == 0)) {
			*out = v[i];
			memset(&v[i], 0, sizeof(v[i]));
			sbx_checkpoints_free(v, n);
			return 0;
		}
	}
	sbx_checkpoints_free(v, n);
	return sbx_fail(err, SBX_NOT_FOUND, "checkpoint", "session %s has no checkpoint %s%s",
			session, num ? "" : "labelled ", to);
}

static char *planned_key(struct sbx_redis *r, const char *tenant)
{
	return sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_CHECKPOINTS_PLANNED);
}

/* Under the lock: `script` (FENCE_CHECK first) with KEYS {lock, fence
 * counter, the tenant's planned hash, history (when not NULL)} and ARGV
 * {token, fence, name, arg}; its integer reply in *v.  The lock lost:
 * conflict "lock ownership lost: <lost>", the holder marked lost. */
static int fenced_eval(struct sbx_redis *r, struct sbx_lock *l, struct sbx_script *script,
		       const char *tenant, const char *history, const char *name, const char *arg,
		       const char *lost, long long *v, struct sbx_err *err)
{
	SBX_AUTOFREE char *pkey = planned_key(r, tenant);
	char fence[24];
	snprintf(fence, sizeof(fence), "%lld", (long long)l->fence);
	const char *keys[] = {l->tk.key, l->fence_key, pkey, history};
	const char *args[] = {l->tk.token, fence, name, arg};
	redisReply *rep;
	if (sbx_redis_eval(r, script, &rep, history ? 4 : 3, keys, 4, args, err) < 0)
		return -1;
	*v = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
	freeReplyObject(rep);
	if (*v < 0) {
		l->tk.lost = 1;
		return sbx_fail(err, SBX_CONFLICT, "lock", "lock ownership lost: %s", lost);
	}
	return 0;
}

/* Under the lock: record snapshot name `name` as planned for the session,
 * fenced (conflict when the lock was lost: nothing written). */
static int plan(struct sbx_redis *r, struct sbx_lock *l, const char *tenant, const char *session,
		const char *name, struct sbx_err *err)
{
	json_object *o = json_object_new_object();
	sbx_json_set_str(o, "session", session);
	sbx_json_set_int(o, "planned_at_ns", sbx_now_ms() * 1000000LL);
	SBX_AUTOFREE char *json =
		sbx_xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	long long v;
	return fenced_eval(r, l, &plan_script, tenant, NULL, name, json,
			   "no checkpoint was taken", &v, err);
}

/* The planned record of `name` goes (its snapshot was never made, or was
 * deleted again); best effort: one left is the reaper's. */
static void unplan(struct sbx_redis *r, const char *tenant, const char *name)
{
	SBX_AUTOFREE char *key = planned_key(r, tenant);
	const char *argv[] = {"HDEL", key, name};
	redisReply *rep;
	struct sbx_err e = {0};
	if (sbx_redis_cmd(r, &rep, &e, 3, argv, NULL) == 0)
		freeReplyObject(rep);
}

/* Under the lock: append `c` (n assigned) and drop its planned record
 * `name`, fenced. */
static int append(struct sbx_redis *r, struct sbx_lock *l, const char *tenant,
		  const char *session, const char *name, struct sbx_checkpoint *c,
		  struct sbx_err *err)
{
	if (sbx_lock_check(l, err) < 0)
		return -1;
	SBX_AUTOFREE char *key = history_key(r, tenant, session);
	json_object *o = entry_json(c);
	SBX_AUTOFREE char *json =
		sbx_xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	long long v;
	if (fenced_eval(r, l, &append_script, tenant, key, name, json,
			"the checkpoint was not recorded", &v, err) < 0)
		return -1;
	if (v == 0)
		return sbx_fail(err, SBX_INTERNAL, "checkpoint", "unexpected reply from the append");
	c->n = v;
	return 0;
}

int sbx_session_bound(struct sbx_backend *b, struct sbx_lock *l, const char *tenant,
		      const char *session, struct sbx_binding *bd, struct sbx_sandbox *sb,
		      struct sbx_err *err)
{
	memset(sb, 0, sizeof(*sb));
	memset(bd, 0, sizeof(*bd));
	if (!l->binding_raw)
		return sbx_fail(err, SBX_NOT_FOUND, "checkpoint", "session %s has no sandbox", session);
	if (sbx_binding_decode(l->binding_raw, l->binding_len, tenant, session, bd, err) < 0)
		return -1;
	const char *profile = b->profile && b->profile->name ? b->profile->name : "default";
	SBX_AUTOFREE char *host = NULL;
	if ((sbx_backend_caps(b) & SBX_CAP_HOST_LOCAL) && !(host = sbx_host_id(err)))
		return -1;
	if (strcmp(bd->backend, b->ops->name) || strcmp(bd->profile, profile) ||
	    (host && bd->host && strcmp(bd->host, host))) {
		sbx_fail(err, SBX_CONFLICT, "checkpoint",
			 "session %s is bound to sandbox %s of backend %s, profile %s%s%s: not this one",
			 session, bd->sandbox_id, bd->backend, bd->profile,
			 bd->host ? ", host " : "", bd->host ? bd->host : "");
		sbx_binding_clear(bd);
		return -1;
	}
	if (sbx_call(b, get, err, bd->sandbox_id, sb) < 0 || sb->state == SBX_STATE_TERMINAL) {
		if (err->kind == SBX_OK || err->kind == SBX_NOT_FOUND)
			sbx_fail(err, SBX_NOT_FOUND, "checkpoint",
				 "session %s's sandbox %s is gone (sbx-create --session makes another)",
				 session, bd->sandbox_id);
		sbx_sandbox_clear(sb);
		sbx_binding_clear(bd);
		return -1;
	}
	return 0;
}

/* Under the lock: snapshot the bound sandbox `sb` over the history's
 * last entry, and append it. */
static int take_locked(struct sbx_backend *b, struct sbx_redis *r, struct sbx_lock *l,
		       const char *tenant, const char *session, struct sbx_sandbox *sb,
		       const char *label, struct sbx_checkpoint *out, struct sbx_err *err)
{
	struct sbx_checkpoint *v;
	size_t n;
	if (sbx_checkpoint_list(r, tenant, session, &v, &n, err) < 0)
		return -1;
	const char *prev = n ? v[n - 1].snapshot : NULL;
	struct sbx_snapshot_ref ref = {0};
	int64_t taken = 0;
	char rnd[17], name[32];
	int rc = sbx_random_hex(rnd, 8, err);
	snprintf(name, sizeof(name), "ckpt-%s", rnd);
	if (rc == 0)
		rc = plan(r, l, tenant, session, name, err);
	if (rc < 0) {
		sbx_checkpoints_free(v, n);
		return -1;
	}
	sbx_fault("checkpoint:planned");
	if (b->ops->checkpoint_create) {
		rc = sbx_call(b, checkpoint_create, err, sb, prev, name, &ref, &taken);
	} else {
		taken = sbx_now_ms() * 1000000LL;
		rc = sbx_call(b, snapshot_create, err, sb, name, &ref);
	}
	if (rc < 0)
		unplan(r, tenant, name);
	else
		sbx_fault("checkpoint:snapshotted");
	/* It stacks on a checkpoint of the history when its parent is one:
	 * the previous one, or (after a rewind) the one rewound to. */
	const char *of = NULL;
	for (size_t i = n; rc == 0 && ref.parent && i-- > 0;)
		if (strcmp(v[i].snapshot, ref.parent) == 0) {
			of = v[i].snapshot;
			break;
		}
	struct sbx_checkpoint c = {
		.label = label ? sbx_xstrdup(label) : NULL, .snapshot = ref.id,
		.sandbox = sbx_xstrdup(sb->id), .taken_at_ns = taken, .size_bytes = ref.size_bytes,
		.checkpoint_of = of ? sbx_xstrdup(of) : NULL,
	};
	sbx_checkpoints_free(v, n);
	if (rc < 0) {
		sbx_checkpoint_clear(&c);
		return -1;
	}
	ref.id = NULL;
	free(ref.name);
	free(ref.parent);
	if (append(r, l, tenant, session, name, &c, err) < 0) {
		/* Not in the history: the snapshot is nobody's.  Deleted (best
		 * effort), then its record; what is left is the reaper's. */
		int gone = 0;
		struct sbx_err e = {0};
		if (sbx_call(b, snapshot_delete, &e, c.snapshot, &gone) == 0)
			unplan(r, tenant, name);
		sbx_checkpoint_clear(&c);
		return -1;
	}
	*out = c;
	return 0;
}

/* A label: 1 to 255 printable ASCII bytes (the rule the snapshot name
 * had when the label was the name). */
static int label_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 255)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return 0;
	return 1;
}

int sbx_checkpoint_take(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
			const char *session, const char *label, struct sbx_checkpoint *out,
			struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (sbx_ids_check(tenant, "session", session, err) < 0)
		return -1;
	if (label && !label_ok(label))
		return sbx_fail(err, SBX_INVALID_REQUEST, "checkpoint",
				"bad checkpoint label: 1 to 255 printable bytes");
	struct sbx_lock *l;
	if (sbx_lock_acquire(r, tenant, strlen(tenant), session, strlen(session),
			     sbx_lock_wait_ms(90000), &l, err) < 0)
		return -1;
	struct sbx_sandbox sb;
	struct sbx_binding bd;
	int rc = sbx_session_bound(b, l, tenant, session, &bd, &sb, err);
	if (rc == 0) {
		rc = take_locked(b, r, l, tenant, session, &sb, label, out, err);
		sbx_sandbox_clear(&sb);
		sbx_binding_clear(&bd);
	}
	struct sbx_err rel = {0};
	if (sbx_lock_release(l, &rel) < 0 && rc == 0 && rel.kind == SBX_CONFLICT) {
		/* Appended under a fence that held: the entry stands; report
		 * that nobody can vouch for what came after, as resolve does. */
		sbx_checkpoint_clear(out);
		*err = rel;
		return -1;
	}
	return rc;
}
