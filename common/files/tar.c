/* tar.c - our own tar reader, writer and confined extractor (see tar.h).
 *
 * Writer: POSIX ustar headers; a pax 'x' header goes first whenever a field
 * does not fit (path > ustar's name/prefix split, link target > 100 bytes,
 * size >= 8 GiB, ids > 07777777, mtime outside 0..8^11).  Data is padded to
 * 512 bytes lazily: the writer pads from its byte count before the next
 * header and at the end, so callers only stream e->size bytes.
 *
 * Reader: ustar, pax ('x' applied to the next entry, 'g' read and ignored),
 * GNU ('L'/'K' long names, base-256 numbers, "ustar  " magic) and v7
 * headers; every header's checksum is verified.  Reading works on pipes (no
 * seeking).  A short read inside a header or an entry's data is a
 * "truncated archive" error; end of input on a header boundary without the
 * two zero blocks is accepted as the end (as GNU tar and Go's archive/tar
 * do).
 *
 * Extraction: see tar.h.  Paths are resolved with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS) from the root fd; a parent path longer than one
 * syscall can take (PATH_MAX) is walked in pieces, each resolved inside the
 * directory reached so far, which is itself inside the root. */
#include "tar.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util.h"

#define BLK 512
#define PAX_MAX ((size_t)1 << 20)     /* a pax or GNU long-name record */
#define NAME_SHOW 200                  /* how much of a name errors show */

struct ustar {
	char name[100], mode[8], uid[8], gid[8], size[12], mtime[12], chksum[8];
	char typeflag, linkname[100], magic[6], version[2], uname[32], gname[32];
	char devmajor[8], devminor[8], prefix[155], pad[12];
};
_Static_assert(sizeof(struct ustar) == BLK, "ustar header is one block");

void sbx_tar_entry_clear(struct sbx_tar_entry *e)
{
	if (!e)
		return;
	free(e->name);
	free(e->link);
	memset(e, 0, sizeof(*e));
}

/* ---- writer ---------------------------------------------------------- */

void sbx_tar_writer_init(struct sbx_tar_writer *w, int fd)
{
	w->fd = fd;
	w->written = 0;
	w->data_end = 0;
}

/* Before a header or the end: the previous entry's data must be complete. */
static int data_complete(struct sbx_tar_writer *w, struct sbx_err *err)
{
	if (w->written < w->data_end)
		return sbx_fail(err, SBX_INTERNAL, "tar", "entry data short by %lld bytes",
				(long long)(w->data_end - w->written));
	return 0;
}

static int wr(struct sbx_tar_writer *w, const void *buf, size_t n, struct sbx_err *err)
{
	if (sbx_write_all(w->fd, buf, n) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "tar", "writing the archive");
	w->written += (int64_t)n;
	return 0;
}

int sbx_tar_write_pad(struct sbx_tar_writer *w, int64_t size, struct sbx_err *err)
{
	static const char zero[BLK];
	(void)size;     /* the byte count already says how much is missing */
	size_t pad = (size_t)((BLK - w->written % BLK) % BLK);
	return pad ? wr(w, zero, pad, err) : 0;
}

int sbx_tar_write_data(struct sbx_tar_writer *w, const void *buf, size_t n, struct sbx_err *err)
{
	if ((int64_t)n > w->data_end - w->written)
		return sbx_fail(err, SBX_INTERNAL, "tar", "more data than the entry's size");
	return wr(w, buf, n, err);
}

int sbx_tar_write_end(struct sbx_tar_writer *w, struct sbx_err *err)
{
	static const char zero[2 * BLK];
	if (data_complete(w, err) < 0 || sbx_tar_write_pad(w, 0, err) < 0)
		return -1;
	return wr(w, zero, sizeof(zero), err);
}

/* Octal into a field of `len` bytes (len-1 digits and a NUL); 0 if the
 * value does not fit (the caller has put it into a pax record). */
static int put_octal(char *field, size_t len, uint64_t v)
{
	uint64_t max = (len - 1) * 3 >= 64 ? UINT64_MAX : ((uint64_t)1 << ((len - 1) * 3)) - 1;
	if (v > max) {
		snprintf(field, len, "%0*o", (int)len - 1, 0);
		return 0;
	}
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "%0*llo", (int)len - 1, (unsigned long long)v);
	memcpy(field, tmp, len - 1);
	field[len - 1] = 0;
	return 1;
}

/* Append one pax record "LEN key=value\n" (LEN counts itself). */
static void pax_add(char **buf, size_t *len, const char *key, const char *val, size_t vlen)
{
	size_t body = 1 + strlen(key) + 1 + vlen + 1;     /* " key=value\n" */
	size_t n = body, digits;
	for (;;) {      /* the length includes its own digits */
		char d[24];
		digits = (size_t)snprintf(d, sizeof(d), "%zu", n);
		if (body + digits == n)
			break;
		n = body + digits;
	}
	*buf = sbx_xrealloc(*buf, *len + n + 1);
	int k = snprintf(*buf + *len, n + 1, "%zu %s=", n, key);
	memcpy(*buf + *len + k, val, vlen);
	(*buf)[*len + n - 1] = '\n';
	*len += n;
	(*buf)[*len] = 0;
}

static void finish_header(struct ustar *h)
{
	unsigned sum = 0;
	memcpy(h->magic, "ustar", 6);
	memcpy(h->version, "00", 2);
	memset(h->chksum, ' ', sizeof(h->chksum));
	for (size_t i = 0; i < BLK; i++)
		sum += ((unsigned char *)h)[i];
	snprintf(h->chksum, sizeof(h->chksum), "%06o", sum);
	h->chksum[7] = ' ';
}

/* Split `name` for ustar: name[100] alone, or prefix[155] "/" name[100]. */
static int split_name(const char *name, struct ustar *h)
{
	size_t n = strlen(name);
	if (n <= 100) {
		memcpy(h->name, name, n);
		return 1;
	}
	for (size_t i = n - 1; i > 0; i--) {
		if (name[i] != '/')
			continue;
		if (i <= 155 && n - i - 1 <= 100 && n - i - 1 > 0) {
			memcpy(h->prefix, name, i);
			memcpy(h->name, name + i + 1, n - i - 1);
			return 1;
		}
		if (i < n - 101)
			break;
	}
	return 0;
}

