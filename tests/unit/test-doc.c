/* The document reader (common/base/doc.c): NDJSON, pretty documents, several
 * per line, whitespace, errors that name the right line, non-objects,
 * truncation, the size limit, deep nesting, and documents split across the
 * reader's 64 KiB buffer, fed through pipes by a writer child (as in a
 * pipeline) and through a file where the split point must be exact. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doc.h"
#include "util.h"
#include "tap.h"

struct result {
	int ndocs;
	int rc;                  /* last sbx_doc_read result */
	json_object *docs[8];    /* the first few */
	struct sbx_err err;
};

static void result_free(struct result *r)
{
	for (int i = 0; i < 8; i++)
		if (r->docs[i])
			json_object_put(r->docs[i]);
	memset(r, 0, sizeof(*r));
}

/* Read every document from fd until 0 or -1. */
static void read_all(int fd, size_t max, struct result *res)
{
	struct sbx_doc_reader *r = sbx_xmalloc(sizeof(*r));
	memset(res, 0, sizeof(*res));
	sbx_doc_reader_init(r, fd, max);
	for (;;) {
		json_object *d = NULL;
		res->rc = sbx_doc_read(r, &d, &res->err);
		if (res->rc <= 0)
			break;
		if (res->ndocs < 8)
			res->docs[res->ndocs] = d;
		else
			json_object_put(d);
		res->ndocs++;
	}
	sbx_doc_reader_free(r);
	free(r);
}

/* Feed `data` through a pipe written by a child in `chunk`-byte writes. */
static void feed_pipe(const char *data, size_t len, size_t chunk, size_t max, struct result *res)
{
	int p[2];
	if (pipe(p) < 0)
		abort();
	pid_t w = fork();
	if (w == 0) {
		signal(SIGPIPE, SIG_IGN);   /* the reader may stop early */
		close(p[0]);
		for (size_t off = 0; off < len; off += chunk)
			if (sbx_write_all(p[1], data + off, len - off < chunk ? len - off : chunk) < 0)
				break;
		_exit(0);
	}
	close(p[1]);
	read_all(p[0], max, res);
	close(p[0]);
	waitpid(w, NULL, 0);
}

static void feed(const char *s, struct result *res)
{
	feed_pipe(s, strlen(s), 4096, 0, res);
}

/* Through a memfd: read() returns exactly 64 KiB at a time. */
static void feed_file(const char *data, size_t len, struct result *res)
{
	int fd = memfd_create("doc", MFD_CLOEXEC);
	sbx_write_all(fd, data, len);
	lseek(fd, 0, SEEK_SET);
	read_all(fd, 0, res);
	close(fd);
}

static int has(const struct result *r, const char *needle)
{
	return r->rc < 0 && r->err.kind == SBX_INVALID_REQUEST && strstr(r->err.msg, needle);
}

