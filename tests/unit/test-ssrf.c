/* The SSRF guard: a table of hostile URLs (each refused, with the reason we
 * expect), private ones (refused unless allow_private), allowed ones, the
 * address classifier on raw sockaddrs, and DNS rebinding through http.c:
 * the URL check passes on a public literal, the name is then resolved (by
 * curl's CURLOPT_RESOLVE) to a refused address, and the dial hook must stop
 * the connection before a socket exists. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "ssrf.h"
#include "util.h"
#include "tap.h"

struct hostile { const char *url; const char *why; };

/* Refused even with allow_private. `why` must appear in the message. */
static const struct hostile never[] = {
	{"http://169.254.169.254/latest/meta-data/", "link-local"},
	{"http://2852039166/", "link-local"},                   /* decimal */
	{"http://0251.0376.0251.0376/", "link-local"},          /* octal */
	{"http://0xA9FEA9FE/", "link-local"},                   /* hex */
	{"http://0xa9.0xfe.0xa9.0xfe/", "link-local"},          /* hex, dotted */
	{"http://169.254.43518/", "link-local"},                /* a.b.c short form */
	{"http://169.16689662/", "link-local"},                 /* a.b short form */
	{"http://169.254.169.254:8080/x?y=1#z", "link-local"},
	{"https://user:s3cret@169.254.169.254/", "link-local"}, /* userinfo never echoed */
	{"http://[::ffff:169.254.169.254]/", "link-local"},     /* IPv4-mapped */
	{"http://[::ffff:a9fe:a9fe]/", "link-local"},           /* IPv4-mapped, hex */
	{"http://[fe80::1]/", "link-local"},
	{"http://[fe80::1%25eth0]/", "link-local"},             /* zone id */
	{"http://[FE80::A9FE:A9FE]/", "link-local"},
	{"http://100.100.100.200/", "cloud metadata"},          /* Alibaba, inside CGNAT */
	{"http://[::ffff:100.100.100.200]/", "cloud metadata"},
	{"http://168.63.129.16/", "cloud metadata"},            /* Azure wireserver */
	{"http://[fd00:ec2::254]/", "cloud metadata"},          /* AWS IMDS IPv6, inside fc00::/7 */
	{"http://0.0.0.0/", "unspecified"},
	{"http://0/", "unspecified"},
	{"http://[::]/", "unspecified"},
	{"http://[::ffff:0.0.0.0]/", "unspecified"},
	{"http://0.1.2.3/", "this network"},
	{"http://224.0.0.1/", "multicast"},
	{"http://239.255.255.250/", "multicast"},
	{"http://[ff02::1]/", "multicast"},
	{"http://255.255.255.255/", "reserved"},
	{"http://240.0.0.1/", "reserved"},
	{"http://198.18.0.1/", "benchmarking"},
	{"http://198.19.255.254/", "benchmarking"},
	{"http://192.0.0.170/", "IETF"},
	{"http://[fec0::1]/", "site-local"},
	{"http://[100::1]/", "discard"},
	{"http://[::169.254.169.254]/", "IPv4-compatible"},
	{"http://[::127.0.0.1]/", "IPv4-compatible"},
	{"http://[::10.0.0.1]/", "IPv4-compatible"},
	{"http://[2002:a9fe:a9fe::1]/", "6to4"},
	{"http://[2002:7f00:1::]/", "6to4"},
	{"http://[64:ff9b::a9fe:a9fe]/", "NAT64"},
	{"http://[64:ff9b::127.0.0.1]/", "NAT64"},
	{"http://[64:ff9b:1::a9fe:a9fe]/", "local NAT64"},
	{"http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"},
	{"http://printer.local/", "mDNS"},
	{"http://PRINTER.LOCAL./", "mDNS"},
	{"http://local/", "mDNS"},
	{"ftp://example.com/", "scheme"},
	{"file:///etc/passwd", "scheme"},
	{"gopher://203.0.113.1/", "scheme"},
	{"dict://203.0.113.1:11211/", "scheme"},
	{"javascript:alert(1)", "unsafe URL"},
	{"http://", "unsafe URL"},
	{"", "empty URL"},
	{"not a url", "unsafe URL"},
	{"http://metadata.nonexistent-tld-sbx-test./", "does not resolve"},
};

