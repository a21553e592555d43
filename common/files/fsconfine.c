/* fsconfine.c - file operations confined below a root directory fd; see
 * fsconfine.h for the promises.  The one rule this file keeps everywhere:
 * a path string is resolved once, by openat2(RESOLVE_IN_ROOT), into an fd;
 * after that only *at() calls on fds, never a second walk of a string, and
 * never a follow of the final component unless the operation is a read. */
#include "fsconfine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "path.h"
#include "util.h"

#define RESOLVE_CONFINED (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
#define FSC_MAX_DEPTH 512            /* recursion limit for rm -r and tar */

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif
#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif
#ifndef MQUEUE_MAGIC
#define MQUEUE_MAGIC 0x19800202
#endif
#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif

enum sbx_kind sbx_fsc_errno_kind(int e)
{
	switch (e) {
	case ENOENT: return SBX_NOT_FOUND;
	case EEXIST: case ENOTEMPTY: case EBUSY: case ETXTBSY: case EAGAIN:
		return SBX_CONFLICT;
	case ENOSPC: case EDQUOT: case EMFILE: case ENFILE: case ENOMEM:
		return SBX_CAPACITY;
	case EACCES: case EPERM: case EROFS: case ENOTDIR: case EISDIR: case ELOOP:
	case EXDEV: case EINVAL: case ENAMETOOLONG: case EMLINK: case EFBIG:
		return SBX_INVALID_REQUEST;
	default: return SBX_INTERNAL;
	}
}

/* Fail with the kind errno calls for: "PATH: strerror". */
static int fail_errno(struct sbx_err *err, const char *op, const char *path)
{
	return sbx_fail_errno(err, sbx_fsc_errno_kind(errno), op, "%s", path);
}

static int refuse(struct sbx_err *err, const char *op, const char *path, const char *why)
{
	return sbx_fail(err, SBX_INVALID_REQUEST, op, "%s: %s", path, why);
}

/* openat2, retried on EAGAIN (a rename raced with a ".." step: the kernel
 * refuses rather than risk an escape; trying again is safe). */
static int xopenat2(int dirfd, const char *path, int oflags, uint64_t resolve)
{
	struct open_how how = {.flags = (uint64_t)(oflags | O_CLOEXEC), .resolve = resolve};
	for (int i = 0; i < 32; i++) {
		long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			return (int)fd;
	}
	return -1;
}

/* Turn an O_PATH fd into a real open file description of the same inode
 * (through our own /proc/self/fd magic link, which re-resolves nothing: the
 * inode is pinned by the fd).  Used after fstat has proven the type, so
 * that a device node or FIFO is never opened for I/O.  Permission checks
 * apply to the caller's fsuid. */
static int reopen(int pathfd, int oflags)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pathfd);
	return open(p, oflags | O_CLOEXEC | O_NOCTTY);
}

static int chmod_fd(int pathfd, unsigned mode)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pathfd);
	return chmod(p, mode & 07777);
}

static int id_of(int fd, struct sbx_fsc_id *id)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -1;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return 0;
}