int sbx_tar_write_header(struct sbx_tar_writer *w, const struct sbx_tar_entry *e,
			 struct sbx_err *err)
{
	struct ustar h;
	char *pax = NULL;
	size_t plen = 0;
	int ret = -1;
	if (!e->name || !*e->name)
		return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "entry without a name");
	if (data_complete(w, err) < 0 || sbx_tar_write_pad(w, 0, err) < 0)
		return -1;

	memset(&h, 0, sizeof(h));
	SBX_AUTOFREE char *name = e->type == SBX_TAR_DIR && e->name[strlen(e->name) - 1] != '/'
				  ? sbx_xasprintf("%s/", e->name) : sbx_xstrdup(e->name);
	if (!split_name(name, &h)) {
		pax_add(&pax, &plen, "path", name, strlen(name));
		memcpy(h.name, name, 100);      /* a readable hint for pax-unaware tools */
	}
	const char *link = e->link ? e->link : "";
	if (e->type == SBX_TAR_SYMLINK || e->type == SBX_TAR_HARDLINK) {
		size_t ll = strlen(link);
		if (ll > 100)
			pax_add(&pax, &plen, "linkpath", link, ll);
		memcpy(h.linkname, link, ll > 100 ? 100 : ll);
	}
	char num[32];
	int64_t size = e->type == SBX_TAR_FILE ? e->size : 0;
	put_octal(h.mode, sizeof(h.mode), e->mode & 07777);
	if (!put_octal(h.uid, sizeof(h.uid), e->uid))
		pax_add(&pax, &plen, "uid", num, (size_t)snprintf(num, sizeof(num), "%u", e->uid));
	if (!put_octal(h.gid, sizeof(h.gid), e->gid))
		pax_add(&pax, &plen, "gid", num, (size_t)snprintf(num, sizeof(num), "%u", e->gid));
	if (size < 0 || !put_octal(h.size, sizeof(h.size), (uint64_t)size))
		pax_add(&pax, &plen, "size", num, (size_t)snprintf(num, sizeof(num), "%lld", (long long)size));
	if (e->mtime < 0 || !put_octal(h.mtime, sizeof(h.mtime), (uint64_t)e->mtime))
		pax_add(&pax, &plen, "mtime", num, (size_t)snprintf(num, sizeof(num), "%lld", (long long)e->mtime));
	switch (e->type) {
	case SBX_TAR_FILE: h.typeflag = '0'; break;
	case SBX_TAR_DIR: h.typeflag = '5'; break;
	case SBX_TAR_SYMLINK: h.typeflag = '2'; break;
	case SBX_TAR_HARDLINK: h.typeflag = '1'; break;
	case SBX_TAR_OTHER:
		if (e->typeflag != '3' && e->typeflag != '4' && e->typeflag != '6') {
			free(pax);
			return sbx_fail(err, SBX_UNSUPPORTED, "tar", "%.*s: cannot write entry type '%c'",
					NAME_SHOW, e->name, e->typeflag ? e->typeflag : '?');
		}
		h.typeflag = e->typeflag;
		put_octal(h.devmajor, sizeof(h.devmajor), e->devmajor);
		put_octal(h.devminor, sizeof(h.devminor), e->devminor);
		break;
	}
	if (size < 0) {
		free(pax);
		return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "%.*s: negative size", NAME_SHOW, e->name);
	}

	if (pax) {
		struct ustar x;
		memset(&x, 0, sizeof(x));
		const char *base = strrchr(name, '/');
		base = base && base[1] ? base + 1 : name;
		snprintf(x.name, sizeof(x.name), "PaxHeaders/%.80s", base);
		put_octal(x.mode, sizeof(x.mode), 0644);
		put_octal(x.uid, sizeof(x.uid), 0);
		put_octal(x.gid, sizeof(x.gid), 0);
		put_octal(x.size, sizeof(x.size), plen);
		put_octal(x.mtime, sizeof(x.mtime), e->mtime > 0 && e->mtime < 077777777777 ? (uint64_t)e->mtime : 0);
		x.typeflag = 'x';
		finish_header(&x);
		if (wr(w, &x, BLK, err) < 0 || wr(w, pax, plen, err) < 0 ||
		    sbx_tar_write_pad(w, 0, err) < 0)
			goto out;
	}
	finish_header(&h);
	ret = wr(w, &h, BLK, err);
	if (ret == 0)
		w->data_end = w->written + size;
out:
	free(pax);
	return ret;
}

/* ---- tree writer ----------------------------------------------------- */

struct linkseen { dev_t dev; ino_t ino; char *name; };
struct walk {
	struct sbx_tar_writer *w;
	struct linkseen *seen;
	size_t nseen, capseen;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Copy exactly `size` bytes of fd into the archive: a file that shrank
 * meanwhile is padded with zeros, one that grew is cut, so the archive
 * stays well-formed. */
static int copy_file(struct sbx_tar_writer *w, int fd, int64_t size, const char *name,
		     struct sbx_err *err)
{
	char buf[65536];
	int64_t left = size;
	while (left > 0) {
		size_t want = left < (int64_t)sizeof(buf) ? (size_t)left : sizeof(buf);
		ssize_t r = read(fd, buf, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "tar", "reading %.*s", NAME_SHOW, name);
		if (r == 0) {
			memset(buf, 0, want);
			r = (ssize_t)want;
		}
		if (wr(w, buf, (size_t)r, err) < 0)
			return -1;
		left -= r;
	}
	return 0;
}

static int walk_dir(struct walk *wk, int dirfd, const char *prefix, struct sbx_err *err);

static int walk_one(struct walk *wk, int dirfd, const char *base, const char *name,
		    struct sbx_err *err)
{
	struct stat st;
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;       /* vanished while we walked: not an error */
		return sbx_fail_errno(err, SBX_INTERNAL, "tar", "stat %.*s", NAME_SHOW, name);
	}
	struct sbx_tar_entry e = {.name = (char *)name, .mode = st.st_mode & 07777,
				  .uid = st.st_uid, .gid = st.st_gid, .mtime = st.st_mtim.tv_sec};
	if (S_ISREG(st.st_mode)) {
		if (st.st_nlink > 1) {
			for (size_t i = 0; i < wk->nseen; i++) {
				if (wk->seen[i].dev == st.st_dev && wk->seen[i].ino == st.st_ino) {
					e.type = SBX_TAR_HARDLINK;
					e.link = wk->seen[i].name;
					return sbx_tar_write_header(wk->w, &e, err);
				}
			}
		}
		SBX_AUTOCLOSE int fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0) {
			if (errno == ENOENT)
				return 0;
			return sbx_fail_errno(err, SBX_INTERNAL, "tar", "open %.*s", NAME_SHOW, name);
		}
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			return sbx_fail(err, SBX_INTERNAL, "tar", "%.*s changed type while archived",
					NAME_SHOW, name);
		e.type = SBX_TAR_FILE;
		e.size = st.st_size;
		e.mode = st.st_mode & 07777;
		if (sbx_tar_write_header(wk->w, &e, err) < 0 || copy_file(wk->w, fd, e.size, name, err) < 0)
			return -1;
		if (st.st_nlink > 1) {
			if (wk->nseen == wk->capseen) {
				wk->capseen = wk->capseen ? wk->capseen * 2 : 16;
				wk->seen = sbx_xrealloc(wk->seen, wk->capseen * sizeof(*wk->seen));
			}
			wk->seen[wk->nseen++] = (struct linkseen){st.st_dev, st.st_ino, sbx_xstrdup(name)};
		}
		return 0;
	}
	if (S_ISLNK(st.st_mode)) {
		size_t cap = (size_t)st.st_size + 2 > 256 ? (size_t)st.st_size + 2 : 256;
		SBX_AUTOFREE char *target = NULL;
		for (;;) {      /* the link may have grown since the stat */
			target = sbx_xrealloc(target, cap);
			ssize_t n = readlinkat(dirfd, base, target, cap);
			if (n < 0)
				return errno == ENOENT ? 0
				       : sbx_fail_errno(err, SBX_INTERNAL, "tar", "readlink %.*s", NAME_SHOW, name);
			if ((size_t)n < cap) {
				target[n] = 0;
				break;
			}
			cap *= 2;
		}
		e.type = SBX_TAR_SYMLINK;
		e.link = target;
		return sbx_tar_write_header(wk->w, &e, err);
	}
	if (S_ISDIR(st.st_mode)) {
		SBX_AUTOCLOSE int sub = openat(dirfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			return errno == ENOENT ? 0
			       : sbx_fail_errno(err, SBX_INTERNAL, "tar", "open %.*s", NAME_SHOW, name);
		e.type = SBX_TAR_DIR;
		if (sbx_tar_write_header(wk->w, &e, err) < 0)
			return -1;
		return walk_dir(wk, sub, name, err);
	}
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode)) {
		e.type = SBX_TAR_OTHER;
		e.typeflag = S_ISCHR(st.st_mode) ? '3' : S_ISBLK(st.st_mode) ? '4' : '6';
		e.devmajor = major(st.st_rdev);
		e.devminor = minor(st.st_rdev);
		return sbx_tar_write_header(wk->w, &e, err);
	}
	return 0;       /* sockets are not archived */
}

