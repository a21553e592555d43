/* quota.c - a tenant's quota: the slots of its sessions (see quota.h).
 *
 * Every script here touches only the tenant's keys (its hash tag), so the
 * count and the take are one atomic step.  The pending slots name their
 * session's lock key, which the script reads without declaring it: it is
 * in the same hash slot by construction (keys.h), which Redis Cluster
 * allows. */
#include "quota.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "keys.h"
#include "util.h"

/* count(h, self): running, all, pending slots of usage hash h, leaving out
 * field `self`, and the bytes its paused slots hold ("paused <bytes>";
 * a bare "paused" holds none that sbx measured); pending slots whose lock no longer holds their token are
 * deleted on the way (a killed resolve's).  limit(k, f, dflt): the
 * tenant's value of field f, else the profile's dflt when >= 0, else -1,
 * with where it came from. */
#define QUOTA_LUA                                                                 \
	"local function count(h, self)\n"                                         \
	"  local run, all, pend, pb = 0, 0, 0, 0\n"                                       \
	"  local t = redis.call('HGETALL', h)\n"                                  \
	"  for i = 1, #t, 2 do\n"                                                 \
	"    local f, v = t[i], t[i + 1]\n"                                       \
	"    if f ~= self then\n"                                                 \
	"      if string.sub(v, 1, 8) == 'pending ' then\n"                       \
	"        local sp = string.find(v, ' ', 9, true)\n"                       \
	"        if sp and redis.call('GET', string.sub(v, 9, sp - 1)) == string.sub(v, sp + 1) then\n" \
	"          run = run + 1; all = all + 1; pend = pend + 1\n"                \
	"        else\n"                                                          \
	"          redis.call('HDEL', h, f)\n"                                    \
	"        end\n"                                                           \
	"      else\n"                                                            \
	"        all = all + 1\n"                                                 \
	"        if string.sub(v, 1, 6) ~= 'paused' then run = run + 1\n"          \
	"        else pb = pb + (tonumber(string.sub(v, 8)) or 0) end\n"           \
	"      end\n"                                                             \
	"    end\n"                                                               \
	"  end\n"                                                                 \
	"  return run, all, pend, pb\n"                                               \
	"end\n"                                                                   \
	"local function limit(k, f, dflt)\n"                                      \
	"  local v = redis.call('HGET', k, f)\n"                                  \
	"  if v then return tonumber(v) or -1, 'tenant' end\n"                    \
	"  if tonumber(dflt) >= 0 then return tonumber(dflt), 'profile' end\n"    \
	"  return -1, 'none'\n"                                                   \
	"end\n"                                                                   \
	"local function paused(v) return v and string.sub(v, 1, 6) == 'paused' end\n"

/* KEYS: usage, quota, lock.  ARGV: token, session, running, sandboxes
 * (the profile's), lock key. */
static struct sbx_script reserve_script = {.src =
	QUOTA_LUA
	"if redis.call('GET', KEYS[3]) ~= ARGV[1] then return {-1} end\n"
	"local run, all = count(KEYS[1], ARGV[2])\n"
	"local lr = limit(KEYS[2], 'running', ARGV[3])\n"
	"local la = limit(KEYS[2], 'sandboxes', ARGV[4])\n"
	"if la >= 0 and all >= la then return {-3, 'sandboxes', all, la} end\n"
	"if lr >= 0 and run >= lr then return {-3, 'running', run, lr} end\n"
	"redis.call('HSET', KEYS[1], ARGV[2], 'pending ' .. ARGV[5] .. ' ' .. ARGV[1])\n"
	"return {1}\n", .durable = 1};

/* KEYS: usage.  ARGV: session, the pending value that is ours. */
static struct sbx_script unreserve_script = {.src =
	"if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return {0} end\n"
	"redis.call('HDEL', KEYS[1], ARGV[1])\n"
	"return {1}\n"};

/* KEYS: usage, quota, paused.  ARGV: session, running (the profile's).
 * A resumed session's pause time goes (retention counts from a pause).
 * {1, v}: switched, v the paused slot it was (its bytes, to put back if
 * the thaw fails). */
static struct sbx_script resume_script = {.src =
	QUOTA_LUA
	"local v = redis.call('HGET', KEYS[1], ARGV[1])\n"
	"if not paused(v) then\n"
	"  redis.call('HDEL', KEYS[3], ARGV[1])\n"
	"  return {0}\n"
	"end\n"
	"local run = count(KEYS[1], ARGV[1])\n"
	"local lr = limit(KEYS[2], 'running', ARGV[2])\n"
	"if lr >= 0 and run >= lr then return {-3, 'running', run, lr} end\n"
	"redis.call('HSET', KEYS[1], ARGV[1], 'running')\n"
	"redis.call('HDEL', KEYS[3], ARGV[1])\n"
	"return {1, v}\n", .durable = 1};

