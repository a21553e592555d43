/* lock.c - lifecycle lock with fencing (see lock.h for the contract).
 *
 * The lock is a token key (tokenkey.h: renewal thread, token-checked
 * release); this file adds the fence and the binding read at acquire. */
#include "lock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keys.h"
#include "tokenkey.h"
#include "util.h"

/* KEYS: lock, fence, binding.  ARGV: token, ttl_ms.
 * Returns {fence, binding-or-nil} when taken, 0 when busy.  Durable: with
 * replicas, the fence increment counts only once a replica acknowledged it
 * (WAIT), so a failover can never hand a later holder a fence number that
 * an earlier holder already used (man sbx(7), FAILOVER). */
static struct sbx_script acquire_script = {.src =
	"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
	"  local f = redis.call('INCR', KEYS[2])\n"
	"  return {f, redis.call('GET', KEYS[3])}\n"
	"end\n"
	"return 0\n", .durable = 1};

int64_t sbx_lock_ttl_ms(void)
{
	return sbx_env_ms("SBX_LOCK_TTL_MS", 1, 0, 60000);
}

int64_t sbx_lock_wait_ms(int64_t dflt)
{
	return sbx_env_ms("SBX_LOCK_WAIT", 0, 0, dflt);
}

/* Free l; with give_back, first delete the lock if it holds our token. */
static void lock_free_(struct sbx_lock *l, int give_back)
{
	struct sbx_err ignored = {0};
	if (give_back)
		sbx_tokenkey_release(&l->tk, &ignored);    /* clears tk too */
	else
		sbx_tokenkey_clear(&l->tk);
	free(l->fence_key);
	free(l->binding_raw);
	free(l);
}

static void lock_free(struct sbx_lock *l)
{
	lock_free_(l, 0);
}

/* Acquire: one script takes the lock, bumps the fence and reads the
 * binding.  Between tries we sleep 25 + rand(50) ms so that a crowd of
 * waiters does not retry in lock step. */
int sbx_lock_acquire(struct sbx_redis *r, const char *tenant, size_t tlen,
		     const char *session, size_t slen, int64_t wait_ms,
		     struct sbx_lock **out, struct sbx_err *err)
{
	*out = NULL;
	struct sbx_lock *l = sbx_xcalloc(1, sizeof(*l));
	char *key = sbx_key_session(r->prefix, tenant, tlen, session, slen, SBX_KEY_LOCK);
	int ok = sbx_tokenkey_init(&l->tk, r, key, sbx_lock_ttl_ms(), "lock", err);
	l->fence_key = sbx_key_session(r->prefix, tenant, tlen, session, slen, SBX_KEY_FENCE);
	SBX_AUTOFREE char *bkey = sbx_key_session(r->prefix, tenant, tlen, session, slen,
						  SBX_KEY_BINDING);
	if (ok < 0) {
		lock_free(l);
		return -1;
	}
	char ttl[24];
	snprintf(ttl, sizeof(ttl), "%lld", (long long)l->tk.ttl_ms);
	const char *keys[] = {l->tk.key, l->fence_key, bkey}, *args[] = {l->tk.token, ttl};
	int64_t deadline = sbx_mono_ms() + wait_ms;
	for (;;) {
		redisReply *rep = NULL;
		if (sbx_redis_eval(r, &acquire_script, &rep, 3, keys, 2, args, err) < 0) {
			/* The lock may be ours all the same (the WAIT fell short, or
			 * the reply was lost): give it back rather than block the
			 * session for a whole TTL.  Token-checked, so harmless. */
			lock_free_(l, 1);
			return -1;
		}
		if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
		    rep->element[0]->type == REDIS_REPLY_INTEGER) {
			l->fence = rep->element[0]->integer;
			redisReply *b = rep->element[1];
			if (b->type == REDIS_REPLY_STRING) {
				l->binding_raw = sbx_xmalloc(b->len + 1);
				memcpy(l->binding_raw, b->str, b->len);
				l->binding_raw[b->len] = '\0';
				l->binding_len = b->len;
			}
			freeReplyObject(rep);
			break;
		}
		freeReplyObject(rep);
		int64_t now = sbx_mono_ms();
		if (wait_ms <= 0 || now >= deadline) {
			lock_free(l);
			if (wait_ms <= 0)
				return sbx_fail(err, SBX_CONFLICT, "lock",
						"the session's lifecycle lock is held by another process");
			return sbx_fail(err, SBX_CONFLICT, "lock",
					"the session's lifecycle lock is still held after %lld ms",
					(long long)wait_ms);
		}
		unsigned char rb = 0;
		char hex[3];
		struct sbx_err ignored = {0};
		int64_t pause = 50;
		if (sbx_random_hex(hex, 1, &ignored) == 0) {
			rb = (unsigned char)strtol(hex, NULL, 16);
			pause = 25 + rb % 50;
		}
		if (pause > deadline - now)
			pause = deadline - now;
		sbx_sleep_ms(pause);
	}
	if (sbx_tokenkey_hold(&l->tk, err) < 0) {
		lock_free(l);
		return -1;
	}
	*out = l;
	return 0;
}

