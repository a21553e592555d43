/* libFuzzer target for the proxy plane's framing (common/serve/serve-wire.c):
 * the request text a sandbox's server gets (serve_proxy_request), the
 * relay of its raw answer into the worker's pipe (serve_proxy_answer), and
 * the connection thread's parse of that pipe head (serve_pipe_head).
 *
 * Input: a request (serve-fuzz.h's format), then the bytes "\n@@\n", then
 * the sandbox's answer.  Properties beyond "no crash, no leak, no UB":
 *   - for a request whose head serve_head_check passes (no other is
 *     relayed), the request text's head (up to the first blank line) has CR and LF
 *     only as CRLF line ends, a request line of exactly two spaces, and
 *     the body after it byte for byte;
 *   - what the relay writes to the pipe always parses as a pipe head,
 *     every header name of it is a token, none is X-Sbx-Length (the
 *     pipe's own), and the body is exactly X-Sbx-Length bytes. */
// fuzz-sources: common/serve/serve-wire.c common/serve/serve-req.c common/backend/path.c common/serve/serve-reply.c common/base/doc.c common/base/err.c common/base/util.c
// fuzz-libs: -ljson-c
// fuzz-max-len: 24576
#include "serve-fuzz.h"

static void check_request(const struct serve_req *r, const char *target)
{
	if (serve_head_check(r->method, target, r->hdr, r->nhdr))
		return;          /* the connection thread answers it: never relayed */
	size_t len;
	char *t = serve_proxy_request(r, 8080, &len);
	char *he = memmem(t, len, "\r\n\r\n", 4);
	if (!he)
		abort();
	size_t hl = (size_t)(he - t) + 2;
	const char *eol = memmem(t, hl, "\r\n", 2);
	size_t spaces = 0;
	for (const char *c = t; c < eol; c++)
		spaces += *c == ' ';
	if (spaces != 2)
		abort();
	for (size_t i = 0; i < hl; i++) {
		if (t[i] == '\r' && t[i + 1] != '\n')
			abort();
		if (t[i] == '\n' && (i == 0 || t[i - 1] != '\r'))
			abort();
		if (!t[i])
			abort();
	}
	if (len - (hl + 2) != r->body_len || memcmp(he + 4, r->body, r->body_len) != 0)
		abort();
	free(t);
}

static void check_answer(const char *a, size_t n)
{
	struct serve_out o = {.fd = memfd_create("fuzz-proxy", MFD_CLOEXEC)};
	if (o.fd < 0)
		abort();
	serve_proxy_answer(&o, "sb-1", 8080, a, n);
	size_t len;
	char *t = fz_out_text(&o, &len);
	close(o.fd);
	char *end = strstr(t, "\n\n");
	if (!end)
		abort();
	size_t body = len - (size_t)(end + 2 - t);
	end[1] = '\0';
	size_t count = 0;
	for (char *c = t; (c = strstr(c, "\nX-Sbx-Length: ")); c++)
		count++;
	struct serve_pipe_head h;
	if (serve_pipe_head(t, &h) < 0 || count != 1 || h.length != (long long)body)
		abort();
	for (size_t i = 0; i < h.n; i++)
		if (!serve_header_name_ok(h.name[i]))
			abort();
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = memmem(data, size, "\n@@\n", 4);
	size_t rl = sep ? (size_t)(sep - data) : size;
	struct serve_req r;
	char *target = fz_req(&r, data, rl);
	check_request(&r, target);
	free(target);
	serve_req_clear(&r);
	if (sep)
		check_answer((const char *)sep + 4, size - rl - 4);
	/* the pipe parser on its own, on anything */
	char *raw = strndup((const char *)data, size);
	struct serve_pipe_head h;
	if (serve_pipe_head(raw, &h) == 0) {
		if (h.status < 100 || h.status > 599)
			abort();
		for (size_t i = 0; i < h.n; i++)
			if (!serve_header_name_ok(h.name[i]))
				abort();
	}
	free(raw);
	return 0;
}
