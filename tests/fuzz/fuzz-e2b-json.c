/* libFuzzer target for the e2b and cube backends' readers of the control
 * plane's JSON (backends/e2b/e2b-wire.c): a sandbox (create, detail, connect
 * answers), a listing, a snapshot, a template, a filesystem entry, and an
 * error reply.  The first byte picks the reader, the rest is the
 * server's body.  Properties checked beyond "no crash, no leak, no UB":
 *   - what a reader accepts passes the checks it promises: a sandbox's id
 *     is [A-Za-z0-9-]{1,128}, its domain a DNS name, its template a
 *     visible-ASCII name; a snapshot's and a template's id visible ASCII;
 *   - a refusal has kind internal and a message without CR or LF, so no
 *     server can put a line into sbx's stderr or split a header;
 *   - an error reply always becomes an error with the status it had,
 *     its message without CR or LF. */
// fuzz-sources: backends/e2b/e2b-wire.c common/base/doc.c common/base/util.c common/base/err.c common/backend/sandbox.c
// fuzz-libs: -ljson-c
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "e2b-wire.h"
#include "util.h"

/* A malloc'd copy, for the free functions that take arrays. */
static void *dup_of(const void *p, size_t n)
{
	void *q = sbx_xmalloc(n);
	memcpy(q, p, n);
	return q;
}

static void visible(const char *s, size_t max, const char *what)
{
	size_t n = s ? strlen(s) : 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] >= 127) {
			fprintf(stderr, "%s accepted with byte 0x%02x\n", what, (unsigned char)s[i]);
			abort();
		}
	if (n > max) {
		fprintf(stderr, "%s accepted at %zu bytes\n", what, n);
		abort();
	}
}

static void refused(const struct sbx_err *err)
{
	if (err->kind != SBX_INTERNAL || strpbrk(err->msg, "\r\n")) {
		fprintf(stderr, "bad refusal: %s %s\n", sbx_kind_name(err->kind), err->msg);
		abort();
	}
}

static void sandbox(json_object *j, const char *asked)
{
	struct sbx_sandbox sb = {0};
	struct sbx_err err = {0};
	if (asked)
		sb.id = sbx_xstrdup(asked);
	if (e2b_wire_fill(1, "p", &sb, j, &err) < 0) {
		refused(&err);
	} else {
		if (sb.id && e2b_check_id(sb.id, "id", "fuzz", &err) < 0)
			abort();
		if (asked && strcmp(sb.id, asked) != 0)
			abort();
		const char *dom = sb.extra ? sbx_json_str(sb.extra, "domain") : NULL;
		if (dom && !e2b_dns_name(dom))
			abort();
		visible(sb.template_id, E2B_NAME_MAX, "template");
	}
	sbx_sandbox_clear(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int pick = data[0] % 7;
	char *text = sbx_xmalloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	json_object *j = json_tokener_parse(text);
	struct sbx_err err = {0};
	switch (pick) {
	case 0: sandbox(j, NULL); break;
	case 1: sandbox(j, "sbfuzz0123"); break;
	case 2: {
		size_t n = j && json_object_is_type(j, json_type_array) ? json_object_array_length(j) : 0;
		for (size_t i = 0; i < n && i < 64; i++)
			sandbox(json_object_array_get_idx(j, i), NULL);
		break;
	}
	case 3: {
		struct sbx_snapshot_ref r;
		if (e2b_wire_snapshot(j, &r, &err) < 0) {
			refused(&err);
		} else {
			visible(r.id, E2B_NAME_MAX, "snapshotID");
			if (r.parent && e2b_check_id(r.parent, "id", "fuzz", &err) < 0)
				abort();
			sbx_snapshot_refs_free(dup_of(&r, sizeof(r)), 1);
		}
		break;
	}
	case 4: {
		struct sbx_template t;
		if (e2b_wire_template(j, &t, &err) < 0) {
			refused(&err);
		} else {
			visible(t.id, E2B_NAME_MAX, "templateID");
			visible(t.name, E2B_NAME_MAX, "template name");
			sbx_templates_free(dup_of(&t, sizeof(t)), 1);
		}
		break;
	}
	case 5: {
		struct sbx_dirent d;
		e2b_wire_dirent(j, &d);
		if (d.mode > 07777)
			abort();
		sbx_dirents_free(dup_of(&d, sizeof(d)), 1);
		break;
	}
	case 6: {
		struct sbx_http_resp r = {.status = 400 + (size > 1 ? data[1] % 200 : 0), .body = text,
					  .len = strlen(text)};
		if (e2b_status_err("fuzz", &r, &err) != -1 || err.http_status != r.status ||
		    err.kind == SBX_OK || err.kind >= SBX_KIND_COUNT || strpbrk(err.msg, "\r\n"))
			abort();
		break;
	}
	}
	json_object_put(j);
	free(text);
	return 0;
}
