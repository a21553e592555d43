/* lcopy_diff (local-copy.h): the layer of what changed in an upper dir
 * since the state its lower layers stack up to.  A template, an upper dir
 * at "turn 1" and its first layer (a whole copy); then changes of every
 * kind (a file modified, one deleted, a directory removed and made again,
 * one renamed onto a removed name, a mode change, a template file deleted,
 * a deep change below unchanged directories) and the second layer: the
 * template merged with both layers equals the template merged with the
 * upper dir, entry for entry (type, mode, owner, link target, data).
 * Then the two-pass form a checkpoint uses (a live pre-pass, a second
 * diff over it, merged into it) gives the same tree.  Needs root
 * (trusted.* xattrs, whiteouts are char devices 0:0). */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "local-copy.h"
#include "util.h"
#include "tap.h"

static char T[64];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *P(const char *name)
{
	static char buf[8][512];
	static int k;
	char *b = buf[k++ % 8];
	snprintf(b, 512, "%s/%s", T, name);
	return b;
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* A point in time strictly between what came before and what follows,
 * whatever the granularity of inode times. */
static int64_t tick(void)
{
	usleep(60 * 1000);
	int64_t t = now_ns();
	usleep(60 * 1000);
	return t;
}

static void whiteout(const char *rel)
{
	if (mknod(P(rel), S_IFCHR | 0600, makedev(0, 0)) < 0)
		perror(rel);
}

/* The tree `layers` (space separated, bottom first) merged onto a copy
 * of the template, in `out`. */
static int stack(const char *out, const char *const *layers, size_t n)
{
	struct sbx_err err = {0};
	if (lcopy_tree(P("tpl"), P(out), 0, NULL, &err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (lcopy_tree(P(layers[i]), P(out), LCOPY_MERGE, NULL, &err) < 0) {
			printf("# merge %s: %s\n", layers[i], err.msg);
			return -1;
		}
	return 0;
}

/* Same entries, types, modes, owners, targets and data. */
static int same_tree(const char *a, const char *b)
{
	const char *fmt = "cd %s && find . -printf '%%P %%y %%m %%U %%G %%l\\n' | sort > %s.lst";
	if (sh(fmt, P(a), P(a)) || sh(fmt, P(b), P(b)))
		return 0;
	return sh("cmp -s %s.lst %s.lst", P(a), P(b)) == 0 &&
	       sh("diff -r --no-dereference %s %s >/dev/null", P(a), P(b)) == 0;
}

static int is_wh(const char *rel)
{
	struct stat s;
	return lstat(P(rel), &s) == 0 && S_ISCHR(s.st_mode) && s.st_rdev == makedev(0, 0);
}

static int opaque(const char *rel)
{
	char v[2];
	return lgetxattr(P(rel), "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y';
}

static int exists(const char *rel)
{
	struct stat s;
	return lstat(P(rel), &s) == 0;
}

static void turn1(void)
{
	sh("mkdir -p %s/tpl/etc %s/tpl/usr/lib %s/tpl/opt/pkg", T, T, T);
	sh("echo conf > %s/tpl/etc/conf; echo a > %s/tpl/usr/lib/a; echo b > %s/tpl/usr/lib/b;"
	   "echo x > %s/tpl/opt/pkg/x", T, T, T, T);
	sh("mkdir -p %s/up/workspace/keep/deep/er %s/up/workspace/tree/b %s/up/workspace/old"
	   " %s/up/workspace/tgt %s/up/workspace/perm %s/up/usr/lib", T, T, T, T, T, T);
	sh("cd %s/up/workspace && echo k > keep/k1 && echo d > keep/deep/er/f && echo m > mod &&"
	   " echo d > del && echo a > tree/a && echo c > tree/b/c && echo o > old/f &&"
	   " echo g > tgt/g && ln -s keep/k1 link && chown 1000:1000 mod", T);
	sh("echo a2 > %s/up/usr/lib/a", T);
	whiteout("up/usr/lib/b");
}

static void turn2(void)
{
	sh("cd %s/up/workspace && echo m2 >> mod && rm del && rm -rf tree && mkdir tree &&"
	   " echo z > tree/z && rm -rf tgt && mv old tgt && chmod 0750 perm &&"
	   " echo new > new && echo deeper > keep/deep/er/f2 && rm link && ln -s tgt/f link", T);
	sh("mkdir -p %s/up/opt/pkg", T);
	whiteout("up/opt/pkg/x");
	/* A directory the template holds too, removed and made again: the
	 * upper's new one is opaque, as overlayfs makes it. */
	sh("rm -rf %s/up/usr/lib && mkdir %s/up/usr/lib && echo c >%s/up/usr/lib/c", T, T, T);
	setxattr(P("up/usr/lib"), "trusted.overlay.opaque", "y", 1, 0);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root (whiteouts, trusted.* xattrs)\n");
		return 0;
	}
	snprintf(T, sizeof(T), "/tmp/sbx-test-diff.XXXXXX");
	if (!mkdtemp(T))
		return 1;
	struct sbx_err err = {0};
	turn1();
	int rc = lcopy_diff(P("up"), NULL, 0, P("L1"), 0, 0, NULL, &err);
	ok(rc == 0, "the first layer is a whole copy (%s)", err.msg);
	const char *s1[] = {"L1"};
	ok(stack("m1", s1, 1) == 0 && stack("e1", (const char *[]){"up"}, 1) == 0 &&
	   same_tree("m1", "e1"), "template + L1 = template + upper at turn 1");

	int64_t since = tick();
	turn2();
	const char *low2[] = {strdup(P("L1"))};
	struct lcopy_stats st = {0};
	rc = lcopy_diff(P("up"), low2, 1, P("L2"), since, 0, &st, &err);
	ok(rc == 0, "the second layer (%s)", err.msg);
	const char *s2[] = {"L1", "L2"};
	ok(stack("m2", s2, 2) == 0 && stack("e2", (const char *[]){"up"}, 1) == 0 &&
	   same_tree("m2", "e2"), "template + L1 + L2 = template + upper at turn 2");
	ok(is_wh("L2/workspace/del"), "a deleted file is a whiteout");
	ok(is_wh("L2/workspace/old"), "a name renamed away is a whiteout");
	ok(is_wh("L2/opt/pkg/x"), "a template file deleted: its whiteout is copied");
	ok(!opaque("L2/workspace/tree") && exists("L2/workspace/tree/z") &&
	   is_wh("L2/workspace/tree/a") && is_wh("L2/workspace/tree/b"),
	   "a directory removed and made again: whole, its old names whited out");
	ok(!opaque("L2/workspace/tgt") && exists("L2/workspace/tgt/f") && is_wh("L2/workspace/tgt/g"),
	   "a directory renamed onto a removed one: whole, the old names whited out");
	ok(!exists("L2/workspace/keep/k1") && !opaque("L2/workspace/keep") &&
	   exists("L2/workspace/keep/deep/er/f2") && !exists("L2/workspace/keep/deep/er/f"),
	   "unchanged entries are left out; a deep change brings plain parents");
	ok(!exists("L2/etc"), "unchanged directories are pruned");
	ok(opaque("L2/usr/lib") && exists("L2/usr/lib/c"),
	   "a template's directory made again: opaque, as the upper's");

	/* A since before everything (every directory then looks made again,
	 * as one made within the slop of the previous checkpoint does): the
	 * layer is still right, and a directory the upper merges with the
	 * template's is not made opaque. */
	const char *s2b[] = {"L1", "L2b"};
	rc = lcopy_diff(P("up"), low2, 1, P("L2b"), 0, 0, NULL, &err);
	ok(rc == 0 && stack("m2b", s2b, 2) == 0 && same_tree("m2b", "e2"),
	   "since 0: template + L1 + L2b = template + upper (%s)", err.msg);
	ok(!opaque("L2b/usr") && !opaque("L2b/workspace") && exists("L2b/workspace/keep/k1"),
	   "since 0: everything copied, no directory made opaque");
	ok(exists("L2/workspace/perm"), "a directory whose mode changed is there");
	is_int(st.files, 6, "the files copied are the changed ones (mod, new, f2, tree/z, tgt/f, c)");

	/* Nothing changed: an empty layer. */
	since = tick();
	const char *low3[] = {strdup(P("L2")), strdup(P("L1"))};
	rc = lcopy_diff(P("up"), low3, 2, P("L3"), since, 0, NULL, &err);
	ok(rc == 0 && sh("test -z \"$(ls -A %s)\"", P("L3")) == 0, "no change: an empty layer");

	/* The checkpoint's two passes: a live pre-pass over the lowers, then
	 * a diff over the pre-pass of what changed since it began, merged
	 * into it.  The result stacks as one layer. */
	since = tick();
	sh("cd %s/up/workspace && echo m3 >> mod && mkdir n3 && echo y > n3/y", T);
	int64_t t1 = tick();
	rc = lcopy_diff(P("up"), low3, 2, P("D1"), since, LCOPY_LIVE, NULL, &err);
	sh("cd %s/up/workspace && rm -rf n3 && echo m4 >> mod && rm keep/k1 && mkdir n3 &&"
	   " echo w > n3/w", T);
	const char *low4[] = {strdup(P("D1")), strdup(P("L2")), strdup(P("L1"))};
	rc |= lcopy_diff(P("up"), low4, 3, P("D2"), t1 - 50 * 1000000LL, 0, NULL, &err);
	rc |= lcopy_tree(P("D2"), P("D1"), LCOPY_MERGE | LCOPY_KEEP_WHITEOUTS, NULL, &err);
	ok(rc == 0, "pre-pass, second pass, merge (%s)", err.msg);
	const char *s4[] = {"L1", "L2", "D1"};
	ok(stack("m4", s4, 3) == 0 && stack("e4", (const char *[]){"up"}, 1) == 0 &&
	   same_tree("m4", "e4"), "template + L1 + L2 + merged pass = template + upper");
	ok(is_wh("D1/workspace/n3/y") && exists("D1/workspace/n3/w"),
	   "what the second pass saw replaced what the first copied");

	if (getenv("KEEP")) printf("# kept %s\n", T); else sh("rm -rf %s", T);
	for (size_t i = 0; i < 1; i++)
		free((char *)low2[i]);
	for (size_t i = 0; i < 2; i++)
		free((char *)low3[i]);
	for (size_t i = 0; i < 3; i++)
		free((char *)low4[i]);
	return tap_done();
}