/* KEYS: usage, quota, paused.  ARGV: session, bytes (-1: the backend
 * cannot measure), paused_bytes (the profile's), now.  Checks the
 * paused_bytes quota and marks the slot "paused <bytes>" in one step, so
 * two pauses racing for the last bytes cannot both pass.  Replies {2, v}:
 * marked, v the slot before (to put back if the backend's pause fails);
 * {0}: no bound slot, nothing checked; {-4}: a limit, nothing measured. */
static struct sbx_script pause_script = {.src =
	QUOTA_LUA
	"local v = redis.call('HGET', KEYS[1], ARGV[1])\n"
	"if v ~= 'running' and not paused(v) then return {0} end\n"
	"local lb = limit(KEYS[2], 'paused_bytes', ARGV[3])\n"
	"local b = tonumber(ARGV[2])\n"
	"if lb >= 0 and b < 0 then return {-4} end\n"
	"if b < 0 then b = 0 end\n"
	"if lb >= 0 then\n"
	"  local _, _, _, pb = count(KEYS[1], ARGV[1])\n"
	"  if pb + b > lb then return {-3, 'paused_bytes', pb, lb, b} end\n"
	"end\n"
	"redis.call('HSET', KEYS[1], ARGV[1], 'paused ' .. b)\n"
	"if not paused(v) then redis.call('HSET', KEYS[3], ARGV[1], ARGV[4]) end\n"
	"return {2, v}\n", .durable = 1};

/* KEYS: usage, paused.  ARGV: session, the slot before a pause or a
 * resume whose backend call failed, now.  Put back only over what that
 * call's script wrote: a running slot the pause marked paused runs again
 * (its pause time goes); a paused slot the resume marked running is
 * paused again with its bytes (its pause time now, as a mark's).  A slot
 * that was paused already stays as the pause left it. */
static struct sbx_script restore_script = {.src =
	QUOTA_LUA
	"local v = redis.call('HGET', KEYS[1], ARGV[1])\n"
	"if ARGV[2] == 'running' and paused(v) then\n"
	"  redis.call('HSET', KEYS[1], ARGV[1], 'running')\n"
	"  redis.call('HDEL', KEYS[2], ARGV[1])\n"
	"  return {1}\n"
	"end\n"
	"if paused(ARGV[2]) and v == 'running' then\n"
	"  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])\n"
	"  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])\n"
	"  return {1}\n"
	"end\n"
	"return {0}\n"};

/* KEYS: usage, quota.  ARGV: running, sandboxes, retain_paused,
 * paused_bytes (the profile's). */
static struct sbx_script usage_script = {.src =
	QUOTA_LUA
	"local run, all, pend, pb = count(KEYS[1], false)\n"
	"local lr, fr = limit(KEYS[2], 'running', ARGV[1])\n"
	"local la, fa = limit(KEYS[2], 'sandboxes', ARGV[2])\n"
	"local lp, fp = limit(KEYS[2], 'retain_paused', ARGV[3])\n"
	"local lb, fb = limit(KEYS[2], 'paused_bytes', ARGV[4])\n"
	"return {run, all, pend, lr, fr, la, fa, lp, fp, pb, lb, fb}\n"};

/* KEYS: paused, quota.  ARGV: session.  Read only. */
static struct sbx_script retention_script = {.src =
	"return {tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0') or 0,\n"
	"        tonumber(redis.call('HGET', KEYS[2], 'retain_paused') or '-1') or -1}\n"};

/* KEYS: quota.  ARGV: running, sandboxes, retain_paused, paused_bytes:
 * 'keep', 'profile' or a number. */
static struct sbx_script set_script = {.src =
	"local f = {'running', 'sandboxes', 'retain_paused', 'paused_bytes'}\n"
	"for i = 1, 4 do\n"
	"  if ARGV[i] == 'profile' then redis.call('HDEL', KEYS[1], f[i])\n"
	"  elseif ARGV[i] ~= 'keep' then redis.call('HSET', KEYS[1], f[i], ARGV[i]) end\n"
	"end\n"
	"return {1}\n", .durable = 1};

static char *tkey(struct sbx_redis *r, const char *tenant, enum sbx_tenant_key which)
{
	return sbx_key_tenant(r->prefix, tenant, strlen(tenant), which);
}

