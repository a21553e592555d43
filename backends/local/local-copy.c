/* local-copy.c - copy or merge directory trees for local images (see
 * local-copy.h).
 *
 * Promises: everything an overlay layer can hold survives a copy (types,
 * modes incl. setuid, owners, nanosecond times, xattrs, whiteouts, hard
 * links inside the tree) except device nodes and sockets, which never
 * reach a layer (each becomes a whiteout, see walk_entry); file data is shared by reflink when the
 * filesystem supports it, so a copy on XFS/btrfs costs metadata only.  The
 * copier never follows a symlink in either tree and never descends into
 * another filesystem.  It works on paths (not fds) for simplicity; trees
 * deeper than PATH_MAX fail cleanly with ENAMETOOLONG. */
#include "local-copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util.h"

#define OVL_OPAQUE "trusted.overlay.opaque"
#define OVL_WHITEOUT "trusted.overlay.whiteout"

struct link_seen {
	ino_t ino;
	char *dst;               /* where its first copy went */
};

struct walk {
	unsigned flags;
	dev_t dev;               /* the source root's filesystem */
	int reflink;             /* 1 try FICLONE, 0 known not to work */
	struct lcopy_stats *st;
	struct link_seen *links; /* hard links seen in this walk (linear: they are rare) */
	size_t nlinks, caplinks;
	char *buf;               /* read/write fallback buffer */
	struct timespec since;   /* LCOPY_SYNC: entries whose ctime is older are unchanged */
};

/* LCOPY_LIVE: a name that vanished under a walk of a running sandbox is
 * skipped (the sync pass that follows settles it).  Other errors stand. */
static int vanished(const struct walk *w)
{
	return (w->flags & LCOPY_LIVE) && (errno == ENOENT || errno == ENOTDIR);
}

/* LCOPY_SYNC: did the inode change (data, metadata, xattrs, a rename)
 * at or after w->since? */
static int changed(const struct walk *w, const struct stat *s)
{
	if (!(w->flags & LCOPY_SYNC))
		return 1;
	return s->st_ctim.tv_sec > w->since.tv_sec ||
	       (s->st_ctim.tv_sec == w->since.tv_sec && s->st_ctim.tv_nsec >= w->since.tv_nsec);
}

/* Overlay bookkeeping xattrs that describe the *upper* filesystem they were
 * written on (file handles, uuids, link counts): meaningless, even
 * misleading, once the file lives in another layer. */
static int xattr_skip(const char *name, unsigned flags)
{
	static const char *const upper_only[] = {
		"trusted.overlay.origin", "trusted.overlay.impure", "trusted.overlay.nlink",
		"trusted.overlay.uuid", "trusted.overlay.upper",
	};
	if (!sbx_str_starts(name, "trusted.overlay."))
		return 0;
	/* A merge without a layer below turns markers into plain content. */
	if ((flags & LCOPY_MERGE) && !(flags & LCOPY_KEEP_WHITEOUTS))
		return 1;
	for (size_t i = 0; i < SBX_ARRAY_LEN(upper_only); i++)
		if (strcmp(name, upper_only[i]) == 0)
			return 1;
	return 0;
}

/* One side of an xattr copy: an open fd, or (fd < 0) a path (a symlink
 * there is not followed: its own xattrs are copied). */
struct xa_file {
	int fd;
	const char *path;
};

static ssize_t xa_list(const struct xa_file *f, char *buf, size_t size)
{
	return f->fd >= 0 ? flistxattr(f->fd, buf, size) : llistxattr(f->path, buf, size);
}

static ssize_t xa_get(const struct xa_file *f, const char *name, void *buf, size_t size)
{
	return f->fd >= 0 ? fgetxattr(f->fd, name, buf, size) : lgetxattr(f->path, name, buf, size);
}

static int xa_set(const struct xa_file *f, const char *name, const void *val, size_t size)
{
	return f->fd >= 0 ? fsetxattr(f->fd, name, val, size, 0)
			  : lsetxattr(f->path, name, val, size, 0);
}

