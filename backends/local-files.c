/* local-files.c - the local backend's session filesystem: the file_* and
 * tar_* entries of its vtable.
 *
 * Every operation works on the sandbox's root as its own processes see it
 * (local_sb_rootfd: /proc/<init>/root, the merged overlay with the
 * sandbox's /proc, /sys, /dev mounted inside), which also resumes a paused
 * sandbox first: touching files is activity, like exec.  Paths are confined
 * by common/fsconfine.c in sandbox mode: no escape through "..", symlinks or
 * races, and /proc, /sys, /dev are off limits.
 *
 * Identity: as_root = 0 acts as the sandbox user (uid/gid 1000): the
 * operation runs in a forked child with fsuid/fsgid 1000 and no groups, so
 * the kernel applies that user's permissions and whatever it creates is
 * owned by 1000.  as_root = 1 acts as root and creates root-owned files.
 * Reads (read, list, stat, tar_get) are done as root, like the backend's
 * other backends do through their agents.  The sandboxes share the host's
 * user namespace, so uid 1000 inside is uid 1000 here. */
#include "local.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsconfine.h"
#include "util.h"

#define SANDBOX_UID 1000
#define SANDBOX_GID 1000

enum fop_kind { FOP_WRITE, FOP_MKDIR, FOP_REMOVE, FOP_MOVE, FOP_TAR_PUT };

struct fop {
	enum fop_kind kind;
	const struct sbx_fsc *c;
	const char *path, *to;
	const void *data;
	size_t len;
	unsigned mode;
	int recursive;
	int fd;
	struct sbx_tar_extract_opts xo;
};

/* A file put creates the folders above the file (0755, owned by whoever
 * writes), as the docker backend's does (mkdir -p of the parent). */
static int write_file_p(struct fop *o, struct sbx_err *err)
{
	const char *slash = strrchr(o->path, '/');
	if (slash && slash != o->path) {
		SBX_AUTOFREE char *dir = strndup(o->path, (size_t)(slash - o->path));
		if (!dir || sbx_fsc_mkdir(o->c, dir, 0755, err) < 0)
			return dir ? -1 : sbx_fail(err, SBX_INTERNAL, "file_write", "out of memory");
	}
	return sbx_fsc_write(o->c, o->path, o->data, o->len, o->mode, err);
}

static int fop_run(void *ctx, struct sbx_err *err)
{
	struct fop *o = ctx;
	switch (o->kind) {
	case FOP_WRITE: return write_file_p(o, err);
	case FOP_MKDIR: return sbx_fsc_mkdir(o->c, o->path, o->mode, err);
	case FOP_REMOVE: return sbx_fsc_remove(o->c, o->path, o->recursive, err);
	case FOP_MOVE: return sbx_fsc_move(o->c, o->path, o->to, err);
	case FOP_TAR_PUT: return sbx_fsc_tar_put(o->c, o->path, o->fd, &o->xo, err);
	}
	return sbx_fail(err, SBX_INTERNAL, "files", "unknown operation");
}

/* The sandbox's root, confined.  Defence in depth against a recycled init
 * pid: /proc/<pid>/root of some host process would be the host's own "/",
 * and everything below would then be "inside": refuse that outright. */
static int open_root(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_fsc *c,
		     struct sbx_err *err)
{
	int rootfd = local_sb_rootfd(b, sb, err);
	if (rootfd < 0)
		return -1;
	struct stat a, h;
	if (fstat(rootfd, &a) < 0 || stat("/", &h) < 0 ||
	    (a.st_dev == h.st_dev && a.st_ino == h.st_ino)) {
		close(rootfd);
		return sbx_fail(err, SBX_UNAVAILABLE, "files",
				"sandbox %s: its root is not where it should be (init gone?)", sb->id);
	}
	if (sbx_fsc_init(c, rootfd, SBX_FSC_DENY_SPECIAL, err) < 0) {
		close(rootfd);
		return -1;
	}
	return rootfd;
}

/* Open the sandbox's root (resuming it), confine, and run the operation
 * with the right identity.  Activity is stamped before (by rootfd) and
 * after, so a long copy keeps the idle timer away. */
static int run(struct sbx_backend *b, struct sbx_sandbox *sb, struct fop *o, int as_root,
	       struct sbx_err *err)
{
	struct sbx_fsc c;
	SBX_AUTOCLOSE int rootfd = open_root(b, sb, &c, err);
	if (rootfd < 0)
		return -1;
	o->c = &c;
	int rc = as_root ? fop_run(o, err)
			 : sbx_fsc_as_user(SANDBOX_UID, SANDBOX_GID, fop_run, o, err);
	local_sb_touch(b, sb->id);
	return rc;
}

int local_file_write(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     const void *data, size_t len, unsigned mode, int as_root, struct sbx_err *err)
{
	struct fop o = {.kind = FOP_WRITE, .path = path, .data = data, .len = len, .mode = mode};
	return run(b, sb, &o, as_root, err);
}

int local_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    size_t max, char **data, size_t *len, struct sbx_err *err)
{
	struct sbx_fsc c;
	SBX_AUTOCLOSE int rootfd = open_root(b, sb, &c, err);
	if (rootfd < 0)
		return -1;
	return sbx_fsc_read(&c, path, max, data, len, err);
}

int local_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    struct sbx_dirent **out, size_t *n, struct sbx_err *err)
{
	struct sbx_fsc c;
	SBX_AUTOCLOSE int rootfd = open_root(b, sb, &c, err);
	if (rootfd < 0)
		return -1;
	return sbx_fsc_list(&c, path, out, n, err);
}

int local_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    struct sbx_dirent *out, struct sbx_err *err)
{
	struct sbx_fsc c;
	SBX_AUTOCLOSE int rootfd = open_root(b, sb, &c, err);
	if (rootfd < 0)
		return -1;
	return sbx_fsc_stat(&c, path, out, err);
}

int local_file_mkdir(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		     unsigned mode, int as_root, struct sbx_err *err)
{
	struct fop o = {.kind = FOP_MKDIR, .path = path, .mode = mode};
	return run(b, sb, &o, as_root, err);
}

int local_file_remove(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		      int recursive, int as_root, struct sbx_err *err)
{
	struct fop o = {.kind = FOP_REMOVE, .path = path, .recursive = recursive};
	return run(b, sb, &o, as_root, err);
}

int local_file_move(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
		    const char *to, int as_root, struct sbx_err *err)
{
	struct fop o = {.kind = FOP_MOVE, .path = from, .to = to};
	return run(b, sb, &o, as_root, err);
}

/* Extraction keeps the archive's modes; owners are not taken from the
 * archive: entries belong to whoever extracts (root, or 1000 in the child). */
int local_tar_put(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		  int as_root, struct sbx_err *err)
{
	struct fop o = {
		.kind = FOP_TAR_PUT, .path = dir, .fd = fd,
		.xo = {.keep_owner = 0, .force_uid = -1, .force_gid = -1},
	};
	return run(b, sb, &o, as_root, err);
}

int local_tar_get(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		  struct sbx_err *err)
{
	struct sbx_fsc c;
	SBX_AUTOCLOSE int rootfd = open_root(b, sb, &c, err);
	if (rootfd < 0)
		return -1;
	int rc = sbx_fsc_tar_get(&c, path, fd, err);
	local_sb_touch(b, sb->id);
	return rc;
}