static int id_eq(const struct sbx_fsc_id *a, const struct sbx_fsc_id *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

int sbx_fsc_init(struct sbx_fsc *c, int rootfd, unsigned flags, struct sbx_err *err)
{
	memset(c, 0, sizeof(*c));
	c->rootfd = rootfd;
	c->flags = flags;
	if (id_of(rootfd, &c->root) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "files", "root directory");
	if (!(flags & SBX_FSC_DENY_SPECIAL))
		return 0;
	/* The sandbox's own /proc, /sys and /dev, looked up without following
	 * anything: if the sandbox replaced one by a symlink, the real thing
	 * is not there and the pseudo-filesystem check below still applies. */
	static const char *const special[] = {"proc", "sys", "dev"};
	for (size_t i = 0; i < SBX_ARRAY_LEN(special); i++) {
		SBX_AUTOCLOSE int fd = xopenat2(rootfd, special[i], O_PATH | O_DIRECTORY | O_NOFOLLOW,
						RESOLVE_CONFINED | RESOLVE_NO_SYMLINKS);
		if (fd >= 0 && id_of(fd, &c->deny[c->ndeny]) == 0)
			c->ndeny++;
	}
	return 0;
}

static int pseudo_fs(long type)
{
	switch ((unsigned long)type) {
	case PROC_SUPER_MAGIC: case SYSFS_MAGIC: case DEVPTS_SUPER_MAGIC:
	case CGROUP_SUPER_MAGIC: case CGROUP2_SUPER_MAGIC: case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC: case SECURITYFS_MAGIC: case BPF_FS_MAGIC: case PSTOREFS_MAGIC:
	case EFIVARFS_MAGIC: case NSFS_MAGIC: case BINFMTFS_MAGIC: case MQUEUE_MAGIC:
	case SELINUX_MAGIC: case SMACK_MAGIC:
		return 1;
	}
	return 0;
}

/* Is the object behind fd off limits?  Pseudo filesystems anywhere; and
 * for a directory, being /proc, /sys, /dev or below one of them (walked up
 * by ".." until the root: a directory cannot leave its mount by rename, so
 * a racing sandbox cannot make a /dev subdirectory look elsewhere). */
static int check_fd(const struct sbx_fsc *c, int fd, const char *op, const char *path,
		    struct sbx_err *err)
{
	if (!(c->flags & SBX_FSC_DENY_SPECIAL))
		return 0;
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return fail_errno(err, op, path);
	if (pseudo_fs(sf.f_type))
		return refuse(err, op, path, "refused: /proc, /sys, /dev and pseudo filesystems are off limits");
	if (c->ndeny == 0)
		return 0;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return fail_errno(err, op, path);
	if (!S_ISDIR(st.st_mode))
		return 0;
	SBX_AUTOCLOSE int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (cur < 0)
		return fail_errno(err, op, path);
	for (int depth = 0; depth < 4096; depth++) {
		struct sbx_fsc_id id;
		if (id_of(cur, &id) < 0)
			return fail_errno(err, op, path);
		if (id_eq(&id, &c->root))
			return 0;
		for (size_t i = 0; i < c->ndeny; i++)
			if (id_eq(&id, &c->deny[i]))
				return refuse(err, op, path,
					      "refused: /proc, /sys, /dev and pseudo filesystems are off limits");
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			return fail_errno(err, op, path);
		struct sbx_fsc_id uid;
		if (id_of(up, &uid) == 0 && id_eq(&uid, &id)) {
			close(up);      /* a namespace root that is not ours: outside */
			return refuse(err, op, path, "not below the root");
		}
		close(cur);
		cur = up;
	}
	return refuse(err, op, path, "directory tree too deep");
}

int sbx_fsc_open(const struct sbx_fsc *c, const char *path, int oflags, int follow,
		 struct sbx_err *err)
{
	SBX_AUTOFREE char *p = sbx_path_norm(path, "files", err);
	if (!p)
		return -1;
	int fd = xopenat2(c->rootfd, p, oflags | (follow ? 0 : O_NOFOLLOW), RESOLVE_CONFINED);
	if (fd < 0) {
		if (errno == ELOOP && !follow)
			return refuse(err, "files", p, "is a symbolic link; not followed");
		return fail_errno(err, "files", p);
	}
	if (check_fd(c, fd, "files", p, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Split a normalised path into its parent (a new string) and final
 * component; "/" has none. */
static int split(const char *p, char **parent, char *leaf, const char *op, struct sbx_err *err)
{
	const char *slash = strrchr(p, '/');
	if (!slash[1])
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "refusing to operate on /");
	snprintf(leaf, NAME_MAX + 1, "%s", slash + 1);
	*parent = slash == p ? sbx_xstrdup("/") : strndup(p, (size_t)(slash - p));
	return 0;
}

static int parent_of(const struct sbx_fsc *c, const char *p, char *leaf, const char *op,
		     struct sbx_err *err)
{
	SBX_AUTOFREE char *dir = NULL;
	if (split(p, &dir, leaf, op, err) < 0)
		return -1;
	int fd = xopenat2(c->rootfd, dir, O_PATH | O_DIRECTORY, RESOLVE_CONFINED);
	if (fd < 0)
		return fail_errno(err, op, dir);
	if (check_fd(c, fd, op, dir, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The path rule on `path` (*p: the normalised path, malloc'd, or NULL),
 * then its parent opened as parent_of does. */
static int norm_parent(const struct sbx_fsc *c, const char *path, const char *op, char **p,
		       char *leaf, struct sbx_err *err)
{
	*p = sbx_path_norm(path, op, err);
	return *p ? parent_of(c, *p, leaf, op, err) : -1;
}

int sbx_fsc_parent(const struct sbx_fsc *c, const char *path, char *leaf, struct sbx_err *err)
{
	SBX_AUTOFREE char *p = NULL;
	return norm_parent(c, path, "files", &p, leaf, err);
}

/* An existing entry (pfd, O_PATH) that a write may replace or truncate:
 * a regular file inside the rules, never a link, a folder or a device. */
static int writable_entry(const struct sbx_fsc *c, int pfd, const char *op, const char *p,
			  struct sbx_err *err)
{
	struct stat st;
	if (fstat(pfd, &st) < 0)
		return fail_errno(err, op, p);
	if (S_ISLNK(st.st_mode))
		return refuse(err, op, p, "is a symbolic link; not followed");
	if (S_ISDIR(st.st_mode))
		return sbx_fail_reason(err, SBX_INVALID_REQUEST, SBX_R_IS_DIR, op,
				       "%s: is a directory", p);
	if (!S_ISREG(st.st_mode))
		return refuse(err, op, p, "not a regular file");
	return check_fd(c, pfd, op, p, err);
}

/* ---- write / read ---------------------------------------------------- */

int sbx_fsc_write(const struct sbx_fsc *c, const char *path, const void *data, size_t len,
		  unsigned mode, struct sbx_err *err)
{
	const char *op = "write";
	SBX_AUTOFREE char *p = NULL;
	char leaf[NAME_MAX + 1];
	SBX_AUTOCLOSE int dfd = norm_parent(c, path, op, &p, leaf, err);
	if (dfd < 0)
		return -1;
	SBX_AUTOCLOSE int fd = -1;
	int created = 0;
	/* Existing entry: look at it without following or opening it; a new
	 * one: O_EXCL so that nothing planted in between is reused.  A racing
	 * create/unlink makes us go round again. */
	for (int tries = 0; fd < 0; tries++) {
		if (tries == 8)
			return sbx_fail(err, SBX_CONFLICT, op, "%s: keeps changing under us", p);
		SBX_AUTOCLOSE int pfd = openat(dfd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (pfd >= 0) {
			if (writable_entry(c, pfd, op, p, err) < 0)
				return -1;
			fd = reopen(pfd, O_WRONLY | O_TRUNC);
			if (fd < 0 && errno != ENOENT)
				return fail_errno(err, op, p);
			continue;
		}
		if (errno != ENOENT)
			return fail_errno(err, op, p);
		fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    mode & 0777);
		if (fd < 0 && errno != EEXIST)
			return fail_errno(err, op, p);
		created = fd >= 0;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return refuse(err, op, p, "not a regular file");
	if (sbx_write_all(fd, data, len) < 0)
		return fail_errno(err, op, p);
	/* Exact mode, past the umask, set after the data so that the write
	 * does not clear setuid bits again.  Someone else's file that we may
	 * write but not chmod (a 0666 file of root's, for uid 1000) keeps its
	 * mode: the content was the request. */
	if (fchmod(fd, mode & 07777) < 0 && (created || errno != EPERM))
		return fail_errno(err, op, p);
	if (close(fd) < 0) {
		fd = -1;
		return fail_errno(err, op, p);
	}
	fd = -1;
	return 0;
}

/* What is at `leaf` in dfd may be replaced by a new file: nothing, or a
 * regular file inside the rules.  The same policy as sbx_fsc_write. */
static int replaceable(const struct sbx_fsc *c, int dfd, const char *leaf, const char *op,
		       const char *p, struct sbx_err *err)
{
	SBX_AUTOCLOSE int pfd = openat(dfd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return errno == ENOENT ? 0 : fail_errno(err, op, p);
	return writable_entry(c, pfd, op, p, err);
}

int sbx_fsc_write_atomic(const struct sbx_fsc *c, const char *path, const void *data,
			 size_t len, unsigned mode, struct sbx_err *err)
{
	const char *op = "write";
	SBX_AUTOFREE char *p = NULL;
	char leaf[NAME_MAX + 1], tmp[64];
	SBX_AUTOCLOSE int dfd = norm_parent(c, path, op, &p, leaf, err);
	if (dfd < 0 || replaceable(c, dfd, leaf, op, p, err) < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), ".sbx-put.%ld.%llx", (long)getpid(),
		 (unsigned long long)sbx_now_ms());
	/* Unnamed until whole: a crash before the link leaves nothing. */
	int named = 0;
	SBX_AUTOCLOSE int fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode & 0777);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    mode & 0777);
		named = 1;
	}
	if (fd < 0)
		return fail_errno(err, op, p);
	int e = 0;
	if (sbx_write_all(fd, data, len) < 0 || fchmod(fd, mode & 07777) < 0)
		e = errno;
	sbx_fault("files:atomic-written");
	if (!e && fsync(fd) < 0)
		e = errno;
	if (!e && !named) {
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		if (linkat(AT_FDCWD, self, dfd, tmp, AT_SYMLINK_FOLLOW) < 0)
			e = errno;
		else
			named = 1;
	}
	if (!e && renameat(dfd, tmp, dfd, leaf) < 0)
		e = errno;
	if (e) {
		if (named)
			unlinkat(dfd, tmp, 0);
		errno = e;
		return fail_errno(err, op, p);
	}
	return 0;
}

/* The path rule on `path` (*p: normalised, malloc'd), then an O_PATH
 * descriptor of what it names, links followed inside the root, and its
 * stat in *st. */
static int norm_open_stat(const struct sbx_fsc *c, const char *path, const char *op, char **p,
			  struct stat *st, struct sbx_err *err)
{
	*p = sbx_path_norm(path, op, err);
	if (!*p)
		return -1;
	int fd = sbx_fsc_open(c, *p, O_PATH, 1, err);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0) {
		fail_errno(err, op, *p);
		close(fd);
		return -1;
	}
	return fd;
}

int sbx_fsc_read(const struct sbx_fsc *c, const char *path, size_t max, char **data,
		 size_t *len, struct sbx_err *err)
{
	const char *op = "read";
	SBX_AUTOFREE char *p = NULL;
	struct stat st;
	SBX_AUTOCLOSE int pfd = norm_open_stat(c, path, op, &p, &st, err);
	if (pfd < 0)
		return -1;
	if (S_ISDIR(st.st_mode))
		return sbx_fail_reason(err, SBX_INVALID_REQUEST, SBX_R_IS_DIR, op, "%s: is a directory", p);
	if (!S_ISREG(st.st_mode))
		return refuse(err, op, p, "not a regular file");
	if ((uint64_t)st.st_size > max)
		return sbx_fail_reason(err, SBX_INVALID_REQUEST, SBX_R_TOO_LARGE, op,
				       "%s: %lld bytes, more than the limit of %zu",
				       p, (long long)st.st_size, max);
	SBX_AUTOCLOSE int fd = reopen(pfd, O_RDONLY);
	if (fd < 0)
		return fail_errno(err, op, p);
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = sbx_xmalloc(cap + 1);
	for (;;) {
		if (n == cap) {
			if (cap > max) {
				free(buf);
				return sbx_fail_reason(err, SBX_INVALID_REQUEST, SBX_R_TOO_LARGE, op,
						       "%s: more than the limit of %zu bytes", p, max);
			}
			cap *= 2;
			buf = sbx_xrealloc(buf, cap + 1);
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			errno = e;
			return fail_errno(err, op, p);
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		free(buf);
		return sbx_fail_reason(err, SBX_INVALID_REQUEST, SBX_R_TOO_LARGE, op,
				       "%s: more than the limit of %zu bytes", p, max);
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

/* ---- stat / list ----------------------------------------------------- */

static enum sbx_ftype ftype(mode_t m)
{
	if (S_ISREG(m)) return SBX_FT_FILE;
	if (S_ISDIR(m)) return SBX_FT_DIR;
	if (S_ISLNK(m)) return SBX_FT_SYMLINK;
	return SBX_FT_OTHER;
}

/* Describe dfd/name (name "" = dfd itself), not following it. */
static int describe(int dfd, const char *name, const char *path, struct sbx_dirent *e,
		    struct sbx_err *err)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) < 0)
		return fail_errno(err, "stat", path);
	memset(e, 0, sizeof(*e));
	const char *slash = strrchr(path, '/');
	e->name = sbx_xstrdup(slash && slash[1] ? slash + 1 : "/");
	e->path = sbx_xstrdup(path);
	e->type = ftype(st.st_mode);
	e->size = st.st_size;
	e->mtime = st.st_mtim.tv_sec;
	e->mode = st.st_mode & 07777;
	e->uid = st.st_uid;
	e->gid = st.st_gid;
	if (S_ISLNK(st.st_mode)) {
		char buf[PATH_MAX];
		ssize_t n = readlinkat(dfd, name, buf, sizeof(buf) - 1);
		if (n >= 0) {
			buf[n] = '\0';
			e->link_target = sbx_xstrdup(buf);
		}
	}
	return 0;
}

int sbx_fsc_stat(const struct sbx_fsc *c, const char *path, struct sbx_dirent *out,
		 struct sbx_err *err)
{
	SBX_AUTOFREE char *p = sbx_path_norm(path, "stat", err);
	if (!p)
		return -1;
	/* O_PATH | O_NOFOLLOW on a symlink gives the link itself. */
	int fd = xopenat2(c->rootfd, p, O_PATH | O_NOFOLLOW, RESOLVE_CONFINED);
	if (fd < 0)
		return fail_errno(err, "stat", p);
	int rc = check_fd(c, fd, "stat", p, err);
	if (rc == 0)
		rc = describe(fd, "", p, out, err);
	close(fd);
	return rc;
}

/* A directory stream over a new open of the directory `fd` (which may be
 * O_PATH, and stays the caller's), or NULL with errno set. */
static DIR *opendir_fd(int fd)
{
	int dup = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dup < 0)
		return NULL;
	DIR *d = fdopendir(dup);
	if (!d) {
		int e = errno;
		close(dup);
		errno = e;
	}
	return d;
}

/* readdir without "." and "..". */
static struct dirent *readdir_real(DIR *d)
{
	struct dirent *de;
	while ((de = readdir(d)) && (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")))
		;
	return de;
}

static int cmp_dirent(const void *a, const void *b)
{
	return strcmp(((const struct sbx_dirent *)a)->name, ((const struct sbx_dirent *)b)->name);
}

int sbx_fsc_list(const struct sbx_fsc *c, const char *path, struct sbx_dirent **out,
		 size_t *n, struct sbx_err *err)
{
	SBX_AUTOFREE char *p = NULL;
	struct stat st;
	SBX_AUTOCLOSE int pfd = norm_open_stat(c, path, "list", &p, &st, err);
	if (pfd < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		*out = sbx_xcalloc(1, sizeof(**out));
		*n = 1;
		if (sbx_fsc_stat(c, p, *out, err) < 0) {
			free(*out);
			*out = NULL;
			*n = 0;
			return -1;
		}
		return 0;
	}
	DIR *d = opendir_fd(pfd);
	if (!d)
		return fail_errno(err, "list", p);
	size_t cap = 16, cnt = 0;
	struct sbx_dirent *v = sbx_xcalloc(cap, sizeof(*v));
	struct dirent *de;
	int rc = 0;
	while ((de = readdir_real(d))) {
		if (cnt == cap) {
			cap *= 2;
			v = sbx_xrealloc(v, cap * sizeof(*v));
		}
		SBX_AUTOFREE char *cp = sbx_xasprintf("%s%s%s", p, strcmp(p, "/") ? "/" : "",
						      de->d_name);
		if (describe(dirfd(d), de->d_name, cp, &v[cnt], err) < 0) {
			if (err->kind == SBX_NOT_FOUND)
				continue;       /* removed while we listed: skip */
			rc = -1;
			break;
		}
		cnt++;
	}
	closedir(d);
	if (rc < 0) {
		sbx_dirents_free(v, cnt);
		return -1;
	}
	sbx_err_clear(err);
	qsort(v, cnt, sizeof(*v), cmp_dirent);
	*out = v;
	*n = cnt;
	return 0;
}

/* ---- mkdir ----------------------------------------------------------- */

int sbx_fsc_mkdir(const struct sbx_fsc *c, const char *path, unsigned mode, struct sbx_err *err)
{
	const char *op = "mkdir";
	SBX_AUTOFREE char *p = sbx_path_norm(path, op, err);
	if (!p)
		return -1;
	/* Each prefix is resolved from the root (so a symlinked directory on
	 * the way is followed, confined); a missing component is created with
	 * mkdirat on the fd of the prefix before it, then resolved again. */
	SBX_AUTOCLOSE int cur = xopenat2(c->rootfd, "/", O_PATH | O_DIRECTORY, RESOLVE_CONFINED);
	if (cur < 0)
		return fail_errno(err, op, "/");
	size_t len = strlen(p);
	for (size_t i = 1; i <= len; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char save = p[i];
		p[i] = '\0';
		const char *comp = strrchr(p, '/') + 1;
		if (!*comp) {
			p[i] = save;
			continue;
		}
		int fd = xopenat2(c->rootfd, p, O_PATH | O_DIRECTORY, RESOLVE_CONFINED);
		if (fd < 0 && errno == ENOENT) {
			if (check_fd(c, cur, op, p, err) < 0)
				return -1;
			if (mkdirat(cur, comp, 0700) == 0) {
				/* Our new directory: give it its mode on a
				 * no-follow fd, never by name. */
				SBX_AUTOCLOSE int nfd = openat(cur, comp,
					O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (nfd < 0 || chmod_fd(nfd, mode) < 0)
					return fail_errno(err, op, p);
			} else if (errno != EEXIST) {
				return fail_errno(err, op, p);
			}
			fd = xopenat2(c->rootfd, p, O_PATH | O_DIRECTORY, RESOLVE_CONFINED);
		}
		if (fd < 0) {
			if (errno == ENOTDIR || errno == ENOENT)
				return sbx_fail(err, SBX_CONFLICT, op,
						"%s: exists and is not a directory", p);
			return fail_errno(err, op, p);
		}
		close(cur);
		cur = fd;
		if (check_fd(c, cur, op, p, err) < 0)
			return -1;
		p[i] = save;
	}
	return 0;
}

/* ---- remove ---------------------------------------------------------- */

static int mnt_id(int dfd, const char *name, uint64_t *id)
{
	struct statx sx;
	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH, STATX_MNT_ID | STATX_TYPE, &sx) < 0)
		return -1;
	*id = sx.stx_mnt_id;
	return 0;
}

struct rm_state {
	const char *top;
	int mountpoints;         /* mount points met (left alone) */
	char first_mp[PATH_MAX];
};

/* Empty the directory dfd (on mount `mnt`) depth-first.  Never follows a
 * symlink (entries are opened O_NOFOLLOW | O_DIRECTORY and re-checked) and
 * never enters another mount. */
static int rm_contents(int dfd, uint64_t mnt, const char *path, int depth, struct rm_state *s,
		       struct sbx_err *err)
{
	if (depth > FSC_MAX_DEPTH)
		return refuse(err, "remove", path, "directory tree too deep");
	DIR *d = opendir_fd(dfd);
	if (!d)
		return fail_errno(err, "remove", path);
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir_real(d))) {
		SBX_AUTOFREE char *cp = sbx_xasprintf("%s/%s", path, de->d_name);
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				rc = fail_errno(err, "remove", cp);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			SBX_AUTOCLOSE int cfd = openat(dfd, de->d_name,
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			uint64_t cm;
			if (cfd < 0 || mnt_id(cfd, "", &cm) < 0) {
				rc = fail_errno(err, "remove", cp);
				continue;
			}
			if (cm != mnt) {
				if (!s->mountpoints++)
					snprintf(s->first_mp, sizeof(s->first_mp), "%s", cp);
				continue;
			}
			rc = rm_contents(cfd, mnt, cp, depth + 1, s, err);
			if (rc == 0 && unlinkat(dfd, de->d_name, AT_REMOVEDIR) < 0 &&
			    errno != ENOENT && !(s->mountpoints && errno == ENOTEMPTY))
				rc = fail_errno(err, "remove", cp);
		} else if (unlinkat(dfd, de->d_name, 0) < 0 && errno != ENOENT) {
			rc = fail_errno(err, "remove", cp);
		}
	}
	closedir(d);
	return rc;
}

int sbx_fsc_remove(const struct sbx_fsc *c, const char *path, int recursive, struct sbx_err *err)
{
	const char *op = "remove";
	SBX_AUTOFREE char *p = NULL;
	char leaf[NAME_MAX + 1];
	SBX_AUTOCLOSE int dfd = norm_parent(c, path, op, &p, leaf, err);
	if (dfd < 0)
		return -1;
	struct stat st;
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return fail_errno(err, op, p);
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dfd, leaf, 0) < 0)
			return fail_errno(err, op, p);
		return 0;
	}
	SBX_AUTOCLOSE int fd = openat(dfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fail_errno(err, op, p);
	if (check_fd(c, fd, op, p, err) < 0)
		return -1;
	uint64_t pm, m;
	if (mnt_id(dfd, "", &pm) < 0 || mnt_id(fd, "", &m) < 0)
		return fail_errno(err, op, p);
	if (pm != m)
		return sbx_fail(err, SBX_CONFLICT, op, "%s: is a mount point; not removed", p);
	struct rm_state s = {.top = p};
	if (recursive && rm_contents(fd, m, p, 0, &s, err) < 0)
		return -1;
	if (s.mountpoints)
		return sbx_fail(err, SBX_CONFLICT, op,
				"%s: mount point below it left alone (%s); the rest was removed",
				p, s.first_mp);
	if (unlinkat(dfd, leaf, AT_REMOVEDIR) < 0) {
		if (errno == ENOTEMPTY || errno == EEXIST)
			return sbx_fail(err, SBX_CONFLICT, op,
					"%s: directory not empty (remove it recursively)", p);
		return fail_errno(err, op, p);
	}
	return 0;
}