/* Copy the xattrs of `in` onto `out`; `dst` names the destination in
 * messages (and the source too when `in` is an fd).  Names the destination
 * filesystem refuses (EOPNOTSUPP, e.g. trusted.* on a filesystem without
 * them) fail the copy: a silently dropped opaque marker would resurrect
 * deleted directories.  A source without xattr support has none. */
static int copy_xattrs(const struct xa_file *in, const struct xa_file *out, const char *dst,
		       unsigned flags, struct sbx_err *err)
{
	/* "listxattr /src" for a path, "listxattr for /dst" for an fd */
	const char *sfor = in->fd >= 0 ? "for " : "", *sname = in->fd >= 0 ? dst : in->path;
	char small[1024];
	ssize_t n = xa_list(in, small, sizeof(small));
	if (n < 0 && errno == ERANGE)
		n = xa_list(in, NULL, 0);
	if (n < 0)
		return errno == ENOTSUP ? 0 : sbx_fail_errno(err, SBX_INTERNAL, "copy", "listxattr %s%s",
							     sfor, sname);
	if (n == 0)
		return 0;
	SBX_AUTOFREE char *names = sbx_xmalloc((size_t)n + 1);
	n = xa_list(in, names, (size_t)n);
	if (n < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "listxattr %s%s", sfor, sname);
	size_t cap = 4096;
	SBX_AUTOFREE char *val = sbx_xmalloc(cap);
	for (char *name = names; name < names + n; name += strlen(name) + 1) {
		if (xattr_skip(name, flags))
			continue;
		ssize_t v;
		while ((v = xa_get(in, name, val, cap)) < 0 && errno == ERANGE) {
			cap *= 4;
			val = sbx_xrealloc(val, cap);
		}
		if (v < 0) {
			if (errno == ENODATA)
				continue;
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "getxattr %s%s %s", sfor, sname,
					      name);
		}
		if (xa_set(out, name, val, (size_t)v) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "setxattr %s %s", dst, name);
	}
	return 0;
}

/* Owner, mode (after chown: chown clears setuid), xattrs (after chown:
 * chown clears security.capability), times last. */
static int copy_meta(const char *src, const char *dst, const struct stat *s, unsigned flags,
		     struct sbx_err *err)
{
	if (lchown(dst, s->st_uid, s->st_gid) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "chown %s", dst);
	if (!S_ISLNK(s->st_mode) && chmod(dst, s->st_mode & 07777) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "chmod %s", dst);
	if (copy_xattrs(&(struct xa_file){-1, src}, &(struct xa_file){-1, dst}, dst, flags, err) < 0)
		return -1;
	struct timespec ts[2] = {s->st_atim, s->st_mtim};
	if (utimensat(AT_FDCWD, dst, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "utimes %s", dst);
	return 0;
}

/* File data: clone, else copy_file_range, else read/write. */
static int copy_data(struct walk *w, int in, int out, off_t size, const char *dst,
		     struct sbx_err *err)
{
	if (size == 0)
		return 0;
	if (w->reflink) {
		if (ioctl(out, FICLONE, in) == 0) {
			w->st->reflinked++;
			return 0;
		}
		if (errno != EOPNOTSUPP && errno != EXDEV && errno != EINVAL && errno != ENOTTY &&
		    errno != ENOSYS)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "clone %s", dst);
		w->reflink = 0;      /* this filesystem cannot: stop asking */
	}
	off_t done = 0;
	while (done < size) {
		ssize_t r = copy_file_range(in, NULL, out, NULL, (size_t)(size - done), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && done == 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
					   errno == EOPNOTSUPP))
			break;       /* fall back to read/write */
		if (r < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "copy_file_range %s", dst);
		if (r == 0)
			return 0;    /* the file shrank under us: keep what we have */
		done += r;
	}
	if (done >= size)
		return 0;
	if (!w->buf)
		w->buf = sbx_xmalloc(1 << 20);
	for (;;) {
		ssize_t r = read(in, w->buf, 1 << 20);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "read for %s", dst);
		if (r == 0)
			return 0;
		if (sbx_write_all(out, w->buf, (size_t)r) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "write %s", dst);
	}
}