/* Entries of one directory in name order (archives are reproducible). */
static int walk_dir(struct walk *wk, int dirfd, const char *prefix, struct sbx_err *err)
{
	int dfd = dup(dirfd);
	if (dfd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "tar", "dup");
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return sbx_fail_errno(err, SBX_INTERNAL, "tar", "opendir %.*s", NAME_SHOW, *prefix ? prefix : ".");
	}
	rewinddir(d);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			names = sbx_xrealloc(names, cap * sizeof(*names));
		}
		names[n++] = sbx_xstrdup(de->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	int ret = 0;
	for (size_t i = 0; i < n; i++) {
		if (ret == 0) {
			SBX_AUTOFREE char *name = *prefix ? sbx_xasprintf("%s/%s", prefix, names[i])
							  : sbx_xstrdup(names[i]);
			ret = walk_one(wk, dirfd, names[i], name, err);
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

int sbx_tar_write_tree(struct sbx_tar_writer *w, int dirfd, const char *prefix,
		       struct sbx_err *err)
{
	struct walk wk = {.w = w};
	SBX_AUTOFREE char *pfx = sbx_xstrdup(prefix ? prefix : "");
	size_t n = strlen(pfx);
	while (n && pfx[n - 1] == '/')
		pfx[--n] = 0;
	int ret = 0;
	if (*pfx) {
		struct stat st;
		if (fstat(dirfd, &st) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "tar", "stat %.*s", NAME_SHOW, pfx);
		struct sbx_tar_entry e = {.name = pfx, .type = SBX_TAR_DIR, .mode = st.st_mode & 07777,
					  .uid = st.st_uid, .gid = st.st_gid, .mtime = st.st_mtim.tv_sec};
		ret = sbx_tar_write_header(w, &e, err);
	}
	if (ret == 0)
		ret = walk_dir(&wk, dirfd, pfx, err);
	for (size_t i = 0; i < wk.nseen; i++)
		free(wk.seen[i].name);
	free(wk.seen);
	return ret;
}

/* ---- reader ---------------------------------------------------------- */

void sbx_tar_reader_init(struct sbx_tar_reader *r, int fd)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
}

/* Read exactly n bytes; returns n, a smaller count at EOF, or -1. */
static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int skip(struct sbx_tar_reader *r, int64_t n, struct sbx_err *err)
{
	char buf[16384];
	while (n > 0) {
		size_t want = n < (int64_t)sizeof(buf) ? (size_t)n : sizeof(buf);
		ssize_t got = read_full(r->fd, buf, want);
		if (got < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "tar", "reading the archive");
		if ((size_t)got < want)
			return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "truncated archive (entry %lld)",
					r->entries);
		n -= got;
	}
	return 0;
}

/* A numeric field: octal (spaces/NULs around it) or GNU base-256. */
static int parse_num(const char *f, size_t len, int64_t *out)
{
	const unsigned char *u = (const unsigned char *)f;
	if (u[0] & 0x80) {
		if (u[0] == 0xff)
			return -1;      /* negative base-256: not for us */
		uint64_t v = u[0] & 0x7f;
		for (size_t i = 1; i < len; i++) {
			if (v >> 55)
				return -1;
			v = v << 8 | u[i];
		}
		if (v > INT64_MAX)
			return -1;
		*out = (int64_t)v;
		return 0;
	}
	size_t i = 0;
	uint64_t v = 0;
	while (i < len && (f[i] == ' ' || f[i] == 0))
		i++;
	if (i == len) {
		*out = 0;
		return 0;
	}
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -1;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != 0)
			return -1;
	*out = (int64_t)v;
	return 0;
}

static char *field_str(const char *f, size_t len)
{
	return strndup(f, len) ?: sbx_xstrdup("");
}

struct pending {
	char *path, *linkpath;
	int64_t size, uid, gid, mtime;
	int has_size, has_uid, has_gid, has_mtime;
};

static void pending_clear(struct pending *p)
{
	free(p->path);
	free(p->linkpath);
	memset(p, 0, sizeof(*p));
}

static int pax_number(const char *v, size_t len, int64_t *out)
{
	char buf[32];
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, v, len);
	buf[len] = 0;
	char *end;
	errno = 0;
	long long x = strtoll(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '.'))
		return -1;
	*out = x;
	return 0;
}