/* ---- move ------------------------------------------------------------ */

int sbx_fsc_move(const struct sbx_fsc *c, const char *from, const char *to, struct sbx_err *err)
{
	const char *op = "move";
	SBX_AUTOFREE char *pf = NULL, *pt = NULL;
	char lf[NAME_MAX + 1], lt[NAME_MAX + 1];
	SBX_AUTOCLOSE int df = norm_parent(c, from, op, &pf, lf, err);
	if (df < 0)
		return -1;
	SBX_AUTOCLOSE int dt = norm_parent(c, to, op, &pt, lt, err);
	if (dt < 0)
		return -1;
	/* The source itself must not be a denied directory (/dev...). */
	SBX_AUTOCLOSE int sfd = openat(df, lf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return fail_errno(err, op, pf);
	if (check_fd(c, sfd, op, pf, err) < 0)
		return -1;
	if (renameat2(df, lf, dt, lt, 0) < 0) {
		if (errno == EXDEV)
			return refuse(err, op, pf, "cannot move across mount points");
		return sbx_fail_errno(err, sbx_fsc_errno_kind(errno), op, "%s -> %s", pf, pt);
	}
	return 0;
}

/* ---- tar ------------------------------------------------------------- */

struct tar_walk {
	const struct sbx_fsc *c;
	struct sbx_fsc_tar_opts o;
	struct sbx_tar_writer w;
	char buf[65536];
};

static int tar_entry(struct tar_walk *t, int dfd, const char *name, const char *rel,
		     const char *path, int depth, struct sbx_err *err);

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int tar_dir_contents(struct tar_walk *t, int fd, const char *rel, const char *path,
			    int depth, struct sbx_err *err)
{
	if (depth > FSC_MAX_DEPTH)
		return refuse(err, "tar", path, "directory tree too deep");
	DIR *d = opendir_fd(fd);
	if (!d)
		return fail_errno(err, "tar", path);
	/* Sorted, so that the same tree gives the same archive. */
	size_t cap = 16, n = 0;
	char **names = sbx_xcalloc(cap, sizeof(char *));
	struct dirent *de;
	while ((de = readdir_real(d))) {
		if (n == cap) {
			cap *= 2;
			names = sbx_xrealloc(names, cap * sizeof(char *));
		}
		names[n++] = sbx_xstrdup(de->d_name);
	}
	qsort(names, n, sizeof(char *), cmp_str);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		if (rc == 0) {
			SBX_AUTOFREE char *crel = rel[0] ? sbx_xasprintf("%s/%s", rel, names[i])
							 : sbx_xstrdup(names[i]);
			SBX_AUTOFREE char *cpath = sbx_xasprintf("%s%s%s", path,
				strcmp(path, "/") ? "/" : "", names[i]);
			rc = tar_entry(t, dirfd(d), names[i], crel, cpath, depth + 1, err);
		}
		free(names[i]);
	}
	free(names);
	closedir(d);
	return rc;
}