static int copy_file(struct walk *w, const char *src, const char *dst, const struct stat *s,
		     struct sbx_err *err)
{
	if (s->st_nlink > 1) {
		for (size_t i = 0; i < w->nlinks; i++) {
			if (w->links[i].ino != s->st_ino)
				continue;
			if (link(w->links[i].dst, dst) == 0)
				return 0;
			break;       /* the first copy went away (merge): copy again */
		}
	}
	SBX_AUTOCLOSE int in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
	if (in < 0 && errno == EPERM)
		in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0 && vanished(w))
		return 0;
	if (in < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "open %s", src);
	SBX_AUTOCLOSE int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "create %s", dst);
	if (copy_data(w, in, out, s->st_size, dst, err) < 0)
		return -1;
	/* Metadata on the open fds (same order as copy_meta).  A file we
	 * created is ours already: skip the chown when that is the owner. */
	if ((s->st_uid != geteuid() || s->st_gid != getegid()) &&
	    fchown(out, s->st_uid, s->st_gid) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "chown %s", dst);
	if (fchmod(out, s->st_mode & 07777) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "chmod %s", dst);
	if (copy_xattrs(&(struct xa_file){in, NULL}, &(struct xa_file){out, NULL}, dst, w->flags,
			err) < 0)
		return -1;
	struct timespec ts[2] = {s->st_atim, s->st_mtim};
	if (futimens(out, ts) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "utimes %s", dst);
	w->st->files++;
	w->st->bytes += s->st_size;
	if (s->st_nlink > 1) {
		if (w->nlinks == w->caplinks) {
			w->caplinks = w->caplinks ? 2 * w->caplinks : 16;
			w->links = sbx_xrealloc(w->links, w->caplinks * sizeof(*w->links));
		}
		w->links[w->nlinks++] = (struct link_seen){s->st_ino, sbx_xstrdup(dst)};
	}
	return 0;
}

static int copy_other(const struct walk *w, const char *src, const char *dst,
		      const struct stat *s, struct sbx_err *err)
{
	if (S_ISLNK(s->st_mode)) {
		char target[PATH_MAX + 1];
		ssize_t n = readlink(src, target, sizeof(target) - 1);
		if (n < 0 && vanished(w))
			return 1;
		if (n < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "readlink %s", src);
		target[n] = '\0';
		if (symlink(target, dst) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "symlink %s", dst);
		return 0;
	}
	/* FIFOs and overlay whiteouts (char 0:0); walk_entry drops devices
	 * and sockets before they get here. */
	if (mknod(dst, (s->st_mode & S_IFMT) | 0600, s->st_rdev) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "mknod %s", dst);
	return 0;
}

static int is_whiteout(const char *path, const struct stat *s)
{
	if (S_ISCHR(s->st_mode) && s->st_rdev == makedev(0, 0))
		return 1;
	/* Newer overlay "xattr whiteouts": an empty file carrying the mark. */
	return S_ISREG(s->st_mode) && s->st_size == 0 &&
	       lgetxattr(path, OVL_WHITEOUT, NULL, 0) >= 0;
}

static int is_opaque(const char *path)
{
	char v[4];
	ssize_t n = lgetxattr(path, OVL_OPAQUE, v, sizeof(v));
	return n == 1 && v[0] == 'y';
}

static int walk_dir(struct walk *w, const char *src, const char *dst, int prune,
		    struct sbx_err *err);

