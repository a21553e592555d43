/* ssrf.c - the outbound URL and address guard (see ssrf.h).
 *
 * URLs are parsed with libcurl's own URL parser, so the host we judge is the
 * host the transport will connect to; literal IPv4 hosts are read with
 * inet_aton, which accepts the same decimal/octal/hex/short spellings as the
 * resolver behind curl.  The address classes follow the reference's
 * ipclass table; the order of the checks matters where ranges nest (the
 * metadata address 100.100.100.200 sits inside CGNAT 100.64/10, and
 * fd00:ec2::254 inside fc00::/7), so explicit refusals come first. */
#include "ssrf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>

#include "util.h"

struct v4class { uint32_t net; int bits; enum sbx_ssrf_verdict v; const char *why; };

/* First match wins: explicit metadata hosts before the ranges holding them. */
static const struct v4class v4table[] = {
	{0x646464c8, 32, SBX_SSRF_NEVER, "cloud metadata"},              /* 100.100.100.200 */
	{0xa83f8110, 32, SBX_SSRF_NEVER, "cloud metadata"},              /* 168.63.129.16 */
	{0x00000000, 32, SBX_SSRF_NEVER, "unspecified"},                 /* 0.0.0.0 */
	{0xa9fe0000, 16, SBX_SSRF_NEVER, "link-local (cloud metadata)"}, /* 169.254/16 */
	{0x00000000, 8, SBX_SSRF_NEVER, "reserved (this network)"},      /* 0/8 */
	{0xe0000000, 4, SBX_SSRF_NEVER, "multicast"},                    /* 224/4 */
	{0xf0000000, 4, SBX_SSRF_NEVER, "reserved"},                     /* 240/4, broadcast */
	{0xc6120000, 15, SBX_SSRF_NEVER, "reserved (benchmarking)"},     /* 198.18/15 */
	{0xc0000000, 24, SBX_SSRF_NEVER, "reserved (IETF protocol assignments)"}, /* 192.0.0/24 */
	{0x7f000000, 8, SBX_SSRF_PRIVATE, "loopback"},                   /* 127/8 */
	{0x0a000000, 8, SBX_SSRF_PRIVATE, "private"},                    /* 10/8 */
	{0xac100000, 12, SBX_SSRF_PRIVATE, "private"},                   /* 172.16/12 */
	{0xc0a80000, 16, SBX_SSRF_PRIVATE, "private"},                   /* 192.168/16 */
	{0x64400000, 10, SBX_SSRF_PRIVATE, "shared address space (CGNAT)"}, /* 100.64/10 */
};

static enum sbx_ssrf_verdict classify_v4(uint32_t a, const char **why)
{
	for (size_t i = 0; i < SBX_ARRAY_LEN(v4table); i++) {
		uint32_t mask = v4table[i].bits ? 0xffffffffu << (32 - v4table[i].bits) : 0;
		if ((a & mask) == v4table[i].net) {
			*why = v4table[i].why;
			return v4table[i].v;
		}
	}
	*why = "public";
	return SBX_SSRF_ALLOW;
}

/* Does the 128-bit address `a` start with the `bits`-bit prefix `p`? */
static int v6_in(const uint8_t a[16], const uint8_t p[16], int bits)
{
	int full = bits / 8, rest = bits % 8;
	if (memcmp(a, p, full) != 0)
		return 0;
	if (rest) {
		uint8_t m = (uint8_t)(0xff << (8 - rest));
		if ((a[full] & m) != (p[full] & m))
			return 0;
	}
	return 1;
}

static enum sbx_ssrf_verdict classify_v6(const uint8_t a[16], const char **why)
{
	static const uint8_t zero[16];
	static const uint8_t loop[16] = {[15] = 1};
	static const uint8_t mapped[16] = {[10] = 0xff, [11] = 0xff};
	static const uint8_t aws[16] = {0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02};
	static const uint8_t nat64[16] = {0x00, 0x64, 0xff, 0x9b};
	static const uint8_t nat64l[16] = {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01};
	static const uint8_t sixto4[16] = {0x20, 0x02};
	static const uint8_t teredo[16] = {0x20, 0x01, 0x00, 0x00};
	static const uint8_t discard[16] = {0x01, 0x00};
	static const uint8_t linkl[16] = {0xfe, 0x80};
	static const uint8_t sitel[16] = {0xfe, 0xc0};
	static const uint8_t ula[16] = {0xfc};
	static const uint8_t mcast[16] = {0xff};