/* Parse pax records into p (global headers are parsed for validity only). */
static int parse_pax(const char *d, size_t n, struct pending *p, int global, long long entry,
		     struct sbx_err *err)
{
	size_t off = 0;
	while (off < n) {
		if (d[off] == 0)
			break;      /* NUL padding */
		size_t len = 0, i = off;
		while (i < n && d[i] >= '0' && d[i] <= '9' && len < PAX_MAX)
			len = len * 10 + (size_t)(d[i++] - '0');
		if (i == off || i >= n || d[i] != ' ' || len <= i - off || off + len > n ||
		    d[off + len - 1] != '\n')
			return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "entry %lld: malformed pax record", entry);
		const char *kv = d + i + 1, *end = d + off + len - 1;
		const char *eq = memchr(kv, '=', (size_t)(end - kv));
		if (!eq)
			return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "entry %lld: malformed pax record", entry);
		size_t kl = (size_t)(eq - kv), vl = (size_t)(end - eq - 1);
		const char *v = eq + 1;
		int bad = 0;
		if (global) {
			/* ignored */
		} else if (kl == 4 && !memcmp(kv, "path", 4)) {
			free(p->path);
			p->path = strndup(v, vl);
		} else if (kl == 8 && !memcmp(kv, "linkpath", 8)) {
			free(p->linkpath);
			p->linkpath = strndup(v, vl);
		} else if (kl == 4 && !memcmp(kv, "size", 4)) {
			bad = pax_number(v, vl, &p->size) < 0 || p->size < 0;
			p->has_size = 1;
		} else if (kl == 3 && !memcmp(kv, "uid", 3)) {
			bad = pax_number(v, vl, &p->uid) < 0 || p->uid < 0 || p->uid > UINT_MAX;
			p->has_uid = 1;
		} else if (kl == 3 && !memcmp(kv, "gid", 3)) {
			bad = pax_number(v, vl, &p->gid) < 0 || p->gid < 0 || p->gid > UINT_MAX;
			p->has_gid = 1;
		} else if (kl == 5 && !memcmp(kv, "mtime", 5)) {
			bad = pax_number(v, vl, &p->mtime) < 0;
			p->has_mtime = 1;
		}
		if (bad)
			return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "entry %lld: bad pax value for %.*s",
					entry, (int)kl, kv);
		off += len;
	}
	return 0;
}

/* Strip "./" prefixes and trailing "/"; "" becomes ".". */
static char *normalize_name(char *s)
{
	char *p = s;
	while (p[0] == '.' && p[1] == '/') {
		p += 2;
		while (*p == '/')
			p++;
	}
	if (p != s)
		memmove(s, p, strlen(p) + 1);
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = 0;
	if (!*s || !strcmp(s, "./")) {
		s = sbx_xrealloc(s, 2);
		strcpy(s, ".");
	}
	return s;
}

/* Read a record's data (pax or GNU long name) in full. */
static int read_record(struct sbx_tar_reader *r, int64_t size, char **out, struct sbx_err *err)
{
	if (size < 0 || (uint64_t)size > PAX_MAX)
		return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "entry %lld: extended header too large",
				r->entries);
	char *buf = sbx_xmalloc((size_t)size + 1);
	ssize_t got = read_full(r->fd, buf, (size_t)size);
	if (got != size) {
		free(buf);
		return got < 0 ? sbx_fail_errno(err, SBX_INTERNAL, "tar", "reading the archive")
			       : sbx_fail(err, SBX_INVALID_REQUEST, "tar", "truncated archive (entry %lld)",
					  r->entries);
	}
	buf[size] = 0;
	if (skip(r, (BLK - size % BLK) % BLK, err) < 0) {
		free(buf);
		return -1;
	}
	*out = buf;
	return 0;
}

/* The header's checksum (either signedness, as old tars computed it) and
 * its size field. */
static int header_check(const struct ustar *h, long long entry, int64_t *size,
			struct sbx_err *err)
{
	int64_t chk;
	unsigned sum = 0;
	int ssum = 0;
	for (size_t i = 0; i < BLK; i++) {
		unsigned char c = i >= 148 && i < 156 ? ' ' : ((const unsigned char *)h)[i];
		sum += c;
		ssum += i >= 148 && i < 156 ? ' ' : ((const signed char *)h)[i];
	}
	if (parse_num(h->chksum, sizeof(h->chksum), &chk) < 0 || (chk != sum && chk != ssum))
		return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "entry %lld: bad header checksum", entry);
	if (parse_num(h->size, sizeof(h->size), size) < 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "entry %lld: bad size field", entry);
	return 0;
}

/* The header budget (header_max): -1 (capacity) when `more` bytes of
 * headers would pass it. */
static int over_budget(const struct sbx_tar_reader *r, int64_t more, long long entry,
		       struct sbx_err *err)
{
	if (r->header_max <= 0 || r->header_bytes + more <= r->header_max)
		return 0;
	return sbx_fail(err, SBX_CAPACITY, "tar", "entry %lld: the archive's headers add up to more "
			"than the limit of %lld bytes", entry, (long long)r->header_max);
}

static int is_extended(char typeflag)
{
	return typeflag == 'x' || typeflag == 'g' || typeflag == 'L' || typeflag == 'K';
}

/* A pax header (x, g) or a GNU long name (L) or link (K): into *p, for the
 * entry that follows. */
static int read_extended(struct sbx_tar_reader *r, const struct ustar *h, int64_t size,
			 struct pending *p, long long entry, struct sbx_err *err)
{
	char *data = NULL;
	/* read_record refuses sizes outside 0..PAX_MAX */
	int64_t padded = size >= 0 && (uint64_t)size <= PAX_MAX ? size + (BLK - size % BLK) % BLK : 0;
	if (over_budget(r, padded, entry, err) < 0 || read_record(r, size, &data, err) < 0)
		return -1;
	r->header_bytes += padded;
	int rc = 0;
	if (h->typeflag == 'x' || h->typeflag == 'g') {
		rc = parse_pax(data, (size_t)size, p, h->typeflag == 'g', entry, err);
	} else if (h->typeflag == 'L') {
		free(p->path);
		p->path = sbx_xstrdup(data);   /* NUL-terminated name */
	} else {
		free(p->linkpath);
		p->linkpath = sbx_xstrdup(data);
	}
	free(data);
	return rc;
}

/* The entry's name, link target and type, from the pending extended
 * headers first, else from the header. */
static void entry_names(const struct ustar *h, struct pending *p, struct sbx_tar_entry *e)
{
	int ustar = !memcmp(h->magic, "ustar", 5);
	int gnu = !memcmp(h->magic, "ustar  ", 8);
	if (p->path) {
		e->name = p->path;
		p->path = NULL;
	} else if (ustar && !gnu && h->prefix[0]) {
		SBX_AUTOFREE char *pre = field_str(h->prefix, sizeof(h->prefix));
		SBX_AUTOFREE char *nm = field_str(h->name, sizeof(h->name));
		e->name = sbx_xasprintf("%s/%s", pre, nm);
	} else {
		e->name = field_str(h->name, sizeof(h->name));
	}
	if (p->linkpath) {
		e->link = p->linkpath;
		p->linkpath = NULL;
	} else {
		e->link = field_str(h->linkname, sizeof(h->linkname));
	}
	size_t nl = strlen(e->name);
	int slash = nl && e->name[nl - 1] == '/';
	e->typeflag = h->typeflag;
	switch (h->typeflag) {
	case '0': case 0: case '7':
		e->type = slash && h->typeflag == 0 ? SBX_TAR_DIR : SBX_TAR_FILE;
		break;
	case '1': e->type = SBX_TAR_HARDLINK; break;
	case '2': e->type = SBX_TAR_SYMLINK; break;
	case '5': e->type = SBX_TAR_DIR; break;
	default: e->type = SBX_TAR_OTHER; break;
	}
	e->name = normalize_name(e->name);
}

