/* local-l7.h - the egress broker's L7 side (issue 29; docs/security.md,
 * "L7 rules and secrets"): HTTP requests read, judged one by one and
 * passed on, for the names whose rules or secrets need it; every other
 * connection is the broker's plain splice (local-broker.c).
 *
 * A connection taken here carries one request: the broker reads its head
 * (at most LOCAL_L7_HEAD_MAX bytes, else 431), checks it strictly (one
 * request line "METHOD /path HTTP/1.x", header names as tokens, no
 * obs-fold, no bare CR or LF, no Transfer-Encoding (501: request bodies
 * pass by Content-Length only), one Content-Length of digits, a Host equal
 * to the name the connection was judged by), judges it
 * (sbx_np_judge_req), replaces secret placeholders, and sends it upstream
 * with "Connection: close"; the request body follows, exactly
 * Content-Length bytes, then the whole response comes back and both ends
 * close.  A client's next request opens a new connection (so it is read
 * and judged as this one was; nothing the client sends after the first
 * request's body is ever passed on).  Refusals are HTTP answers: 403 with
 * the rule named, 400/431/501 for what is not read.
 *
 * HTTPS: TLS is terminated with a leaf certificate for the SNI the
 * broker mints with the profile's CA (local-ca.h), ALPN "http/1.1" only
 * (a client that offers h2 gets http/1.1; one that offers only h2 gets no
 * ALPN and speaks HTTP/1.1 or fails), and a new TLS connection is made to
 * the server, verified against the host's store (or the profile's
 * egress_upstream_ca) for the same name: a certificate that does not
 * verify gets the sandbox a 502, never the server's bytes. */
#ifndef SBX_LOCAL_L7_H
#define SBX_LOCAL_L7_H

#include <stddef.h>
#include <sys/socket.h>

#include "netpolicy.h"

#define LOCAL_L7_HEAD_MAX 16384

/* The facts of one request the broker read: what the connection's audit
 * record keeps of it (its `http` entry, local-brokerd.c).  Filled by
 * local_l7_serve as the request goes, refused ones too; the secrets'
 * names, never a value. */
struct local_l7_fact {
	int tls;                 /* https */
	char host[256];          /* the name it was judged by */
	unsigned port;
	char method[20];
	char path[1024];         /* the target, query values dropped ("?a=&b=") */
	int status;              /* the server's status; the broker's own refusal's; 0 none */
	char secret[72];         /* the name of the secret used or refused, "" none */
	int verdict;             /* SBX_NP_ALLOW / SBX_NP_DENY; 0 not judged (malformed) */
	size_t rule;             /* the deciding rule, SBX_NP_DEFAULT */
	char why[300];           /* a refusal's reason, "" */
	unsigned long long bytes_out, bytes_in;  /* to the server (head, body) and back */
};

struct local_l7;

/* The L7 state of a broker from its keys document (read from its stdin,
 * see local_broker_start): {"ca": DIR, "profile": NAME, "upstream_ca":
 * PATH?, "secrets": [...] (egress-secrets.h)}; the CA loaded (made on
 * first need), and its certificate written to <sandbox_dir>/egress-ca.crt
 * for the creator.  NULL with err on failure. */
struct local_l7 *local_l7_new(const char *doc, size_t len, const char *sandbox_dir,
			      struct sbx_err *err);

/* 1 when a connection to `name` on `port` (tls or not) goes through
 * local_l7_serve: an L7 rule covers it, or (TLS) a secret is bound to the
 * name, or (plain) the broker holds any secret (a placeholder must not
 * leave in clear). */
int local_l7_wants(const struct local_l7 *l, const struct sbx_netpolicy *p, int tls,
		   const char *name, unsigned port);

/* How local_l7_serve reaches the server: judge request `rq` to `name`
 * and dial it (the broker's resolver, guards and policy); the socket, or
 * -1 with f->verdict, f->rule and f->why set. */
typedef int (*local_l7_dial_fn)(void *ctx, const char *name, unsigned port,
				const struct sbx_np_req *rq, struct local_l7_fact *f);

/* Serve connection `fd` (closed before it returns), of which the broker
 * read `first[0..n)` already (a ClientHello when tls, else a request
 * head), judged by `name`:`port`.  *f: the request's facts when it
 * returns (overwritten), for the caller's record. */
void local_l7_serve(struct local_l7 *l, int fd, int tls, const unsigned char *first, size_t n,
		    const char *name, unsigned port, local_l7_dial_fn dial, void *ctx,
		    struct local_l7_fact *f);

#endif
