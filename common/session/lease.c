/* lease.c - turn leases (see lease.h).  Every operation is one script on
 * the session's turn key, so concurrent begin/end/consume never lose an
 * update. */
#include "lease.h"

#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "keys.h"
#include "util.h"

/* beginTurnScript: a nested begin does NOT reset rebuild. */
static struct sbx_script begin_script = {.src =
	"local refs = redis.call('HINCRBY', KEYS[1], 'refs', 1)\n"
	"if refs == 1 then redis.call('HSET', KEYS[1], 'rebuild', 1) end\n"
	"redis.call('PEXPIRE', KEYS[1], ARGV[1])\n"
	"return refs\n"};

static struct sbx_script end_script = {.src =
	"if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
	"local refs = redis.call('HINCRBY', KEYS[1], 'refs', -1)\n"
	"if refs <= 0 then redis.call('DEL', KEYS[1]); return 0 end\n"
	"return refs\n"};

/* consumeTurnRebuildScript: never creates the key. */
static struct sbx_script consume_script = {.src =
	"if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
	"redis.call('HSET', KEYS[1], 'rebuild', 0)\n"
	"redis.call('PEXPIRE', KEYS[1], ARGV[1])\n"
	"return 1\n"};

/* TurnState's read, shared by the two scripts that report a state: no key
 * returns {0, 0, -2}; else `refs` and `rebuild` hold the hash's fields.
 * HGETALL on a key of another type raises WRONGTYPE: the script fails and
 * the caller keeps the sandbox. */
#define READ_TURN                                                               \
	"local h = redis.call('HGETALL', KEYS[1])\n"                            \
	"if #h == 0 then return {0, 0, -2} end\n"                               \
	"local refs, rebuild = 0, '0'\n"                                        \
	"for i = 1, #h, 2 do\n"                                                 \
	"  if h[i] == 'refs' then refs = tonumber(h[i+1]) or 0\n"               \
	"  elseif h[i] == 'rebuild' then rebuild = h[i+1] end\n"                \
	"end\n"

/* TurnState then consume, atomically.  Returns {refs, rebuild-was-"1", pttl}. */
static struct sbx_script observe_script = {.src =
	READ_TURN
	"redis.call('HSET', KEYS[1], 'rebuild', 0)\n"
	"redis.call('PEXPIRE', KEYS[1], ARGV[1])\n"
	"return {refs, rebuild == '1' and 1 or 0, tonumber(ARGV[1])}\n"};

/* TurnState: HGETALL, refresh the TTL of an active lease. */
static struct sbx_script state_script = {.src =
	READ_TURN
	"if refs > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end\n"
	"return {refs, rebuild == '1' and 1 or 0, redis.call('PTTL', KEYS[1])}\n"};

int64_t sbx_turn_ttl_ms(void)
{
	return sbx_env_ms("SBX_TURN_TTL_MS", 1, 1, 30LL * 60 * 1000);
}

static int run(struct sbx_redis *r, struct sbx_script *s, const char *tenant,
	       const char *session, redisReply **rep, struct sbx_err *err)
{
	if (sbx_ids_check(tenant, "session", session, err) < 0)
		return -1;
	SBX_AUTOFREE char *key = sbx_key_session(r->prefix, tenant, strlen(tenant), session,
						 strlen(session), SBX_KEY_TURN);
	char ttl[24];
	snprintf(ttl, sizeof(ttl), "%lld", (long long)sbx_turn_ttl_ms());
	const char *keys[] = {key}, *args[] = {ttl};
	if (sbx_redis_eval(r, s, rep, 1, keys, 1, args, err) < 0) {
		sbx_err_prefix(err, "turn lease");
		return -1;
	}
	return 0;
}

/* run() for the scripts that answer a number: *v (may be NULL) gets it. */
static int run_int(struct sbx_redis *r, struct sbx_script *s, const char *tenant,
		   const char *session, long long *v, struct sbx_err *err)
{
	redisReply *rep;
	if (run(r, s, tenant, session, &rep, err) < 0)
		return -1;
	int ok = rep->type == REDIS_REPLY_INTEGER;
	if (ok && v)
		*v = rep->integer;
	freeReplyObject(rep);
	return ok ? 0 : sbx_fail(err, SBX_INTERNAL, "lease", "unexpected reply from a turn script");
}