/* Refused without allow_private, allowed with it. */
static const struct hostile private_urls[] = {
	{"http://127.0.0.1/", "loopback"},
	{"http://127.1/", "loopback"},
	{"http://0177.0.0.1/", "loopback"},
	{"http://2130706433/", "loopback"},
	{"http://127.255.255.254:9/", "loopback"},
	{"http://[::1]:2375/", "loopback"},
	{"http://[::ffff:127.0.0.1]/", "loopback"},
	{"http://10.0.0.1/", "private"},
	{"http://172.16.5.4/", "private"},
	{"http://172.31.255.255/", "private"},
	{"http://192.168.1.1/", "private"},
	{"http://100.64.0.1/", "CGNAT"},
	{"http://100.127.255.255/", "CGNAT"},
	{"http://[fc00::1]/", "unique local"},
	{"http://[fd12:3456::1]/", "unique local"},
	{"http://localhost:8080/", "loopback"},
	{"http://LocalHost./", "loopback"},
};

static const char *const allowed[] = {
	"http://203.0.113.5/", "https://192.0.2.1:8443/x", "http://198.51.100.7/",
	"http://8.8.8.8/", "http://[2001:db8::1]/", "http://[2606:4700::1111]/",
	"http://[::ffff:8.8.8.8]/", "http://user:pw@1.1.1.1/", "HTTPS://1.1.1.1/",
	"http://172.32.0.1/", "http://172.15.255.255/", "http://100.128.0.1/",
	"http://100.63.255.255/", "http://169.253.255.255/", "http://169.255.0.1/",
	"http://198.20.0.1/", "http://198.17.255.255/", "http://192.0.1.1/", "http://11.0.0.1/",
	"http://223.255.255.255/", "http://[2001:1::1]/", "http://[2003::1]/",
};

static void test_tables(void)
{
	struct sbx_err err;
	for (size_t i = 0; i < SBX_ARRAY_LEN(never); i++) {
		for (int ap = 0; ap <= 1; ap++) {
			memset(&err, 0, sizeof(err));
			int rc = sbx_ssrf_check_url(never[i].url, ap, &err);
			int good = rc < 0 && err.kind == SBX_INVALID_REQUEST && strstr(err.msg, never[i].why) &&
				   !strstr(err.msg, "s3cret") && !strstr(err.msg, "user");
			if (!ok(good, "refused%s: '%s' (%s)", ap ? " even with allow_private" : "",
				never[i].url, never[i].why))
				printf("#   rc %d kind %s: %s\n", rc, sbx_kind_name(err.kind), err.msg);
		}
	}
	for (size_t i = 0; i < SBX_ARRAY_LEN(private_urls); i++) {
		memset(&err, 0, sizeof(err));
		int rc = sbx_ssrf_check_url(private_urls[i].url, 0, &err);
		if (!ok(rc < 0 && err.kind == SBX_INVALID_REQUEST && strstr(err.msg, private_urls[i].why) &&
			strstr(err.msg, "allow_private"), "private refused by default: %s (%s)",
			private_urls[i].url, private_urls[i].why))
			printf("#   rc %d: %s\n", rc, err.msg);
		rc = sbx_ssrf_check_url(private_urls[i].url, 1, &err);
		if (!ok(rc == 0, "private allowed with allow_private: %s", private_urls[i].url))
			printf("#   %s\n", err.msg);
	}
	for (size_t i = 0; i < SBX_ARRAY_LEN(allowed); i++) {
		int rc = sbx_ssrf_check_url(allowed[i], 0, &err);
		if (!ok(rc == 0, "allowed: %s", allowed[i]))
			printf("#   %s\n", err.msg);
	}
	/* The exact message shape (documented in ssrf.h). */
	sbx_ssrf_check_url("http://admin:hunter2@[::ffff:169.254.169.254]:80/latest?token=abc", 1, &err);
	is_str(err.msg, "unsafe URL: address ::ffff:169.254.169.254 is never allowed (link-local (cloud metadata))",
	       "message names the address and reason, nothing else");
	sbx_ssrf_check_url("http://10.1.2.3/", 0, &err);
	is_str(err.msg, "unsafe URL: address 10.1.2.3 is not allowed without allow_private (private)",
	       "private message");
	ok(sbx_ssrf_check_url("http://foo.localhost/", 0, &err) < 0 && strstr(err.msg, "allow_private"),
	   "*.localhost refused without allow_private before any lookup");
}

