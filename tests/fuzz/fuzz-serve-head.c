/* libFuzzer target for sbx-serve's request head and body handling
 * (common/serve/serve-wire.c): the head bounds, the routing of a request to a
 * plane and sandbox, the URL unescaping, the body limit of a path and the
 * body's accumulation under it.  Properties beyond "no crash, no leak, no
 * UB":
 *   - a head serve_head_check passes is within SERVE_URL_MAX and
 *     SERVE_HEAD_MAX;
 *   - a request routed to a sandbox plane has an id serve_id_ok accepts,
 *     a port in 1..65535, and is PLANE_ENVD exactly for envd's port;
 *   - unescaping never lengthens a string and never yields a NUL;
 *   - only the exact path /files gets max_body; every body accumulated
 *     in pieces stays within its limit, and is the input's prefix. */
// fuzz-sources: common/serve/serve-wire.c common/serve/serve-req.c common/backend/path.c common/serve/serve-reply.c common/base/doc.c common/base/err.c common/base/util.c
// fuzz-libs: -ljson-c
// fuzz-max-len: 24576
#include "serve-fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct serve_req r;
	char *target = fz_req(&r, data, size);
	struct sbx_serve_cfg cfg = {.max_body = 1000, .max_json = 100};
	size_t tl = strlen(target);
	if (serve_head_check(r.method, target, r.hdr, r.nhdr) == 0) {
		size_t total = tl;
		for (size_t i = 0; i < r.nhdr; i++)
			total += strlen(r.hdr[i].k) + strlen(r.hdr[i].v);
		if (tl > SERVE_URL_MAX || total > SERVE_HEAD_MAX)
			abort();
	}
	char *u = strdup(target);
	if (serve_unescape(u) != strlen(u) || strlen(u) > tl)
		abort();
	free(u);
	const char *domain = size && (data[0] & 1) ? "sbx.test" : NULL;
	if (serve_route(&r, domain) == 0 && r.plane != PLANE_API) {
		if (!serve_id_ok(r.sandbox_id) || r.port < 1 || r.port > 65535 ||
		    (r.plane == PLANE_ENVD) != (r.port == SERVE_ENVD_PORT))
			abort();
	}
	size_t limit = serve_body_limit(r.path, &cfg);
	if ((limit == cfg.max_body) != (strcmp(r.path, "/files") == 0))
		abort();
	/* the body again, in pieces whose sizes the input's bytes pick */
	struct serve_req b = {0};
	size_t cap = 0, off = 0;
	while (off < r.body_len) {
		size_t piece = 1 + (size_t)(unsigned char)r.body[off] % 97;
		if (piece > r.body_len - off)
			piece = r.body_len - off;
		if (serve_body_add(&b, &cap, r.body + off, piece, limit) < 0) {
			if (off + piece <= limit)
				abort();
			break;
		}
		off += piece;
		if (b.body_len != off || b.body_len > limit || b.body[b.body_len] ||
		    memcmp(b.body, r.body, off) != 0)
			abort();
	}
	free(b.body);
	free(target);
	serve_req_clear(&r);
	return 0;
}
