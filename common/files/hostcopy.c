/* hostcopy.c - folders between the host and a sandbox, the host side of
 * sbx-fs put/get/restore/collect (see hostcopy.h for the promises).
 *
 * The host side runs in a child (sbx_fsc_child_start): a tar writer over a
 * confined view of the host folder for put, a tar extractor into a fresh
 * private directory for get; the backend reads or writes the other end of
 * the pipe through its tar_put / tar_get. */
#include "hostcopy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "doc.h"
#include "fsconfine.h"
#include "path.h"
#include "tar.h"
#include "util.h"

/* ---- host side: a folder as a tar stream (in a child) ----------------- */

struct host_tar { const char *dir; int wfd, rfd; unsigned mode_or; };

static int host_tar_write(void *ctx, struct sbx_err *err)
{
	struct host_tar *h = ctx;
	close(h->rfd);
	SBX_AUTOCLOSE int fd = open(h->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail_errno(err, errno == ENOENT ? SBX_NOT_FOUND : SBX_INVALID_REQUEST,
				      "put", "%s", h->dir);
	struct sbx_fsc c;
	if (sbx_fsc_init(&c, fd, 0, err) < 0)
		return -1;
	struct sbx_fsc_tar_opts o = {.mode_or = h->mode_or, .uid = -1, .gid = -1};
	int rc = sbx_fsc_tar_get_opts(&c, "/.", h->wfd, &o, err);
	close(h->wfd);
	return rc;
}

int sbx_hostcopy_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir,
		     const char *dest, int as_root, unsigned mode_or, struct sbx_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "put", "pipe");
	struct host_tar h = {.dir = dir, .wfd = p[1], .rfd = p[0], .mode_or = mode_or};
	struct sbx_fsc_child ch;
	if (sbx_fsc_child_start(&ch, (uid_t)-1, (gid_t)-1, host_tar_write, &h, err) < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	close(p[1]);
	int rc = sbx_file_tar_put(b, sb, dest, p[0], as_root, err);
	close(p[0]);
	struct sbx_err cerr = {0};
	int crc = sbx_fsc_child_wait(&ch, &cerr);
	/* The reader's error explains a broken pipe on the writer's side;
	 * otherwise the writer's (a host file it could not read) comes first. */
	if (crc < 0 && cerr.errnum != EPIPE) {
		*err = cerr;
		return -1;
	}
	return rc;
}

/* ---- host side: extraction of a sandbox folder ----------------------- */

struct host_extract { int rfd, wfd, dirfd; int64_t max; };

static int host_extract(void *ctx, struct sbx_err *err)
{
	struct host_extract *h = ctx;
	close(h->wfd);
	struct sbx_tar_extract_opts xo = {.keep_owner = 0, .force_uid = -1, .force_gid = -1,
					  .max_bytes = h->max};
	int rc = sbx_tar_extract(h->rfd, h->dirfd, &xo, err);
	if (rc < 0 && err->kind == SBX_CAPACITY)
		sbx_err_prefix(err, "get: more than --max (%lld bytes)", (long long)h->max);
	return rc;
}

/* ---- host side: the link policy of a copy ------------------------------
 *
 * A copy lands where other host programs (an artifact uploader) will walk
 * and follow it.  So a symlink in it may only lead to something inside the
 * copy: one whose target is absolute, or relative but climbing above the
 * copy's top (counted on the target's text from the link's folder), or
 * whose resolution by the kernel leaves the copy (RESOLVE_BENEATH, which
 * also catches chains of links) or loops, is removed and reported.
 * Everything else is kept as it is, dangling links included. */

struct link_scan {
	int rootfd;
	size_t prefix;           /* strlen(copy dir) + 1 */
	int kernel;              /* pass 2: resolve; pass 1: the target's text */
	char **doomed;           /* full paths, then their targets, in pairs */
	size_t n;
};
static struct link_scan *lscan;   /* nftw has no context argument */

/* Pass 1: does the target's text lead out (absolute, or more ".." than the
 * link is deep)?  Pass 2: does the kernel's resolution leave the copy or
 * loop (chains of links)? */
static int link_escapes(const struct link_scan *ls, const char *rel, const char *target)
{
	if (!ls->kernel) {
		if (target[0] == '/')
			return 1;
		long depth = 0;
		for (const char *p = rel; (p = strchr(p, '/')); p++)
			depth++;
		for (const char *p = target; *p;) {
			size_t n = strcspn(p, "/");
			if (n == 2 && p[0] == '.' && p[1] == '.') {
				if (--depth < 0)
					return 1;
			} else if (n && !(n == 1 && p[0] == '.')) {
				depth++;
			}
			p += n;
			while (*p == '/')
				p++;
		}
		return 0;
	}
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	long fd = syscall(SYS_openat2, ls->rootfd, rel, &how, sizeof(how));
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	return errno == EXDEV || errno == ELOOP;
}

static int scan_link(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	if (flag != FTW_SL && flag != FTW_SLN)
		return 0;
	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = 0;
	if (!link_escapes(lscan, path + lscan->prefix, target))
		return 0;
	lscan->doomed = sbx_xrealloc(lscan->doomed, (lscan->n + 2) * sizeof(char *));
	lscan->doomed[lscan->n++] = sbx_xstrdup(path);
	lscan->doomed[lscan->n++] = sbx_xstrdup(target);
	return 0;
}

/* Apply the link policy to the finished copy in `dir` (fd `dirfd`): two
 * passes, each judging every link first and removing after, so that the
 * outcome does not depend on the order of the walk.  The links removed are
 * added to `res` (links_removed: count, removed_links: the first 100 as
 * {path, target}). */
