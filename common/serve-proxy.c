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

static const char RELAY[] =
	"if command -v bash >/dev/null 2>&1; then "
	"exec bash -c 'exec 4<&0 3<>/dev/tcp/127.0.0.1/$1 || exit 7; cat <&4 >&3 & cat <&3' relay \"$1\"; fi; "
	"exec nc 127.0.0.1 \"$1\"";

static int answer(struct serve_out *o, const char *id, unsigned port, int status, const char *msg)
{
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "sandboxId", id);
	sbx_json_set_str(j, "message", msg);
	if (status == 502)
		sbx_json_set_int(j, "port", port);
	sbx_json_set_int(j, "code", status);
	return serve_reply_json(o, status, j);
}

static int hop_by_hop(const char *name)
{
	static const char *const h[] = {"connection", "keep-alive", "proxy-connection", "te",
					"trailer", "transfer-encoding", "upgrade", "content-length",
					"host", "date", "e2b-traffic-access-token", "x-access-token"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(h); i++)
		if (!strcasecmp(name, h[i]))
			return 1;
	return 0;
}

/* The request as the sandbox's server gets it. */
static char *request_text(const struct serve_req *r, unsigned port, size_t *len)
{
	size_t cap = 4096 + r->body_len, n = 0;
	char *t = sbx_xmalloc(cap);
	n += (size_t)snprintf(t + n, cap - n, "%s %s", r->method, r->path);
	for (size_t i = 0; i < r->nquery; i++) {
		SBX_AUTOFREE char *k = sbx_xstrdup(r->query[i].k), *v = sbx_xstrdup(r->query[i].v);
		/* the query was decoded once: encode again what a URL cannot hold */
		n += (size_t)snprintf(t + n, cap - n, "%c", i ? '&' : '?');
		for (int side = 0; side < 2; side++) {
			const char *s = side ? v : k;
			if (side)
				n += (size_t)snprintf(t + n, cap - n, "=");
			for (; *s && n + 4 < cap - 1024; s++)
				n += (size_t)(strchr(" %&=#?+\r\n", *s) || (unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e
						      ? snprintf(t + n, cap - n, "%%%02X", (unsigned char)*s)
						      : snprintf(t + n, cap - n, "%c", *s));
		}
	}
	n += (size_t)snprintf(t + n, cap - n, " HTTP/1.0\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n", port);
	for (size_t i = 0; i < r->nhdr && n < cap - 1024; i++)
		if (!hop_by_hop(r->hdr[i].k))
			n += (size_t)snprintf(t + n, cap - n, "%.512s: %.2048s\r\n", r->hdr[i].k, r->hdr[i].v);
	n += (size_t)snprintf(t + n, cap - n, "Content-Length: %zu\r\n\r\n", r->body_len);
	if (n + r->body_len > cap)
		t = sbx_xrealloc(t, n + r->body_len + 1);
	memcpy(t + n, r->body ? r->body : "", r->body_len);
	*len = n + r->body_len;
	return t;
}

/* Relay the sandbox server's raw HTTP answer. */
static int relay_answer(struct serve_out *o, const char *id, unsigned port, const char *a, size_t n)
{
	const char *he = memmem(a, n, "\r\n\r\n", 4);
	int status;
	if (!he || n < 12 || strncmp(a, "HTTP/1.", 7) != 0 || sscanf(a + 9, "%3d", &status) != 1 ||
	    status < 100 || status > 599)
		return answer(o, id, port, 502, "The sandbox is running but port is not open");
	const char *ctype = NULL;
	char ct[256] = "";
	const char *line = strstr(a, "\r\n") + 2;
	while (line < he) {
		const char *eol = strstr(line, "\r\n");
		const char *colon = memchr(line, ':', (size_t)(eol - line));
		if (colon) {
			char name[128], val[1024];
			snprintf(name, sizeof(name), "%.*s", (int)(colon - line), line);
			const char *v = colon + 1;
			while (*v == ' ')
				v++;
			snprintf(val, sizeof(val), "%.*s", (int)(eol - v), v);
			if (!strcasecmp(name, "content-type")) {
				snprintf(ct, sizeof(ct), "%s", val);
				ctype = ct;
			} else if (!hop_by_hop(name)) {
				serve_out_header(o, name, "%s", val);
			}
		}
		line = eol + 2;
	}
	return serve_reply(o, status, ctype, he + 4, n - (size_t)(he + 4 - a));
}

int serve_proxy(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		struct sbx_sandbox *sb, const struct serve_rec *rec);
int serve_proxy(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		struct sbx_sandbox *sb, const struct serve_rec *rec)
{
	struct sbx_err err = {0};
	if (!rec->allow_public) {
		char tok[65];
		const char *t = serve_hdr(r, "e2b-traffic-access-token");
		if (serve_token(r->serve_dir, "traffic", sb->id, tok, &err) < 0 || !t || !serve_ct_eq(t, tok))
			return answer(o, sb->id, r->port, 403, t ? "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is invalid"
							 : "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing");
	}
	size_t qlen;
	SBX_AUTOFREE char *q = request_text(r, r->port, &qlen);
	SBX_AUTOCLOSE int in = memfd_create("sbx-proxy-in", MFD_CLOEXEC);
	SBX_AUTOCLOSE int out = memfd_create("sbx-proxy-out", MFD_CLOEXEC);
	if (in < 0 || out < 0 || sbx_write_all(in, q, qlen) < 0 || lseek(in, 0, SEEK_SET) < 0)
		return serve_reply_error(o, 500, "cannot set up the relay");
	char port[8];
	snprintf(port, sizeof(port), "%u", r->port);
	char *argv[] = {"/bin/sh", "-c", (char *)RELAY, "relay", port, NULL};
	struct sbx_exec_req req = {.argv = argv, .timeout_ms = 60000, .raw_in_fd = in,
				   .raw_out_fd = out, .raw_err_fd = -1};
	struct sbx_exec_result res = {0};
	if (sbx_call(b, exec, &err, sb, &req, &res) < 0)
		return serve_reply_err(o, &err);
	sbx_exec_result_clear(&res);
	off_t n = lseek(out, 0, SEEK_END);
	if (n <= 0)
		return answer(o, sb->id, r->port, 502, "The sandbox is running but port is not open");
	if ((size_t)n > r->cfg->max_body)
		return answer(o, sb->id, r->port, 502, "The answer is larger than the server relays");
	char *a = mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, out, 0);
	if (a == MAP_FAILED)
		return serve_reply_error(o, 500, "cannot read the answer");
	int rc = relay_answer(o, sb->id, r->port, a, (size_t)n);
	munmap(a, (size_t)n);
	return rc;
}
