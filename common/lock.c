/* lock.c - lifecycle lock with fencing (see lock.h for the contract).
 *
 * The renewal thread uses its own Redis connection (a hiredis context must
 * not be shared across threads), opened lazily at the first renewal, so a
 * short critical section costs no extra connection. */
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

static struct sbx_script renew_script = {.src = SBX_TOKENKEY_RENEW_LUA};

static struct sbx_script release_script = {.src = SBX_TOKENKEY_RELEASE_LUA};

static int64_t env_ms(const char *name, int64_t dflt)
{
	const char *e = getenv(name);
	int64_t ms;
	struct sbx_err ignored = {0};
	if (!e || !*e)
		return dflt;
	char *end;
	long long v = strtoll(e, &end, 10);
	if (!*end && v > 0)
		return v;
	if (sbx_parse_duration_ms(e, &ms, &ignored) == 0 && ms >= 0)
		return ms;
	return dflt;
}

int64_t sbx_lock_ttl_ms(void)
{
	return env_ms("SBX_LOCK_TTL_MS", 60000);
}

int64_t sbx_lock_wait_ms(int64_t dflt)
{
	const char *e = getenv("SBX_LOCK_WAIT");
	int64_t ms;
	struct sbx_err ignored = {0};
	if (e && *e && sbx_parse_duration_ms(e, &ms, &ignored) == 0 && ms >= 0)
		return ms;
	return dflt;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void lock_free(struct sbx_lock *l)
{
	free(l->key);
	free(l->fence_key);
	free(l->binding_raw);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l);
}

/* Renew every ttl/3 until told to stop or until the lock is found lost.
 * A renewal error counts as a loss (as in the reference): we can no longer
 * prove we hold it, and the fenced writes would be refused anyway. */
static void *renew_main(void *arg)
{
	struct sbx_lock *l = arg;
	struct sbx_redis *rc = NULL;
	int64_t interval = l->ttl_ms / 3 > 0 ? l->ttl_ms / 3 : 1;
	char ttl[24];
	snprintf(ttl, sizeof(ttl), "%lld", (long long)l->ttl_ms);
	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += interval / 1000;
		until.tv_nsec += (interval % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!l->stop) {
			if (pthread_cond_timedwait(&l->cv, &l->mu, &until) == ETIMEDOUT)
				break;
		}
		if (l->stop)
			break;
		pthread_mutex_unlock(&l->mu);
		struct sbx_err err = {0};
		int ok = 0;
		if (rc || sbx_redis_dup(l->r, &rc, &err) == 0) {
			redisReply *rep = NULL;
			const char *keys[] = {l->key}, *args[] = {l->token, ttl};
			if (sbx_redis_eval(rc, &renew_script, &rep, 1, keys, 2, args, &err) == 0) {
				ok = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
				if (!ok)
					sbx_fail(&err, SBX_CONFLICT, "lock", "lock ownership lost");
				freeReplyObject(rep);
			}
		}
		pthread_mutex_lock(&l->mu);
		if (!ok) {
			l->renew_err = err;
			l->lost = 1;
			break;
		}
	}
	pthread_mutex_unlock(&l->mu);
	sbx_redis_close(rc);
	return NULL;
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
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cv, &ca);
	pthread_condattr_destroy(&ca);
	l->r = r;
	l->ttl_ms = sbx_lock_ttl_ms();
	l->key = sbx_key_session(r->prefix, tenant, tlen, session, slen, SBX_KEY_LOCK);
	l->fence_key = sbx_key_session(r->prefix, tenant, tlen, session, slen, SBX_KEY_FENCE);
	SBX_AUTOFREE char *bkey = sbx_key_session(r->prefix, tenant, tlen, session, slen,
						  SBX_KEY_BINDING);
	if (sbx_random_hex(l->token, 16, err) < 0) {
		lock_free(l);
		return -1;
	}
	char ttl[24];
	snprintf(ttl, sizeof(ttl), "%lld", (long long)l->ttl_ms);
	const char *keys[] = {l->key, l->fence_key, bkey}, *args[] = {l->token, ttl};
	int64_t deadline = sbx_mono_ms() + wait_ms;
	for (;;) {
		redisReply *rep = NULL;
		if (sbx_redis_eval(r, &acquire_script, &rep, 3, keys, 2, args, err) < 0) {
			/* The lock may be ours all the same (the WAIT fell short, or
			 * the reply was lost): give it back rather than block the
			 * session for a whole TTL.  Token-checked, so harmless. */
			struct sbx_err ignored = {0};
			const char *ra[] = {l->token};
			if (sbx_redis_eval(r, &release_script, &rep, 1, keys, 1, ra, &ignored) == 0)
				freeReplyObject(rep);
			lock_free(l);
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
		sleep_ms(pause);
	}
	if (pthread_create(&l->thread, NULL, renew_main, l) != 0) {
		/* Without renewal the lock still protects us until its TTL and
		 * fenced writes stay safe; but say so rather than run unrenewed. */
		struct sbx_err ignored = {0};
		const char *rk[] = {l->key}, *ra[] = {l->token};
		redisReply *rep = NULL;
		if (sbx_redis_eval(r, &release_script, &rep, 1, rk, 1, ra, &ignored) == 0)
			freeReplyObject(rep);
		lock_free(l);
		return sbx_fail(err, SBX_INTERNAL, "lock", "cannot start the lock renewal thread");
	}
	l->thread_started = 1;
	*out = l;
	return 0;
}

int sbx_lock_check(struct sbx_lock *l, struct sbx_err *err)
{
	if (l->lost)
		return sbx_fail(err, SBX_CONFLICT, "lock", "lock ownership lost");
	return 0;
}

int sbx_lock_release(struct sbx_lock *l, struct sbx_err *err)
{
	if (!l)
		return 0;
	if (l->thread_started) {
		pthread_mutex_lock(&l->mu);
		l->stop = 1;
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->thread, NULL);
	}
	int lost = l->lost;
	const char *keys[] = {l->key}, *args[] = {l->token};
	redisReply *rep = NULL;
	int rc = sbx_redis_eval(l->r, &release_script, &rep, 1, keys, 1, args, err);
	if (rc == 0) {
		if (rep->type != REDIS_REPLY_INTEGER || rep->integer != 1)
			lost = 1;
		freeReplyObject(rep);
		if (lost)
			rc = sbx_fail(err, SBX_CONFLICT, "lock", "lock ownership lost");
	}
	lock_free(l);
	return rc;
}