/* The first integer of a script's reply, or -1 (internal).  A {-3, name,
 * used, limit} reply is capacity naming the quota. */
static int reply_int(redisReply *rep, const char *tenant, struct sbx_err *err)
{
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
	    rep->element[0]->type != REDIS_REPLY_INTEGER)
		return sbx_fail(err, SBX_INTERNAL, "quota", "unexpected reply from a quota script");
	long long v = rep->element[0]->integer;
	if (v == -3 && rep->elements >= 5 && rep->element[1]->type == REDIS_REPLY_STRING)
		return sbx_fail_reason(err, SBX_CAPACITY, SBX_R_QUOTA, "quota",
				       "tenant %s is at its quota %s=%lld (%lld in use, the pause "
				       "holds %lld)", tenant, rep->element[1]->str,
				       rep->element[3]->integer, rep->element[2]->integer,
				       rep->element[4]->integer);
	if (v == -3 && rep->elements >= 4 && rep->element[1]->type == REDIS_REPLY_STRING)
		return sbx_fail_reason(err, SBX_CAPACITY, SBX_R_QUOTA, "quota",
				       "tenant %s is at its quota %s=%lld (%lld in use)", tenant,
				       rep->element[1]->str, rep->element[3]->integer,
				       rep->element[2]->integer);
	if (v == -4)
		return sbx_fail(err, SBX_UNSUPPORTED, "quota",
				"tenant %s has a paused_bytes quota and this backend cannot measure "
				"a paused sandbox's bytes", tenant);
	if (v == -1)
		return sbx_fail(err, SBX_CONFLICT, "lock",
				"lock ownership lost (the lock expired or was taken over)");
	if (v < 0)
		return sbx_fail(err, SBX_INTERNAL, "quota", "unexpected reply from a quota script");
	return (int)v;
}

static int run(struct sbx_redis *r, struct sbx_script *s, const char *tenant, int nk,
	       const char **keys, int na, const char **args, struct sbx_err *err)
{
	redisReply *rep;
	if (sbx_redis_eval(r, s, &rep, nk, keys, na, args, err) < 0)
		return -1;
	int rc = reply_int(rep, tenant, err);
	freeReplyObject(rep);
	return rc;
}

static char *pending_value(const struct sbx_lock *lock)
{
	return sbx_xasprintf("pending %s %s", lock->tk.key, lock->tk.token);
}

int sbx_quota_reserve(struct sbx_redis *r, struct sbx_lock *lock, const struct sbx_quota *q,
		      const char *tenant, const char *session, struct sbx_err *err)
{
	if (sbx_lock_check(lock, err) < 0)
		return -1;
	SBX_AUTOFREE char *usage = tkey(r, tenant, SBX_KEY_USAGE);
	SBX_AUTOFREE char *quota = tkey(r, tenant, SBX_KEY_QUOTA);
	char lr[24], la[24];
	snprintf(lr, sizeof(lr), "%lld", (long long)q->running);
	snprintf(la, sizeof(la), "%lld", (long long)q->sandboxes);
	const char *keys[] = {usage, quota, lock->tk.key};
	const char *args[] = {lock->tk.token, session, lr, la, lock->tk.key};
	return run(r, &reserve_script, tenant, 3, keys, 5, args, err) < 0 ? -1 : 0;
}

void sbx_quota_unreserve(struct sbx_redis *r, struct sbx_lock *lock, const char *tenant,
			 const char *session)
{
	struct sbx_err ignored = {0};
	SBX_AUTOFREE char *usage = tkey(r, tenant, SBX_KEY_USAGE);
	SBX_AUTOFREE char *mine = pending_value(lock);
	const char *keys[] = {usage};
	const char *args[] = {session, mine};
	run(r, &unreserve_script, tenant, 1, keys, 2, args, &ignored);
}

/* The reply's second element, a string, as *out (malloc'd), when rc is
 * `want`; a reply without it is internal. */
static int reply_before(redisReply *rep, int rc, int want, char **out, struct sbx_err *err)
{
	if (rc != want)
		return rc;
	if (rep->elements < 2 || rep->element[1]->type != REDIS_REPLY_STRING)
		return sbx_fail(err, SBX_INTERNAL, "quota", "unexpected reply from a quota script");
	*out = sbx_xstrdup(rep->element[1]->str);
	return rc;
}