int main(void)
{
	struct result r;

	feed("{\"sandbox\":{\"id\":\"a\"}}\n{\"sandbox\":{\"id\":\"b\"},\"x\":1}\n{\"n\":3}\n", &r);
	ok(r.ndocs == 3 && r.rc == 0, "NDJSON: three documents, then a clean end");
	is_str(sbx_json_str(sbx_json_obj(r.docs[1], "sandbox"), "id"), "b", "NDJSON: content of the second");
	result_free(&r);

	feed("{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}\n{\n  \"c\": {}\n}", &r);
	ok(r.ndocs == 2 && r.rc == 0, "pretty multi-line documents, the last without a newline");
	is_int(sbx_json_int(r.docs[1], "c", -1), -1, "second pretty doc parsed (c is an object)");
	result_free(&r);

	feed("{\"a\":1}{\"b\":2} {\"c\":3}\t{\"d\":4}\n", &r);
	ok(r.ndocs == 4 && r.rc == 0, "several documents on one line");
	is_int(sbx_json_int(r.docs[3], "d", 0), 4, "the fourth is d");
	result_free(&r);

	feed("  \n\t\r\n   \n", &r);
	ok(r.ndocs == 0 && r.rc == 0, "whitespace only: no documents, clean end");
	result_free(&r);
	feed("", &r);
	ok(r.ndocs == 0 && r.rc == 0, "empty input: no documents, clean end");
	result_free(&r);

	feed("{\"a\":1}\n{\"b\":2}\n{\"c\": tru}\n{\"d\":4}\n", &r);
	ok(r.ndocs == 2 && has(&r, "line 3") && has(&r, "invalid JSON"),
	   "bad JSON on line 3 names line 3 (%s)", r.err.msg);
	result_free(&r);
	feed("{\"ok\":1}\n\n{\n  \"a\": 1,\n  \"b\": ]\n}\n", &r);
	ok(r.ndocs == 1 && has(&r, "line 5"), "an error inside a pretty document names its line (%s)", r.err.msg);
	result_free(&r);
	feed("{\"a\":1}\nnot json\n", &r);
	ok(r.ndocs == 1 && has(&r, "line 2"), "garbage between documents: line 2 (%s)", r.err.msg);
	result_free(&r);

	const char *nonobj[] = {"[1,2]\n", "\"str\"\n", "42\n", "null\n", "true\n"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(nonobj); i++) {
		feed(nonobj[i], &r);
		ok(r.ndocs == 0 && has(&r, "must be a JSON object") && has(&r, "line 1"),
		   "non-object refused: %.*s (%s)", (int)strlen(nonobj[i]) - 1, nonobj[i], r.err.msg);
		result_free(&r);
	}
	feed("{}\n\n[]\n", &r);
	ok(r.ndocs == 1 && has(&r, "line 3"), "a non-object after an object: its own line (%s)", r.err.msg);
	result_free(&r);

	feed("{\"a\":1}\n{\"b\":", &r);
	ok(r.ndocs == 1 && has(&r, "truncated") && has(&r, "line 2"), "truncated at EOF (%s)", r.err.msg);
	result_free(&r);
	feed("{\"a\":1}\n\n\n{\n\"b\": \"unterminated", &r);
	ok(r.ndocs == 1 && has(&r, "truncated") && has(&r, "line 4"),
	   "truncated names the line where the document began (%s)", r.err.msg);
	result_free(&r);

	/* Size limit, small and streamed. */
	char doc[256];
	snprintf(doc, sizeof(doc), "{\"pad\":\"%0150d\"}\n", 0);
	feed_pipe("{\"small\":1}\n", 12, 4096, 100, &r);
	ok(r.ndocs == 1 && r.rc == 0, "a document under the limit passes");
	result_free(&r);
	feed_pipe(doc, strlen(doc), 4096, 100, &r);
	ok(r.ndocs == 0 && has(&r, "larger than 100 bytes"), "a document over the limit is refused (%s)", r.err.msg);
	result_free(&r);
	size_t biglen = 300000;
	char *big = sbx_xmalloc(biglen + 1);
	memset(big, ' ', biglen);
	memcpy(big, "{\"pad\":\"", 8);
	memset(big + 8, 'x', biglen - 12);
	memcpy(big + biglen - 4, "\"}\n", 3);
	big[biglen] = 0;
	feed_pipe(big, strlen(big), 7000, 1000, &r);
	ok(r.ndocs == 0 && has(&r, "larger than 1000 bytes"), "a streamed 300 KB document over a 1000-byte limit "
	   "is refused (%s)", r.err.msg);
	result_free(&r);
	feed_pipe(big, strlen(big), 7000, 0, &r);
	ok(r.ndocs == 1 && r.rc == 0, "the same 300 KB document passes under the default limit");
	result_free(&r);

	/* Deep nesting: refused cleanly, not a stack overflow. */
	size_t depth = 5000;
	char *deep = sbx_xmalloc(depth * 6 + 16), *d = deep;
	for (size_t i = 0; i < depth; i++)
		d += sprintf(d, "{\"a\":");
	*d++ = '1';
	for (size_t i = 0; i < depth; i++)
		*d++ = '}';
	*d++ = '\n';
	*d = 0;
	feed_pipe(deep, strlen(deep), 4096, 0, &r);
	ok(r.ndocs == 0 && has(&r, "line 1"), "5000-deep nesting is refused (%s)", r.err.msg);
	result_free(&r);
	d = deep;
	for (size_t i = 0; i < 30; i++)
		d += sprintf(d, "{\"a\":");
	*d++ = '1';
	for (size_t i = 0; i < 30; i++)
		*d++ = '}';
	*d = 0;
	feed(deep, &r);
	ok(r.ndocs == 1 && r.rc == 0, "30-deep nesting is fine");
	result_free(&r);
	free(deep);

	/* Split across the 64 KiB buffer, exactly: the first document fills
	 * the buffer but for 14 bytes; the second starts there, and carries a
	 * 3-byte UTF-8 character across the boundary. */
	size_t first = 65536 - 14;
	char *buf = sbx_xmalloc(200000);
	memset(buf, ' ', first);
	memcpy(buf, "{\"p\":\"", 6);
	memset(buf + 6, 'y', first - 6 - 3);
	memcpy(buf + first - 3, "\"}\n", 3);
	size_t off = first;
	const char *tail = "{\"s\":\"abcdefg\xe2\x82\xac\"}\n{\"t\":2}\n{\"bad\" 1}\n";
	memcpy(buf + off, tail, strlen(tail));      /* the euro sign: bytes 65535..65537 */
	off += strlen(tail);
	feed_file(buf, off, &r);
	ok(r.ndocs == 3, "file: documents on both sides of the 64 KiB boundary are read (%d)", r.ndocs);
	is_str(sbx_json_str(r.docs[1], "s"), "abcdefg\xe2\x82\xac", "file: a UTF-8 character split across it survives");
	ok(has(&r, "line 4"), "file: line numbers stay right after the boundary (%s)", r.err.msg);
	result_free(&r);

	/* The same through a pipe with a writer child, in odd-sized writes,
	 * with many documents of ~70 KB so that boundaries fall everywhere. */
	size_t n = 0;
	char *many = sbx_xmalloc(8 * 70100 + 64);
	for (int i = 0; i < 8; i++) {
		n += (size_t)sprintf(many + n, "{\"i\":%d,\"pad\":\"", i);
		memset(many + n, 'a' + i, 70000 - (size_t)i * 1111);
		n += 70000 - (size_t)i * 1111;
		n += (size_t)sprintf(many + n, "\"}%s", i % 2 ? "\n" : " ");
	}
	feed_pipe(many, n, 4093, 0, &r);
	int good = r.ndocs == 8 && r.rc == 0;
	for (int i = 0; good && i < 8; i++)
		good = sbx_json_int(r.docs[i], "i", -1) == i &&
		       strlen(sbx_json_str(r.docs[i], "pad")) == 70000 - (size_t)i * 1111;
	ok(good, "pipe: eight ~70 KB documents in 4093-byte writes arrive whole and in order");
	result_free(&r);
	free(many);

	/* Line counting across many documents. */
	char *lines = sbx_xmalloc(100 * 16 + 32);
	d = lines;
	for (int i = 0; i < 100; i++)
		d += sprintf(d, "{\"i\":%d}\n", i);
	strcpy(d, "{\"i\":}\n");
	feed(lines, &r);
	ok(r.ndocs == 100 && has(&r, "line 101"), "the 101st line is named after 100 good ones (%s)", r.err.msg);
	result_free(&r);
	free(lines);

	/* A NUL byte is an error, not a crash or a silent stop. */
	feed_pipe("{\"a\":1}\n{\"b\":\0}\n", 16, 4096, 0, &r);
	ok(r.ndocs == 1 && r.rc < 0, "a NUL byte inside a document is an error (%s)", r.err.msg);
	result_free(&r);

	/* An escaped NUL inside a string would cut every id the programs hand
	 * on as a C string ("a\u0000b" read as "a"): the document is refused,
	 * keys included, and the error names the document's line. */
	const char *nuls[] = {
		"{\"ok\":1}\n{\"sandbox\":{\"tenant\":\"a\\u0000b\"}}\n",
		"{\"ok\":1}\n{\"sandbox\":{\"id\":\"sb-X\\u0000zz\"}}\n",
		"{\"ok\":1}\n{\"k\\u0000\":1}\n",
		"{\"ok\":1}\n{\"a\":[\"x\",\"\\u0000\"]}\n",
	};
	for (size_t i = 0; i < SBX_ARRAY_LEN(nuls); i++) {
		feed(nuls[i], &r);
		ok(r.ndocs == 1 && r.rc < 0 && r.err.kind == SBX_INVALID_REQUEST && has(&r, "line 2") &&
		   has(&r, "NUL"), "an escaped NUL in a string or key is invalid_request (%zu: %s)", i, r.err.msg);
		result_free(&r);
	}

	/* Bytes that are not UTF-8 would be written back raw: refused, with
	 * the line.  Overlong forms and encoded surrogates too, which json-c's
	 * own check lets through. */
	const char *bad8[] = {
		"{\"ok\":1}\n{\"a\":\"x\xffy\"}\n",           /* a stray byte */
		"{\"ok\":1}\n{\"a\":\"\xc0\xaf\"}\n",         /* overlong '/' */
		"{\"ok\":1}\n{\"a\":\"\xed\xa0\x80\"}\n",     /* U+D800 encoded */
		"{\"ok\":1}\n{\"\xe9t\xe9\":1}\n",             /* Latin-1 key */
		"{\"ok\":1}\n{\"a\":\"\xf4\x90\x80\x80\"}\n", /* above U+10FFFF */
	};
	for (size_t i = 0; i < SBX_ARRAY_LEN(bad8); i++) {
		feed(bad8[i], &r);
		ok(r.ndocs == 1 && r.rc < 0 && r.err.kind == SBX_INVALID_REQUEST && has(&r, "line 2"),
		   "invalid UTF-8 is invalid_request naming the line (%zu: %s)", i, r.err.msg);
		result_free(&r);
	}
	feed("{\"a\":\"\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80\",\"b\":\"\\ud83d\\ude00\"}\n", &r);
	ok(r.ndocs == 1 && r.rc == 0, "valid UTF-8, raw and escaped, passes (%s)", r.err.msg);
	result_free(&r);

	/* RFC 8259 only: what json-c takes by default, and what its strict
	 * mode still takes (single-quoted keys, NaN, Infinity, "1.", "-01",
	 * raw control characters), is refused, naming the line and the byte
	 * offset of the first byte at fault (counted from the input's start). */
	const struct { const char *in; long off; } nonstd[] = {
		{"{\"ok\":1}\n{'a':1}\n", 10},          /* a single-quoted key */
		{"{\"ok\":1}\n{\"a\":'x'}\n", 14},      /* a single-quoted value */
		{"{\"ok\":1}\n{\"a\":1,}\n", 16},       /* a trailing comma */
		{"{\"ok\":1}\n{\"a\":[1,]}\n", 17},
		{"{\"ok\":1}\n{\"a\":NaN}\n", 14},
		{"{\"ok\":1}\n{\"a\":Infinity}\n", 14},
		{"{\"ok\":1}\n{\"a\":-Infinity}\n", 15},
		{"{\"ok\":1}\n{a:1}\n", 10},            /* a bare key */
		{"{\"ok\":1}\n{\"a\":1.}\n", 16},
		{"{\"ok\":1}\n{\"a\":-01}\n", 16},
		{"{\"ok\":1}\n{\"a\":01}\n", 15},
		{"{\"ok\":1}\n{\"a\":+1}\n", 14},
		{"{\"ok\":1}\n{\"a\":.5}\n", 14},
		{"{\"ok\":1}\n{\"a\":1e}\n", 16},
		{"{\"ok\":1}\n{\"a\":1e+}\n", 17},
		{"{\"ok\":1}\n{\"a\":\"x\ty\"}\n", 16},   /* a raw tab in a string */
		{"{\"ok\":1}\n{\"a\":\"x\001\"}\n", 16},
		{"{\"ok\":1}\n/*c*/{\"a\":1}\n", 9},  /* a comment */
		{"{\"ok\":1}\n{\"a\":1/*c*/}\n", 15},
		{"{\"ok\":1}\n{\"a\":True}\n", 14},
		{"{\"ok\":1}\n{\"a\":\"\\x41\"}\n", 16},
		{"{\"ok\":1}\n{\"a\":1\f}\n", 15},     /* not JSON whitespace */
	};
	for (size_t i = 0; i < SBX_ARRAY_LEN(nonstd); i++) {
		feed(nonstd[i].in, &r);
		char want[32];
		snprintf(want, sizeof(want), "(at offset %ld)", nonstd[i].off);
		ok(r.ndocs == 1 && r.rc < 0 && r.err.kind == SBX_INVALID_REQUEST && has(&r, "line 2: ") &&
		   has(&r, want), "non-standard JSON %zu is refused at line 2, %s (%s)", i, want, r.err.msg);
		result_free(&r);
		/* The same from memory (a request body): the offset in the body. */
		json_object *o = (json_object *)1;
		struct sbx_err e = {0};
		const char *body = nonstd[i].in + 9;
		snprintf(want, sizeof(want), "at offset %ld: ", nonstd[i].off - 9);
		int rc = sbx_json_parse_object(body, strlen(body), &o, &e);
		ok(rc < 0 && !o && e.kind == SBX_INVALID_REQUEST && strstr(e.msg, want),
		   "non-standard JSON %zu in memory is refused at %s (%s)", i, want, e.msg);
	}
	/* The checks hold across the reader's 64 KiB buffer: a UTF-8
	 * character and a number split by the boundary. */
	{
		char big[65536 + 64];
		size_t pre = 65536 - 5;   /* {"p":"xx…x"," up to here */
		const char *tail = "a\":\"\xc3\xa9\",\"n\":-1.5e3}\n";
		memcpy(big, "{\"p\":\"", 6);
		memset(big + 6, 'x', pre - 6 - 3);
		memcpy(big + pre - 3, "\",\"", 3);
		memcpy(big + pre, tail, strlen(tail));
		size_t len = pre + strlen(tail);
		/* The boundary at 65536 falls between \xc3 and \xa9. */
		feed_file(big, len, &r);
		ok(r.ndocs == 1 && r.rc == 0, "a character split by the buffer boundary passes (%s)",
		   r.err.msg);
		result_free(&r);
		big[pre + 5] = 'A';
		feed_file(big, len, &r);
		ok(r.ndocs == 0 && r.rc < 0 && has(&r, "(at offset 65536)") && has(&r, "UTF-8"),
		   "a broken character across the boundary is refused (%s)", r.err.msg);
		result_free(&r);
		memcpy(big + pre - 3, "\",\"a\":1.", 8);
		memcpy(big + pre + 5, "}\n", 2);
		feed_file(big, pre + 7, &r);
		ok(r.ndocs == 0 && r.rc < 0 && has(&r, "(at offset 65536)") && has(&r, "'.'"),
		   "a number cut at '.' across the boundary is refused (%s)", r.err.msg);
		result_free(&r);
	}
	/* Valid JSON passes in memory, whitespace around it allowed; what
	 * follows it, nothing at all, a non-object and bad text do not. */
	{
		const char *good = " \r\n{\"a\":[1,-0.5e-3,true,false,null,\"\\u00e9\\ud83d\\ude00\"]}\n ";
		json_object *o = NULL;
		struct sbx_err e = {0};
		ok(sbx_json_parse_object(good, strlen(good), &o, &e) == 0 && o,
		   "strict JSON in memory is read (%s)", e.msg);
		json_object_put(o);
		const struct { const char *in; size_t len; const char *want; } bad[] = {
			{"{\"a\":1} {}", 10, "at offset 8:"},
			{"", 0, "at offset 0:"},
			{"  ", 2, "at offset 2:"},
			{"[1]", 3, "a JSON object"},
			{"{\"a\":", 5, "truncated"},
			{"{\"a\":\"\xff\"}", 9, "at offset 6:"},
			{"{\"a\":\"\\u0000\"}", 14, "NUL"},
			{"{\"a\":1}\0", 8, "at offset 7:"},
		};
		for (size_t i = 0; i < SBX_ARRAY_LEN(bad); i++) {
			o = NULL;
			memset(&e, 0, sizeof(e));
			int rc = sbx_json_parse_object(bad[i].in, bad[i].len, &o, &e);
			ok(rc < 0 && !o && e.kind == SBX_INVALID_REQUEST && strstr(e.msg, bad[i].want),
			   "in memory, bad case %zu is refused with '%s' (%s)", i, bad[i].want, e.msg);
		}
	}
	/* Bytes as a value: text as it is, anything else base64 (RFC 4648's
	 * vectors), in one place for every program. */
	const char *vec[][2] = {{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
				{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
	for (size_t i = 0; i < SBX_ARRAY_LEN(vec); i++) {
		size_t n;
		char *b = sbx_base64(vec[i][0], strlen(vec[i][0]), &n);
		ok(!strcmp(b, vec[i][1]) && n == strlen(vec[i][1]), "base64 '%s' = '%s' (%s)",
		   vec[i][0], vec[i][1], b);
		free(b);
	}
	json_object *o = json_object_new_object();
	sbx_json_set_bytes(o, "text", "h\xc3\xa9", 3);
	sbx_json_set_bytes(o, "bin", "a\0\xff", 3);
	sbx_json_set_bytes(o, "bad", "\xc0\xaf", 2);
	ok(!strcmp(sbx_json_str(o, "text"), "h\xc3\xa9"), "UTF-8 bytes stay a string");
	ok(!sbx_json_str(o, "bin") && !strcmp(sbx_json_str(o, "bin_base64"), "YQD/"),
	   "bytes with a NUL go under <key>_base64");
	ok(!sbx_json_str(o, "bad") && !strcmp(sbx_json_str(o, "bad_base64"), "wK8="),
	   "an overlong UTF-8 form goes under <key>_base64");
	json_object_put(o);

	/* A reader gone: the quiet end every main tells by its reason. */
	signal(SIGPIPE, SIG_IGN);
	int gp[2];
	if (pipe(gp) == 0) {
		close(gp[0]);
		FILE *w = fdopen(gp[1], "w");
		struct sbx_err we = {0};
		o = json_object_new_object();
		ok(sbx_doc_write(w, o, &we) < 0 && we.reason == SBX_R_STDOUT_GONE &&
		   sbx_err_exit_status(&we) == SBX_EXIT_IOERR && !we.msg[0],
		   "a write to a closed pipe: stdout_gone, exit 74, no message");
		json_object_put(o);
		fclose(w);
	}
	free(big);
	free(buf);
	return tap_done();
}