/* LCOPY_DIRID: record which upper directory `dst` is a copy of. */
static int set_dirid(const char *dst, ino_t ino, struct sbx_err *err)
{
	char v[24];
	int n = snprintf(v, sizeof(v), "%llu", (unsigned long long)ino);
	if (lsetxattr(dst, LCOPY_DIRID_XATTR, v, (size_t)n, 0) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "setxattr %s %s", dst,
				      LCOPY_DIRID_XATTR);
	return 0;
}

/* One entry of a source directory.  In merge mode the destination entry
 * may exist already (from a lower layer) and is replaced unless both are
 * directories and the source is not opaque.  In sync mode it may exist
 * from the pre-copy: it is kept when the source did not change since
 * (a directory is walked all the same), replaced otherwise. */
static int walk_entry(struct walk *w, const char *src, const char *dst, struct sbx_err *err)
{
	struct stat s, d;
	if (lstat(src, &s) < 0)
		return vanished(w) ? 0 : sbx_fail_errno(err, SBX_INTERNAL, "copy", "stat %s", src);
	int merge = w->flags & LCOPY_MERGE, sync = w->flags & LCOPY_SYNC;
	int have = (merge || sync) && lstat(dst, &d) == 0;
	int fresh = changed(w, &s);
	if (sync && have && !fresh && (s.st_mode & S_IFMT) == (d.st_mode & S_IFMT)) {
		if (!S_ISDIR(s.st_mode))
			return 0;
		return s.st_dev == w->dev ? walk_dir(w, src, dst, 0, err) : 0;
	}

	if (merge && is_whiteout(src, &s)) {
		if (have && sbx_rm_rf(dst, err) < 0)
			return -1;
		if (!(w->flags & LCOPY_KEEP_WHITEOUTS))
			return 0;
		if (mknod(dst, S_IFCHR | 0600, makedev(0, 0)) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "mknod %s", dst);
		w->st->others++;
		return 0;
	}
	if (S_ISDIR(s.st_mode)) {
		if (have && (!S_ISDIR(d.st_mode) || (merge && is_opaque(src)))) {
			if (sbx_rm_rf(dst, err) < 0)
				return -1;
			have = 0;
		}
		if (!have && mkdir(dst, 0700) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "mkdir %s", dst);
		w->st->dirs++;
		/* Another filesystem mounted here: an empty directory stands in. */
		if (s.st_dev == w->dev && walk_dir(w, src, dst, sync && have, err) < 0)
			return -1;
		if (copy_meta(src, dst, &s, w->flags, err) < 0)
			return -1;
		return (w->flags & LCOPY_DIRID) ? set_dirid(dst, s.st_ino, err) : 0;
	}
	if (have && sbx_rm_rf(dst, err) < 0)
		return -1;
	if (S_ISREG(s.st_mode))
		return copy_file(w, src, dst, &s, err);     /* metadata included */
	/* A device node (other than a whiteout) or a socket never reaches a
	 * layer: it becomes a whiteout, so the name stays gone as it was in
	 * the source (a node that shadowed a lower file must not bring that
	 * file back).  Merged without a layer below, it is simply left out. */
	if (S_ISBLK(s.st_mode) || S_ISSOCK(s.st_mode) || (S_ISCHR(s.st_mode) && !is_whiteout(src, &s))) {
		w->st->dropped++;
		if (merge && !(w->flags & LCOPY_KEEP_WHITEOUTS))
			return 0;
		if (mknod(dst, S_IFCHR | 0600, makedev(0, 0)) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "copy", "mknod %s", dst);
		w->st->others++;
		return 0;
	}
	{
		int rc = copy_other(w, src, dst, &s, err);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
		w->st->others++;
	}
	return copy_meta(src, dst, &s, w->flags, err);
}

/* Sync mode, a directory that changed: remove what dst holds and src no
 * longer does. */