/* KEYS: lock, fence.  ARGV: token, fence, ttl_ms.  1 (and the lock's TTL
 * back to a whole ttl) while the lock holds our token and the counter our
 * fence; else 0.  Token and fence in one script: a lock that expired and
 * was taken again fails on the token, a fence that moved on (a failover
 * that lost the lock key, a later holder whose lock expired in turn) on
 * the counter. */
static struct sbx_script verify_script = {.src =
	"if redis.call('GET', KEYS[1]) == ARGV[1] and\n"
	"   tonumber(redis.call('GET', KEYS[2]) or -1) == tonumber(ARGV[2]) then\n"
	"  redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
	"  return 1\n"
	"end\n"
	"return 0\n"};

int sbx_lock_verify(struct sbx_lock *l, const char *before, struct sbx_err *err)
{
	if (sbx_lock_check(l, err) < 0) {
		sbx_err_prefix(err, "not %s", before);
		return -1;
	}
	char fence[24], ttl[24];
	snprintf(fence, sizeof(fence), "%lld", (long long)l->fence);
	snprintf(ttl, sizeof(ttl), "%lld", (long long)l->tk.ttl_ms);
	const char *keys[] = {l->tk.key, l->fence_key}, *args[] = {l->tk.token, fence, ttl};
	redisReply *rep = NULL;
	if (sbx_redis_eval(l->tk.r, &verify_script, &rep, 2, keys, 3, args, err) < 0) {
		sbx_err_prefix(err, "not %s: the lifecycle lock could not be checked", before);
		return -1;
	}
	int held = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	if (!held) {
		l->verify_lost = 1;
		return sbx_fail(err, SBX_CONFLICT, "lock",
				"lock ownership lost (fence %lld is no longer the session's): not %s",
				(long long)l->fence, before);
	}
	return 0;
}

int sbx_lock_check(struct sbx_lock *l, struct sbx_err *err)
{
	if (l->verify_lost)
		return sbx_fail(err, SBX_CONFLICT, "lock", "lock ownership lost");
	return sbx_tokenkey_check(&l->tk, err);
}

int sbx_lock_release_rider(struct sbx_lock *l, const char *rider_key, const char *cmd, int argc,
			   const char **argv, char *rider_err, size_t errlen, struct sbx_err *err)
{
	int rc = sbx_tokenkey_release_rider(&l->tk, rider_key, cmd, argc, argv, rider_err, errlen,
					    err);
	lock_free(l);
	return rc;
}

int sbx_lock_release(struct sbx_lock *l, struct sbx_err *err)
{
	if (!l)
		return 0;
	int rc = sbx_tokenkey_release(&l->tk, err);
	lock_free(l);
	return rc;
}
