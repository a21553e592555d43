/* local-egress.c - the egress filter of a local sandbox (see local-egress.h).
 *
 * Promises:
 *  - With internet on, the sandbox reaches public addresses and slirp's
 *    DNS (10.0.2.3 port 53, TCP and UDP) and nothing else: the ranges in
 *    refused4/refused6 below and the host's own addresses and on-link
 *    networks are refused, unless a profile's egress_allow names them.
 *    Its own lo is not filtered (its services talk to themselves there).
 *  - Refused means rejected, not dropped: TCP gets a reset, everything
 *    else an ICMP administratively-prohibited, so a program fails at once
 *    (ECONNREFUSED, EHOSTUNREACH) instead of hanging until its own timeout,
 *    and a probe learns nothing it could not learn from a reset anyway.
 *  - The rules go in as one nftables transaction (all or nothing), from a
 *    child that has joined the sandbox's network namespace; the creator
 *    itself never changes namespace.
 *  - libnftables is opened with dlopen in that child only: no sbx program
 *    links it, so the create without internet, and every other program,
 *    pays nothing for it (see curl-lazy.c for the same reasoning).  In
 *    the child it costs less than exec'ing nft(8), which loads the same
 *    library and parses the same text after an exec (measured in
 *    docs/design.md).
 *  - Fails closed: when the table cannot be installed create fails and the
 *    caller removes the sandbox; slirp has not been started by then. */
#include "local-egress.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "local-pid.h"
#include "ssrf.h"
#include "fault.h"
#include "util.h"

/* Not the internet.  Reasons, for a reader who wants to allow one:
 * "this network", RFC 1918, CGNAT (and Alibaba's metadata 100.100.100.200),
 * loopback, link-local (every cloud's metadata 169.254.169.254), IETF
 * protocol assignments, the three documentation nets (never routed on the
 * internet, yet used as LANs: this project's own build host has one),
 * the benchmark net (used by VPNs and fake-IP DNS), Azure's wire server
 * 168.63.129.16 (a public address that answers only from inside Azure),
 * multicast, and the reserved 240/4 with broadcast. */
static const char *const refused4[] = {
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "168.63.129.16/32", "224.0.0.0/4", "240.0.0.0/4",
};
/* IPv4-compatible, unspecified and loopback (::/96), IPv4-mapped, NAT64
 * (global and local-use), discard, Teredo and 6to4 (all of which carry
 * an IPv4 address and could reach a refused one through a translator),
 * documentation, ULA (fd00:ec2::254 is AWS's metadata), link-local,
 * site-local, multicast.  slirp4netns runs without --enable-ipv6 today, so
 * the sandbox has no IPv6 route at all; these rules are for the day it
 * does. */
static const char *const refused6[] = {
	"::/96", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/32",
	"2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
};

static void add(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return;
		}
		*cap = *cap * 2 + (size_t)n;
		*buf = sbx_xrealloc(*buf, *cap);
	}
}

static int is_v6(const char *cidr) { return strchr(cidr, ':') != NULL; }

char *local_egress_rules(char *const *allow, char *const *host)
{
	size_t len = 0, cap = 4096;
	char *b = sbx_xmalloc(cap);
	b[0] = '\0';
	add(&b, &len, &cap,
	    "table inet sbx_egress {\n"
	    "\tchain refuse {\n"
	    "\t\tmeta l4proto tcp reject with tcp reset\n"
	    "\t\treject with icmpx admin-prohibited\n"
	    "\t}\n"
	    "\tchain output {\n"
	    "\t\ttype filter hook output priority filter; policy accept;\n"
	    "\t\toifname \"lo\" accept\n"
	    "\t\tip daddr " LOCAL_SANDBOX_RESOLVER " udp dport 53 accept\n"
	    "\t\tip daddr " LOCAL_SANDBOX_RESOLVER " tcp dport 53 accept\n");
	for (char *const *a = allow; a && *a; a++)
		add(&b, &len, &cap, "\t\t%s daddr %s accept\n", is_v6(*a) ? "ip6" : "ip", *a);
	for (size_t i = 0; i < SBX_ARRAY_LEN(refused4); i++)
		add(&b, &len, &cap, "\t\tip daddr %s goto refuse\n", refused4[i]);
	for (size_t i = 0; i < SBX_ARRAY_LEN(refused6); i++)
		add(&b, &len, &cap, "\t\tip6 daddr %s goto refuse\n", refused6[i]);
	for (char *const *h = host; h && *h; h++)
		add(&b, &len, &cap, "\t\t%s daddr %s goto refuse\n", is_v6(*h) ? "ip6" : "ip", *h);
	add(&b, &len, &cap, "\t}\n}\n");
	return b;
}

