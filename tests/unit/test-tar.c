/* The tar reader, writer and confined extractor: round trips of an awkward
 * tree, interop both ways with GNU tar (ustar, pax, gnu formats), and
 * hostile archives that must be refused or stay inside the root while the
 * host is left untouched.  Runs as root or not (device and owner checks
 * adapt). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "tar.h"
#include "util.h"
#include "tap.h"

static char T[64];          /* scratch directory */
static int is_root;

static char *P(const char *fmt, const char *a)
{
	static char buf[8][1024];
	static int k;
	char *b = buf[k++ % 8];
	snprintf(b, 1024, fmt, a);
	return b;
}

static int sh(const char *cmd)
{
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void put(int dirfd, const char *name, const char *data, unsigned mode)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(name);
		abort();
	}
	sbx_write_all(fd, data, strlen(data));
	fchmod(fd, mode);
	close(fd);
}

static int open_dir(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* A long path made of `n` components of `len` chars, created below dirfd
 * with *at() calls (it is longer than PATH_MAX); returns the relative name
 * of the file at its end. */
static char *make_deep(int dirfd, int n, int len, const char *content)
{
	size_t cap = (size_t)n * (len + 1) + 16;
	char *name = sbx_xcalloc(1, cap);
	int cur = dup(dirfd);
	for (int i = 0; i < n; i++) {
		char comp[256];
		memset(comp, 'a' + i % 26, (size_t)len);
		comp[len] = 0;
		mkdirat(cur, comp, 0755);
		int next = openat(cur, comp, O_RDONLY | O_DIRECTORY);
		close(cur);
		cur = next;
		strcat(name, comp);
		strcat(name, "/");
	}
	put(cur, "deep-file", content, 0644);
	close(cur);
	strcat(name, "deep-file");
	return name;
}

/* The awkward tree. `full` adds what ustar cannot hold. */
static void make_tree(const char *dir, int full)
{
	mkdir(dir, 0755);
	int d = open_dir(dir);
	put(d, "plain.txt", "plain content\n", 0640);
	put(d, "with space.txt", "spaces", 0644);
	put(d, "new\nline", "newline in the name", 0600);
	put(d, "uni-\xc3\xa7-\xe6\x97\xa5\xe6\x9c\xac.txt", "unicode", 0644);
	put(d, "exec.sh", "#!/bin/sh\necho hi\n", 0755);
	put(d, "empty", "", 0444);
	mkdirat(d, "dir", 0750);
	put(d, "dir/inner", "inner", 0644);
	mkdirat(d, "emptydir", 0700);
	mkdirat(d, "ro", 0755);
	put(d, "ro/readonly-dir-child", "x", 0644);
	fchmodat(d, "ro", 0555, 0);
	symlinkat("plain.txt", d, "link");
	symlinkat("/etc/passwd", d, "abs-link");
	symlinkat("dir/../nowhere", d, "dangling");
	linkat(d, "plain.txt", d, "hard", 0);
	mkfifoat(d, "fifo", 0640);
	char big[70000];
	for (size_t i = 0; i < sizeof(big) - 1; i++)
		big[i] = (char)('A' + i % 23);
	big[sizeof(big) - 1] = 0;
	put(d, "big.bin", big, 0644);
	if (is_root)
		fchownat(d, "exec.sh", 1234, 5678, AT_SYMLINK_NOFOLLOW);
	if (full) {
		/* 200-char path: dir of 120 + file of 79. */
		char a[121], b[80];
		memset(a, 'p', 120); a[120] = 0;
		memset(b, 'q', 79); b[79] = 0;
		mkdirat(d, a, 0755);
		char n200[256];
		snprintf(n200, sizeof(n200), "%s/%s", a, b);
		put(d, n200, "two hundred", 0644);
		/* A 300-char symlink target. */
		char t300[301];
		memset(t300, 't', 300); t300[300] = 0;
		symlinkat(t300, d, "longtarget");
	}
	close(d);
}

/* Compare two trees (type, mode, size, content, link target, owner, file
 * mtimes, hardlink identity).  Returns the number of differences; names the
 * first few. */
static int cmp_tree(int a, int b, const char *path, int check_owner)
{
	int diffs = 0;
	int da = dup(a);
	DIR *dir = fdopendir(da);
	struct dirent *de;
	int nb = 0, na = 0;
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		na++;
		struct stat sa, sb;
		fstatat(a, de->d_name, &sa, AT_SYMLINK_NOFOLLOW);
		if (fstatat(b, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
			if (diffs++ < 3)
				printf("#   missing: %s/%.60s\n", path, de->d_name);
			continue;
		}
		int bad = (sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT) ||
			  (!S_ISLNK(sa.st_mode) && (sa.st_mode & 07777) != (sb.st_mode & 07777)) ||
			  (S_ISREG(sa.st_mode) && (sa.st_size != sb.st_size ||
						   sa.st_mtim.tv_sec != sb.st_mtim.tv_sec ||
						   sa.st_nlink != sb.st_nlink)) ||
			  (check_owner && (sa.st_uid != sb.st_uid || sa.st_gid != sb.st_gid));
		if (!bad && S_ISREG(sa.st_mode)) {
			int fa = openat(a, de->d_name, O_RDONLY), fb = openat(b, de->d_name, O_RDONLY);
			char *ca = NULL, *cb = NULL;
			size_t la = 0, lb = 0;
			struct sbx_err e;
			sbx_read_all_fd(fa, 1 << 24, &ca, &la, &e);
			sbx_read_all_fd(fb, 1 << 24, &cb, &lb, &e);
			bad = la != lb || memcmp(ca, cb, la) != 0;
			free(ca); free(cb);
			close(fa); close(fb);
		}
		if (!bad && S_ISLNK(sa.st_mode)) {
			char ta[4096] = "", tb[4096] = "";
			readlinkat(a, de->d_name, ta, sizeof(ta) - 1);
			readlinkat(b, de->d_name, tb, sizeof(tb) - 1);
			bad = strcmp(ta, tb) != 0;
		}
		if (bad) {
			if (diffs++ < 3)
				printf("#   differs: %s/%.60s (mode %o/%o size %lld/%lld)\n", path, de->d_name,
				       sa.st_mode, sb.st_mode, (long long)sa.st_size, (long long)sb.st_size);
			continue;
		}
		if (S_ISDIR(sa.st_mode)) {
			int sa_fd = openat(a, de->d_name, O_RDONLY | O_DIRECTORY);
			int sb_fd = openat(b, de->d_name, O_RDONLY | O_DIRECTORY);
			char sub[8192];
			snprintf(sub, sizeof(sub), "%s/%.60s", path, de->d_name);
			diffs += cmp_tree(sa_fd, sb_fd, sub, check_owner);
			close(sa_fd);
			close(sb_fd);
		}
	}
	closedir(dir);
	int db = dup(b);
	dir = fdopendir(db);
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			nb++;
	closedir(dir);
	if (na != nb) {
		if (diffs++ < 3)
			printf("#   %s: %d entries vs %d\n", path, na, nb);
	}
	return diffs;
}

static int tmpfile_fd(void)
{
	char t[] = "/tmp/sbx-tar-XXXXXX";
	int fd = mkstemp(t);
	unlink(t);
	return fd;
}

/* Archive `dir` with our writer into a new file; returns its fd at 0. */
static int our_archive(const char *dir, const char *prefix)
{
	struct sbx_err err = {0};
	int fd = tmpfile_fd();
	struct sbx_tar_writer w;
	sbx_tar_writer_init(&w, fd);
	int d = open_dir(dir);
	int rc = sbx_tar_write_tree(&w, d, prefix, &err);
	if (rc == 0)
		rc = sbx_tar_write_end(&w, &err);
	if (rc < 0)
		printf("# write_tree: %s\n", err.msg);
	close(d);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static int extract_file(int fd, const char *dir, const struct sbx_tar_extract_opts *o,
			struct sbx_err *err)
{
	mkdir(dir, 0755);
	int d = open_dir(dir);
	lseek(fd, 0, SEEK_SET);
	int rc = sbx_tar_extract(fd, d, o, err);
	close(d);
	return rc;
}

static int save_fd(int fd, const char *path)
{
	int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char buf[65536];
	ssize_t n;
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sbx_write_all(out, buf, (size_t)n);
	close(out);
	lseek(fd, 0, SEEK_SET);
	return 0;
}

static int same_dirs(const char *a, const char *b, int owner)
{
	int fa = open_dir(a), fb = open_dir(b);
	int d = fa >= 0 && fb >= 0 ? cmp_tree(fa, fb, ".", owner) : 99;
	close(fa);
	close(fb);
	return d == 0;
}

static void test_round_trip(void)
{
	struct sbx_err err = {0};
	char src[128], dst[128];
	snprintf(src, sizeof(src), "%s/src", T);
	snprintf(dst, sizeof(dst), "%s/dst", T);
	make_tree(src, 1);
	int sd = open_dir(src);
	char *deep = make_deep(sd, 25, 199, "five thousand");
	close(sd);
	ok(strlen(deep) > 5000, "the deep path is %zu chars", strlen(deep));

	int fd = our_archive(src, "");
	struct sbx_tar_extract_opts o = {.keep_owner = is_root};
	ok(extract_file(fd, dst, &o, &err) == 0, "round trip extracts (%s)", err.msg);
	ok(same_dirs(src, dst, is_root), "round trip: trees are identical (types, modes, content, "
	   "links, hardlinks%s)", is_root ? ", owners" : "");
	struct stat s1, s2;
	fstatat(open_dir(dst), "hard", &s1, 0);
	fstatat(open_dir(dst), "plain.txt", &s2, 0);
	ok(s1.st_ino == s2.st_ino, "hardlink is a hardlink after extraction");

	/* The listing: names as written, long ones via pax. */
	lseek(fd, 0, SEEK_SET);
	struct sbx_tar_reader r;
	sbx_tar_reader_init(&r, fd);
	struct sbx_tar_entry e;
	int found_deep = 0, found_nl = 0, found_long_link = 0, n = 0, rc;
	while ((rc = sbx_tar_next(&r, &e, &err)) == 1) {
		n++;
		found_deep |= !strcmp(e.name, deep) && e.type == SBX_TAR_FILE && e.size == 13;
		found_nl |= !strcmp(e.name, "new\nline");
		found_long_link |= !strcmp(e.name, "longtarget") && e.type == SBX_TAR_SYMLINK &&
				   strlen(e.link) == 300;
		sbx_tar_entry_clear(&e);
	}
	is_int(rc, 0, "listing ends cleanly");
	ok(r.done, "reader marks the end");
	ok(found_deep, "5000+-char name read back exactly");
	ok(found_nl, "a name with a newline read back exactly");
	ok(found_long_link, "300-char symlink target read back (pax linkpath)");
	close(fd);

	/* With a prefix. */
	fd = our_archive(src, "pfx/");
	sbx_tar_reader_init(&r, fd);
	int first_ok = sbx_tar_next(&r, &e, &err) == 1 && !strcmp(e.name, "pfx") && e.type == SBX_TAR_DIR;
	sbx_tar_entry_clear(&e);
	int all_pfx = 1;
	while (sbx_tar_next(&r, &e, &err) == 1) {
		all_pfx &= !strncmp(e.name, "pfx/", 4);
		sbx_tar_entry_clear(&e);
	}
	ok(first_ok && all_pfx, "prefix: a 'pfx' directory entry, then everything below pfx/");
	close(fd);
	free(deep);
}

static void test_round_trip_fallback(void)
{
	struct sbx_err err = {0};
	char src[128], dst[128];
	snprintf(src, sizeof(src), "%s/src", T);
	snprintf(dst, sizeof(dst), "%s/dst-fallback", T);
	int fd = our_archive(src, "");
	struct sbx_tar_extract_opts o = {.keep_owner = is_root};
	ok(extract_file(fd, dst, &o, &err) == 0, "fallback: round trip extracts (%s)", err.msg);
	ok(same_dirs(src, dst, is_root), "fallback: trees are identical");
	close(fd);
}

static void test_gnu_interop(void)
{
	struct sbx_err err = {0};
	char cmd[1024];
	char small[128], full[128];
	snprintf(small, sizeof(small), "%s/small", T);
	snprintf(full, sizeof(full), "%s/full", T);
	make_tree(small, 0);
	make_tree(full, 1);

	/* GNU tar -> ours, in each format. */
	const char *fmts[] = {"ustar", "pax", "gnu", "posix", "oldgnu"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(fmts); i++) {
		const char *tree = !strcmp(fmts[i], "ustar") ? small : full;
		snprintf(cmd, sizeof(cmd), "tar --format=%s -cf %s/g.tar -C %s . 2>/dev/null", fmts[i], T, tree);
		if (!ok(sh(cmd) == 0, "GNU tar --format=%s creates", fmts[i]))
			continue;
		char out[160];
		snprintf(out, sizeof(out), "%s/from-gnu-%s", T, fmts[i]);
		int fd = open(P("%s/g.tar", T), O_RDONLY);
		struct sbx_tar_extract_opts o = {.keep_owner = is_root};
		ok(extract_file(fd, out, &o, &err) == 0, "we extract GNU %s (%s)", fmts[i], err.msg);
		ok(same_dirs(tree, out, is_root), "GNU %s -> ours: identical tree", fmts[i]);
		close(fd);
	}

	/* Ours -> GNU tar. */
	const char *trees[] = {small, full};
	for (size_t i = 0; i < 2; i++) {
		int fd = our_archive(trees[i], "");
		char path[160], out[160];
		snprintf(path, sizeof(path), "%s/ours-%zu.tar", T, i);
		snprintf(out, sizeof(out), "%s/by-gnu-%zu", T, i);
		save_fd(fd, path);
		close(fd);
		mkdir(out, 0755);
		snprintf(cmd, sizeof(cmd), "tar -xf %s -C %s %s", path, out,
			 is_root ? "--same-owner --numeric-owner" : "");
		ok(sh(cmd) == 0, "GNU tar extracts our archive of the %s tree", i ? "full" : "small");
		ok(same_dirs(trees[i], out, is_root), "ours -> GNU tar: identical tree (%s)", i ? "full" : "small");
		snprintf(cmd, sizeof(cmd), "tar -tf %s >/dev/null 2>%s/warn && ! test -s %s/warn", path, T, T);
		ok(sh(cmd) == 0, "GNU tar lists our archive without a warning (%s)", i ? "full" : "small");
	}

	/* Big ids and an old mtime go through pax; GNU tar agrees. */
	int fd = tmpfile_fd();
	struct sbx_tar_writer w;
	sbx_tar_writer_init(&w, fd);
	struct sbx_tar_entry e = {.name = "ids", .type = SBX_TAR_FILE, .mode = 0644, .uid = 3000000,
				  .gid = 4000000, .size = 3, .mtime = -86400};
	ok(sbx_tar_write_header(&w, &e, &err) == 0 && sbx_tar_write_data(&w, "abc", 3, &err) == 0 &&
	   sbx_tar_write_end(&w, &err) == 0, "write an entry with big ids and a negative mtime");
	save_fd(fd, P("%s/ids.tar", T));
	snprintf(cmd, sizeof(cmd), "tar -tvf %s/ids.tar --numeric-owner | grep -q '3000000/4000000 *3 1969-12-31'", T);
	ok(sh(cmd) == 0, "GNU tar reads the pax uid/gid/mtime");
	struct sbx_tar_reader r;
	sbx_tar_reader_init(&r, fd);
	ok(sbx_tar_next(&r, &e, &err) == 1 && e.uid == 3000000 && e.gid == 4000000 && e.mtime == -86400,
	   "and so do we");
	char buf[8];
	ok(sbx_tar_read_data(&r, buf, sizeof(buf), &err) == 3 && !memcmp(buf, "abc", 3), "data read back");
	is_int(sbx_tar_read_data(&r, buf, sizeof(buf), &err), 0, "then 0 at the entry's end");
	sbx_tar_entry_clear(&e);
	close(fd);

	/* A GNU 'L' long name and absolute names (-P): read, then refused. */
	char lname[400];
	snprintf(lname, sizeof(lname), "%s/full", T);
	snprintf(cmd, sizeof(cmd), "tar --format=gnu -P -cf %s/abs.tar %s/full/pppppppppp* 2>/dev/null", T, T);
	sh(cmd);
	fd = open(P("%s/abs.tar", T), O_RDONLY);
	sbx_tar_reader_init(&r, fd);
	int saw_long = 0;
	while (sbx_tar_next(&r, &e, &err) == 1) {
		saw_long |= e.name[0] == '/' && strlen(e.name) > 200;
		sbx_tar_entry_clear(&e);
	}
	ok(saw_long, "a GNU 'L' long absolute name is read whole, leading '/' kept");
	struct sbx_tar_extract_opts o = {0};
	ok(extract_file(fd, P("%s/abs-out", T), &o, &err) < 0 && err.kind == SBX_INVALID_REQUEST &&
	   strstr(err.msg, "absolute"), "and extraction refuses it (%s)", err.msg);
	close(fd);
}

/* ---- hostile archives ------------------------------------------------ */

struct ent { const char *name; enum sbx_tar_type type; const char *data_or_link; char typeflag; };

static int build(const struct ent *es, size_t n)
{
	struct sbx_err err = {0};
	int fd = tmpfile_fd();
	struct sbx_tar_writer w;
	sbx_tar_writer_init(&w, fd);
	for (size_t i = 0; i < n; i++) {
		struct sbx_tar_entry e = {.name = (char *)es[i].name, .type = es[i].type, .mode = 0644,
					  .mtime = 1700000000, .typeflag = es[i].typeflag};
		if (es[i].type == SBX_TAR_FILE)
			e.size = (int64_t)strlen(es[i].data_or_link);
		else if (es[i].type == SBX_TAR_DIR)
			e.mode = 0755;
		else if (es[i].type == SBX_TAR_OTHER)
			e.devmajor = es[i].data_or_link ? 1 : 0, e.devminor = es[i].data_or_link ? 3 : 0;
		else
			e.link = (char *)es[i].data_or_link;
		if (sbx_tar_write_header(&w, &e, &err) < 0 ||
		    (e.size && sbx_tar_write_data(&w, es[i].data_or_link, (size_t)e.size, &err) < 0))
			printf("# build: %s\n", err.msg);
	}
	sbx_tar_write_end(&w, &err);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static char *slurp(const char *path)
{
	char *s = NULL;
	size_t n;
	struct sbx_err e;
	if (sbx_read_file(path, 1 << 20, &s, &n, &e) < 0)
		return sbx_xstrdup("(unreadable)");
	return s;
}

static void test_hostile(void)
{
	struct sbx_err err = {0};
	char host[128], hostfile[160], root[128], abs_evil[200];
	snprintf(host, sizeof(host), "%s/host", T);
	snprintf(hostfile, sizeof(hostfile), "%s/host/file", T);
	mkdir(host, 0755);
	put(AT_FDCWD, hostfile, "host original", 0644);
	SBX_AUTOFREE char *passwd_before = slurp("/etc/passwd");
	struct stat pw0;
	stat("/etc/passwd", &pw0);
	snprintf(abs_evil, sizeof(abs_evil), "%s/host/abs-evil", T);
	struct sbx_tar_extract_opts o = {0};
	int n = 0;

#define ROOT() (snprintf(root, sizeof(root), "%s/jail%d", T, ++n), root)
	/* 1. absolute name */
	{
		struct ent es[] = {{abs_evil, SBX_TAR_FILE, "x", 0}};
		int fd = build(es, 1);
		ok(extract_file(fd, ROOT(), &o, &err) < 0 && err.kind == SBX_INVALID_REQUEST &&
		   strstr(err.msg, "absolute") && strstr(err.msg, "abs-evil"),
		   "absolute name refused, naming the entry (%s)", err.msg);
		ok(!exists(abs_evil), "and nothing was written at the absolute path");
		close(fd);
	}
	/* 2-4. ".." in names, plain and via pax and hidden in the middle */
	const char *dots[] = {"../evil", "a/../../evil", "a/b/../../../evil", NULL};
	char longdots[400];
	snprintf(longdots, sizeof(longdots), "../%0300d/evil", 0);
	for (int i = 0; i < 4; i++) {
		const char *nm = dots[i] ? dots[i] : longdots;
		struct ent es[] = {{"ok-first", SBX_TAR_FILE, "fine", 0}, {nm, SBX_TAR_FILE, "x", 0}};
		int fd = build(es, 2);
		ok(extract_file(fd, ROOT(), &o, &err) < 0 && err.kind == SBX_INVALID_REQUEST &&
		   strstr(err.msg, "\"..\"") && strstr(err.msg, "entry 2"),
		   "'..' refused%s (%s)", dots[i] ? "" : " in a pax path", err.msg);
		ok(!exists(P("%s/evil", T)) && !exists(P("%s/../evil", T)), "and nothing escaped");
		close(fd);
	}
	/* 5. symlink to a host directory, then write through it */
	{
		struct ent es[] = {{"x", SBX_TAR_SYMLINK, host, 0}, {"x/pwned", SBX_TAR_FILE, "owned", 0}};
		int fd = build(es, 2);
		int rc = extract_file(fd, ROOT(), &o, &err);
		ok(!exists(P("%s/host/pwned", T)), "symlink-then-write: host directory untouched (rc %d)", rc);
		char inside[300];
		snprintf(inside, sizeof(inside), "%s%s/pwned", root, host);
		ok(rc < 0 ? err.kind == SBX_INVALID_REQUEST : exists(inside),
		   "refused, or contained inside the root (%s)", rc < 0 ? err.msg : "contained");
		close(fd);
	}
	/* 6. x -> /etc then x/passwd: fails (no etc in the root) ... */
	{
		struct ent es[] = {{"x", SBX_TAR_SYMLINK, "/etc", 0}, {"x/passwd", SBX_TAR_FILE, "root::0:0::/:/bin/sh\n", 0}};
		int fd = build(es, 2);
		ok(extract_file(fd, ROOT(), &o, &err) < 0 && err.kind == SBX_INVALID_REQUEST,
		   "x -> /etc, x/passwd with no /etc in the root: refused (%s)", err.msg);
		/* ... or lands in the root's own etc when it has one. */
		char etc[200];
		snprintf(etc, sizeof(etc), "%s/jail%d/etc", T, n + 1);
		ROOT();
		mkdir(root, 0755);
		mkdir(etc, 0755);
		ok(extract_file(fd, root, &o, &err) == 0, "x -> /etc, x/passwd with an /etc in the root: extracted");
		SBX_AUTOFREE char *in = slurp(P("%s/passwd", etc));
		is_str(in, "root::0:0::/:/bin/sh\n", "it landed in <root>/etc/passwd");
		SBX_AUTOFREE char *after = slurp("/etc/passwd");
		struct stat pw1;
		stat("/etc/passwd", &pw1);
		ok(!strcmp(after, passwd_before) && pw1.st_mtim.tv_sec == pw0.st_mtim.tv_sec &&
		   pw1.st_ino == pw0.st_ino, "the host's /etc/passwd is untouched");
		close(fd);
	}
	/* 7. relative escape through a symlink */
	{
		struct ent es[] = {{"up", SBX_TAR_SYMLINK, "../../../../../../..", 0},
				   {"up/tmp/rel-evil", SBX_TAR_FILE, "x", 0}};
		int fd = build(es, 2);
		int rc = extract_file(fd, ROOT(), &o, &err);
		ok(!exists("/tmp/rel-evil"), "symlink with ../.. target cannot reach the host's /tmp (rc %d)", rc);
		ok(rc < 0 || exists(P("%s/tmp/rel-evil", root)), "the write stayed inside the root");
		unlink("/tmp/rel-evil");
		close(fd);
	}
	/* 8. a symlink as the final component is replaced, not written through */
	{
		struct ent es[] = {{"z", SBX_TAR_SYMLINK, hostfile, 0}, {"z", SBX_TAR_FILE, "replaced", 0}};
		int fd = build(es, 2);
		ok(extract_file(fd, ROOT(), &o, &err) == 0, "symlink then a file of the same name: extracted");
		SBX_AUTOFREE char *h = slurp(hostfile);
		is_str(h, "host original", "the symlink's host target is untouched");
		struct stat st;
		ok(lstat(P("%s/z", root), &st) == 0 && S_ISREG(st.st_mode), "z is now a regular file");
		close(fd);
	}
	/* 9. hardlinks to host files */
	const char *hl[] = {"/etc/passwd", "../host/file", NULL};
	for (int i = 0; hl[i]; i++) {
		struct ent es[] = {{"h", SBX_TAR_HARDLINK, hl[i], 0}};
		int fd = build(es, 1);
		ok(extract_file(fd, ROOT(), &o, &err) < 0 && err.kind == SBX_INVALID_REQUEST,
		   "hardlink to %s refused (%s)", hl[i], err.msg);
		close(fd);
	}
	{
		struct ent es[] = {{"s", SBX_TAR_SYMLINK, host, 0}, {"h", SBX_TAR_HARDLINK, P("s/%s", "file"), 0}};
		int fd = build(es, 2);
		ok(extract_file(fd, ROOT(), &o, &err) < 0, "hardlink through a symlink to a host dir fails (%s)",
		   err.msg);
		struct stat st;
		stat(hostfile, &st);
		is_int(st.st_nlink, 1, "the host file gained no link");
		close(fd);
	}
	{
		struct ent es[] = {{"t", SBX_TAR_FILE, "target", 0}, {"d/h", SBX_TAR_HARDLINK, "./t", 0}};
		int fd = build(es, 2);
		ok(extract_file(fd, ROOT(), &o, &err) == 0, "hardlink inside the root works (%s)", err.msg);
		struct stat a, b;
		ok(stat(P("%s/t", root), &a) == 0 && stat(P("%s/d/h", root), &b) == 0 && a.st_ino == b.st_ino,
		   "and is a real hardlink");
		close(fd);
	}
	/* 10. device nodes */
	{
		struct ent es[] = {{"null", SBX_TAR_OTHER, "1:3", '3'}};
		int fd = build(es, 1);
		ok(extract_file(fd, ROOT(), &o, &err) < 0 && err.kind == SBX_INVALID_REQUEST &&
		   !exists(P("%s/null", root)), "a char device 1:3 is refused (%s)", err.msg);
		close(fd);
		struct ent wo[] = {{"gone", SBX_TAR_OTHER, NULL, '3'}};
		fd = build(wo, 1);
		int rc = extract_file(fd, ROOT(), &o, &err);
		struct stat st;
		if (is_root)
			ok(rc == 0 && lstat(P("%s/gone", root), &st) == 0 && S_ISCHR(st.st_mode) &&
			   st.st_rdev == makedev(0, 0), "an overlay whiteout (0:0) is created as root");
		else
			ok(rc < 0, "an overlay whiteout needs root");
		close(fd);
	}
	/* 11. a file entry over an existing directory, and hostile names */
	{
		struct ent es[] = {{"dd", SBX_TAR_DIR, NULL, 0}, {"dd/f", SBX_TAR_FILE, "x", 0},
				   {"dd", SBX_TAR_FILE, "over a dir", 0}};
		int fd = build(es, 3);
		ok(extract_file(fd, ROOT(), &o, &err) < 0 && exists(P("%s/dd/f", root)),
		   "a file over a non-empty directory is refused (%s)", err.msg);
		close(fd);
	}
	{
		struct ent es[] = {{".", SBX_TAR_FILE, "x", 0}};
		int fd = build(es, 1);
		ok(extract_file(fd, ROOT(), &o, &err) < 0 && err.kind == SBX_INVALID_REQUEST,
		   "a file named '.' is refused (%s)", err.msg);
		close(fd);
	}
	/* 12. forced owner */
	if (is_root) {
		struct ent es[] = {{"d2", SBX_TAR_DIR, NULL, 0}, {"d2/f", SBX_TAR_FILE, "x", 0},
				   {"d2/l", SBX_TAR_SYMLINK, "f", 0}};
		int fd = build(es, 3);
		struct sbx_tar_extract_opts fo = {.force_uid = 1000, .force_gid = 1001};
		ok(extract_file(fd, ROOT(), &fo, &err) == 0, "extract with a forced owner");
		struct stat a, b, c;
		lstat(P("%s/d2", root), &a);
		lstat(P("%s/d2/f", root), &b);
		lstat(P("%s/d2/l", root), &c);
		ok(a.st_uid == 1000 && a.st_gid == 1001 && b.st_uid == 1000 && b.st_gid == 1001 &&
		   c.st_uid == 1000 && c.st_gid == 1001, "dir, file and symlink get the forced owner");
		close(fd);
	}
#undef ROOT
}

static void test_writer_misuse(void)
{
	struct sbx_err err = {0};
	int fd = tmpfile_fd();
	struct sbx_tar_writer w;
	sbx_tar_writer_init(&w, fd);
	struct sbx_tar_entry e = {.name = "f", .type = SBX_TAR_FILE, .mode = 0644, .size = 5};
	ok(sbx_tar_write_header(&w, &e, &err) == 0, "writer: header for 5 bytes");
	ok(sbx_tar_write_data(&w, "123456", 6, &err) < 0, "writer: 6 bytes for a 5-byte entry refused");
	ok(sbx_tar_write_data(&w, "123", 3, &err) == 0, "writer: 3 bytes accepted");
	ok(sbx_tar_write_header(&w, &e, &err) < 0 && strstr(err.msg, "short by 2"),
	   "writer: next header before the data is complete refused (%s)", err.msg);
	ok(sbx_tar_write_end(&w, &err) < 0, "writer: end before the data is complete refused");
	ok(sbx_tar_write_data(&w, "45", 2, &err) == 0 && sbx_tar_write_end(&w, &err) == 0,
	   "writer: completing the data then ending works");
	is_int(w.written, 512 + 512 + 1024, "writer: header, one padded block, two zero blocks");
	close(fd);
}

static void test_truncated(void)
{
	struct sbx_err err = {0};
	char big[3000];
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	struct ent es[] = {{"a", SBX_TAR_FILE, "first", 0}, {"b", SBX_TAR_FILE, big, 0}};
	int fd = build(es, 2);
	struct stat st;
	fstat(fd, &st);
	/* Cut inside b's data, then inside b's header. */
	off_t cuts[] = {512 + 512 + 512 + 1000, 512 + 512 + 100};
	for (int i = 0; i < 2; i++) {
		int t = tmpfile_fd();
		char *buf = sbx_xmalloc((size_t)cuts[i]);
		pread(fd, buf, (size_t)cuts[i], 0);
		sbx_write_all(t, buf, (size_t)cuts[i]);
		free(buf);
		struct sbx_tar_extract_opts o = {0};
		char dir[128];
		snprintf(dir, sizeof(dir), "%s/trunc%d", T, i);
		ok(extract_file(t, dir, &o, &err) < 0 &&
		   err.kind == SBX_INVALID_REQUEST && strstr(err.msg, "truncated"),
		   "archive cut inside %s: clear error (%s)", i ? "a header" : "the data", err.msg);
		close(t);
	}
	/* A flipped byte in a header. */
	char b;
	pread(fd, &b, 1, 512 + 512 + 10);
	b ^= 1;
	pwrite(fd, &b, 1, 512 + 512 + 10);
	struct sbx_tar_reader r;
	struct sbx_tar_entry e;
	lseek(fd, 0, SEEK_SET);
	sbx_tar_reader_init(&r, fd);
	ok(sbx_tar_next(&r, &e, &err) == 1, "first entry still reads");
	sbx_tar_entry_clear(&e);
	ok(sbx_tar_next(&r, &e, &err) < 0 && strstr(err.msg, "checksum") && strstr(err.msg, "entry 2"),
	   "a corrupt header: checksum error naming the entry (%s)", err.msg);
	close(fd);
	/* Garbage. */
	int g = tmpfile_fd();
	char junk[1024];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 7 + 3);
	sbx_write_all(g, junk, sizeof(junk));
	lseek(g, 0, SEEK_SET);
	sbx_tar_reader_init(&r, g);
	ok(sbx_tar_next(&r, &e, &err) < 0 && err.kind == SBX_INVALID_REQUEST, "garbage is refused");
	close(g);
	/* Empty input is an empty archive. */
	int z = tmpfile_fd();
	sbx_tar_reader_init(&r, z);
	is_int(sbx_tar_next(&r, &e, &err), 0, "empty input: no entries");
	close(z);
}

/* ---- the budget: the archive as a whole ----------------------------- */

/* Directories below `path` (itself not counted), by find (which walks
 * any depth). */
static long count_dirs(const char *path)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "find %s -mindepth 1 -type d | wc -l", path);
	FILE *f = popen(cmd, "r");
	long n = -1;
	if (!f || fscanf(f, "%ld", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

/* One directory entry named a/a/.../a, `depth` components (a pax path). */
static int deep_dir_archive(int depth)
{
	struct sbx_err err = {0};
	char *name = sbx_xmalloc((size_t)depth * 2 + 1);
	for (int i = 0; i < depth; i++)
		memcpy(name + 2 * i, "a/", 2);
	name[depth * 2 - 1] = 0;
	int fd = tmpfile_fd();
	struct sbx_tar_writer w;
	sbx_tar_writer_init(&w, fd);
	struct sbx_tar_entry e = {.name = name, .type = SBX_TAR_DIR, .mode = 0755, .mtime = 1700000000};
	if (sbx_tar_write_header(&w, &e, &err) < 0 || sbx_tar_write_end(&w, &err) < 0)
		printf("# deep_dir_archive: %s\n", err.msg);
	free(name);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* CPU time of this process (user and system), for the log only. */
static int64_t cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

static int fresh_root(const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", T, name);
	mkdir(out, 0755);
	return open_dir(out);
}

static void test_budget(void)
{
	struct sbx_err err = {0};
	char root[128];
	const int depth = getenv("TAR_DEPTH") ? atoi(getenv("TAR_DEPTH")) : 5000;
	/* 10 KB of one name (the was 200 KB): a directory per 2 bytes,
	 * made for 1 KiB of budget before. */
	int a = deep_dir_archive(depth);
	int rfd = fresh_root("budget-deep", root, sizeof(root));
	struct sbx_tar_extract_opts o = {.force_uid = -1, .force_gid = -1, .max_bytes = 1024};
	int rc = sbx_tar_extract(a, rfd, &o, &err);
	ok(rc < 0 && err.kind == SBX_CAPACITY, "deep empty directories over --max 1024: capacity (%s)", err.msg);
	is_int(count_dirs(root), 0, "no directory made for an archive over the budget");
	close(rfd);
	close(a);
	/* Without a budget the same archive is made in full, one walk. */
	a = deep_dir_archive(depth);
	rfd = fresh_root("budget-deep-all", root, sizeof(root));
	o.max_bytes = 0;
	int64_t t0 = cpu_ms();
	rc = sbx_tar_extract(a, rfd, &o, &err);
	printf("# %d nested directories extracted in %lld ms of CPU\n", depth, (long long)(cpu_ms() - t0));
	ok(rc == 0, "%d nested directories without a budget (%s)", depth, rc ? err.msg : "ok");
	is_int(count_dirs(root), depth, "every one of them made");
	close(rfd);
	close(a);
	/* Entries count: four empty directories are 2 KiB of headers. */
	const struct ent dirs[] = {{"d1", SBX_TAR_DIR, NULL, 0}, {"d2", SBX_TAR_DIR, NULL, 0},
				   {"d3", SBX_TAR_DIR, NULL, 0}, {"d4", SBX_TAR_DIR, NULL, 0}};
	a = build(dirs, 4);
	rfd = fresh_root("budget-entries", root, sizeof(root));
	o.max_bytes = 1024;
	rc = sbx_tar_extract(a, rfd, &o, &err);
	ok(rc < 0 && err.kind == SBX_CAPACITY, "four empty directories over 1 KiB: capacity (%s)", err.msg);
	ok(count_dirs(root) <= 2, "at most the two that fit were made");
	close(rfd);
	close(a);
	/* A file and its header within the budget: fine. */
	const struct ent small[] = {{"f", SBX_TAR_FILE, "hello", 0}};
	a = build(small, 1);
	rfd = fresh_root("budget-small", root, sizeof(root));
	rc = sbx_tar_extract(a, rfd, &o, &err);
	ok(rc == 0, "a 5-byte file under 1 KiB of budget (%s)", rc ? err.msg : "ok");
	close(rfd);
	close(a);
	/* Extended headers alone are counted as they come: a chain of pax
	 * records never ends the budget's reach. */
	int g = tmpfile_fd();
	struct sbx_tar_writer w;
	sbx_tar_writer_init(&w, g);
	char longname[300];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	struct sbx_tar_entry e = {.name = longname, .type = SBX_TAR_FILE, .mode = 0644};
	for (int i = 0; i < 8; i++) {
		sbx_tar_write_header(&w, &e, &err);
	}
	sbx_tar_write_end(&w, &err);
	lseek(g, 0, SEEK_SET);
	struct sbx_tar_reader r;
	sbx_tar_reader_init(&r, g);
	r.header_max = 2048;
	struct sbx_tar_entry got;
	int n = 0;
	while ((rc = sbx_tar_next(&r, &got, &err)) == 1) {
		sbx_tar_entry_clear(&got);
		n++;
	}
	ok(rc < 0 && err.kind == SBX_CAPACITY && n < 8, "the reader's header budget stops a run of entries "
	   "after %d (%s)", n, err.msg);
	ok(r.header_bytes <= 2048, "no more headers read than the budget (%lld)", (long long)r.header_bytes);
	close(g);
}

int main(void)
{
	is_root = geteuid() == 0;
	snprintf(T, sizeof(T), "/tmp/sbx-tar-XXXXXX");
	if (!mkdtemp(T))
		return 99;
	umask(022);
	test_round_trip();
	test_gnu_interop();
	test_hostile();
	/* Again through the path walker used where openat2 is missing. */
	setenv("SBX_TAR_NO_OPENAT2", "1", 1);
	printf("# without openat2\n");
	test_round_trip_fallback();
	test_hostile();
	unsetenv("SBX_TAR_NO_OPENAT2");
	test_writer_misuse();
	test_truncated();
	test_budget();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx %s; rm -rf %s", T, T);
	sh(cmd);
	return tap_done();
}