static int prune_dir(const char *src, const char *dst, struct sbx_err *err)
{
	DIR *d = opendir(dst);
	if (!d)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "opendir %s", dst);
	int rc = 0, sfd = open(src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct dirent *e;
	struct stat s;
	while (rc == 0 && sfd >= 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(sfd, e->d_name, &s, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
			continue;
		char p[PATH_MAX];
		if (snprintf(p, sizeof(p), "%s/%s", dst, e->d_name) < (int)sizeof(p))
			rc = sbx_rm_rf(p, err);
	}
	if (sfd < 0)
		rc = sbx_fail_errno(err, SBX_INTERNAL, "copy", "open %s", src);
	else
		close(sfd);
	closedir(d);
	return rc;
}

static int walk_dir(struct walk *w, const char *src, const char *dst, int prune,
		    struct sbx_err *err)
{
	if (prune && prune_dir(src, dst, err) < 0)
		return -1;
	DIR *d = opendir(src);
	if (!d && vanished(w))
		return 0;
	if (!d)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "opendir %s", src);
	size_t ls = strlen(src), ld = strlen(dst);
	int rc = 0;
	struct dirent *e;
	errno = 0;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t ln = strlen(e->d_name);
		if (ls + ln + 2 > PATH_MAX || ld + ln + 2 > PATH_MAX) {
			errno = ENAMETOOLONG;
			rc = sbx_fail_errno(err, SBX_INTERNAL, "copy", "%s/%s", src, e->d_name);
			break;
		}
		char s2[PATH_MAX], d2[PATH_MAX];
		snprintf(s2, sizeof(s2), "%s/%s", src, e->d_name);
		snprintf(d2, sizeof(d2), "%s/%s", dst, e->d_name);
		rc = walk_entry(w, s2, d2, err);
		errno = 0;
	}
	if (rc == 0 && errno)
		rc = sbx_fail_errno(err, SBX_INTERNAL, "copy", "readdir %s", src);
	closedir(d);
	return rc;
}

static int copy_root(const char *src, const char *dst, unsigned flags,
		     const struct timespec *since, struct lcopy_stats *st, struct sbx_err *err)
{
	struct lcopy_stats dummy = {0};
	struct stat s;
	if (lstat(src, &s) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "%s", src);
	if (!S_ISDIR(s.st_mode))
		return sbx_fail(err, SBX_INVALID_REQUEST, "copy", "%s is not a directory", src);
	struct walk w = {.flags = flags, .dev = s.st_dev, .reflink = 1, .st = st ? st : &dummy};
	if (since)
		w.since = *since;
	if (mkdir(dst, 0700) < 0 && !(errno == EEXIST && (flags & (LCOPY_MERGE | LCOPY_SYNC))))
		return sbx_fail_errno(err, SBX_INTERNAL, "copy", "mkdir %s", dst);
	int rc = walk_dir(&w, src, dst, (flags & LCOPY_SYNC) && changed(&w, &s), err);
	if (rc == 0)
		rc = copy_meta(src, dst, &s, flags, err);
	for (size_t i = 0; i < w.nlinks; i++)
		free(w.links[i].dst);
	free(w.links);
	free(w.buf);
	return rc;
}

int lcopy_tree(const char *src, const char *dst, unsigned flags, struct lcopy_stats *st,
	       struct sbx_err *err)
{
	return copy_root(src, dst, flags & ~LCOPY_SYNC, NULL, st, err);
}

int lcopy_sync(const char *src, const char *dst, const struct timespec *since,
	       struct lcopy_stats *st, struct sbx_err *err)
{
	return copy_root(src, dst, LCOPY_SYNC, since, st, err);
}

/* ---- the layer of a difference (lcopy_diff) ---- */

/* One directory of a diff walk: its path in the upper dir and in the new
 * layer, and the same directory in each lower layer that shows through
 * there (top first: the walk stops below an opaque one). */
struct dlevel {
	const char *src, *dst;
	const char **lows;
	size_t nlows;
	int all;                 /* not the lowers' directory: copy everything */
	int made;                /* dst exists */
	struct dlevel *up;
};

