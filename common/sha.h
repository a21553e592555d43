/* sha.h - SHA-1 and SHA-256 (FIPS 180-4) and base64 decoding, in-tree
 * (sha.c).  They replace libcrypto, whose load alone cost every sbx
 * program about 2.5 million instructions at start (docs/benchmarks-scale.md). */
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
/* Decode the base64 (standard alphabet, '=' padding) text in[0..n) into
 * out (room for n / 4 * 3 bytes).  Returns the decoded length, or -1 if
 * the text is not base64 (bad character, length not a multiple of 4,
 * padding anywhere but the end). */
long sbx_base64_decode(unsigned char *out, const char *in, size_t n);

#endif