static void test_addr(void)
{
	struct sbx_err err;
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	const char *why;
	inet_pton(AF_INET, "169.254.169.254", &s4.sin_addr);
	is_int(sbx_ssrf_classify((struct sockaddr *)&s4, &why), SBX_SSRF_NEVER, "classify metadata v4");
	inet_pton(AF_INET, "127.0.0.1", &s4.sin_addr);
	is_int(sbx_ssrf_classify((struct sockaddr *)&s4, &why), SBX_SSRF_PRIVATE, "classify loopback");
	is_str(why, "loopback", "reason loopback");
	ok(sbx_ssrf_check_addr((struct sockaddr *)&s4, 0, &err) < 0, "check_addr loopback, no allow_private");
	ok(sbx_ssrf_check_addr((struct sockaddr *)&s4, 1, &err) == 0, "check_addr loopback, allow_private");
	inet_pton(AF_INET, "93.184.216.34", &s4.sin_addr);
	is_int(sbx_ssrf_classify((struct sockaddr *)&s4, &why), SBX_SSRF_ALLOW, "classify public v4");
	inet_pton(AF_INET6, "::ffff:169.254.169.254", &s6.sin6_addr);
	ok(sbx_ssrf_check_addr((struct sockaddr *)&s6, 1, &err) < 0 && strstr(err.msg, "169.254.169.254"),
	   "check_addr mapped metadata (%s)", err.msg);
	inet_pton(AF_INET6, "2606:4700::1111", &s6.sin6_addr);
	ok(sbx_ssrf_check_addr((struct sockaddr *)&s6, 0, &err) == 0, "check_addr public v6");
	struct sockaddr un = {.sa_family = AF_UNIX};
	ok(sbx_ssrf_check_addr(&un, 1, &err) < 0 && strstr(err.msg, "not an IP"), "a non-IP address is refused");
}

static int listener(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0)
		return -1;
	getsockname(fd, (struct sockaddr *)&a, &al);
	*port = ntohs(a.sin_port);
	return fd;
}

/* DNS rebinding through http.c: the URL names a public literal (the check
 * at open passes), curl is told that this name resolves to a refused
 * address, and the dial hook must refuse it before connecting. */
