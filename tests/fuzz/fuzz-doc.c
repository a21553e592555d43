/* libFuzzer target for the document reader (common/base/doc.c).
 *
 * Each input is fed through a pipe (inputs are capped well below a pipe's
 * capacity by `make fuzz`, -max_len=4096; larger ones go through a memfd)
 * into sbx_doc_reader.  The first byte sometimes picks a small per-document
 * limit so the size checks run too.  Properties checked beyond "no crash,
 * no leak, no UB":
 *   - the reader returns 1 a bounded number of times, then 0 or -1 once,
 *     and an error always has kind invalid_request and a "line N" message;
 *   - every document it returns is an object, and writing it with
 *     sbx_doc_write and reading that back gives one document that
 *     serialises to the same text (the writer's output is always readable
 *     by the reader);
 *   - sbx_json_parse_object (the in-memory reader: request bodies, records)
 *     accepts the input exactly when the stream reader reads it as one
 *     document, and then to the same text; its errors are invalid_request
 *     naming the offset. */
// fuzz-sources: common/base/doc.c common/base/err.c common/base/util.c
// fuzz-libs: -ljson-c
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "doc.h"
#include "util.h"

static int input_fd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-doc", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (size && sbx_write_all(fd, data, size) < 0)
		abort();
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Write doc, read it back, compare the serialisations. */
static void round_trip(json_object *doc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	struct sbx_err err = {0};
	if (!mem || sbx_doc_write(mem, doc, &err) < 0)
		abort();
	fclose(mem);
	int fd = input_fd((const uint8_t *)text, len);
	struct sbx_doc_reader *r = sbx_xmalloc(sizeof(*r));
	sbx_doc_reader_init(r, fd, 0);
	json_object *again = NULL, *extra = NULL;
	if (sbx_doc_read(r, &again, &err) != 1) {
		fprintf(stderr, "written document not readable: %s\n%s", err.msg, text);
		abort();
	}
	if (sbx_doc_read(r, &extra, &err) != 0) {
		fprintf(stderr, "written document reads as more than one\n");
		abort();
	}
	const char *a = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	const char *b = json_object_to_json_string_ext(again, JSON_C_TO_STRING_PLAIN);
	if (strcmp(a, b) != 0) {
		fprintf(stderr, "round trip differs:\n%s\n%s\n", a, b);
		abort();
	}
	json_object_put(again);
	sbx_doc_reader_free(r);
	free(r);
	close(fd);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t max = 0;
	if (size >= 2 && data[0] == 'L') {         /* "L<n>": a small limit */
		max = 16 + data[1];
		data += 2;
		size -= 2;
	}
	int fd = input_fd(data, size);
	struct sbx_doc_reader *r = sbx_xmalloc(sizeof(*r));
	sbx_doc_reader_init(r, fd, max);
	struct sbx_err err = {0};
	size_t docs = 0;
	int bad = 0;
	json_object *first = NULL;
	for (;;) {
		json_object *doc = NULL;
		int rc = sbx_doc_read(r, &doc, &err);
		if (rc == 0)
			break;
		if (rc < 0) {
			if (err.kind != SBX_INVALID_REQUEST || strncmp(err.msg, "line ", 5) != 0) {
				fprintf(stderr, "unexpected error: %s %s\n", sbx_kind_name(err.kind), err.msg);
				abort();
			}
			bad = 1;
			break;
		}
		if (!json_object_is_type(doc, json_type_object) || ++docs > size)
			abort();
		round_trip(doc);
		if (docs == 1)
			first = doc;
		else
			json_object_put(doc);
	}
	json_object *one = NULL;
	struct sbx_err e2 = {0};
	int rc = sbx_json_parse_object((const char *)data, size, &one, &e2);
	int same = !bad && docs == 1;
	if (!max && (rc == 0) != same) {
		fprintf(stderr, "in-memory reader %s what the stream reader %s (%s / %s)\n",
			rc == 0 ? "accepts" : "refuses", same ? "reads as one document" : "does not",
			e2.msg, err.msg);
		abort();
	}
	if (rc < 0 && (e2.kind != SBX_INVALID_REQUEST || strncmp(e2.msg, "at offset ", 10) != 0)) {
		fprintf(stderr, "unexpected in-memory error: %s %s\n", sbx_kind_name(e2.kind), e2.msg);
		abort();
	}
	if (rc == 0 && first &&
	    strcmp(json_object_to_json_string_ext(one, JSON_C_TO_STRING_PLAIN),
		   json_object_to_json_string_ext(first, JSON_C_TO_STRING_PLAIN)) != 0)
		abort();
	json_object_put(one);
	json_object_put(first);
	sbx_doc_reader_free(r);
	free(r);
	close(fd);
	return 0;
}
