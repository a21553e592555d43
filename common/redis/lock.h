/* lock.h - a session's lifecycle lock, with fencing.
 *
 * One holder at a time per (tenant, session): create, claim, replace,
 * rebuild, delete and stale-marking of the session's binding all happen
 * under it.  The lock is a random 32-hex token stored with SET NX PX
 * (SBX_LOCK_TTL_MS, default 60000), renewed by a background thread every
 * TTL/3 (20 s by default) while held, released by a token-checked DEL: a
 * token key (tokenkey.h), the mechanism the reaper lease uses too.
 *
 * Fencing: the same script that takes the lock INCRs the session's fence
 * counter; the holder's fence is that number.  Every binding write (see
 * binding.c) passes the token and the fence, and the write script refuses
 * it unless the lock still holds this token AND the counter still equals
 * this fence.  A holder that was stopped (SIGSTOP, a long GC, a swap storm)
 * past its TTL therefore cannot overwrite what a later holder wrote, even
 * though it still believes it holds the lock.
 *
 * Backend deletes are fenced too, by a look rather than by the write:
 * sbx_lock_verify asks Redis, in one script, whether the lock still holds
 * our token and the counter our fence, right before each destructive
 * backend call (resolve.c, session-end.c).  The local view (tk.lost,
 * refreshed by the renewal thread every TTL/3) is not enough: SIGSTOP stops
 * that thread with the rest of the process, so a holder continued after
 * its TTL still sees "held" until the thread's next renewal.
 *
 * Crash safety: a holder killed with -9 leaves the lock to expire after its
 * TTL; nothing else is needed. */
#ifndef SBX_LOCK_H
#define SBX_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "redis.h"
#include "tokenkey.h"

struct sbx_lock {
	struct sbx_tokenkey tk;    /* the lock key, its token, its renewal (tokenkey.h) */
	char *fence_key;
	int64_t fence;             /* this holder's fencing number */
	/* The session's binding as it was when the lock was taken (read in the
	 * same script, saving a round trip): NULL when there was none. */
	char *binding_raw;
	size_t binding_len;
	int verify_lost;           /* sbx_lock_verify found the lock taken away */
};

/* $SBX_LOCK_TTL_MS, else 60000. */
int64_t sbx_lock_ttl_ms(void);
/* $SBX_LOCK_WAIT (a duration), else `dflt`. */
int64_t sbx_lock_wait_ms(int64_t dflt);

/* Take the session's lock.  wait_ms = 0 tries once; otherwise retries every
 * 25 + rand(50) ms until wait_ms has passed.  Busy = `conflict` (exit 75).
 * On success *out owns the lock and a renewal thread runs until
 * sbx_lock_release.  The ids must have passed sbx_id_check. */
int sbx_lock_acquire(struct sbx_redis *r, const char *tenant, size_t tlen,
		     const char *session, size_t slen, int64_t wait_ms,
		     struct sbx_lock **out, struct sbx_err *err);
/* 0 while held as far as we know; -1 with conflict "lock ownership lost"
 * once the renewal thread, or sbx_lock_verify, saw the lock taken away.
 * No round trip. */
int sbx_lock_check(struct sbx_lock *l, struct sbx_err *err);
/* Right before a destructive backend call (`before` names it, "deleting
 * sandbox X"): one round trip that checks the lock holds our token AND the
 * session's fence counter still equals our fence, and if so extends the
 * lock to a whole TTL, so the call that follows has that long before
 * anyone else can take the session.  0 held; -1 with conflict "lock
 * ownership lost ... not <before>" when not (the caller must not delete);
 * -1 with Redis's error when it cannot tell (nor may the caller). */
int sbx_lock_verify(struct sbx_lock *l, const char *before, struct sbx_err *err);
/* Stop renewing and delete the lock if it still holds our token.  Returns
 * 0, or -1 with conflict "lock ownership lost" when the token was gone
 * (someone else may have acted meanwhile), or a Redis error (the lock then
 * expires by itself).  Frees l in every case; NULL is a no-op. */
int sbx_lock_release(struct sbx_lock *l, struct sbx_err *err);
/* The same, with one more write in the release's round trip when the lock
 * was still ours (tokenkey.h, sbx_tokenkey_release_rider): a resolve's
 * event.  Frees l. */
int sbx_lock_release_rider(struct sbx_lock *l, const char *rider_key, const char *cmd, int argc,
			   const char **argv, char *rider_err, size_t errlen, struct sbx_err *err);

#endif
