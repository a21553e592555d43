/* serve-proxy.c - inbound traffic: a request to "<port>-<id>.<domain>" for
 * a port other than envd's is meant for a server inside the sandbox.
 *
 * Not built yet: the vtable offers no way to reach a sandbox's own
 * loopback from the host (the server must not dial an address a client
 * names, and a sandbox without egress has no address the host can reach).
 * Until a backend operation for it exists, such requests are answered as
 * E2B's proxy answers a closed port (502), after the traffic token check
 * a sandbox without public traffic requires. */
#include "serve-int.h"

#include <string.h>

#include "doc.h"

int serve_proxy(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		struct sbx_sandbox *sb, const struct serve_rec *rec);
int serve_proxy(const struct serve_req *r, struct serve_out *o, struct sbx_backend *b,
		struct sbx_sandbox *sb, const struct serve_rec *rec)
{
	(void)b;
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "sandboxId", sb->id);
	if (!rec->allow_public) {
		char tok[65];
		struct sbx_err err = {0};
		const char *t = serve_hdr(r, "e2b-traffic-access-token");
		if (serve_token(r->serve_dir, "traffic", sb->id, tok, &err) < 0 || !t ||
		    strlen(t) != 64 || strcmp(t, tok) != 0) {
			sbx_json_set_str(j, "message", t ? "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is invalid"
							 : "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing");
			sbx_json_set_int(j, "code", 403);
			return serve_reply_json(o, 403, j);
		}
	}
	sbx_json_set_str(j, "message", "The sandbox is running but port is not open");
	sbx_json_set_int(j, "port", r->port);
	sbx_json_set_int(j, "code", 502);
	return serve_reply_json(o, 502, j);
}