struct dwalk {
	struct walk w;           /* whole copies: LCOPY_DIRID (| LCOPY_LIVE) */
	int64_t since_ns;
};

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static int dchanged(const struct dwalk *d, const struct stat *s)
{
	return ts_ns(&s->st_ctim) >= d->since_ns;
}

/* The new layer's directories down to `l`, made on first need (their
 * metadata is applied once their walk is over: diff_subdir). */
static int dmake(struct dlevel *l, struct sbx_err *err)
{
	if (l->made)
		return 0;
	if (l->up && dmake(l->up, err) < 0)
		return -1;
	if (mkdir(l->dst, 0700) < 0 && errno != EEXIST)
		return sbx_fail_errno(err, SBX_INTERNAL, "diff", "mkdir %s", l->dst);
	l->made = 1;
	return 0;
}

static int dpath(char *out, const char *dir, const char *name, struct sbx_err *err)
{
	if (snprintf(out, PATH_MAX, "%s/%s", dir, name) < PATH_MAX)
		return 0;
	errno = ENAMETOOLONG;
	return sbx_fail_errno(err, SBX_INTERNAL, "diff", "%s/%s", dir, name);
}

/* The top-most lower entry `name` of `l`: 1 with *s and its layer, 0. */
static int dlookup(const struct dlevel *l, const char *name, struct stat *s, size_t *at)
{
	char p[PATH_MAX];
	for (size_t i = 0; i < l->nlows; i++) {
		if (snprintf(p, sizeof(p), "%s/%s", l->lows[i], name) >= (int)sizeof(p))
			continue;
		if (lstat(p, s) == 0) {
			*at = i;
			return 1;
		}
	}
	return 0;
}

/* Is the upper directory `src` (*s) the one whose copy is `low`?  Its
 * recorded inode must match, and it must not have been born after since
 * (an inode number reused by a new directory). */
static int same_dir(const struct dwalk *d, const char *src, const struct stat *s,
		    const char *low)
{
	char v[24];
	ssize_t n = lgetxattr(low, LCOPY_DIRID_XATTR, v, sizeof(v) - 1);
	if (n <= 0)
		return 0;
	v[n] = '\0';
	if (strtoull(v, NULL, 10) != (unsigned long long)s->st_ino)
		return 0;
	struct statx x;
	if (statx(AT_FDCWD, src, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &x) == 0 &&
	    (x.stx_mask & STATX_BTIME) &&
	    (int64_t)x.stx_btime.tv_sec * 1000000000LL + x.stx_btime.tv_nsec >= d->since_ns)
		return 0;
	return 1;
}

static int diff_dir(struct dwalk *d, struct dlevel *l, int check_gone, struct sbx_err *err);

/* The directory's own metadata on its copy, and its identity.  The copy
 * of the lowers' own directory is made plain (`merge`: not opaque, so
 * that it merges with the lowers' copies below, the first of which
 * carries the upper's opaque mark if it has one). */
static int diff_meta(const char *src, const char *dst, const struct stat *s, unsigned flags,
		     int merge, struct sbx_err *err)
{
	if (copy_meta(src, dst, s, flags, err) < 0)
		return -1;
	if (merge && lremovexattr(dst, OVL_OPAQUE) < 0 && errno != ENODATA)
		return sbx_fail_errno(err, SBX_INTERNAL, "diff", "removexattr %s", dst);
	return set_dirid(dst, s->st_ino, err);
}

/* A directory the lowers hold under the same name, walked over theirs.
 * The same directory (same_dir, !all): it appears in the layer only when
 * something below it or its metadata changed.  Another one (all: removed
 * and made again, renamed onto the name): everything in it is copied and
 * every name of the lowers' that it lacks is whited out, so that the
 * lowers' old content does not show through - an opaque mark would do
 * that too, but would also hide the template's directory of that name
 * (/usr) that the upper's own directory merges with. */
