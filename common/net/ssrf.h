/* ssrf.h - the outbound URL and address guard.
 *
 * Every URL a user can configure (a profile's endpoint, a proxy URL) is
 * checked twice: when it is loaded (sbx_ssrf_check_url: scheme, host name
 * rules, and every address the name resolves to), and again on the address
 * actually being dialled (sbx_ssrf_check_addr, called by http.c's
 * open-socket hook), so a name that resolves to a public address at check
 * time and to a metadata address at dial time (DNS rebinding) is refused.
 *
 * Verdicts (reference weknora-semantics §7):
 *   always refused  link-local 169.254/16 and fe80::/10 (cloud metadata),
 *                   the metadata addresses 100.100.100.200, 168.63.129.16 and
 *                   fd00:ec2::254, multicast, unspecified, 0/8, 240/4
 *                   (and broadcast), 198.18/15, 192.0.0/24, fec0::/10,
 *                   100::/64, and every translated form: IPv4-compatible
 *                   ::a.b.c.d, 6to4 2002::/16, NAT64 64:ff9b::/96 and
 *                   64:ff9b:1::/48, Teredo 2001::/32
 *   allow_private   loopback 127/8 and ::1, RFC 1918, fc00::/7, CGNAT
 *                   100.64/10
 *   allowed         everything else (public, TEST-NET, 2001:db8::/32)
 * An IPv4-mapped address ::ffff:a.b.c.d is judged by its embedded IPv4
 * address, exactly as that IPv4 address would be: connecting to it *is* an
 * IPv4 connection, so a mapped public address is allowed and a mapped
 * metadata address is refused.
 *
 * Errors are kind invalid_request with the message
 *   "unsafe URL: address <ip> is never allowed (<reason>)"
 *   "unsafe URL: address <ip> is not allowed without allow_private (<reason>)"
 *   "unsafe URL: ..." for scheme and host-name rules.
 * Messages never contain the URL's userinfo, path or query: only the host
 * or the address. */
#ifndef SBX_SSRF_H
#define SBX_SSRF_H

#include <sys/socket.h>

#include "err.h"

enum sbx_ssrf_verdict {
	SBX_SSRF_ALLOW = 0,      /* public */
	SBX_SSRF_PRIVATE,        /* allowed only with allow_private */
	SBX_SSRF_NEVER,          /* always refused */
};

/* Classify one address (AF_INET or AF_INET6; anything else is NEVER,
 * "not an IP address").  *reason, when non-NULL, gets a static string
 * naming the class ("link-local (cloud metadata)", "loopback", ...). */
enum sbx_ssrf_verdict sbx_ssrf_classify(const struct sockaddr *sa, const char **reason);

/* 0 when a connection to `sa` is allowed under allow_private, else -1 with
 * invalid_request naming the address and the reason. */
int sbx_ssrf_check_addr(const struct sockaddr *sa, int allow_private, struct sbx_err *err);

/* Parse "ADDR/LEN" (IPv4 or IPv6, LEN within the family's width, no bit
 * set past LEN: a typo such as "10.1.0.0/8" is refused rather than read as
 * a wider or narrower range).  *af gets AF_INET or AF_INET6, addr the
 * address (4 or 16 bytes), *len the prefix length.  0, or -1 when `s` is
 * not such a CIDR. */
int sbx_cidr_parse(const char *s, int *af, unsigned char addr[16], int *len);

/* 1 when `sa` (AF_INET or AF_INET6; an IPv4-mapped IPv6 address counts as
 * its IPv4 address) lies inside `cidr` (as sbx_cidr_parse reads it), else
 * 0, also for a malformed CIDR. */
int sbx_cidr_contains(const char *cidr, const struct sockaddr *sa);

/* Check a URL before it is stored or used:
 *   - scheme http or https, non-empty host (userinfo is accepted and never
 *     echoed);
 *   - "*.local" is refused; "localhost" and "*.localhost" only with
 *     allow_private;
 *   - a literal address is checked directly, in every spelling libc and
 *     curl accept: decimal (http://2852039166/), octal, hex, short forms
 *     (169.254.43518), bracketed IPv6 with a zone id;
 *   - any other name is resolved (getaddrinfo) and EVERY address must pass;
 *     a name that does not resolve is refused (invalid_request), except a
 *     temporary resolver failure (EAI_AGAIN), which is unavailable.
 * 0 / -1 with err. */
int sbx_ssrf_check_url(const char *url, int allow_private, struct sbx_err *err);

#endif