/* A numeric field as an unsigned int (uid, gid, device numbers). */
static int field_uint(const char *f, size_t n, unsigned *out)
{
	int64_t v;
	if (parse_num(f, n, &v) < 0 || v > UINT_MAX)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* Mode, owner, time, device numbers and the data size (*size: the header's
 * on entry, what follows in the archive on return).  -1 when a numeric
 * field is malformed. */
static int entry_fields(const struct ustar *h, const struct pending *p, struct sbx_tar_entry *e,
			int64_t *size)
{
	int64_t v;
	if (parse_num(h->mode, sizeof(h->mode), &v) < 0)
		return -1;
	e->mode = (unsigned)v & 07777;
	if (p->has_uid)
		e->uid = (unsigned)p->uid;
	else if (field_uint(h->uid, sizeof(h->uid), &e->uid) < 0)
		return -1;
	if (p->has_gid)
		e->gid = (unsigned)p->gid;
	else if (field_uint(h->gid, sizeof(h->gid), &e->gid) < 0)
		return -1;
	if (p->has_mtime)
		e->mtime = p->mtime;
	else if (parse_num(h->mtime, sizeof(h->mtime), &e->mtime) < 0)
		return -1;
	if (p->has_size)
		*size = p->size;
	if (!memcmp(h->magic, "ustar", 5) && (h->typeflag == '3' || h->typeflag == '4') &&
	    (field_uint(h->devmajor, sizeof(h->devmajor), &e->devmajor) < 0 ||
	     field_uint(h->devminor, sizeof(h->devminor), &e->devminor) < 0))
		return -1;
	/* Links, directories and devices carry no data blocks whatever
	 * their size field says (as Go's archive/tar reads them); a GNU
	 * dumpdir 'D' or a sparse file does, and is OTHER. */
	if (e->type == SBX_TAR_HARDLINK || e->type == SBX_TAR_SYMLINK || e->type == SBX_TAR_DIR ||
	    h->typeflag == '3' || h->typeflag == '4' || h->typeflag == '6')
		*size = 0;
	return 0;
}

/* The next header block: 1 read, 0 the archive ended (end of input on a
 * boundary, or a zero block), -1 with err. */
static int next_block(struct sbx_tar_reader *r, struct ustar *h, const struct pending *p,
		      long long entry, struct sbx_err *err)
{
	static const char zero[BLK];
	ssize_t got = read_full(r->fd, h, BLK);
	if (got < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "tar", "reading the archive");
	if (got == 0 && !p->path && !p->linkpath && !p->has_size)
		return 0;           /* end of input on a boundary: accepted */
	if (got < BLK)
		return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "truncated archive (entry %lld)", entry);
	if (memcmp(h, zero, BLK))
		return 1;
	if (p->path || p->linkpath)
		return sbx_fail(err, SBX_INVALID_REQUEST, "tar",
				"entry %lld: extended header without an entry", entry);
	return 0;
}

int sbx_tar_next(struct sbx_tar_reader *r, struct sbx_tar_entry *e, struct sbx_err *err)
{
	struct pending p = {0};
	memset(e, 0, sizeof(*e));
	if (r->done)
		return 0;
	if (skip(r, r->remaining + r->pad, err) < 0)
		return -1;
	r->remaining = r->pad = 0;
	for (;;) {
		struct ustar h;
		long long entry = r->entries + 1;
		int64_t size;
		int got = next_block(r, &h, &p, entry, err);
		if (got <= 0) {
			r->done = got == 0;
			pending_clear(&p);
			return got;
		}
		r->header_bytes += BLK;
		if (over_budget(r, 0, entry, err) < 0) {
			pending_clear(&p);
			return -1;
		}
		if (header_check(&h, entry, &size, err) < 0 ||
		    (is_extended(h.typeflag) && read_extended(r, &h, size, &p, entry, err) < 0)) {
			pending_clear(&p);
			return -1;
		}
		if (is_extended(h.typeflag))
			continue;
		entry_names(&h, &p, e);
		int bad = entry_fields(&h, &p, e, &size) < 0;
		pending_clear(&p);
		if (bad) {
			sbx_tar_entry_clear(e);
			return sbx_fail(err, SBX_INVALID_REQUEST, "tar",
					"entry %lld: malformed numeric field", entry);
		}
		e->size = size;
		r->remaining = size;
		r->pad = (BLK - size % BLK) % BLK;
		if (e->type != SBX_TAR_SYMLINK && e->type != SBX_TAR_HARDLINK) {
			free(e->link);
			e->link = NULL;
		}
		r->entries++;
		return 1;
	}
}

ssize_t sbx_tar_read_data(struct sbx_tar_reader *r, void *buf, size_t n, struct sbx_err *err)
{
	if (r->remaining <= 0 || n == 0)
		return 0;
	if ((int64_t)n > r->remaining)
		n = (size_t)r->remaining;
	for (;;) {
		ssize_t got = read(r->fd, buf, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "tar", "reading the archive");
		if (got == 0)
			return sbx_fail(err, SBX_INVALID_REQUEST, "tar", "truncated archive (entry %lld)",
					r->entries);
		r->remaining -= got;
		return got;
	}
}

/* ---- confined extraction --------------------------------------------- */

/* Without openat2 (kernels before 5.6, or valgrind, which does not know
 * the syscall): resolve `path` to a directory below `root` one component
 * at a time, never letting the kernel follow a symlink (O_NOFOLLOW); a
 * symlink's target is spliced into the rest of the path and resolved the
 * same way, absolute targets from `root`, ".." clamped at `root` (compared
 * by device and inode).  Same result as RESOLVE_IN_ROOT; the one weakness
 * is a directory moved out of the root while we stand in it, which the
 * kernel's implementation catches and this one does not. */
static int resolve_dir_fallback(int root, const char *path)
{
	struct stat rst, st;
	if (fstat(root, &rst) < 0)
		return -1;
	size_t cap = strlen(path) + 1;
	char *rest = sbx_xmalloc(cap);
	memcpy(rest, path, cap);
	int cur = fcntl(root, F_DUPFD_CLOEXEC, 3), links = 0, saved = 0;
	size_t off = 0;
	while (cur >= 0 && rest[off]) {
		size_t n = strcspn(rest + off, "/");
		char *comp = rest + off;
		size_t next = off + n + (rest[off + n] ? 1 : 0);
		if (n == 0 || (n == 1 && comp[0] == '.')) {
			off = next;
			continue;
		}
		char save = comp[n];
		comp[n] = 0;
		int fd;
		if (n == 2 && comp[0] == '.' && comp[1] == '.') {
			fd = fstat(cur, &st) == 0 && st.st_dev == rst.st_dev && st.st_ino == rst.st_ino
			     ? fcntl(cur, F_DUPFD_CLOEXEC, 3)
			     : openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		} else {
			fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		comp[n] = save;
		if (fd < 0 || fstat(fd, &st) < 0) {
			saved = errno;
			if (fd >= 0)
				close(fd);
			close(cur);
			cur = -1;
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t tl = ++links > 40 ? -1 : readlinkat(fd, "", target, sizeof(target) - 1);
			saved = links > 40 ? ELOOP : errno;
			close(fd);
			if (tl <= 0) {
				close(cur);
				cur = -1;
				if (tl == 0)
					saved = ENOENT;
				break;
			}
			target[tl] = 0;
			char *nrest = sbx_xasprintf("%s/%s", target, rest + next);
			free(rest);
			rest = nrest;
			off = 0;
			if (target[0] == '/') {
				close(cur);
				cur = fcntl(root, F_DUPFD_CLOEXEC, 3);
			}
			continue;
		}
		close(cur);
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			cur = -1;
			saved = ENOTDIR;
			break;
		}
		cur = fd;
		off = next;
	}
	free(rest);
	if (cur < 0 && saved)
		errno = saved;
	return cur;
}

