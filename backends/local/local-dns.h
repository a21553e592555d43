/* local-dns.h - the few DNS messages the egress broker reads and writes
 * (local-dns.c): the question of a sandbox's query, a reply with only a
 * response code, and a lookup of A records from the upstream resolver.
 * Strict: a message that is not exactly one question in class IN, with
 * no compression in the question, is refused, never guessed at. */
#ifndef SBX_LOCAL_DNS_H
#define SBX_LOCAL_DNS_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

enum { DNS_A = 1, DNS_AAAA = 28, DNS_NOERROR = 0, DNS_FORMERR = 1, DNS_SERVFAIL = 2,
       DNS_NXDOMAIN = 3, DNS_REFUSED = 5 };

/* The question of query `q` (`n` bytes): its name (lower-case, no
 * trailing dot, validated as sbx_np_name_norm does) in `name` (256
 * bytes), its type in *qtype, and in *qend the offset past the question.
 * 0, or -1 when `q` is not a query with one IN question (FORMERR). */
int local_dns_question(const unsigned char *q, size_t n, char *name, uint16_t *qtype,
		       size_t *qend);

/* A reply to query `q` with `rcode` and no records (header and question
 * copied), in `out` (at least qend + 0 bytes: qend); its length. */
size_t local_dns_reply(const unsigned char *q, size_t qend, int rcode, unsigned char *out);

/* Ask `resolver` (port 53, UDP) for `name`'s records of `qtype`: the
 * whole answer in `out` (cap bytes), its length; -1 on timeout or a reply
 * that does not match the question.  A fresh id and query of our own. */
long local_dns_ask(const struct sockaddr_in *resolver, const char *name, uint16_t qtype,
		   unsigned char *out, size_t cap);

/* The A records of answer `a` (`n` bytes), at most `max`; their count
 * (0 for NXDOMAIN or no data), -1 when the answer is malformed. */
int local_dns_a_records(const unsigned char *a, size_t n, struct in_addr *out, int max);

#endif