static int prefix_len(const unsigned char *m, int bytes)
{
	int n = 0;
	for (int i = 0; i < bytes * 8 && (m[i / 8] & (0x80 >> (i % 8))); i++)
		n++;
	return n;
}

/* The caller's addresses, each as ADDR/32 (/128), and the networks they
 * sit on (ADDR&MASK/LEN) when the mask is at least /8 (/16 for IPv6):
 * slirp connects from this namespace, so to it these are the host itself
 * and its LAN (the router, the neighbours).  A shorter mask is no LAN
 * worth refusing wholesale.  NULL-terminated, malloc'd; NULL when
 * getifaddrs fails (the caller fails closed). */
char **local_egress_host_cidrs(void)
{
	struct ifaddrs *ifa;
	if (getifaddrs(&ifa) < 0)
		return NULL;
	size_t n = 0, cap = 16;
	char **v = sbx_xcalloc(cap, sizeof(char *));
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		int af = i->ifa_addr->sa_family, bytes = af == AF_INET ? 4 : 16;
		unsigned char a[16], m[16] = {0};
		memcpy(a, af == AF_INET ? (void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
					: (void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, bytes);
		if (i->ifa_netmask)
			memcpy(m, af == AF_INET ? (void *)&((struct sockaddr_in *)i->ifa_netmask)->sin_addr
						: (void *)&((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr,
			       bytes);
		char txt[INET6_ADDRSTRLEN];
		for (int pass = 0; pass < 2; pass++) {
			int plen = pass == 0 ? bytes * 8 : prefix_len(m, bytes);
			if (pass == 1 && (plen == bytes * 8 || plen < (af == AF_INET ? 8 : 16)))
				continue;
			unsigned char net[16];
			for (int k = 0; k < bytes; k++) {
				int bits = plen - k * 8;
				net[k] = a[k] & (bits >= 8 ? 0xff : bits <= 0 ? 0 : (0xff << (8 - bits)) & 0xff);
			}
			inet_ntop(af, net, txt, sizeof(txt));
			if (n + 2 >= cap) {
				cap *= 2;
				v = sbx_xrealloc(v, cap * sizeof(char *));
			}
			v[n++] = sbx_xasprintf("%s/%d", txt, plen);
			v[n] = NULL;
		}
	}
	freeifaddrs(ifa);
	return v;
}

void local_egress_strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

enum { EG_OK = 0, EG_REFUSED = 1, EG_NO_NFT = 2, EG_SETNS = 3 };

char *local_egress_broker_rules(void)
{
	return sbx_xasprintf(
		"table inet sbx_egress {\n"
		"\tchain refuse {\n"
		"\t\tmeta l4proto tcp reject with tcp reset\n"
		"\t\treject with icmpx admin-prohibited\n"
		"\t}\n"
		"\tchain to_broker {\n"
		"\t\ttype nat hook output priority -100; policy accept;\n"
		"\t\tip daddr != 127.0.0.0/8 meta l4proto tcp dnat ip to %s:%d\n"
		"\t}\n"
		"\tchain output {\n"
		"\t\ttype filter hook output priority filter; policy accept;\n"
		"\t\tct state established,related accept\n"
		"\t\tip daddr 127.0.0.0/8 accept\n"
		"\t\tip6 daddr ::1 accept\n"
		"\t\tip daddr %s tcp dport %d accept\n"
		"\t\tip daddr %s udp dport 53 accept\n"
		"\t\tgoto refuse\n"
		"\t}\n"
		"}\n",
		LOCAL_SANDBOX_RESOLVER, LOCAL_EGRESS_BROKER_PORT, LOCAL_SANDBOX_RESOLVER,
		LOCAL_EGRESS_BROKER_PORT, LOCAL_SANDBOX_RESOLVER);
}

/* One rtnetlink request (NLM_F_ACK), 0 when the kernel acknowledged it. */
static int nl_do(int fd, struct nlmsghdr *h)
{
	if (send(fd, h, h->nlmsg_len, 0) != (ssize_t)h->nlmsg_len)
		return -1;
	char buf[1024];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	struct nlmsghdr *r = (struct nlmsghdr *)buf;
	if (n < (ssize_t)(sizeof(*r) + sizeof(struct nlmsgerr)) || r->nlmsg_type != NLMSG_ERROR)
		return -1;
	int e = ((struct nlmsgerr *)NLMSG_DATA(r))->error;
	if (e) {
		errno = -e;
		return -1;
	}
	return 0;
}

static void nl_attr(struct nlmsghdr *h, unsigned short type, const void *data, unsigned short len)
{
	struct rtattr *a = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));
	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* A new netlink request of `type` that creates (and fails if it
 * exists), acknowledged, in the zeroed buffer of `size` bytes at h; its
 * payload header (`len` bytes) is returned for the caller to fill. */
static void *nl_new(struct nlmsghdr *h, size_t size, unsigned short type, size_t len)
{
	memset(h, 0, size);
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	h->nlmsg_len = NLMSG_LENGTH(len);
	return NLMSG_DATA(h);
}

/* In the installer child, inside the namespace: the broker's network,
 * LOCAL_SANDBOX_RESOLVER/32 on lo and a default route into lo (so that a
 * connect to any IPv4 address is routed, and the table's dnat sends it
 * to the broker).  Errors to `efd`. */
static int broker_net(int efd)
{
	SBX_AUTOCLOSE int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	unsigned lo = if_nametoindex("lo");
	if (fd < 0 || !lo) {
		dprintf(efd, "netlink: %s", strerror(errno));
		return -1;
	}
	struct { struct nlmsghdr h; char body[256]; } m;
	struct in_addr a;
	inet_pton(AF_INET, LOCAL_SANDBOX_RESOLVER, &a);

	struct ifaddrmsg *ifa = nl_new(&m.h, sizeof(m), RTM_NEWADDR, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = 32;
	ifa->ifa_scope = RT_SCOPE_HOST;
	ifa->ifa_index = lo;
	nl_attr(&m.h, IFA_LOCAL, &a, 4);
	nl_attr(&m.h, IFA_ADDRESS, &a, 4);
	if (nl_do(fd, &m.h) < 0) {
		dprintf(efd, "add %s to lo: %s", LOCAL_SANDBOX_RESOLVER, strerror(errno));
		return -1;
	}

	struct rtmsg *rt = nl_new(&m.h, sizeof(m), RTM_NEWROUTE, sizeof(*rt));
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_LINK;
	rt->rtm_type = RTN_UNICAST;
	nl_attr(&m.h, RTA_OIF, &lo, 4);
	nl_attr(&m.h, RTA_PREFSRC, &a, 4);   /* else the source is 0.0.0.0 */
	if (nl_do(fd, &m.h) < 0) {
		dprintf(efd, "default route into lo: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int local_egress_refused(const struct sockaddr *sa, char *const *allow, char *const *host,
			 const char **why)
{
	for (char *const *a = allow; a && *a; a++)
		if (sbx_cidr_contains(*a, sa)) {
			*why = NULL;
			return 0;
		}
	if (sbx_ssrf_classify(sa, why) != SBX_SSRF_ALLOW)   /* names the class */
		return 1;
	for (size_t i = 0; i < SBX_ARRAY_LEN(refused4); i++)
		if (sbx_cidr_contains(refused4[i], sa)) {
			*why = "not the internet";
			return 1;
		}
	for (size_t i = 0; i < SBX_ARRAY_LEN(refused6); i++)
		if (sbx_cidr_contains(refused6[i], sa)) {
			*why = "not the internet";
			return 1;
		}
	for (char *const *h = host; h && *h; h++)
		if (sbx_cidr_contains(*h, sa)) {
			*why = "the host's own address or network";
			return 1;
		}
	*why = NULL;
	return 0;
}

/* In the child, inside the sandbox's namespace: run `rules` through
 * libnftables, its error text to fd `efd`.  Exit status per the enum. */
static int via_lib(const char *rules, int efd)
{
	void *h = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		dprintf(efd, "cannot load libnftables.so.1 (install nftables)");
		return EG_NO_NFT;
	}
	void *(*ctx_new)(uint32_t) = (void *(*)(uint32_t))dlsym(h, "nft_ctx_new");
	int (*buffer_error)(void *) = (int (*)(void *))dlsym(h, "nft_ctx_buffer_error");
	const char *(*get_error)(void *) = (const char *(*)(void *))dlsym(h, "nft_ctx_get_error_buffer");
	int (*run)(void *, const char *) = (int (*)(void *, const char *))dlsym(h, "nft_run_cmd_from_buffer");
	if (!ctx_new || !buffer_error || !get_error || !run) {
		dprintf(efd, "libnftables.so.1 lacks nft_run_cmd_from_buffer");
		return EG_NO_NFT;
	}
	void *ctx = ctx_new(0);
	if (!ctx) {
		dprintf(efd, "nft_ctx_new failed");
		return EG_REFUSED;
	}
	buffer_error(ctx);
	if (run(ctx, rules) != 0) {
		const char *e = get_error(ctx);
		dprintf(efd, "%s", e && *e ? e : "nftables refused the rules");
		return EG_REFUSED;
	}
	return EG_OK;
}

static int install(pid_t pid, unsigned long long start, const char *rules, int broker,
		   const char *id, struct sbx_err *err);

int local_egress_install(pid_t pid, unsigned long long start, char *const *allow,
			 const char *id, struct sbx_err *err)
{
	char **host = local_egress_host_cidrs();
	if (!host)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "egress filter: getifaddrs");
	SBX_AUTOFREE char *rules = local_egress_rules(allow, host);
	local_egress_strv_free(host);
	return install(pid, start, rules, 0, id, err);
}

int local_egress_install_broker(pid_t pid, unsigned long long start, const char *id,
				struct sbx_err *err)
{
	SBX_AUTOFREE char *rules = local_egress_broker_rules();
	return install(pid, start, rules, 1, id, err);
}

static int install(pid_t pid, unsigned long long start, const char *rules, int broker,
		   const char *id, struct sbx_err *err)
{

	/* The init's netns, proven to be the init's (local_init_open). */
	SBX_AUTOCLOSE int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0 || local_pid_start(pid) != start)
		return sbx_fail(err, SBX_TERMINAL, "create", "the init of %s is gone", id);
	SBX_AUTOCLOSE int nsfd = local_init_open(pidfd, pid, "ns/net", O_RDONLY | O_CLOEXEC, id,
						 "create", err);
	if (nsfd < 0)
		return -1;

	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "pipe");
	pid_t c = fork();
	if (c < 0) {
		close(ep[0]);
		close(ep[1]);
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "fork");
	}
	if (c == 0) {
		close(ep[0]);
		if (setns(nsfd, CLONE_NEWNET) < 0) {
			dprintf(ep[1], "setns: %s", strerror(errno));
			_exit(EG_SETNS);
		}
		sbx_fault("local:egress");   /* tests: the installer dies */
		if (broker && broker_net(ep[1]) < 0)
			_exit(EG_REFUSED);
		_exit(via_lib(rules, ep[1]));
	}
	close(ep[1]);
	char msg[512];
	size_t got = 0;
	for (;;) {
		ssize_t r = read(ep[0], msg + got, sizeof(msg) - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (got += (size_t)r) == sizeof(msg) - 1)
			break;
	}
	close(ep[0]);
	msg[got] = '\0';
	while (got && (msg[got - 1] == '\n' || msg[got - 1] == ' '))
		msg[--got] = '\0';
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
	int st;
	while (waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st))
		return sbx_fail(err, SBX_INTERNAL, "create",
				"egress filter for %s could not be installed: its installer died (signal %d)",
				id, WTERMSIG(st));
	int code = WEXITSTATUS(st);
	if (code == EG_OK)
		return 0;
	if (code == EG_NO_NFT)
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "egress needs nftables: %s", msg);
	return sbx_fail(err, SBX_UNSUPPORTED, "create",
			"egress filter for %s could not be installed: %s", id, msg[0] ? msg : "unknown error");
}