	if (memcmp(a, zero, 16) == 0) { *why = "unspecified"; return SBX_SSRF_NEVER; }
	if (memcmp(a, loop, 16) == 0) { *why = "loopback"; return SBX_SSRF_PRIVATE; }
	if (v6_in(a, mapped, 96)) {
		/* A mapped address is an IPv4 connection: judge the IPv4 address. */
		uint32_t v4 = (uint32_t)a[12] << 24 | (uint32_t)a[13] << 16 | (uint32_t)a[14] << 8 | a[15];
		return classify_v4(v4, why);
	}
	if (v6_in(a, zero, 96)) { *why = "translated (IPv4-compatible)"; return SBX_SSRF_NEVER; }
	if (memcmp(a, aws, 16) == 0) { *why = "cloud metadata"; return SBX_SSRF_NEVER; }
	if (v6_in(a, nat64, 96)) { *why = "translated (NAT64)"; return SBX_SSRF_NEVER; }
	if (v6_in(a, nat64l, 48)) { *why = "translated (local NAT64)"; return SBX_SSRF_NEVER; }
	if (v6_in(a, sixto4, 16)) { *why = "translated (6to4)"; return SBX_SSRF_NEVER; }
	if (v6_in(a, teredo, 32)) { *why = "translated (Teredo)"; return SBX_SSRF_NEVER; }
	if (v6_in(a, discard, 64)) { *why = "reserved (discard-only)"; return SBX_SSRF_NEVER; }
	if (v6_in(a, linkl, 10)) { *why = "link-local"; return SBX_SSRF_NEVER; }
	if (v6_in(a, sitel, 10)) { *why = "site-local"; return SBX_SSRF_NEVER; }
	if (v6_in(a, mcast, 8)) { *why = "multicast"; return SBX_SSRF_NEVER; }
	if (v6_in(a, ula, 7)) { *why = "private (unique local)"; return SBX_SSRF_PRIVATE; }
	*why = "public";
	return SBX_SSRF_ALLOW;
}

enum sbx_ssrf_verdict sbx_ssrf_classify(const struct sockaddr *sa, const char **reason)
{
	const char *why = "not an IP address";
	enum sbx_ssrf_verdict v = SBX_SSRF_NEVER;
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		v = classify_v4(ntohl(s4->sin_addr.s_addr), &why);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		v = classify_v6(s6->sin6_addr.s6_addr, &why);
	}
	if (reason)
		*reason = why;
	return v;
}

static void addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	snprintf(buf, len, "?");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, len);
}

int sbx_ssrf_check_addr(const struct sockaddr *sa, int allow_private, struct sbx_err *err)
{
	const char *why;
	char ip[INET6_ADDRSTRLEN];
	enum sbx_ssrf_verdict v = sbx_ssrf_classify(sa, &why);
	if (v == SBX_SSRF_ALLOW || (v == SBX_SSRF_PRIVATE && allow_private))
		return 0;
	addr_text(sa, ip, sizeof(ip));
	if (v == SBX_SSRF_PRIVATE)
		return sbx_fail(err, SBX_INVALID_REQUEST, "ssrf",
				"unsafe URL: address %s is not allowed without allow_private (%s)", ip, why);
	return sbx_fail(err, SBX_INVALID_REQUEST, "ssrf",
			"unsafe URL: address %s is never allowed (%s)", ip, why);
}

int sbx_cidr_parse(const char *s, int *af, unsigned char addr[16], int *len)
{
	const char *slash = strchr(s, '/');
	if (!slash || slash == s || slash - s >= INET6_ADDRSTRLEN || !slash[1])
		return -1;
	char a[INET6_ADDRSTRLEN];
	memcpy(a, s, (size_t)(slash - s));
	a[slash - s] = '\0';
	memset(addr, 0, 16);
	*af = strchr(a, ':') ? AF_INET6 : AF_INET;
	int width = *af == AF_INET ? 32 : 128;
	if (inet_pton(*af, a, addr) != 1)
		return -1;
	char *end;
	errno = 0;
	long l = strtol(slash + 1, &end, 10);
	if (*end || errno || l < 0 || l > width || slash[1] < '0' || slash[1] > '9')
		return -1;
	for (int i = (int)l; i < width; i++)
		if (addr[i / 8] & (0x80 >> (i % 8)))
			return -1;
	*len = (int)l;
	return 0;
}