/* Open the directory `path` (O_PATH) resolved as if `dirfd` were "/".
 * SBX_TAR_NO_OPENAT2=1 forces the fallback (the unit test runs the hostile
 * archives through both). */
static int openat2_in(int dirfd, const char *path, int flags)
{
	static int no_openat2;
	if (!no_openat2 && getenv("SBX_TAR_NO_OPENAT2"))
		return resolve_dir_fallback(dirfd, path);
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	while (!no_openat2) {
		long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || (errno != EAGAIN && errno != ENOSYS))
			return (int)fd;
		if (errno == ENOSYS)
			no_openat2 = 1;
	}
	return resolve_dir_fallback(dirfd, path);
}

/* Refuse absolute names and ".." components; "." / empty components are
 * dropped.  Returns the cleaned relative path (malloc'd) or NULL. */
static char *clean_path(const char *name)
{
	if (!name || !*name || name[0] == '/')
		return NULL;
	char *out = sbx_xmalloc(strlen(name) + 1), *o = out;
	for (const char *p = name; *p; ) {
		const char *s = strchr(p, '/');
		size_t n = s ? (size_t)(s - p) : strlen(p);
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			free(out);
			return NULL;
		}
		if (n && !(n == 1 && p[0] == '.')) {
			if (o != out)
				*o++ = '/';
			memcpy(o, p, n);
			o += n;
		}
		p += n + (s ? 1 : 0);
	}
	*o = 0;
	return out;
}

static enum sbx_kind kind_for_errno(int e)
{
	/* A path that does not resolve inside the root is the archive's fault. */
	return e == ELOOP || e == EXDEV || e == ENOENT || e == ENOTDIR || e == EEXIST ||
	       e == EISDIR || e == ENAMETOOLONG ? SBX_INVALID_REQUEST : SBX_INTERNAL;
}

/* Open (O_PATH) the directory at the first `n` bytes of `path`, resolved in
 * `anchor`; n == 0 is the anchor itself. */
static int open_prefix(int anchor, const char *path, size_t n)
{
	if (n == 0)
		return fcntl(anchor, F_DUPFD_CLOEXEC, 3);
	SBX_AUTOFREE char *pre = strndup(path, n);
	if (!pre) {
		errno = ENOMEM;
		return -1;
	}
	return openat2_in(anchor, pre, O_PATH | O_DIRECTORY);
}

/* The directory fd for component `comp` of `cur` (no symlink followed),
 * made (0755) first when missing and `create`; -1 with errno, and *link
 * set when the component is a symlink (the caller resolves it). */
static int step_dir(int cur, const char *comp, int create, int *link)
{
	struct stat st;
	*link = 0;
	int fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST)
			return -1;
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		return fd;
	int saved = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
	*link = S_ISLNK(st.st_mode);
	close(fd);
	errno = saved;
	return -1;
}

#define PIECE_MAX 2048

/* Open the directory `rel` (relative, clean) below rootfd, creating
 * missing components (0755) when `create`.  A path that exists and fits
 * one syscall is one openat2 (RESOLVE_IN_ROOT).  Otherwise the path is
 * walked one component at a time from the directory reached so far
 * (openat with O_NOFOLLOW, mkdirat when missing): each step costs the
 * same whatever the depth, so the walk is linear in the path's length.  A
 * symlink met on the way is resolved by openat2 from the anchor (the
 * root, or for paths longer than PIECE_MAX bytes the directory reached
 * at the start of the current piece of at most PIECE_MAX bytes), with
 * the path's text from the anchor to it: it is followed inside the root
 * (the anchor is inside it) and never outside, and the kernel's limit of
 * 40 links ends a chain of them. */
static int open_dir_in_root(int rootfd, const char *rel, int create, struct sbx_err *err,
			    const char *shown)
{
	size_t len = strlen(rel);
	int cur = -1;
	if (len <= PIECE_MAX) {
		cur = open_prefix(rootfd, rel, len);
		if (cur >= 0 || errno != ENOENT || !create)
			goto done;
	}
	cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	int anchor = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	const char *piece = rel, *p = rel;
	char comp[NAME_MAX + 1];
	while (cur >= 0 && anchor >= 0 && *p) {
		size_t n = strcspn(p, "/");
		if (n > NAME_MAX) {
			close(cur);
			cur = -1;
			errno = ENAMETOOLONG;
			break;
		}
		if ((size_t)(p + n - piece) > PIECE_MAX) {      /* a new piece from here */
			int a = fcntl(cur, F_DUPFD_CLOEXEC, 3);
			close(anchor);
			anchor = a;
			piece = p;
		}
		memcpy(comp, p, n);
		comp[n] = 0;
		int link;
		int next = step_dir(cur, comp, create, &link);
		if (next < 0 && link)
			next = open_prefix(anchor, piece, (size_t)(p + n - piece));
		int saved = errno;
		close(cur);
		cur = next;
		errno = saved;
		p += n;
		while (*p == '/')
			p++;
	}
	if (anchor >= 0) {
		int saved = errno;
		close(anchor);
		errno = saved;
	} else if (cur >= 0) {
		close(cur);
		cur = -1;
	}
done:
	if (cur < 0)
		return sbx_fail_errno(err, kind_for_errno(errno), "extract",
				      "%.*s: cannot open the parent directory inside the root",
				      NAME_SHOW, shown);
	return cur;
}

struct dirattr { char *path; unsigned mode, uid, gid; int chown; int64_t mtime; };

struct xctx {
	int rootfd;
	struct sbx_tar_extract_opts o;
	int64_t bytes;           /* regular file sizes so far (max_bytes) */
	int is_root;
	long long entry;
	struct dirattr *dirs;
	size_t ndirs, capdirs;
};

static int xfail(struct xctx *x, struct sbx_err *err, enum sbx_kind k, const char *name,
		 const char *what)
{
	return sbx_fail(err, k, "extract", "entry %lld (%.*s): %s", x->entry, NAME_SHOW, name, what);
}

static int xfail_errno(struct xctx *x, struct sbx_err *err, const char *name, const char *what)
{
	return sbx_fail_errno(err, kind_for_errno(errno),
			      "extract", "entry %lld (%.*s): %s", x->entry, NAME_SHOW, name, what);
}