static int diff_subdir(struct dwalk *d, struct dlevel *l, const char *name, const char *sp,
		       const char *dp, const struct stat *s, size_t at, int all,
		       struct sbx_err *err)
{
	SBX_AUTOFREE const char **lows = sbx_xmalloc((l->nlows - at) * sizeof(char *));
	size_t n = 0;
	for (size_t i = at; i < l->nlows; i++) {
		char *p = sbx_xasprintf("%s/%s", l->lows[i], name);
		struct stat t;
		int absent = lstat(p, &t) < 0 && errno == ENOENT;
		if (absent || !S_ISDIR(t.st_mode)) {
			free(p);
			if (absent)
				continue;
			break;       /* a non-directory hides the layers below */
		}
		lows[n++] = p;
		if (is_opaque(p))
			break;
	}
	struct dlevel sub = {.src = sp, .dst = dp, .lows = lows, .nlows = n, .all = all, .up = l};
	int fresh = all || dchanged(d, s);
	int rc = diff_dir(d, &sub, fresh, err);
	if (rc == 0 && (sub.made || fresh))
		rc = dmake(&sub, err) < 0 ? -1 : diff_meta(sp, dp, s, d->w.flags, !all, err);
	for (size_t i = 0; i < n; i++)
		free((char *)lows[i]);
	return rc;
}

static int diff_entry(struct dwalk *d, struct dlevel *l, const char *name, struct sbx_err *err)
{
	char sp[PATH_MAX], dp[PATH_MAX], lp[PATH_MAX];
	struct stat s, ls;
	size_t at = 0;
	if (dpath(sp, l->src, name, err) < 0 || dpath(dp, l->dst, name, err) < 0)
		return -1;
	if (lstat(sp, &s) < 0)
		return vanished(&d->w) ? 0 : sbx_fail_errno(err, SBX_INTERNAL, "diff", "stat %s", sp);
	if (!S_ISDIR(s.st_mode)) {
		/* Unchanged since the lowers' state: they hold it as it is. */
		if (!l->all && !dchanged(d, &s) && l->nlows > 0)
			return 0;
		return dmake(l, err) < 0 ? -1 : walk_entry(&d->w, sp, dp, err);
	}
	int had = dlookup(l, name, &ls, &at);
	if (had && dpath(lp, l->lows[at], name, err) < 0)
		return -1;
	if (s.st_dev != d->w.dev && had)
		return 0;            /* a mount point: an empty directory stands in */
	if (had && S_ISDIR(ls.st_mode))
		return diff_subdir(d, l, name, sp, dp, &s, at,
				   l->all || !same_dir(d, sp, &s, lp), err);
	/* New here (or over a non-directory of the lowers', which hides
	 * what lies below it): whole. */
	return dmake(l, err) < 0 ? -1 : walk_entry(&d->w, sp, dp, err);
}

/* The names the lowers show in `l` that src no longer has: whiteouts. */
static int diff_gone(struct dwalk *d, struct dlevel *l, struct sbx_err *err)
{
	int rc = 0;
	for (size_t i = 0; i < l->nlows && rc == 0; i++) {
		DIR *dir = opendir(l->lows[i]);
		if (!dir)
			return sbx_fail_errno(err, SBX_INTERNAL, "diff", "opendir %s", l->lows[i]);
		struct dirent *e;
		while (rc == 0 && (e = readdir(dir))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			struct stat t;
			size_t at;
			struct dlevel above = *l;
			above.nlows = i;     /* a layer above holds it: judged there */
			if (dlookup(&above, e->d_name, &t, &at))
				continue;
			char sp[PATH_MAX], lp[PATH_MAX], dp[PATH_MAX];
			if (dpath(sp, l->src, e->d_name, err) < 0 ||
			    dpath(lp, l->lows[i], e->d_name, err) < 0 ||
			    dpath(dp, l->dst, e->d_name, err) < 0) {
				rc = -1;
				break;
			}
			if (lstat(lp, &t) < 0 || is_whiteout(lp, &t) || lstat(sp, &t) == 0)
				continue;
			if (dmake(l, err) < 0)
				rc = -1;
			else if (mknod(dp, S_IFCHR | 0600, makedev(0, 0)) < 0 && errno != EEXIST)
				rc = sbx_fail_errno(err, SBX_INTERNAL, "diff", "mknod %s", dp);
			else
				d->w.st->others++;
		}
		closedir(dir);
	}
	return rc;
}

