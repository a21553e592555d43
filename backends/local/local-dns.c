/* local-dns.c - DNS messages for the egress broker (see local-dns.h).
 * Written here rather than taken from c-ares: the broker needs a strict
 * reader of the one question of a sandbox-made query (which c-ares does
 * not offer: it parses answers) and one blocking A lookup per connection
 * thread, about 150 lines; c-ares would add a library and an event loop
 * for the lookup alone (docs/design.md). */
#include "local-dns.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netpolicy.h"
#include "util.h"

static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] << 8 | p[1]); }

int local_dns_question(const unsigned char *q, size_t n, char *name, uint16_t *qtype,
		       size_t *qend)
{
	if (n < 12 || n > 4096)
		return -1;
	uint16_t flags = get16(q + 2);
	/* A query (QR 0), opcode QUERY, exactly one question, no answers or
	 * authority; one additional record at most (an EDNS OPT, dropped). */
	if ((flags & 0x8000) || (flags & 0x7800) || get16(q + 4) != 1 || get16(q + 6) ||
	    get16(q + 8) || get16(q + 10) > 1)
		return -1;
	size_t i = 12, len = 0;
	for (;;) {
		if (i >= n)
			return -1;
		unsigned l = q[i++];
		if (l == 0)
			break;
		if (l > 63 || i + l > n || len + l + 1 > 254)   /* a pointer (0xc0) is > 63 */
			return -1;
		if (len)
			name[len++] = '.';
		memcpy(name + len, q + i, l);
		len += l;
		i += l;
	}
	name[len] = '\0';
	if (memchr(name, '\0', len) || i + 4 > n || sbx_np_name_norm(name) < 0)
		return -1;
	*qtype = get16(q + i);
	if (get16(q + i + 2) != 1)   /* class IN */
		return -1;
	*qend = i + 4;
	return 0;
}

size_t local_dns_reply(const unsigned char *q, size_t qend, int rcode, unsigned char *out)
{
	memcpy(out, q, qend);
	out[2] = (unsigned char)(0x80 | (q[2] & 0x01));   /* QR, RD copied */
	out[3] = (unsigned char)(0x80 | (rcode & 0x0f));  /* RA */
	memset(out + 6, 0, 6);                             /* no records */
	return qend;
}

static size_t build_query(uint16_t id, const char *name, uint16_t qtype, unsigned char *b)
{
	b[0] = (unsigned char)(id >> 8);
	b[1] = (unsigned char)id;
	b[2] = 0x01;      /* RD */
	b[3] = 0;
	memset(b + 4, 0, 8);
	b[5] = 1;
	size_t i = 12;
	const char *p = name;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);
		b[i++] = (unsigned char)l;
		memcpy(b + i, p, l);
		i += l;
		p += l + (dot ? 1 : 0);
	}
	b[i++] = 0;
	b[i++] = (unsigned char)(qtype >> 8);
	b[i++] = (unsigned char)qtype;
	b[i++] = 0;
	b[i++] = 1;
	return i;
}

long local_dns_ask(const struct sockaddr_in *resolver, const char *name, uint16_t qtype,
		   unsigned char *out, size_t cap)
{
	unsigned char q[300];
	uint16_t id;
	if (strlen(name) > 253 || getrandom(&id, sizeof(id), 0) != sizeof(id))
		return -1;
	size_t qn = build_query(id, name, qtype, q);
	SBX_AUTOCLOSE int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (const struct sockaddr *)resolver, sizeof(*resolver)) < 0)
		return -1;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (send(fd, q, qn, 0) != (ssize_t)qn)
			return -1;
		int64_t deadline = sbx_mono_ms() + 2000;
		for (;;) {
			int64_t left = deadline - sbx_mono_ms();
			struct pollfd pf = {.fd = fd, .events = POLLIN};
			if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
				break;
			ssize_t r = recv(fd, out, cap, 0);
			/* The reply must be ours: id, QR, and the same question. */
			if (r >= (ssize_t)qn && get16(out) == id && (out[2] & 0x80) &&
			    memcmp(out + 12, q + 12, qn - 12) == 0)
				return r;
		}
	}
	return -1;
}

/* Past a (possibly compressed) name at a[i]; the new offset or 0. */
static size_t skip_name(const unsigned char *a, size_t n, size_t i)
{
	for (int hops = 0; i < n && hops < 128; hops++) {
		unsigned l = a[i];
		if (l == 0)
			return i + 1;
		if ((l & 0xc0) == 0xc0)
			return i + 2 <= n ? i + 2 : 0;
		if (l > 63)
			return 0;
		i += 1 + l;
	}
	return 0;
}

int local_dns_a_records(const unsigned char *a, size_t n, struct in_addr *out, int max)
{
	if (n < 12)
		return -1;
	if ((a[3] & 0x0f) != DNS_NOERROR)
		return 0;
	size_t i = 12;
	for (unsigned k = get16(a + 4); k; k--) {
		if (!(i = skip_name(a, n, i)) || i + 4 > n)
			return -1;
		i += 4;
	}
	int got = 0;
	for (unsigned k = get16(a + 6); k; k--) {
		if (!(i = skip_name(a, n, i)) || i + 10 > n)
			return -1;
		uint16_t type = get16(a + i), cls = get16(a + i + 2), rdlen = get16(a + i + 8);
		i += 10;
		if (i + rdlen > n)
			return -1;
		if (type == DNS_A && cls == 1 && rdlen == 4 && got < max)
			memcpy(&out[got++], a + i, 4);
		i += rdlen;
	}
	return got;
}
