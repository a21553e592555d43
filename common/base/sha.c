/* sha.c - SHA-1 and SHA-256 as FIPS 180-4 states them, for the few
 * digests sbx takes: the skill-image fingerprint,
 * Redis script names (EVALSHA), snapshot names.  Plain C, no tables beyond
 * the standard's constants; fast enough for inputs of a few kB, which is
 * all sbx hashes.  Promises: the digests equal sha1sum's and sha256sum's
 * for any input (tests/unit/test-sha.c checks the standard's vectors and a
 * million-byte input); the SHA-256 state is wiped at final. */
#include "sha.h"

#include <string.h>

static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static void sha256_block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], v[8];
	for (int i = 0; i < 16; i++)
		w[i] = be32(p + 4 * i);
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, h, sizeof(v));
	for (int i = 0; i < 64; i++) {
		uint32_t s1 = ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25);
		uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
		uint32_t t1 = v[7] + s1 + ch + K256[i] + w[i];
		uint32_t s0 = ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22);
		uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + s0 + maj;
	}
	for (int i = 0; i < 8; i++)
		h[i] += v[i];
}

void sbx_sha256_init(struct sbx_sha256 *c)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(c->h, iv, sizeof(iv));
	c->len = 0;
	c->nbuf = 0;
}

void sbx_sha256_update(struct sbx_sha256 *c, const void *data, size_t n)
{
	const unsigned char *p = data;
	c->len += n;
	while (n > 0) {
		size_t k = 64 - c->nbuf < n ? 64 - c->nbuf : n;
		memcpy(c->buf + c->nbuf, p, k);
		c->nbuf += k;
		p += k;
		n -= k;
		if (c->nbuf == 64) {
			sha256_block(c->h, c->buf);
			c->nbuf = 0;
		}
	}
}

/* The padding both digests share: 0x80, zeros, the bit length big-endian
 * in the last 8 bytes of a block.  `block` runs the compression. */
static void pad(unsigned char *buf, size_t nbuf, uint64_t len, uint32_t *h,
		void (*block)(uint32_t *, const unsigned char *))
{
	buf[nbuf++] = 0x80;
	if (nbuf > 56) {
		memset(buf + nbuf, 0, 64 - nbuf);
		block(h, buf);
		nbuf = 0;
	}
	memset(buf + nbuf, 0, 56 - nbuf);
	put_be32(buf + 56, (uint32_t)(len * 8 >> 32));
	put_be32(buf + 60, (uint32_t)(len * 8));
	block(h, buf);
}

void sbx_sha256_final(struct sbx_sha256 *c, unsigned char out[SBX_SHA256_LEN])
{
	pad(c->buf, c->nbuf, c->len, c->h, sha256_block);
	for (int i = 0; i < 8; i++)
		put_be32(out + 4 * i, c->h[i]);
	explicit_bzero(c, sizeof(*c));
}

void sbx_sha256(const void *p, size_t n, unsigned char out[SBX_SHA256_LEN])
{
	struct sbx_sha256 c;
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, p, n);
	sbx_sha256_final(&c, out);
}

static void sha1_block(uint32_t h[5], const unsigned char *p)
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (int i = 0; i < 16; i++)
		w[i] = be32(p + 4 * i);
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		uint32_t t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void sbx_sha1(const void *data, size_t n, unsigned char out[SBX_SHA1_LEN])
{
	uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
	unsigned char buf[64];
	const unsigned char *p = data;
	size_t left = n;
	for (; left >= 64; left -= 64, p += 64)
		sha1_block(h, p);
	memcpy(buf, p, left);
	pad(buf, left, n, h, sha1_block);
	for (int i = 0; i < 5; i++)
		put_be32(out + 4 * i, h[i]);
}

void sbx_hmac_sha256(const void *key, size_t klen, const void *msg, size_t n,
		     unsigned char out[SBX_SHA256_LEN])
{
	unsigned char k[64] = {0}, pad[64], inner[SBX_SHA256_LEN];
	if (klen > sizeof(k))
		sbx_sha256(key, klen, k);
	else
		memcpy(k, key, klen);
	struct sbx_sha256 c;
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, pad, sizeof(pad));
	sbx_sha256_update(&c, msg, n);
	sbx_sha256_final(&c, inner);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, pad, sizeof(pad));
	sbx_sha256_update(&c, inner, sizeof(inner));
	sbx_sha256_final(&c, out);
	explicit_bzero(k, sizeof(k));
	explicit_bzero(pad, sizeof(pad));
	explicit_bzero(inner, sizeof(inner));
}
