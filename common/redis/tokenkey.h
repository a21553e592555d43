/* tokenkey.h - a Redis key that holds its owner's random token: the one
 * lease mechanism of sbx (the session lifecycle lock in lock.c, the reaper
 * lease in reap.c).
 *
 * Taken with SET NX PX (or by a caller's script that does the same, such
 * as the lock's, which also bumps a fence); held by a renewal thread that
 * extends the TTL every third of it on its own connection (a hiredis
 * context must not be shared across threads, so it opens one lazily at
 * the first renewal: a short hold costs no extra connection); renewed and
 * deleted only while the key still holds our token, so an owner whose key
 * expired and was taken by another can never extend or delete the new
 * owner's.  A renewal that fails or finds another token marks the key
 * lost: sbx_tokenkey_check then fails, without a round trip.
 *
 * Crash safety: an owner killed with -9 leaves the key to expire after
 * its TTL; nothing else is needed. */
#ifndef SBX_TOKENKEY_H
#define SBX_TOKENKEY_H

#include <pthread.h>
#include <stdint.h>

#include "err.h"
#include "redis.h"

/* KEYS[1] the key; ARGV[1] our token; ARGV[2] (renew only) the new TTL in
 * ms.  Both return 1 when done, 0 when the key holds another token or is
 * gone. */
#define SBX_TOKENKEY_RENEW_LUA                                                  \
	"if redis.call('GET', KEYS[1]) == ARGV[1] then\n"                       \
	"  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"                    \
	"end\n"                                                                 \
	"return 0\n"

#define SBX_TOKENKEY_RELEASE_LUA                                                \
	"if redis.call('GET', KEYS[1]) == ARGV[1] then\n"                       \
	"  return redis.call('DEL', KEYS[1])\n"                                 \
	"end\n"                                                                 \
	"return 0\n"

struct sbx_tokenkey {
	struct sbx_redis *r;       /* borrowed: the owner's connection */
	char *key;                 /* owned */
	char token[33];            /* random, 32 hex */
	int64_t ttl_ms;
	const char *what;          /* "lock", "reap": the op of its errors */
	/* renewal thread */
	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	volatile int lost;         /* renewal failed or found another token */
	struct sbx_err renew_err;
};

/* Fill k for `key` (taken over: freed by sbx_tokenkey_clear) with a fresh
 * random token.  Nothing is sent. */
int sbx_tokenkey_init(struct sbx_tokenkey *k, struct sbx_redis *r, char *key, int64_t ttl_ms,
		      const char *what, struct sbx_err *err);
/* SET key token NX PX ttl: 1 taken, 0 held by another, -1 error. */
int sbx_tokenkey_take(struct sbx_tokenkey *k, struct sbx_err *err);
/* Start renewing a key that is ours (just taken). */
int sbx_tokenkey_hold(struct sbx_tokenkey *k, struct sbx_err *err);
/* 0 while held as far as we know; -1 (conflict "... lost") once the
 * renewal found it taken away.  No round trip. */
int sbx_tokenkey_check(struct sbx_tokenkey *k, struct sbx_err *err);
/* Stop renewing and delete the key if it still holds our token: 0, or -1
 * with conflict when it did not (someone else may have acted meanwhile),
 * or a Redis error (the key then expires by itself).  Clears k. */
int sbx_tokenkey_release(struct sbx_tokenkey *k, struct sbx_err *err);
/* sbx_tokenkey_release, and, only when the key still held our token, one
 * more write in the same script (the same round trip): `cmd` on
 * `rider_key` (same slot) with argv, run by redis.pcall so that its
 * failure never fails the release; rider_err gets Redis's error text, ""
 * when it ran or was not run.  Not resent after a broken connection (the
 * rider may have run): that is `unavailable`, the key then expires. */
int sbx_tokenkey_release_rider(struct sbx_tokenkey *k, const char *rider_key, const char *cmd,
			       int argc, const char **argv, char *rider_err, size_t errlen,
			       struct sbx_err *err);
/* Stop renewing and free, sending nothing. */
void sbx_tokenkey_clear(struct sbx_tokenkey *k);

#endif