static int diff_dir(struct dwalk *d, struct dlevel *l, int check_gone, struct sbx_err *err)
{
	DIR *dir = opendir(l->src);
	if (!dir && vanished(&d->w))
		return 0;
	if (!dir)
		return sbx_fail_errno(err, SBX_INTERNAL, "diff", "opendir %s", l->src);
	int rc = 0;
	struct dirent *e;
	errno = 0;
	while (rc == 0 && (e = readdir(dir))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			rc = diff_entry(d, l, e->d_name, err);
		errno = 0;
	}
	if (rc == 0 && errno)
		rc = sbx_fail_errno(err, SBX_INTERNAL, "diff", "readdir %s", l->src);
	closedir(dir);
	if (rc == 0 && check_gone)
		rc = diff_gone(d, l, err);
	return rc;
}

int lcopy_diff(const char *src, const char *const *lowers, size_t nlowers, const char *dst,
	       int64_t since_ns, unsigned flags, struct lcopy_stats *st, struct sbx_err *err)
{
	struct lcopy_stats dummy = {0};
	struct stat s;
	if (lstat(src, &s) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "diff", "%s", src);
	if (!S_ISDIR(s.st_mode))
		return sbx_fail(err, SBX_INVALID_REQUEST, "diff", "%s is not a directory", src);
	struct dwalk d = {
		.w = {.flags = LCOPY_DIRID | (flags & LCOPY_LIVE), .dev = s.st_dev, .reflink = 1,
		      .st = st ? st : &dummy},
		.since_ns = since_ns,
	};
	if (mkdir(dst, 0700) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "diff", "mkdir %s", dst);
	SBX_AUTOFREE const char **lows = sbx_xmalloc((nlowers + 1) * sizeof(char *));
	size_t n = 0;
	for (size_t i = 0; i < nlowers; i++) {
		lows[n++] = lowers[i];
		if (is_opaque(lowers[i]))
			break;
	}
	struct dlevel root = {.src = src, .dst = dst, .lows = lows, .nlows = n, .made = 1};
	int rc = diff_dir(&d, &root, n > 0 && dchanged(&d, &s), err);
	if (rc == 0)
		rc = diff_meta(src, dst, &s, d.w.flags, 1, err);
	for (size_t i = 0; i < d.w.nlinks; i++)
		free(d.w.links[i].dst);
	free(d.w.links);
	free(d.w.buf);
	return rc;
}

static int du_dir(const char *path, dev_t dev, int64_t *bytes, struct sbx_err *err)
{
	DIR *d = opendir(path);
	if (!d)
		return sbx_fail_errno(err, SBX_INTERNAL, "du", "opendir %s", path);
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat s;
		if (fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0)
			continue;    /* vanished: nothing to count */
		if (S_ISREG(s.st_mode)) {
			*bytes += s.st_size;
		} else if (S_ISDIR(s.st_mode) && s.st_dev == dev) {
			char p[PATH_MAX];
			if (snprintf(p, sizeof(p), "%s/%s", path, e->d_name) >= (int)sizeof(p))
				continue;
			rc = du_dir(p, dev, bytes, err);
		}
	}
	closedir(d);
	return rc;
}

int lcopy_du(const char *dir, int64_t *bytes, struct sbx_err *err)
{
	struct stat s;
	*bytes = 0;
	if (lstat(dir, &s) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "du", "%s", dir);
	return du_dir(dir, s.st_dev, bytes, err);
}