/* One entry dfd/name, archived as `rel`.  The type is taken from an
 * O_PATH | O_NOFOLLOW fd, and file data is read through a reopen of that
 * same fd, so a swap between look and read can change nothing but the
 * bytes.  Exactly st_size bytes are stored: a file that shrinks meanwhile
 * is padded with zeros, one that grows is cut. */
static int tar_entry(struct tar_walk *t, int dfd, const char *name, const char *rel,
		     const char *path, int depth, struct sbx_err *err)
{
	SBX_AUTOCLOSE int pfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return errno == ENOENT ? 0 : fail_errno(err, "tar", path);
	struct stat st;
	if (fstat(pfd, &st) < 0)
		return fail_errno(err, "tar", path);
	struct sbx_tar_entry e = {
		.name = (char *)rel, .mode = st.st_mode & 07777, .uid = st.st_uid,
		.gid = st.st_gid, .mtime = st.st_mtim.tv_sec,
	};
	if (t->o.uid >= 0)
		e.uid = (unsigned)t->o.uid;
	if (t->o.gid >= 0)
		e.gid = (unsigned)t->o.gid;
	if (S_ISREG(st.st_mode))
		e.mode |= t->o.mode_or;
	else if (S_ISDIR(st.st_mode))   /* readable dirs must be searchable */
		e.mode |= t->o.mode_or | ((t->o.mode_or & 0444) >> 2);
	char link[PATH_MAX];
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(pfd, "", link, sizeof(link) - 1);
		if (n < 0)
			return fail_errno(err, "tar", path);
		link[n] = '\0';
		e.type = SBX_TAR_SYMLINK;
		e.link = link;
		return sbx_tar_write_header(&t->w, &e, err);
	}
	if (S_ISDIR(st.st_mode)) {
		struct sbx_err ignored = {0};
		if (check_fd(t->c, pfd, "tar", path, &ignored) < 0)
			return 0;       /* a denied mount below: left out */
		e.type = SBX_TAR_DIR;
		if (sbx_tar_write_header(&t->w, &e, err) < 0)
			return -1;
		return tar_dir_contents(t, pfd, rel, path, depth, err);
	}
	if (!S_ISREG(st.st_mode))
		return 0;               /* devices, FIFOs, sockets: not archived */
	struct sbx_err ignored = {0};
	if (check_fd(t->c, pfd, "tar", path, &ignored) < 0)
		return 0;
	SBX_AUTOCLOSE int fd = reopen(pfd, O_RDONLY);
	if (fd < 0)
		return fail_errno(err, "tar", path);
	e.type = SBX_TAR_FILE;
	e.size = st.st_size;
	if (sbx_tar_write_header(&t->w, &e, err) < 0)
		return -1;
	int64_t left = st.st_size;
	while (left > 0) {
		size_t want = left < (int64_t)sizeof(t->buf) ? (size_t)left : sizeof(t->buf);
		ssize_t r = read(fd, t->buf, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail_errno(err, "tar", path);
		if (r == 0) {           /* shrank: pad with zeros */
			memset(t->buf, 0, want);
			r = (ssize_t)want;
		}
		if (sbx_tar_write_data(&t->w, t->buf, (size_t)r, err) < 0)
			return -1;
		left -= r;
	}
	return sbx_tar_write_pad(&t->w, st.st_size, err);
}

