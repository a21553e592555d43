/* The egress filter's rules (backends/local/local-egress.c): the order that
 * makes them mean what local-egress.h promises.  Installing them in a real
 * namespace is tests/boundary-egress.bats. */
#include <stdlib.h>
#include <string.h>

#include "local-egress.h"
#include "tap.h"

/* Offset of `needle` in `hay`, or -1. */
static long at(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);
	return p ? p - hay : -1;
}

int main(void)
{
	char *allow[] = {"10.1.0.0/16", "fd00::/64", NULL};
	char *host[] = {"192.88.99.1/32", "192.88.99.0/24", "2001:db9::5/128", NULL};
	char *r = local_egress_rules(allow, host);

	ok(at(r, "table inet sbx_egress") == 0, "one inet table (IPv4 and IPv6)");
	ok(at(r, "hook output") > 0, "on the output hook of the sandbox's namespace");
	ok(at(r, "policy accept") > 0, "the internet is the default");
	long first_refuse = at(r, "goto refuse");
	ok(first_refuse > 0, "refused destinations jump to the refuse chain");
	ok(at(r, "reject with tcp reset") > 0 && at(r, "reject with icmpx admin-prohibited") > 0,
	   "refused means rejected (reset / admin-prohibited), not dropped");
	ok(at(r, "drop") < 0, "nothing is silently dropped");
	long lo = at(r, "oifname \"lo\" accept");
	ok(lo > 0 && lo < first_refuse, "the sandbox's own lo comes first");
	long dns_udp = at(r, "ip daddr 10.0.2.3 udp dport 53 accept");
	long dns_tcp = at(r, "ip daddr 10.0.2.3 tcp dport 53 accept");
	ok(dns_udp > 0 && dns_udp < first_refuse && dns_tcp > 0 && dns_tcp < first_refuse,
	   "slirp's DNS (udp and tcp port 53 only) before the refusals");
	ok(at(r, "10.0.2.3 accept") < 0, "... and not the whole address");
	ok(strcmp(LOCAL_SANDBOX_RESOLVER, "10.0.2.3") == 0,
	   "the one exception is the resolver every sandbox's resolv.conf names");
	long a4 = at(r, "ip daddr 10.1.0.0/16 accept"), a6 = at(r, "ip6 daddr fd00::/64 accept");
	ok(a4 > 0 && a4 < first_refuse && a6 > 0 && a6 < first_refuse,
	   "allow-listed CIDRs are accepted before the refusals, each in its family");
	const char *v4[] = {"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8",
			    "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/4",
			    "240.0.0.0/4"};
	for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		char want[64];
		snprintf(want, sizeof(want), "ip daddr %s goto refuse", v4[i]);
		ok(at(r, want) > 0, "refused: %s", v4[i]);
	}
	const char *v6[] = {"::/96", "::ffff:0:0/96", "fc00::/7", "fe80::/10", "ff00::/8",
			    "64:ff9b::/96"};
	for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		char want[64];
		snprintf(want, sizeof(want), "ip6 daddr %s goto refuse", v6[i]);
		ok(at(r, want) > 0, "refused: %s", v6[i]);
	}
	ok(at(r, "ip daddr 192.88.99.1/32 goto refuse") > 0 &&
	   at(r, "ip daddr 192.88.99.0/24 goto refuse") > 0 &&
	   at(r, "ip6 daddr 2001:db9::5/128 goto refuse") > 0,
	   "the host's addresses and networks are refused");
	free(r);

	r = local_egress_rules(NULL, NULL);
	ok(at(r, " accept\n") == at(r, "oifname \"lo\" accept\n") + (long)strlen("oifname \"lo\""),
	   "without an allow-list the first accept is lo's");
	ok(at(r, "ip daddr 10.1.0.0/16") < 0, "... and nothing is allow-listed");
	free(r);
	return tap_done();
}
