/* SHA-1, SHA-256, HMAC-SHA-256 (common/base/sha.c) and base64 decoding (util.c) against the FIPS 180
 * vectors, sha1sum/sha256sum on a million bytes, every split of an input
 * into two updates, and base64's refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha.h"
#include "util.h"
#include "tap.h"

static const char *hex(const unsigned char *md, size_t n)
{
	static char out[2 * SBX_SHA256_LEN + 1];
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return out;
}
static const char *s256(const char *s, size_t n)
{
	unsigned char md[SBX_SHA256_LEN];
	sbx_sha256(s, n, md);
	return hex(md, sizeof(md));
}
static const char *s1(const char *s, size_t n)
{
	unsigned char md[SBX_SHA1_LEN];
	sbx_sha1(s, n, md);
	return hex(md, sizeof(md));
}
/* `prog` (sha1sum or sha256sum) of the n bytes at s, via a pipe. */
static const char *tool(const char *prog, const char *s, size_t n)
{
	static char out[65];
	char path[] = "/tmp/sbx-sha-XXXXXX", cmd[128];
	FILE *f = fdopen(mkstemp(path), "w");
	fwrite(s, 1, n, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s %s", prog, path);
	FILE *p = popen(cmd, "r");
	if (!p || fscanf(p, "%64s", out) != 1)
		out[0] = 0;
	if (p)
		pclose(p);
	remove(path);
	return out;
}

int main(void)
{
	const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	is_str(s256("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256 empty");
	is_str(s256("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256 abc");
	is_str(s256(m448, strlen(m448)), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	       "sha256 448 bits");
	is_str(s1("", 0), "da39a3ee5e6b4b0d3255bfef95601890afd80709", "sha1 empty");
	is_str(s1("abc", 3), "a9993e364706816aba3e25717850c26c9cd0d89d", "sha1 abc");
	is_str(s1(m448, strlen(m448)), "84983e441c3bd26ebaae4aa1f95129e5e54670f1", "sha1 448 bits");

	/* HMAC-SHA-256, RFC 4231 test cases 1, 2 and 6 (a key longer than a block). */
	unsigned char mac[SBX_SHA256_LEN], k20[20], k131[131];
	memset(k20, 0x0b, sizeof(k20));
	sbx_hmac_sha256(k20, sizeof(k20), "Hi There", 8, mac);
	is_str(hex(mac, sizeof(mac)), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
	       "hmac-sha256 rfc4231 case 1");
	sbx_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
	is_str(hex(mac, sizeof(mac)), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
	       "hmac-sha256 rfc4231 case 2");
	memset(k131, 0xaa, sizeof(k131));
	const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
	sbx_hmac_sha256(k131, sizeof(k131), m6, strlen(m6), mac);
	is_str(hex(mac, sizeof(mac)), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
	       "hmac-sha256 rfc4231 case 6");

	size_t big = 1000000 + 7;
	char *a = malloc(big);
	for (size_t i = 0; i < big; i++)
		a[i] = (char)(i * 131 + (i >> 9));
	char want[65];
	snprintf(want, sizeof(want), "%s", tool("sha256sum", a, big));
	is_str(s256(a, big), want, "sha256 of 1000007 bytes = sha256sum");
	snprintf(want, sizeof(want), "%s", tool("sha1sum", a, big));
	is_str(s1(a, big), want, "sha1 of 1000007 bytes = sha1sum");
	/* Every length around the block and padding edges, each split into
	 * two updates at every point, gives the one-shot digest. */
	int good = 1;
	for (size_t n = 0; n <= 130 && good; n++) {
		char one[65];
		snprintf(one, sizeof(one), "%s", s256(a, n));
		good = strcmp(one, tool("sha256sum", a, n)) == 0;
		for (size_t k = 0; k <= n && good; k++) {
			struct sbx_sha256 c;
			unsigned char md[SBX_SHA256_LEN];
			sbx_sha256_init(&c);
			sbx_sha256_update(&c, a, k);
			sbx_sha256_update(&c, a + k, n - k);
			sbx_sha256_final(&c, md);
			good = strcmp(hex(md, sizeof(md)), one) == 0;
		}
		good = good && strcmp(s1(a, n), tool("sha1sum", a, n)) == 0;
	}
	ok(good, "lengths 0..130: sha256sum and sha1sum agree, and every two-update split");
	free(a);

	unsigned char out[64];
	long n = sbx_base64_decode(out, "eyJhIjoxfQ==", 12);
	ok(n == 7 && memcmp(out, "{\"a\":1}", 7) == 0, "base64: two pad bytes");
	n = sbx_base64_decode(out, "eyJhIjoxMn0=", 12);
	ok(n == 8 && memcmp(out, "{\"a\":12}", 8) == 0, "base64: one pad byte");
	n = sbx_base64_decode(out, "Zm9vYmFy", 8);
	ok(n == 6 && memcmp(out, "foobar", 6) == 0, "base64: no padding");
	is_int(sbx_base64_decode(out, "Zm9vYmF", 7), -1, "base64: length not a multiple of 4");
	is_int(sbx_base64_decode(out, "Zm=vYmFy", 8), -1, "base64: padding inside");
	is_int(sbx_base64_decode(out, "Zm9v*mFy", 8), -1, "base64: a character outside the alphabet");
	is_int(sbx_base64_decode(out, "", 0), 0, "base64: empty");
	return tap_done();
}