static int drop_escaping_links(const char *dir, int dirfd, json_object *res, struct sbx_err *err)
{
	json_object *removed = json_object_new_array();
	int64_t count = 0;
	int rc = 0;
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		struct link_scan ls = {.rootfd = dirfd, .prefix = strlen(dir) + 1, .kernel = pass};
		lscan = &ls;
		if (nftw(dir, scan_link, 64, FTW_PHYS) != 0)
			rc = sbx_fail_errno(err, SBX_INTERNAL, "get", "checking the links of %s", dir);
		lscan = NULL;
		for (size_t i = 0; i < ls.n; i += 2) {
			if (rc == 0 && unlink(ls.doomed[i]) < 0 && errno != ENOENT)
				rc = sbx_fail_errno(err, SBX_INTERNAL, "get", "%s", ls.doomed[i]);
			if (rc == 0 && count++ < 100) {
				json_object *e = json_object_new_object();
				sbx_json_set_str(e, "path", ls.doomed[i] + ls.prefix);
				sbx_json_set_str(e, "target", ls.doomed[i + 1]);
				json_object_array_add(removed, e);
			}
			free(ls.doomed[i]);
			free(ls.doomed[i + 1]);
		}
		free(ls.doomed);
	}
	if (rc < 0) {
		json_object_put(removed);
		return -1;
	}
	sbx_json_set_int(res, "links_removed", count);
	if (count)
		json_object_object_add(res, "removed_links", removed);
	else
		json_object_put(removed);
	return 0;
}

static int clear_setid(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)f;
	if (flag != FTW_SL && (st->st_mode & 06000))
		chmod(path, st->st_mode & 01777);
	return 0;
}

/* Is host `path` missing (0), an empty directory (1), or anything else (-1
 * with a conflict error)? */
static int host_target_free(const char *path, struct sbx_err *err)
{
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return sbx_fail_errno(err, SBX_INVALID_REQUEST, "get", "%s", path);
	}
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (!d)
			return sbx_fail_errno(err, SBX_INVALID_REQUEST, "get", "%s", path);
		struct dirent *de;
		int n = 0;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				n++;
		closedir(d);
		if (n == 0)
			return 1;
	}
	return sbx_fail(err, SBX_CONFLICT, "get",
			"%s exists and is not an empty directory; a folder is copied to a new "
			"or empty one", path);
}

int sbx_hostcopy_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *src,
		     const char *dest, unsigned mode, int as_root, int64_t max, json_object *res,
		     struct sbx_err *err)
{
	if (host_target_free(dest, err) < 0)
		return -1;
	SBX_AUTOFREE char *dcopy = sbx_xstrdup(dest);
	size_t dl = strlen(dcopy);
	while (dl > 1 && dcopy[dl - 1] == '/')
		dcopy[--dl] = '\0';
	char *slash = strrchr(dcopy, '/');
	SBX_AUTOFREE char *parent = !slash ? sbx_xstrdup(".")
				  : slash == dcopy ? sbx_xstrdup("/")
				  : strndup(dcopy, (size_t)(slash - dcopy));
	if (sbx_mkdir_p(parent, 0755, err) < 0)
		return -1;
	SBX_AUTOFREE char *tmp = sbx_xasprintf("%s/.sbx-fs-get.XXXXXX", parent);
	if (!mkdtemp(tmp))
		return sbx_fail_errno(err, sbx_fsc_errno_kind(errno), "get", "%s", parent);
	SBX_AUTOCLOSE int tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int p[2] = {-1, -1};
	int rc = tfd < 0 ? sbx_fail_errno(err, SBX_INTERNAL, "get", "%s", tmp)
			 : pipe2(p, O_CLOEXEC) < 0 ? sbx_fail_errno(err, SBX_INTERNAL, "get", "pipe")
						   : 0;
	struct sbx_fsc_child ch;
	struct host_extract h = {.rfd = p[0], .wfd = p[1], .dirfd = tfd, .max = max};
	if (rc == 0 && sbx_fsc_child_start(&ch, (uid_t)-1, (gid_t)-1, host_extract, &h, err) < 0)
		rc = -1;
	if (rc == 0) {
		close(p[0]);
		p[0] = -1;
		SBX_AUTOFREE char *contents = sbx_xasprintf("%s%s.", src, *src && src[strlen(src) - 1] == '/' ? "" : "/");
		rc = sbx_file_tar_get(b, sb, contents, p[1], as_root, err);
		close(p[1]);
		p[1] = -1;
		struct sbx_err cerr = {0};
		int crc = sbx_fsc_child_wait(&ch, &cerr);
		if (rc == 0 && crc < 0) {
			*err = cerr;
			rc = -1;
		} else if (rc < 0 && crc == 0 && err->errnum == EPIPE) {
			rc = 0;         /* the archive ended; what followed was padding */
		} else if (rc < 0 && crc < 0 && (err->errnum == EPIPE || cerr.kind == SBX_CAPACITY)) {
			*err = cerr;    /* the extractor stopped first: its reason */
		}
	}
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	if (rc == 0)
		rc = drop_escaping_links(tmp, tfd, res, err);
	if (rc == 0) {
		nftw(tmp, clear_setid, 64, FTW_PHYS);
		fchmod(tfd, mode & 0777);
		if (rename(tmp, dcopy) < 0)
			rc = sbx_fail_errno(err, sbx_fsc_errno_kind(errno), "get", "%s", dcopy);
	}
	if (rc < 0) {
		struct sbx_err ignored;
		sbx_rm_rf(tmp, &ignored);
	}
	return rc;
}

