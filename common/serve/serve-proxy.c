/* serve-proxy.c - inbound traffic: a request to "<port>-<id>.<domain>" for
 * a port other than envd's goes to that port on the sandbox's own
 * loopback.
 *
 * The server dials nothing: a sandbox without egress has no address the
 * host could reach, and a client must never make the server connect
 * where it names.  Instead the request is carried *into* the sandbox
 * through the vtable's exec: a relay run as the sandbox user (bash's
 * /dev/tcp, else nc) connects to 127.0.0.1:<port> inside the sandbox's
 * network namespace, writes the request (re-written as HTTP/1.0 with
 * Connection: close, so the answer is neither chunked nor kept alive)
 * and copies the answer back until the sandbox's server closes.  The
 * answer's status, headers (hop-by-hop ones dropped) and body are then
 * relayed.  One exec per request: simple and confined, not fast.
 *
 * Promises: a sandbox that does not allow public traffic needs its
 * traffic token in e2b-traffic-access-token (403 otherwise, compared in
 * constant time); answers are bounded by max_body; a closed port is
 * E2B's 502 {"sandboxId", "message", "port", "code"}. */
#include "serve-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "doc.h"
#include "util.h"

/* $1 the port, $2 the most bytes of answer wanted (max_body + 1): the
 * answer is cut inside the sandbox, so that no backend ever carries more
 * of it to the worker than the worker would relay. */
static const char RELAY[] =
	"if command -v bash >/dev/null 2>&1; then "
	"exec bash -c 'exec 4<&0 3<>/dev/tcp/127.0.0.1/$1 || exit 7; cat <&4 >&3 & head -c \"$2\" <&3' relay \"$1\" \"$2\"; fi; "
	"nc 127.0.0.1 \"$1\" | head -c \"$2\"";

const char *serve_proxy_denied(const struct serve_req *r, const char *id, int allow_public)
{
	if (allow_public)
		return NULL;
	char tok[65];
	struct sbx_err err = {0};
	const char *t = serve_hdr(r, "e2b-traffic-access-token");
	if (t && serve_token(r->serve_dir, "traffic", id, tok, &err) == 0 && serve_ct_eq(t, tok))
		return NULL;
	return t ? "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is invalid"
		 : "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing";
}

int serve_proxy(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		struct sbx_sandbox *sb, const struct serve_rec *rec)
{
	struct sbx_err err = {0};
	const char *denied = serve_proxy_denied(r, sb->id, rec->allow_public);
	if (denied)
		return serve_proxy_error(o, sb->id, r->port, 403, denied);
	size_t qlen;
	SBX_AUTOFREE char *q = serve_proxy_request(r, r->port, &qlen);
	SBX_AUTOCLOSE int in = memfd_create("sbx-proxy-in", MFD_CLOEXEC);
	SBX_AUTOCLOSE int out = memfd_create("sbx-proxy-out", MFD_CLOEXEC);
	if (in < 0 || out < 0 || sbx_write_all(in, q, qlen) < 0 || lseek(in, 0, SEEK_SET) < 0)
		return serve_reply_error(o, 500, "cannot set up the relay");
	char port[8], most[24];
	snprintf(port, sizeof(port), "%u", r->port);
	snprintf(most, sizeof(most), "%zu", r->cfg->max_body + 1);
	char *argv[] = {"/bin/sh", "-c", (char *)RELAY, "relay", port, most, NULL};
	struct sbx_exec_req req = {.argv = argv, .timeout_ms = 60000, .raw_in_fd = in,
				   .raw_out_fd = out, .raw_err_fd = -1};
	struct sbx_exec_result res = {0};
	if (sbx_call(b, exec, &err, sb, &req, &res) < 0)
		return serve_reply_err(o, &err);
	sbx_exec_result_clear(&res);
	off_t n = lseek(out, 0, SEEK_END);
	if (n <= 0)
		return serve_proxy_error(o, sb->id, r->port, 502, "The sandbox is running but port is not open");
	if ((size_t)n > r->cfg->max_body)
		return serve_proxy_error(o, sb->id, r->port, 502, "The answer is larger than the server relays");
	char *a = mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, out, 0);
	if (a == MAP_FAILED)
		return serve_reply_error(o, 500, "cannot read the answer");
	int rc = serve_proxy_answer(o, sb->id, r->port, a, (size_t)n);
	munmap(a, (size_t)n);
	return rc;
}