/* Which owner an entry gets: -1 for "leave as created". */
static void owner_for(const struct xctx *x, const struct sbx_tar_entry *e, int *uid, int *gid)
{
	*uid = *gid = -1;
	if (x->o.force_uid > 0 || x->o.force_gid > 0) {
		*uid = x->o.force_uid;
		*gid = x->o.force_gid;
	} else if (x->o.keep_owner) {
		*uid = (int)e->uid;
		*gid = (int)e->gid;
	}
}

/* Remove whatever is at parent/base unless it is a directory (which we
 * keep when want_dir, and refuse to replace otherwise). */
static int clear_slot(int parent, const char *base, int want_dir)
{
	struct stat st;
	if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (S_ISDIR(st.st_mode)) {
		if (want_dir)
			return 1;
		errno = EISDIR;
		return -1;
	}
	return unlinkat(parent, base, 0);
}

static int pwrite_all(int fd, const char *p, size_t n, int64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

/* sbx_tar_read_data until `len` bytes or the entry's end. */
static ssize_t read_data_full(struct sbx_tar_reader *r, char *buf, size_t len, struct sbx_err *err)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = sbx_tar_read_data(r, buf + got, len - got, err);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int x_file(struct xctx *x, struct sbx_tar_reader *r, const struct sbx_tar_entry *e,
		  int parent, const char *base, struct sbx_err *err)
{
	if (clear_slot(parent, base, 0) < 0)
		return xfail_errno(x, err, e->name, "cannot replace the existing entry");
	SBX_AUTOCLOSE int fd = openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				      O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0)
		return xfail_errno(x, err, e->name, "create");
	static const char zeros[4096];
	char buf[65536];
	ssize_t n;
	int64_t off = 0;
	/* A full buffer at a time: a stream (an exec's output) hands data
	 * over in small pieces, and a zero block must be seen whole. */
	while ((n = read_data_full(r, buf, sizeof(buf), err)) > 0) {
		/* Whole zero blocks become holes. */
		for (ssize_t i = 0; i < n;) {
			size_t k = (size_t)(n - i) < sizeof(zeros) ? (size_t)(n - i) : sizeof(zeros);
			if (k == sizeof(zeros) && !memcmp(buf + i, zeros, k)) {
				off += (int64_t)k;
				i += (ssize_t)k;
				continue;
			}
			if (pwrite_all(fd, buf + i, k, off) < 0)
				return xfail_errno(x, err, e->name, "write");
			off += (int64_t)k;
			i += (ssize_t)k;
		}
	}
	if (n < 0)
		return -1;
	if (ftruncate(fd, off) < 0)
		return xfail_errno(x, err, e->name, "write");
	int uid, gid;
	owner_for(x, e, &uid, &gid);
	if ((uid >= 0 || gid >= 0) && fchown(fd, (uid_t)uid, (gid_t)gid) < 0)
		return xfail_errno(x, err, e->name, "chown");
	if (fchmod(fd, e->mode & 07777) < 0)
		return xfail_errno(x, err, e->name, "chmod");
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = e->mtime}};
	futimens(fd, ts);
	return 0;
}

static int x_dir(struct xctx *x, const struct sbx_tar_entry *e, const char *clean,
		 int parent, const char *base, struct sbx_err *err)
{
	int rc = clear_slot(parent, base, 1);
	if (rc < 0)
		return xfail_errno(x, err, e->name, "cannot replace the existing entry");
	if (rc == 0 && mkdirat(parent, base, 0700) < 0 && errno != EEXIST)
		return xfail_errno(x, err, e->name, "mkdir");
	if (x->ndirs == x->capdirs) {
		x->capdirs = x->capdirs ? x->capdirs * 2 : 32;
		x->dirs = sbx_xrealloc(x->dirs, x->capdirs * sizeof(*x->dirs));
	}
	int uid, gid;
	owner_for(x, e, &uid, &gid);
	x->dirs[x->ndirs++] = (struct dirattr){sbx_xstrdup(clean), e->mode & 07777,
					       (unsigned)uid, (unsigned)gid, uid >= 0 || gid >= 0, e->mtime};
	return 0;
}

static int x_symlink(struct xctx *x, const struct sbx_tar_entry *e, int parent, const char *base,
		     struct sbx_err *err)
{
	if (!e->link || !*e->link)
		return xfail(x, err, SBX_INVALID_REQUEST, e->name, "symlink without a target");
	if (clear_slot(parent, base, 0) < 0)
		return xfail_errno(x, err, e->name, "cannot replace the existing entry");
	/* The target is only text: any later resolution through it is done
	 * with RESOLVE_IN_ROOT, so an absolute or ".." target stays inside. */
	if (symlinkat(e->link, parent, base) < 0)
		return xfail_errno(x, err, e->name, "symlink");
	int uid, gid;
	owner_for(x, e, &uid, &gid);
	if ((uid >= 0 || gid >= 0) && fchownat(parent, base, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) < 0)
		return xfail_errno(x, err, e->name, "chown");
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = e->mtime}};
	utimensat(parent, base, ts, AT_SYMLINK_NOFOLLOW);
	return 0;
}

static int x_hardlink(struct xctx *x, const struct sbx_tar_entry *e, int parent, const char *base,
		      struct sbx_err *err)
{
	SBX_AUTOFREE char *target = clean_path(e->link);
	if (!target || !*target)
		return xfail(x, err, SBX_INVALID_REQUEST, e->name,
			     "hardlink target is absolute, empty or contains \"..\"");
	/* Resolve the target inside the root; never follow its last component. */
	SBX_AUTOFREE char *tdir = sbx_xstrdup(target);
	char *sl = strrchr(tdir, '/');
	const char *tbase = sl ? sl + 1 : tdir;
	if (sl)
		*sl = 0;
	SBX_AUTOCLOSE int tp = open_dir_in_root(x->rootfd, sl ? tdir : "", 0, err, e->link);
	if (tp < 0) {
		sbx_err_prefix(err, "entry %lld (%.*s): hardlink target", x->entry, NAME_SHOW, e->name);
		return -1;
	}
	SBX_AUTOCLOSE int tfd = openat(tp, tbase, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (tfd < 0 || fstat(tfd, &st) < 0)
		return xfail_errno(x, err, e->name, "hardlink target not found inside the root");
	if (S_ISDIR(st.st_mode))
		return xfail(x, err, SBX_INVALID_REQUEST, e->name, "hardlink to a directory");
	if (clear_slot(parent, base, 0) < 0)
		return xfail_errno(x, err, e->name, "cannot replace the existing entry");
	if (linkat(tfd, "", parent, base, AT_EMPTY_PATH) == 0)
		return 0;
	/* Without CAP_DAC_READ_SEARCH, AT_EMPTY_PATH is refused: link through
	 * the fd's /proc entry, which names exactly the inode we resolved. */
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tfd);
	if (linkat(AT_FDCWD, proc, parent, base, AT_SYMLINK_FOLLOW) < 0)
		return xfail_errno(x, err, e->name, "link");
	return 0;
}

