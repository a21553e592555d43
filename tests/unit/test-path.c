/* The one path rule (path.h): each odd spelling against what it means, the
 * refusals with their reason, and the file operations that apply it: a
 * recording backend shows that the backend gets the normal spelling only,
 * never a refused path, that tar_get's final "/." (contents) is kept, and
 * that a missing operation is unsupported. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"
#include "util.h"
#include "tap.h"

struct spelling { const char *in, *want; };

static const struct spelling normal[] = {
	{"/workspace/a", "/workspace/a"},
	{"/workspace/./a", "/workspace/a"},
	{"/workspace//a", "/workspace/a"},
	{"/workspace/a/", "/workspace/a"},
	{"/workspace/a//", "/workspace/a"},
	{"//workspace///a/././/", "/workspace/a"},
	{"/./workspace/.", "/workspace"},
	{"/", "/"},
	{"//", "/"},
	{"/.", "/"},
	{"/./", "/"},
	{"/workspace/a\nb", "/workspace/a\nb"},      /* a newline is a name byte */
	{"/workspace/\xc3\xbc \t x", "/workspace/\xc3\xbc \t x"},
	{"/workspace/...", "/workspace/..."},           /* not "..": a name */
	{"/workspace/..a", "/workspace/..a"},
	{"/workspace/a..", "/workspace/a.."},
	{"/workspace/.a", "/workspace/.a"},
};

struct refusal { const char *in, *why; };

static const struct refusal refused[] = {
	{"/workspace/../etc/passwd", "'..'"},
	{"/workspace/a/../b", "'..'"},
	{"/..", "'..'"},
	{"/workspace/..", "'..'"},
	{"/workspace/../", "'..'"},
	{"/workspace//..//a", "'..'"},
	{"a", "absolute"},
	{"./a", "absolute"},
	{"../a", "absolute"},
	{"", "absolute"},
	{"~/a", "absolute"},
};

static char *fill(size_t n, char c)
{
	char *s = sbx_xmalloc(n + 1);
	memset(s, c, n);
	s[0] = '/';
	s[n] = '\0';
	return s;
}

/* `s` on one line of TAP: newline and tab shown as \n and \t. */
static const char *shown(const char *s)
{
	static char buf[256];
	size_t o = 0;
	for (; *s && o + 3 < sizeof(buf); s++) {
		if (*s == '\n' || *s == '\t') {
			buf[o++] = '\\';
			buf[o++] = *s == '\n' ? 'n' : 't';
		} else {
			buf[o++] = *s;
		}
	}
	buf[o] = '\0';
	return buf;
}

static void spellings(void)
{
	for (size_t i = 0; i < SBX_ARRAY_LEN(normal); i++) {
		struct sbx_err err = {0};
		char *got = sbx_path_norm(normal[i].in, "t", &err);
		ok(got && !strcmp(got, normal[i].want), "'%s' is spelled as it should be",
		   shown(normal[i].in));
		free(got);
	}
	for (size_t i = 0; i < SBX_ARRAY_LEN(refused); i++) {
		struct sbx_err err = {0};
		char *got = sbx_path_norm(refused[i].in, "t", &err);
		ok(!got && err.kind == SBX_INVALID_REQUEST && strstr(err.msg, refused[i].why) &&
			   !strcmp(err.op, "t"),
		   "'%s' is refused (%s): %s", refused[i].in, refused[i].why, err.msg);
		free(got);
	}
	struct sbx_err err = {0};
	ok(!sbx_path_norm(NULL, "t", &err) && err.kind == SBX_INVALID_REQUEST, "NULL is refused");

	/* Length: PATH_MAX - 1 bytes as spelled is the most, whatever it
	 * normalises to; a component is at most NAME_MAX bytes. */
	SBX_AUTOFREE char *longest = fill(PATH_MAX - 1, '/');
	longest[PATH_MAX - 2] = 'a';
	SBX_AUTOFREE char *n1 = sbx_path_norm(longest, "t", &err);
	is_str(n1, "/a", "%d bytes of slashes and 'a' is '/a'", PATH_MAX - 1);
	SBX_AUTOFREE char *over = fill(PATH_MAX, '/');
	SBX_AUTOFREE char *n2 = sbx_path_norm(over, "t", &err);
	ok(!n2 && err.kind == SBX_INVALID_REQUEST && strstr(err.msg, "too long"),
	   "%d bytes is too long: %s", PATH_MAX, err.msg);
	SBX_AUTOFREE char *name = fill(NAME_MAX + 2, 'x');     /* "/" and 256 bytes */
	SBX_AUTOFREE char *n3 = sbx_path_norm(name, "t", &err);
	ok(!n3 && strstr(err.msg, "component longer"), "a %d-byte name is refused: %s",
	   NAME_MAX + 1, err.msg);
	name[NAME_MAX + 1] = '\0';
	SBX_AUTOFREE char *n4 = sbx_path_norm(name, "t", &err);
	ok(n4 && strlen(n4) == NAME_MAX + 1, "a %d-byte name is kept", NAME_MAX);
}

