/* fingerprint.c - the skill-image fingerprint (see fingerprint.h).
 *
 * The parts are trimmed by narrowing a (pointer, length) span, never by
 * copying: the API key is only ever read by the digest. */
#include "fingerprint.h"

#include <string.h>

#include "sha.h"

/* Length of the Unicode space (per Go's unicode.IsSpace) encoded at s[0..n),
 * or 0 if s does not start with one. */
static size_t space_at(const unsigned char *s, size_t n)
{
	if (n >= 1 && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r')))
		return 1;
	if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0))
		return 2;                               /* U+0085, U+00A0 */
	if (n >= 3 && s[0] == 0xe1 && s[1] == 0x9a && s[2] == 0x80)
		return 3;                               /* U+1680 */
	if (n >= 3 && s[0] == 0xe2 && s[1] == 0x80 &&
	    (s[2] <= 0x8a || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf))
		return 3;                               /* U+2000-200A, 2028, 2029, 202F */
	if (n >= 3 && s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f)
		return 3;                               /* U+205F */
	if (n >= 3 && s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80)
		return 3;                               /* U+3000 */
	return 0;
}

/* Is there a space ending exactly at s[n]? Returns its length or 0.  UTF-8
 * sequences are at most 3 bytes here, so try the three possible starts. */
static size_t space_before(const unsigned char *s, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++)
		if (space_at(s + n - k, k) == k)
			return k;
	return 0;
}

static void trim_span(const char *in, const unsigned char **p, size_t *n)
{
	const unsigned char *s = (const unsigned char *)(in ? in : "");
	size_t len = strlen((const char *)s), k;
	while (len && (k = space_at(s, len))) {
		s += k;
		len -= k;
	}
	while (len && (k = space_before(s, len)))
		len -= k;
	*p = s;
	*n = len;
}

int sbx_fingerprint(const char *provider, const char *api_key, const char *api_url,
		    char out[65], struct sbx_err *err)
{
	const char *parts[3] = {provider, api_key, api_url};
	const unsigned char *p[3];
	size_t n[3];
	out[0] = 0;
	for (int i = 0; i < 3; i++)
		trim_span(parts[i], &p[i], &n[i]);
	if (n[0] == 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "fingerprint",
				"empty fingerprint: the profile names no provider");

	unsigned char md[SBX_SHA256_LEN];
	struct sbx_sha256 ctx;
	sbx_sha256_init(&ctx);
	for (int i = 0; i < 3; i++) {
		if (i)
			sbx_sha256_update(&ctx, "\n", 1);
		sbx_sha256_update(&ctx, p[i], n[i]);
	}
	sbx_sha256_final(&ctx, md);   /* wipes the digest state */
	static const char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = 0;
	return 0;
}

bool sbx_fingerprint_blank(const char *s)
{
	const unsigned char *p;
	size_t n;
	trim_span(s, &p, &n);
	return n == 0;
}

bool sbx_fingerprint_valid(const char *fp)
{
	if (!fp || strlen(fp) != SBX_FINGERPRINT_LEN)
		return false;
	for (const char *c = fp; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return false;
	return true;
}