int sbx_cidr_contains(const char *cidr, const struct sockaddr *sa)
{
	static const uint8_t mapped[16] = {[10] = 0xff, [11] = 0xff};
	unsigned char net[16], a[16] = {0};
	int af, len, saf;
	if (!sa || sbx_cidr_parse(cidr, &af, net, &len) < 0)
		return 0;
	if (sa->sa_family == AF_INET) {
		memcpy(a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		saf = AF_INET;
	} else if (sa->sa_family == AF_INET6) {
		const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		int m = v6_in(b, mapped, 96);
		memcpy(a, m ? b + 12 : b, m ? 4 : 16);
		saf = m ? AF_INET : AF_INET6;
	} else {
		return 0;
	}
	return saf == af && v6_in(a, net, len);
}

static int ends_with_label(const char *host, const char *label)
{
	size_t h = strlen(host), l = strlen(label);
	if (h == l)
		return strcmp(host, label) == 0;
	return h > l && host[h - l - 1] == '.' && strcmp(host + h - l, label) == 0;
}

/* Resolve `host` and check every address; an empty answer is a refusal. */
static int check_resolved(const char *host, int allow_private, struct sbx_err *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc == EAI_AGAIN)
		return sbx_fail(err, SBX_UNAVAILABLE, "ssrf",
				"cannot resolve host %s right now: %s", host, gai_strerror(rc));
	if (rc != 0 || !res)
		return sbx_fail(err, SBX_INVALID_REQUEST, "ssrf",
				"unsafe URL: host %s does not resolve (%s)", host,
				rc ? gai_strerror(rc) : "no addresses");
	int ret = 0;
	for (struct addrinfo *ai = res; ai && ret == 0; ai = ai->ai_next)
		ret = sbx_ssrf_check_addr(ai->ai_addr, allow_private, err);
	freeaddrinfo(res);
	if (ret < 0)
		sbx_err_prefix(err, "host %s", host);
	return ret;
}

/* Judge a host as curl parsed it (brackets and zone id already split off
 * for IPv6). */
static int check_host(char *host, int is_v6, int allow_private, struct sbx_err *err)
{
	if (is_v6) {
		struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
		char *pct = strchr(host, '%');
		if (pct)
			*pct = 0;       /* zone id: the address class does not depend on it */
		if (inet_pton(AF_INET6, host, &s6.sin6_addr) != 1)
			return sbx_fail(err, SBX_INVALID_REQUEST, "ssrf",
					"unsafe URL: malformed IPv6 address");
		return sbx_ssrf_check_addr((struct sockaddr *)&s6, allow_private, err);
	}
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	if (inet_aton(host, &s4.sin_addr))
		return sbx_ssrf_check_addr((struct sockaddr *)&s4, allow_private, err);

	for (char *p = host; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	size_t n = strlen(host);
	while (n && host[n - 1] == '.')
		host[--n] = 0;      /* "localhost." is localhost */
	if (!n)
		return sbx_fail(err, SBX_INVALID_REQUEST, "ssrf", "unsafe URL: empty host");
	if (ends_with_label(host, "local"))
		return sbx_fail(err, SBX_INVALID_REQUEST, "ssrf",
				"unsafe URL: host %s is never allowed (mDNS .local)", host);
	if (ends_with_label(host, "localhost") && !allow_private)
		return sbx_fail(err, SBX_INVALID_REQUEST, "ssrf",
				"unsafe URL: host %s is not allowed without allow_private (loopback)", host);
	return check_resolved(host, allow_private, err);
}

int sbx_ssrf_check_url(const char *url, int allow_private, struct sbx_err *err)
{
	if (!url || !*url)
		return sbx_fail(err, SBX_INVALID_REQUEST, "ssrf", "unsafe URL: empty URL");
	CURLU *u = curl_url();
	if (!u)
		return sbx_fail(err, SBX_INTERNAL, "ssrf", "out of memory");
	char *scheme = NULL, *host = NULL;
	int ret;
	/* Userinfo is never echoed: messages name only the scheme or host. */
	if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
		ret = sbx_fail(err, SBX_INVALID_REQUEST, "ssrf", "unsafe URL: not a valid absolute URL");
	} else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
		   (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)) {
		ret = sbx_fail(err, SBX_INVALID_REQUEST, "ssrf",
			       "unsafe URL: scheme %.16s is not allowed (http or https only)",
			       scheme ? scheme : "(none)");
	} else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host) {
		ret = sbx_fail(err, SBX_INVALID_REQUEST, "ssrf", "unsafe URL: no host");
	} else {
		size_t n = strlen(host);
		int v6 = host[0] == '[' && n >= 2 && host[n - 1] == ']';
		SBX_AUTOFREE char *h = v6 ? strndup(host + 1, n - 2) : sbx_xstrdup(host);
		if (!h)
			ret = sbx_fail(err, SBX_INTERNAL, "ssrf", "out of memory");
		else
			ret = check_host(h, v6 || strchr(h, ':') != NULL, allow_private, err);
	}
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ret;
}