static int x_other(struct xctx *x, const struct sbx_tar_entry *e, int parent, const char *base,
		   struct sbx_err *err)
{
	mode_t type;
	switch (e->typeflag) {
	case '3': type = S_IFCHR; break;
	case '4': type = S_IFBLK; break;
	case '6': type = S_IFIFO; break;
	case 'V': return 0;     /* GNU volume label: nothing to create */
	default: {
		char what[64];
		snprintf(what, sizeof(what), "entry type '%c' is not supported",
			 e->typeflag >= 32 && e->typeflag < 127 ? e->typeflag : '?');
		return xfail(x, err, SBX_UNSUPPORTED, e->name, what);
	}
	}
	if (type != S_IFIFO) {
		int whiteout = type == S_IFCHR && e->devmajor == 0 && e->devminor == 0;
		if (!whiteout && x->o.drop_devices) {
			/* Left out, and the name stays empty: a later entry
			 * wins over an earlier one, as it would have. */
			if (clear_slot(parent, base, 0) < 0)
				return xfail_errno(x, err, e->name, "cannot replace the existing entry");
			return 0;
		}
		if (!whiteout && !x->o.allow_devices)
			return xfail(x, err, SBX_INVALID_REQUEST, e->name, "device node refused");
		if (!x->is_root)
			return xfail(x, err, SBX_INVALID_REQUEST, e->name, "device nodes need root");
	}
	if (clear_slot(parent, base, 0) < 0)
		return xfail_errno(x, err, e->name, "cannot replace the existing entry");
	if (mknodat(parent, base, type | (e->mode & 07777), makedev(e->devmajor, e->devminor)) < 0)
		return xfail_errno(x, err, e->name, "mknod");
	int uid, gid;
	owner_for(x, e, &uid, &gid);
	if ((uid >= 0 || gid >= 0) && fchownat(parent, base, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) < 0)
		return xfail_errno(x, err, e->name, "chown");
	return 0;
}

static int x_entry(struct xctx *x, struct sbx_tar_reader *r, const struct sbx_tar_entry *e,
		   struct sbx_err *err)
{
	if (e->name[0] == '/')
		return xfail(x, err, SBX_INVALID_REQUEST, e->name, "absolute name refused");
	SBX_AUTOFREE char *clean = clean_path(e->name);
	if (!clean)
		return xfail(x, err, SBX_INVALID_REQUEST, e->name, "\"..\" component refused");
	if (!*clean) {
		if (e->type == SBX_TAR_DIR)
			return 0;       /* "./": the root itself; its attributes are the caller's */
		return xfail(x, err, SBX_INVALID_REQUEST, e->name, "names the root directory");
	}
	char *sl = strrchr(clean, '/');
	const char *base = sl ? sl + 1 : clean;
	SBX_AUTOFREE char *dir = sl ? strndup(clean, (size_t)(sl - clean)) : sbx_xstrdup("");
	SBX_AUTOCLOSE int parent = open_dir_in_root(x->rootfd, dir, 1, err, e->name);
	if (parent < 0) {
		sbx_err_prefix(err, "entry %lld", x->entry);
		return -1;
	}
	switch (e->type) {
	case SBX_TAR_FILE: return x_file(x, r, e, parent, base, err);
	case SBX_TAR_DIR: return x_dir(x, e, clean, parent, base, err);
	case SBX_TAR_SYMLINK: return x_symlink(x, e, parent, base, err);
	case SBX_TAR_HARDLINK: return x_hardlink(x, e, parent, base, err);
	case SBX_TAR_OTHER: return x_other(x, e, parent, base, err);
	}
	return 0;
}

/* Directory attributes last, deepest first, re-resolved in the root and
 * never through a symlink at the last component. */
static int apply_dirs(struct xctx *x, struct sbx_err *err)
{
	int ret = 0;
	for (size_t i = x->ndirs; i-- > 0; ) {
		struct dirattr *d = &x->dirs[i];
		if (ret == 0) {
			char *sl = strrchr(d->path, '/');
			SBX_AUTOFREE char *pdir = sl ? strndup(d->path, (size_t)(sl - d->path)) : sbx_xstrdup("");
			SBX_AUTOCLOSE int parent = open_dir_in_root(x->rootfd, pdir, 0, err, d->path);
			SBX_AUTOCLOSE int fd = parent < 0 ? -1
				: openat(parent, sl ? sl + 1 : d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				ret = sbx_fail_errno(err, SBX_INTERNAL, "extract", "%.*s: reopen directory",
						     NAME_SHOW, d->path);
			} else {
				if (d->chown && fchown(fd, (uid_t)d->uid, (gid_t)d->gid) < 0)
					ret = sbx_fail_errno(err, SBX_INTERNAL, "extract", "%.*s: chown",
							     NAME_SHOW, d->path);
				if (ret == 0 && fchmod(fd, d->mode) < 0)
					ret = sbx_fail_errno(err, SBX_INTERNAL, "extract", "%.*s: chmod",
							     NAME_SHOW, d->path);
				struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = d->mtime}};
				futimens(fd, ts);
			}
		}
		free(d->path);
	}
	free(x->dirs);
	x->dirs = NULL;
	x->ndirs = x->capdirs = 0;
	return ret;
}

int sbx_tar_extract(int fd, int rootfd, const struct sbx_tar_extract_opts *o,
		    struct sbx_err *err)
{
	struct xctx x = {.rootfd = rootfd, .is_root = geteuid() == 0};
	if (o)
		x.o = *o;
	struct sbx_tar_reader r;
	sbx_tar_reader_init(&r, fd);
	r.header_max = x.o.max_bytes;
	int ret = 0;
	for (;;) {
		struct sbx_tar_entry e;
		int rc = sbx_tar_next(&r, &e, err);
		if (rc <= 0) {
			ret = rc;
			break;
		}
		x.entry = r.entries;
		if (e.type == SBX_TAR_FILE)   /* saturating: sizes are < 2^63 each */
			x.bytes = e.size > INT64_MAX - x.bytes ? INT64_MAX : x.bytes + e.size;
		if (x.o.max_bytes > 0 && (x.bytes > x.o.max_bytes - r.header_bytes))
			rc = sbx_fail(err, SBX_CAPACITY, "extract", "entry %lld (%.*s): the archive adds up to "
				      "more than the limit of %lld bytes (files and headers)", x.entry,
				      NAME_SHOW, e.name, (long long)x.o.max_bytes);
		else
			rc = x_entry(&x, &r, &e, err);
		sbx_tar_entry_clear(&e);
		if (rc < 0) {
			ret = -1;
			break;
		}
	}
	struct sbx_err derr = {0};
	int drc = apply_dirs(&x, &derr);
	if (ret == 0 && drc < 0) {
		*err = derr;
		ret = -1;
	}
	return ret;
}