int sbx_quota_resume(struct sbx_redis *r, const struct sbx_quota *q, const char *tenant,
		     const char *session, char **before, struct sbx_err *err)
{
	*before = NULL;
	SBX_AUTOFREE char *usage = tkey(r, tenant, SBX_KEY_USAGE);
	SBX_AUTOFREE char *quota = tkey(r, tenant, SBX_KEY_QUOTA);
	SBX_AUTOFREE char *paused = tkey(r, tenant, SBX_KEY_PAUSED);
	char lr[24];
	snprintf(lr, sizeof(lr), "%lld", (long long)q->running);
	const char *keys[] = {usage, quota, paused};
	const char *args[] = {session, lr};
	redisReply *rep;
	if (sbx_redis_eval(r, &resume_script, &rep, 3, keys, 2, args, err) < 0)
		return -1;
	int rc = reply_before(rep, reply_int(rep, tenant, err), 1, before, err);
	freeReplyObject(rep);
	return rc;
}

int sbx_quota_pause(struct sbx_redis *r, const struct sbx_quota *q, const char *tenant,
		    const char *session, int64_t bytes, char **before, struct sbx_err *err)
{
	*before = NULL;
	SBX_AUTOFREE char *usage = tkey(r, tenant, SBX_KEY_USAGE);
	SBX_AUTOFREE char *quota = tkey(r, tenant, SBX_KEY_QUOTA);
	SBX_AUTOFREE char *paused = tkey(r, tenant, SBX_KEY_PAUSED);
	char nb[24], lb[24], now[24];
	snprintf(nb, sizeof(nb), "%lld", (long long)(bytes < 0 ? -1 : bytes));
	snprintf(lb, sizeof(lb), "%lld", (long long)q->paused_bytes);
	snprintf(now, sizeof(now), "%lld", (long long)(sbx_now_ms() / 1000));
	const char *keys[] = {usage, quota, paused};
	const char *args[] = {session, nb, lb, now};
	redisReply *rep;
	if (sbx_redis_eval(r, &pause_script, &rep, 3, keys, 4, args, err) < 0)
		return -1;
	int rc = reply_before(rep, reply_int(rep, tenant, err), 2, before, err);
	freeReplyObject(rep);
	return rc < 0 ? -1 : rc == 2;
}

/* The slot set to `to` ("running" or a paused value) from the other
 * state, a pause dated `at_s` (restore_script). */
static void switch_slot(struct sbx_redis *r, const char *tenant, const char *session,
			const char *to, int64_t at_s)
{
	struct sbx_err ignored = {0};
	SBX_AUTOFREE char *usage = tkey(r, tenant, SBX_KEY_USAGE);
	SBX_AUTOFREE char *paused = tkey(r, tenant, SBX_KEY_PAUSED);
	char at[24];
	snprintf(at, sizeof(at), "%lld", (long long)at_s);
	const char *keys[] = {usage, paused};
	const char *args[] = {session, to, at};
	run(r, &restore_script, tenant, 2, keys, 3, args, &ignored);
}

void sbx_quota_restore(struct sbx_redis *r, const char *tenant, const char *session,
		       const char *before)
{
	if (before)
		switch_slot(r, tenant, session, before, sbx_now_ms() / 1000);
}

void sbx_quota_follow(struct sbx_redis *r, const char *tenant, const char *session, int paused,
		      int64_t at_s)
{
	switch_slot(r, tenant, session, paused ? "paused" : "running", at_s);
}

int sbx_quota_retention(struct sbx_redis *r, const char *tenant, const char *session,
			int64_t *paused_at, int64_t *retain_ms, struct sbx_err *err)
{
	*paused_at = 0;
	*retain_ms = -1;
	SBX_AUTOFREE char *paused = tkey(r, tenant, SBX_KEY_PAUSED);
	SBX_AUTOFREE char *quota = tkey(r, tenant, SBX_KEY_QUOTA);
	const char *keys[] = {paused, quota};
	const char *args[] = {session};
	redisReply *rep;
	if (sbx_redis_eval(r, &retention_script, &rep, 2, keys, 1, args, err) < 0)
		return -1;
	int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
		 rep->element[0]->type == REDIS_REPLY_INTEGER &&
		 rep->element[1]->type == REDIS_REPLY_INTEGER;
	if (ok) {
		*paused_at = rep->element[0]->integer;
		*retain_ms = rep->element[1]->integer;
	}
	freeReplyObject(rep);
	return ok ? 0 : sbx_fail(err, SBX_INTERNAL, "quota", "unexpected reply from the retention script");
}

static const char *from_word(const redisReply *e)
{
	if (e->type != REDIS_REPLY_STRING)
		return "none";
	return strcmp(e->str, "tenant") == 0 ? "tenant" : strcmp(e->str, "profile") == 0 ? "profile"
											: "none";
}