int sbx_fsc_tar_get(const struct sbx_fsc *c, const char *path, int outfd, struct sbx_err *err)
{
	struct sbx_fsc_tar_opts o = {.mode_or = 0, .uid = -1, .gid = -1};
	return sbx_fsc_tar_get_opts(c, path, outfd, &o, err);
}

int sbx_fsc_tar_get_opts(const struct sbx_fsc *c, const char *path, int outfd,
			 const struct sbx_fsc_tar_opts *o, struct sbx_err *err)
{
	SBX_AUTOFREE char *p = sbx_path_norm(path, "tar", err);
	if (!p)
		return -1;
	size_t l = strlen(path);
	int contents = !strcmp(p, "/") || (l >= 2 && !strcmp(path + l - 2, "/."));
	struct tar_walk *t = sbx_xcalloc(1, sizeof(*t));
	t->c = c;
	t->o = *o;
	sbx_tar_writer_init(&t->w, outfd);
	int rc;
	if (contents) {
		SBX_AUTOCLOSE int fd = sbx_fsc_open(c, p, O_PATH | O_DIRECTORY, 1, err);
		rc = fd < 0 ? -1 : tar_dir_contents(t, fd, "", p, 0, err);
	} else {
		char leaf[NAME_MAX + 1];
		SBX_AUTOCLOSE int dfd = parent_of(c, p, leaf, "tar", err);
		rc = dfd < 0 ? -1 : 0;
		if (rc == 0) {
			struct stat st;
			if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
				rc = fail_errno(err, "tar", p);
		}
		if (rc == 0)
			rc = tar_entry(t, dfd, leaf, leaf, p, 0, err);
	}
	if (rc == 0)
		rc = sbx_tar_write_end(&t->w, err);
	free(t);
	return rc;
}