/* ---- a backend that records the paths it is given ---- */

static char seen[2][PATH_MAX];
static int calls;

static void record(const char *a, const char *b)
{
	calls++;
	snprintf(seen[0], sizeof(seen[0]), "%s", a);
	snprintf(seen[1], sizeof(seen[1]), "%s", b ? b : "");
}

static int rec_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err)
{
	(void)b, (void)sb, (void)data, (void)len, (void)mode, (void)as_root, (void)err;
	record(path, NULL);
	return 0;
}

static int rec_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int as_root,
		    struct sbx_dirent *out, struct sbx_err *err)
{
	(void)b, (void)sb, (void)as_root, (void)out, (void)err;
	record(path, NULL);
	return 0;
}

static int rec_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		    const char *to, int as_root, struct sbx_err *err)
{
	(void)b, (void)sb, (void)as_root, (void)err;
	record(from, to);
	return 0;
}

static int rec_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		       int as_root, struct sbx_err *err)
{
	(void)b, (void)sb, (void)fd, (void)as_root, (void)err;
	record(path, NULL);
	return 0;
}

static void wrappers(void)
{
	static const struct sbx_backend_ops ops = {
		.name = "rec", .file_write = rec_write, .file_stat = rec_stat,
		.file_move = rec_move, .tar_get = rec_tar_get,
	};
	struct sbx_backend b = {.ops = &ops};
	struct sbx_sandbox sb = {0};
	struct sbx_dirent d = {0};
	struct sbx_err err = {0};

	ok(sbx_file_write(&b, &sb, "/workspace/./a//", "x", 1, 0644, 0, &err) == 0 &&
		   !strcmp(seen[0], "/workspace/a"),
	   "file_write gets the normal spelling: %s", seen[0]);
	ok(sbx_file_stat(&b, &sb, "//workspace/a/", 0, &d, &err) == 0 &&
		   !strcmp(seen[0], "/workspace/a"),
	   "file_stat gets the normal spelling: %s", seen[0]);
	ok(sbx_file_move(&b, &sb, "/workspace/./a", "/workspace//b/", 0, &err) == 0 &&
		   !strcmp(seen[0], "/workspace/a") && !strcmp(seen[1], "/workspace/b"),
	   "file_move gets both paths normal: %s %s", seen[0], seen[1]);

	int before = calls;
	ok(sbx_file_write(&b, &sb, "/workspace/../etc/passwd", "x", 1, 0644, 1, &err) < 0 &&
		   err.kind == SBX_INVALID_REQUEST && !strcmp(err.op, "file_write"),
	   "'..' is refused before the backend: %s", err.msg);
	ok(sbx_file_stat(&b, &sb, "a", 0, &d, &err) < 0 && err.kind == SBX_INVALID_REQUEST,
	   "a relative path is refused before the backend");
	ok(sbx_file_move(&b, &sb, "/workspace/a", "/workspace/a/../../b", 0, &err) < 0,
	   "a move with '..' in its target is refused");
	is_int(calls, before, "no refused path reached the backend");

	ok(sbx_file_tar_get(&b, &sb, "/workspace//out/./", 1, 0, &err) == 0 &&
		   !strcmp(seen[0], "/workspace/out"),
	   "tar_get of a folder: %s", seen[0]);
	ok(sbx_file_tar_get(&b, &sb, "/workspace//out/.", 1, 0, &err) == 0 &&
		   !strcmp(seen[0], "/workspace/out/."),
	   "tar_get keeps the final '/.' (contents): %s", seen[0]);
	ok(sbx_file_tar_get(&b, &sb, "//.", 1, 0, &err) == 0 && !strcmp(seen[0], "/."),
	   "tar_get of the root's contents: %s", seen[0]);

	ok(sbx_file_mkdir(&b, &sb, "/workspace/d", 0755, 0, &err) < 0 &&
		   err.kind == SBX_UNSUPPORTED,
	   "a missing operation is unsupported: %s", err.msg);
	ok(sbx_file_mkdir(&b, &sb, "/workspace/../d", 0755, 0, &err) < 0 &&
		   err.kind == SBX_INVALID_REQUEST,
	   "the rule comes first, supported or not");
}

int main(void)
{
	spellings();
	wrappers();
	return tap_done();
}
