/* libFuzzer target for envd's exec stream reader (backends/e2b/e2b-wire.c,
 * e2b_exec_stream_feed): Connect envelopes of start, data, keepalive and
 * end events and the end-of-stream message, as process.Process/Start
 * answers them.  The first byte sets the size of the pieces the bytes
 * arrive in (1 to 256, as a network hands them over) and the second the
 * output cap (0 to 255 bytes).  Properties checked beyond "no crash, no
 * leak, no UB":
 *   - on_start is called at most once, however many start events come
 *     (a second stdin feeder would share a curl handle across threads);
 *   - kept output never passes the cap, and is truncated when more came;
 *   - a refusal has kind internal and a message without CR or LF, and so
 *     has the end-of-stream error (envd's message quoted). */
// fuzz-sources: backends/e2b/e2b-wire.c common/base/doc.c common/base/util.c common/base/err.c common/backend/sandbox.c
// fuzz-libs: -ljson-c
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b-wire.h"
#include "util.h"

static int starts;

static int on_start(void *ctx, int pid, struct sbx_err *err)
{
	(void)ctx;
	(void)err;
	if (++starts > 1 || pid < 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t piece = (size_t)data[0] + 1, cap = data[1];
	data += 2;
	size -= 2;
	struct sbx_exec_result res = {0};
	struct e2b_exec_stream s = {.res = &res, .raw_out_fd = -1, .raw_err_fd = -1, .out_cap = cap,
				    .on_start = on_start};
	struct sbx_err err = {0};
	starts = 0;
	int rc = 0;
	for (size_t off = 0; rc == 0 && off < size; off += piece) {
		size_t n = size - off < piece ? size - off : piece;
		rc = e2b_exec_stream_feed(&s, (const char *)data + off, n, &err);
	}
	if (rc < 0 && (err.kind != SBX_INTERNAL || strpbrk(err.msg, "\r\n"))) {
		fprintf(stderr, "bad refusal: %s %s\n", sbx_kind_name(err.kind), err.msg);
		abort();
	}
	if (res.out_len > cap || res.err_len > cap)
		abort();
	if (s.end_error && (s.end_err.kind == SBX_OK || strpbrk(s.end_err.msg, "\r\n")))
		abort();
	e2b_exec_stream_free(&s);
	sbx_exec_result_clear(&res);
	return 0;
}
