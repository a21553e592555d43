/* tokenkey.c - a key that holds its owner's token, renewed by a thread
 * (see tokenkey.h for the contract). */
#include "tokenkey.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

/* Both are token-checked, so running one twice changes nothing more than
 * running it once: resent to the new master when a failover broke the
 * connection after sending (a release lost there would hold the key for
 * its whole TTL). */
static struct sbx_script renew_script = {.src = SBX_TOKENKEY_RENEW_LUA, .resend = 1};

static struct sbx_script release_script = {.src = SBX_TOKENKEY_RELEASE_LUA, .resend = 1};

/* KEYS: the token key, the rider's key.  ARGV: token, command, its args. */
static struct sbx_script release_rider_script = {.src =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0, ''} end\n"
	"redis.call('DEL', KEYS[1])\n"
	"local r = redis.pcall(ARGV[2], KEYS[2], unpack(ARGV, 3))\n"
	"if type(r) == 'table' and r.err then return {1, r.err} end\n"
	"return {1, ''}\n"};

int sbx_tokenkey_init(struct sbx_tokenkey *k, struct sbx_redis *r, char *key, int64_t ttl_ms,
		      const char *what, struct sbx_err *err)
{
	memset(k, 0, sizeof(*k));
	k->r = r;
	k->key = key;
	k->ttl_ms = ttl_ms;
	k->what = what;
	pthread_mutex_init(&k->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cv, &ca);
	pthread_condattr_destroy(&ca);
	return sbx_random_hex(k->token, 16, err);
}

int sbx_tokenkey_take(struct sbx_tokenkey *k, struct sbx_err *err)
{
	char ttl[24];
	snprintf(ttl, sizeof(ttl), "%lld", (long long)k->ttl_ms);
	const char *argv[] = {"SET", k->key, k->token, "NX", "PX", ttl};
	redisReply *rep;
	if (sbx_redis_cmd(k->r, &rep, err, 6, argv, NULL) < 0)
		return -1;
	int taken = rep->type == REDIS_REPLY_STATUS;
	freeReplyObject(rep);
	return taken;
}

static int lost_err(struct sbx_tokenkey *k, struct sbx_err *err)
{
	return sbx_fail(err, SBX_CONFLICT, k->what, "%s ownership lost", k->what);
}

/* One renewal on the thread's own connection (*rc, opened on first use):
 * 1 renewed, 0 lost (err says why). */
static int renew_once(struct sbx_tokenkey *k, struct sbx_redis **rc, const char *ttl,
		      struct sbx_err *err)
{
	if (!*rc && sbx_redis_dup(k->r, rc, err) < 0)
		return 0;
	redisReply *rep = NULL;
	const char *keys[] = {k->key}, *args[] = {k->token, ttl};
	if (sbx_redis_eval(*rc, &renew_script, &rep, 1, keys, 2, args, err) < 0)
		return 0;
	int ok = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	if (!ok)
		lost_err(k, err);
	return ok;
}

/* Renew every ttl/3 until told to stop or until the key is found lost.  A
 * renewal error counts as a loss (as in the reference): ownership can no
 * longer be proven, and fenced writes would be refused anyway. */
static void *renew_main(void *arg)
{
	struct sbx_tokenkey *k = arg;
	struct sbx_redis *rc = NULL;
	int64_t interval = k->ttl_ms / 3 > 0 ? k->ttl_ms / 3 : 1;
	char ttl[24];
	snprintf(ttl, sizeof(ttl), "%lld", (long long)k->ttl_ms);
	pthread_mutex_lock(&k->mu);
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += interval / 1000;
		until.tv_nsec += (interval % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!k->stop)
			if (pthread_cond_timedwait(&k->cv, &k->mu, &until) == ETIMEDOUT)
				break;
		if (k->stop)
			break;
		pthread_mutex_unlock(&k->mu);
		struct sbx_err err = {0};
		int ok = renew_once(k, &rc, ttl, &err);
		pthread_mutex_lock(&k->mu);
		if (!ok) {
			k->renew_err = err;
			k->lost = 1;
			break;
		}
	}
	pthread_mutex_unlock(&k->mu);
	sbx_redis_close(rc);
	return NULL;
}

static int release_key(struct sbx_tokenkey *k, struct sbx_err *err)
{
	const char *keys[] = {k->key}, *args[] = {k->token};
	redisReply *rep = NULL;
	if (sbx_redis_eval(k->r, &release_script, &rep, 1, keys, 1, args, err) < 0)
		return -1;
	int ok = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	return ok;
}

int sbx_tokenkey_hold(struct sbx_tokenkey *k, struct sbx_err *err)
{
	if (pthread_create(&k->thread, NULL, renew_main, k) != 0) {
		/* Without renewal the key still protects us until its TTL; but
		 * say so rather than run unrenewed. */
		struct sbx_err ignored = {0};
		release_key(k, &ignored);
		return sbx_fail(err, SBX_INTERNAL, k->what, "cannot start the %s renewal thread",
				k->what);
	}
	k->thread_started = 1;
	return 0;
}

int sbx_tokenkey_check(struct sbx_tokenkey *k, struct sbx_err *err)
{
	return k->lost ? lost_err(k, err) : 0;
}

static void stop_renewal(struct sbx_tokenkey *k)
{
	if (!k->thread_started)
		return;
	pthread_mutex_lock(&k->mu);
	k->stop = 1;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
	pthread_join(k->thread, NULL);
	k->thread_started = 0;
}

int sbx_tokenkey_release(struct sbx_tokenkey *k, struct sbx_err *err)
{
	stop_renewal(k);
	int lost = k->lost, rc = release_key(k, err);
	if (rc >= 0)
		rc = rc == 1 && !lost ? 0 : lost_err(k, err);
	sbx_tokenkey_clear(k);
	return rc;
}

void sbx_tokenkey_clear(struct sbx_tokenkey *k)
{
	stop_renewal(k);
	free(k->key);
	k->key = NULL;
	pthread_mutex_destroy(&k->mu);
	pthread_cond_destroy(&k->cv);
}

int sbx_tokenkey_release_rider(struct sbx_tokenkey *k, const char *rider_key, const char *cmd,
			       int argc, const char **argv, char *rider_err, size_t errlen,
			       struct sbx_err *err)
{
	stop_renewal(k);
	rider_err[0] = '\0';
	int lost = k->lost, rc = -1;
	const char *keys[] = {k->key, rider_key};
	SBX_AUTOFREE const char **args = sbx_xcalloc((size_t)argc + 2, sizeof(*args));
	args[0] = k->token, args[1] = cmd;
	memcpy(args + 2, argv, (size_t)argc * sizeof(*args));
	redisReply *rep = NULL;
	if (sbx_redis_eval(k->r, &release_rider_script, &rep, 2, keys, argc + 2, args, err) == 0) {
		int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
			 rep->element[0]->type == REDIS_REPLY_INTEGER && rep->element[0]->integer == 1;
		if (ok && rep->element[1]->type == REDIS_REPLY_STRING)
			snprintf(rider_err, errlen, "%s", rep->element[1]->str);
		freeReplyObject(rep);
		rc = ok && !lost ? 0 : lost_err(k, err);
	}
	sbx_tokenkey_clear(k);
	return rc;
}
