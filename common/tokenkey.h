/* tokenkey.h - the Lua of a key that holds its owner's random token (the
 * session lock in lock.c, the reaper lease in reap.c): renew or delete it
 * only while it still holds our token, so an owner whose key expired and
 * was taken by another can never extend or delete the new owner's.
 *
 * KEYS[1] the key; ARGV[1] our token; ARGV[2] (renew only) the new TTL in
 * ms.  Both return 1 when done, 0 when the key holds another token or is
 * gone. */
#ifndef SBX_TOKENKEY_H
#define SBX_TOKENKEY_H

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

#endif
