/* sha.h - SHA-1 and SHA-256 (FIPS 180-4), in-tree (sha.c).  They replace
 * libcrypto, whose load alone cost every sbx program about 2.5 million
 * instructions at start (docs/design.md). */
#ifndef SBX_SHA_H
#define SBX_SHA_H

#include <stddef.h>
#include <stdint.h>

#define SBX_SHA1_LEN 20
#define SBX_SHA256_LEN 32

struct sbx_sha256 {
	uint32_t h[8];
	uint64_t len;            /* bytes so far */
	unsigned char buf[64];
	size_t nbuf;
};

/* Incremental SHA-256: init, any number of updates, final.  final writes
 * the digest and wipes the state (it may have held a secret). */
void sbx_sha256_init(struct sbx_sha256 *c);
void sbx_sha256_update(struct sbx_sha256 *c, const void *p, size_t n);
void sbx_sha256_final(struct sbx_sha256 *c, unsigned char out[SBX_SHA256_LEN]);
void sbx_sha256(const void *p, size_t n, unsigned char out[SBX_SHA256_LEN]);
void sbx_sha1(const void *p, size_t n, unsigned char out[SBX_SHA1_LEN]);
/* HMAC-SHA-256 (RFC 2104) of msg under key; the key's working copies are
 * wiped. */
void sbx_hmac_sha256(const void *key, size_t klen, const void *msg, size_t n,
		     unsigned char out[SBX_SHA256_LEN]);
#endif