/* run() for the scripts that answer {refs, rebuild, pttl}: *out gets the
 * state (zeroed first, also on failure). */
static int run_state(struct sbx_redis *r, struct sbx_script *s, const char *tenant,
		     const char *session, struct sbx_turn *out, struct sbx_err *err)
{
	redisReply *rep;
	memset(out, 0, sizeof(*out));
	if (run(r, s, tenant, session, &rep, err) < 0)
		return -1;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3) {
		freeReplyObject(rep);
		return sbx_fail(err, SBX_INTERNAL, "lease", "unexpected reply from a turn script");
	}
	out->refs = rep->element[0]->integer;
	out->active = out->refs > 0;
	out->rebuild = out->active && rep->element[1]->integer == 1;
	out->ttl_ms = rep->element[2]->integer;
	freeReplyObject(rep);
	return 0;
}

/* The lease's event (events.h), with the count of turns still holding it. */
static void lease_event(struct sbx_redis *r, const char *tenant, const char *session,
			const char *how, long long refs)
{
	json_object *d = json_object_new_object();
	json_object_object_add(d, "refs", json_object_new_int64(refs));
	struct sbx_event ev = {.type = "lease", .tenant = tenant, .session = session,
			       .how = how, .detail = d};
	sbx_event_emit(r, &ev);
	json_object_put(d);
}

int sbx_turn_begin(struct sbx_redis *r, const char *tenant, const char *session,
		   long long *refs, struct sbx_err *err)
{
	long long n = 0;
	if (run_int(r, &begin_script, tenant, session, &n, err) < 0)
		return -1;
	if (refs)
		*refs = n;
	lease_event(r, tenant, session, "begin", n);
	return 0;
}

int sbx_turn_end(struct sbx_redis *r, const char *tenant, const char *session,
		 long long *refs, struct sbx_err *err)
{
	long long n = 0;
	if (run_int(r, &end_script, tenant, session, &n, err) < 0)
		return -1;
	if (refs)
		*refs = n;
	lease_event(r, tenant, session, "end", n);
	return 0;
}

int sbx_turn_consume(struct sbx_redis *r, const char *tenant, const char *session,
		     struct sbx_err *err)
{
	long long v = 0;
	if (run_int(r, &consume_script, tenant, session, &v, err) < 0)
		return -1;
	return (int)v;
}

int sbx_turn_state(struct sbx_redis *r, const char *tenant, const char *session,
		   struct sbx_turn *out, struct sbx_err *err)
{
	return run_state(r, &state_script, tenant, session, out, err);
}

int sbx_turn_observe(struct sbx_redis *r, const char *tenant, const char *session,
		     struct sbx_turn *out, struct sbx_err *err)
{
	return run_state(r, &observe_script, tenant, session, out, err);
}

int sbx_turn_hold(struct sbx_backend *b, const char *sandbox_id, long long refs,
		  struct sbx_err *err)
{
	if (!b->ops->hold)
		return 0;
	return b->ops->hold(b, sandbox_id, refs > 0 ? sbx_now_ms() + sbx_turn_ttl_ms() : 0, err);
}

/* sbx_turn_idle_seen's question: HGET refs, no script (nothing to keep
 * atomic with, and no TTL touched). */
static int turn_awake(void *ctx, const char *tenant, const char *session)
{
	struct sbx_redis *r = ctx;
	struct sbx_err err = {0};
	if (!tenant || !session || sbx_ids_check(tenant, "session", session, &err) < 0)
		return 0;
	SBX_AUTOFREE char *key = sbx_key_session(r->prefix, tenant, strlen(tenant), session,
						 strlen(session), SBX_KEY_TURN);
	const char *argv[] = {"HGET", key, "refs"};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, &err, 3, argv, NULL) < 0)
		return -1;
	int held = rep->type == REDIS_REPLY_STRING && strtoll(rep->str, NULL, 10) > 0;
	int ok = rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_NIL;
	freeReplyObject(rep);
	return ok ? held : -1;
}

struct sbx_idle_seen sbx_turn_idle_seen(struct sbx_redis *r)
{
	return (struct sbx_idle_seen){.awake = turn_awake, .ctx = r};
}