static void test_rebinding(void)
{
	struct sbx_err err = {0};
	struct sbx_http *h;
	struct sbx_http_resp r;
	struct sbx_http_req q = {.method = "GET", .path = "/latest/meta-data/", .timeout_ms = 2000};

	/* To the metadata address. */
	const char *res1[] = {"203.0.113.7:80:169.254.169.254", NULL};
	struct sbx_http_opts o1 = {.base_url = "http://203.0.113.7", .resolve = res1};
	ok(sbx_http_open(&o1, &h, &err) == 0, "rebinding: the URL check passes on the public literal");
	ok(sbx_http_do(h, &q, &r, &err) < 0, "rebinding to 169.254.169.254 fails at dial time");
	is_str(sbx_kind_name(err.kind), "invalid_request", "with kind invalid_request");
	ok(strstr(err.msg, "169.254.169.254 is never allowed") && strstr(err.msg, "refused at connect"),
	   "naming the dialled address (%s)", err.msg);
	sbx_http_close(h);

	/* To a loopback listener we can watch: no connection may arrive. */
	int port = 0;
	int lfd = listener(&port);
	char res[64], base[64];
	snprintf(res, sizeof(res), "203.0.113.7:%d:127.0.0.1", port);
	snprintf(base, sizeof(base), "http://203.0.113.7:%d", port);
	const char *res2[] = {res, NULL};
	struct sbx_http_opts o2 = {.base_url = base, .resolve = res2};
	ok(sbx_http_open(&o2, &h, &err) == 0, "rebinding to loopback: open passes");
	ok(sbx_http_do(h, &q, &r, &err) < 0 && err.kind == SBX_INVALID_REQUEST &&
	   strstr(err.msg, "allow_private"), "the dial hook refuses 127.0.0.1 (%s)", err.msg);
	int c = accept(lfd, NULL, NULL);
	ok(c < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "and no connection was attempted");
	if (c >= 0)
		close(c);
	int up = -1;
	ok(sbx_http_upgrade(h, &q, &up, &r, &err) < 0 && err.kind == SBX_INVALID_REQUEST && up == -1,
	   "the upgrade path is guarded the same way");
	c = accept(lfd, NULL, NULL);
	ok(c < 0, "still no connection");
	if (c >= 0)
		close(c);
	sbx_http_close(h);

	/* Control: with allow_private the same resolve does connect, so the
	 * test above can fail. */
	struct sbx_http_opts o3 = {.base_url = base, .resolve = res2, .allow_private = 1};
	struct sbx_http_req q3 = {.method = "GET", .path = "/", .timeout_ms = 200};
	ok(sbx_http_open(&o3, &h, &err) == 0, "control: open with allow_private");
	ok(sbx_http_do(h, &q3, &r, &err) < 0 && err.kind == SBX_TIMEOUT,
	   "control: the request reaches the listener (which never answers): %s", err.msg);
	c = accept(lfd, NULL, NULL);
	ok(c >= 0, "control: the connection arrived");
	if (c >= 0)
		close(c);
	sbx_http_close(h);
	close(lfd);
}

/* CIDR parsing and membership (config.c's egress_allow and redis_nodes,
 * redis-conn.c's node check). */
static void test_cidr(void)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	unsigned char b[16];
	int af, len;
	ok(sbx_cidr_parse("10.20.0.0/16", &af, b, &len) == 0 && af == AF_INET && len == 16,
	   "cidr: 10.20.0.0/16 parses");
	ok(sbx_cidr_parse("10.20.0.1/16", &af, b, &len) < 0, "cidr: host bits set: refused");
	ok(sbx_cidr_parse("10.20.0.0", &af, b, &len) < 0, "cidr: no length: refused");
	ok(sbx_cidr_parse("fd00::/129", &af, b, &len) < 0, "cidr: /129: refused");
	inet_pton(AF_INET, "10.20.3.4", &s4.sin_addr);
	ok(sbx_cidr_contains("10.20.0.0/16", (struct sockaddr *)&s4), "cidr: 10.20.3.4 in 10.20.0.0/16");
	ok(!sbx_cidr_contains("10.21.0.0/16", (struct sockaddr *)&s4), "cidr: ... not in 10.21.0.0/16");
	ok(sbx_cidr_contains("0.0.0.0/0", (struct sockaddr *)&s4), "cidr: ... in 0.0.0.0/0");
	ok(!sbx_cidr_contains("::/0", (struct sockaddr *)&s4), "cidr: ... not in ::/0 (other family)");
	inet_pton(AF_INET6, "::ffff:10.20.3.4", &s6.sin6_addr);
	ok(sbx_cidr_contains("10.20.0.0/16", (struct sockaddr *)&s6),
	   "cidr: a mapped ::ffff:10.20.3.4 is its IPv4 address");
	inet_pton(AF_INET6, "fd00:0:0:1::5", &s6.sin6_addr);
	ok(sbx_cidr_contains("fd00:0:0:1::/64", (struct sockaddr *)&s6) &&
	   !sbx_cidr_contains("fd00:0:0:2::/64", (struct sockaddr *)&s6), "cidr: IPv6 /64");
	ok(!sbx_cidr_contains("garbage", (struct sockaddr *)&s6), "cidr: a malformed CIDR holds nothing");
}

int main(void)
{
	test_cidr();
	test_tables();
	test_addr();
	test_rebinding();
	printf("# %zu always-refused URLs, %zu private, %zu allowed\n", SBX_ARRAY_LEN(never),
	       SBX_ARRAY_LEN(private_urls), SBX_ARRAY_LEN(allowed));
	return tap_done();
}