int sbx_quota_usage(struct sbx_redis *r, const struct sbx_quota *q, int64_t retain_ms,
		    const char *tenant, struct sbx_usage *u, struct sbx_err *err)
{
	memset(u, 0, sizeof(*u));
	SBX_AUTOFREE char *usage = tkey(r, tenant, SBX_KEY_USAGE);
	SBX_AUTOFREE char *quota = tkey(r, tenant, SBX_KEY_QUOTA);
	char lr[24], la[24], lp[24], lb[24];
	snprintf(lr, sizeof(lr), "%lld", (long long)q->running);
	snprintf(la, sizeof(la), "%lld", (long long)q->sandboxes);
	snprintf(lb, sizeof(lb), "%lld", (long long)q->paused_bytes);
	/* A profile without retention keeps for good: "none" below. */
	snprintf(lp, sizeof(lp), "%lld", (long long)(retain_ms > 0 ? retain_ms : -1));
	const char *keys[] = {usage, quota};
	const char *args[] = {lr, la, lp, lb};
	redisReply *rep;
	if (sbx_redis_eval(r, &usage_script, &rep, 2, keys, 4, args, err) < 0)
		return -1;
	int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 12;
	for (size_t i = 0; ok && i < 12; i++)
		if ((i == 4 || i == 6 || i == 8 || i == 11) ? 0
							    : rep->element[i]->type != REDIS_REPLY_INTEGER)
			ok = 0;
	if (ok) {
		u->running = rep->element[0]->integer;
		u->sandboxes = rep->element[1]->integer;
		u->pending = rep->element[2]->integer;
		u->limit.running = rep->element[3]->integer;
		u->from_running = from_word(rep->element[4]);
		u->limit.sandboxes = rep->element[5]->integer;
		u->from_sandboxes = from_word(rep->element[6]);
		u->retain_ms = rep->element[7]->integer;
		u->from_retain = from_word(rep->element[8]);
		u->paused_bytes = rep->element[9]->integer;
		u->limit.paused_bytes = rep->element[10]->integer;
		u->from_paused_bytes = from_word(rep->element[11]);
	}
	freeReplyObject(rep);
	return ok ? 0 : sbx_fail(err, SBX_INTERNAL, "quota", "unexpected reply from the usage script");
}

static void set_word(char *buf, size_t n, int64_t v)
{
	if (v == SBX_QUOTA_KEEP)
		snprintf(buf, n, "keep");
	else if (v == SBX_QUOTA_PROFILE)
		snprintf(buf, n, "profile");
	else
		snprintf(buf, n, "%lld", (long long)(v < 0 ? -1 : v));
}

int sbx_quota_set(struct sbx_redis *r, const char *tenant, const struct sbx_quota *set,
		  int64_t retain_ms, struct sbx_err *err)
{
	SBX_AUTOFREE char *quota = tkey(r, tenant, SBX_KEY_QUOTA);
	char lr[24], la[24], lp[24], lb[24];
	set_word(lr, sizeof(lr), set->running);
	set_word(la, sizeof(la), set->sandboxes);
	set_word(lp, sizeof(lp), retain_ms);
	set_word(lb, sizeof(lb), set->paused_bytes);
	const char *keys[] = {quota};
	const char *args[] = {lr, la, lp, lb};
	return run(r, &set_script, tenant, 1, keys, 4, args, err) < 0 ? -1 : 0;
}

/* One quota's line: {used, limit (null = none), from}. */
static json_object *quota_line(int64_t used, int64_t limit, const char *from)
{
	json_object *q = json_object_new_object();
	sbx_json_set_int(q, "used", used);
	json_object_object_add(q, "limit", limit >= 0 ? json_object_new_int64(limit) : NULL);
	sbx_json_set_str(q, "from", from);
	return q;
}

json_object *sbx_usage_json(const struct sbx_usage *u)
{
	json_object *us = json_object_new_object();
	json_object_object_add(us, "running", quota_line(u->running, u->limit.running, u->from_running));
	json_object_object_add(us, "sandboxes",
			       quota_line(u->sandboxes, u->limit.sandboxes, u->from_sandboxes));
	json_object_object_add(us, "paused_bytes", quota_line(u->paused_bytes, u->limit.paused_bytes,
							      u->from_paused_bytes));
	sbx_json_set_int(us, "pending", u->pending);
	json_object *rp = json_object_new_object();
	json_object_object_add(rp, "seconds", u->retain_ms > 0 ? json_object_new_int64(
					      (u->retain_ms + 999) / 1000) : NULL);
	sbx_json_set_str(rp, "from", u->from_retain);
	json_object_object_add(us, "retain_paused", rp);
	return us;
}