int sbx_fsc_tar_put(const struct sbx_fsc *c, const char *dir, int infd,
		    const struct sbx_tar_extract_opts *o, struct sbx_err *err)
{
	if (sbx_fsc_mkdir(c, dir, 0755, err) < 0)
		return -1;
	SBX_AUTOCLOSE int pfd = sbx_fsc_open(c, dir, O_PATH | O_DIRECTORY, 1, err);
	if (pfd < 0)
		return -1;
	SBX_AUTOCLOSE int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail_errno(err, "tar", dir);
	return sbx_tar_extract(infd, dfd, o, err);
}

/* ---- acting as another user ------------------------------------------ */

struct as_user_report {
	int rc;
	struct sbx_err err;
};

int sbx_fsc_child_start(struct sbx_fsc_child *ch, uid_t uid, gid_t gid,
			int (*fn)(void *ctx, struct sbx_err *err), void *ctx,
			struct sbx_err *err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "files", "pipe");
	fflush(NULL);           /* no buffered output duplicated into the child */
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return sbx_fail_errno(err, SBX_CAPACITY, "files", "fork");
	}
	if (pid == 0) {
		struct as_user_report r = {0};
		close(pfd[0]);
		/* Order matters: groups and fsgid while still fsuid 0.  setfsuid
		 * reports the previous value only, so read it back to check. */
		if (uid == (uid_t)-1) {
			r.rc = fn(ctx, &r.err);
		} else if (setgroups(0, NULL) < 0) {
			r.rc = sbx_fail_errno(&r.err, SBX_INTERNAL, "files", "setgroups");
		} else {
			setfsgid(gid);
			setfsuid(uid);
			if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid)
				r.rc = sbx_fail(&r.err, SBX_INTERNAL, "files",
						"could not act as uid %u", (unsigned)uid);
			else
				r.rc = fn(ctx, &r.err);
		}
		ssize_t w = write(pfd[1], &r, sizeof(r));
		_exit(w == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(pfd[1]);
	ch->pid = pid;
	ch->fd = pfd[0];
	ch->uid = uid;
	return 0;
}

int sbx_fsc_child_wait(struct sbx_fsc_child *ch, struct sbx_err *err)
{
	struct as_user_report r;
	size_t got = 0;
	while (got < sizeof(r)) {
		ssize_t n = read(ch->fd, (char *)&r + got, sizeof(r) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(ch->fd);
	ch->fd = -1;
	int st = 0;
	while (waitpid(ch->pid, &st, 0) < 0 && errno == EINTR)
		;
	if (got != sizeof(r))
		return sbx_fail(err, SBX_INTERNAL, "files", "file operation child died (%s)",
				WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "no report");
	if (r.rc < 0)
		*err = r.err;
	return r.rc;
}

int sbx_fsc_as_user(uid_t uid, gid_t gid, int (*fn)(void *ctx, struct sbx_err *err),
		    void *ctx, struct sbx_err *err)
{
	struct sbx_fsc_child ch;
	if (sbx_fsc_child_start(&ch, uid, gid, fn, ctx, err) < 0)
		return -1;
	return sbx_fsc_child_wait(&ch, err);
}

