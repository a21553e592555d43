/* libFuzzer target for the Connect request reader
 * (common/serve/serve-connect.c serve_connect_request): a unary JSON body or a
 * streaming call's first envelope.  The first input byte picks the
 * content type; the rest is the body.  Properties beyond "no crash, no
 * leak, no UB":
 *   - it returns a JSON object, or NULL with exactly one answer written
 *     to the pipe (a Connect error: unary JSON with a code, or an
 *     end-of-stream envelope flagged 0x02);
 *   - a message it accepts from an envelope lies within the body: the
 *     declared length is at most the body's length less the 5 prefix
 *     bytes, and the envelope's flags are 0. */
// fuzz-sources: common/serve/serve-connect.c common/serve/serve-wire.c common/serve/serve-req.c common/backend/path.c common/serve/serve-reply.c common/base/doc.c common/base/err.c common/base/util.c
// fuzz-libs: -ljson-c
// fuzz-max-len: 8192
#include "serve-fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const types[] = {"application/connect+json", "application/json",
					    "text/plain", NULL};
	if (!size)
		return 0;
	struct serve_req r = {0};
	const char *ct = types[data[0] % 4];
	if (ct) {
		r.hdr[0].k = "content-type";
		r.hdr[0].v = (char *)ct;
		r.nhdr = 1;
	}
	r.body = malloc(size);
	memcpy(r.body, data + 1, size - 1);
	r.body_len = size - 1;
	r.body[r.body_len] = '\0';
	struct serve_out o = {.fd = memfd_create("fuzz-connect", MFD_CLOEXEC)};
	if (o.fd < 0)
		abort();
	int streaming;
	json_object *j = serve_connect_request(&r, &o, &streaming);
	size_t len;
	char *out = fz_out_text(&o, &len);
	if (j) {
		if (!json_object_is_type(j, json_type_object) || len != 0)
			abort();
		if (streaming) {
			const unsigned char *b = (const unsigned char *)r.body;
			size_t n = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
			if (r.body_len < 5 || b[0] != 0 || n > r.body_len - 5)
				abort();
		}
		json_object_put(j);
	} else {
		char *end = strstr(out, "\n\n");
		if (!end || !o.head_done)
			abort();
		if (streaming) {
			const unsigned char *e = (const unsigned char *)end + 2;
			if (len - (size_t)(end + 2 - out) < 5 || e[0] != 2)
				abort();
		} else if (!strstr(out, "\"code\"")) {
			abort();
		}
	}
	free(out);
	close(o.fd);
	free(r.body);
	return 0;
}
