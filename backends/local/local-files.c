/* local-files.c - the local backend's session filesystem: the file_* and
 * tar_* entries of its vtable.
 *
 * Every operation works on the sandbox's root as its own processes see it
 * (local_sb_rootfd: /proc/<init>/root, the merged overlay with the
 * sandbox's /proc, /sys, /dev mounted inside), which also resumes a paused
 * sandbox first: touching files is activity, like exec.  Paths are confined
 * by common/files/fsconfine.c in sandbox mode: no escape through "..", symlinks or
 * races, and /proc, /sys, /dev are off limits.
 *
 * Identity: as_root = 0 acts as the sandbox user (uid/gid 1000): the
 * operation runs in a forked child with fsuid/fsgid 1000 and no groups, so
 * the kernel applies that user's permissions and whatever it creates is
 * owned by 1000.  as_root = 1 acts as root and creates root-owned files.
 * Reads (read, list, stat, tar_get) take the same flag: as uid 1000 the
 * kernel refuses what that user may not read, so a symlink the sandbox
 * planted (x -> /etc/shadow, confined to the sandbox's own root) does not
 * hand its root-only files to the sandbox user.  A read in the child sends
 * its result back over a pipe (the bytes; a listing as JSON).  The
 * sandboxes share the host's user namespace, so uid 1000 inside is uid
 * 1000 here. */
#include "local-files.h"

#include "local-sb.h"
#include "local-state.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doc.h"
#include "fsconfine.h"
#include "util.h"

#define SANDBOX_UID 1000
#define SANDBOX_GID 1000

enum fop_kind {
	FOP_WRITE, FOP_MKDIR, FOP_REMOVE, FOP_MOVE, FOP_TAR_PUT,
	FOP_READ, FOP_LIST, FOP_STAT, FOP_TAR_GET,     /* results go to fd */
};

struct fop {
	enum fop_kind kind;
	const struct sbx_fsc *c;
	const char *path, *to;
	const void *data;
	size_t len;
	unsigned mode;
	int recursive;
	int fd;
	size_t max;
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

static json_object *dirent_to_json(const struct sbx_dirent *e)
{
	json_object *j = json_object_new_object();
	sbx_json_set_str(j, "name", e->name);
	sbx_json_set_str(j, "path", e->path);
	sbx_json_set_int(j, "type", e->type);
	sbx_json_set_int(j, "size", e->size);
	sbx_json_set_int(j, "mtime", e->mtime);
	sbx_json_set_int(j, "mode", e->mode);
	sbx_json_set_int(j, "uid", e->uid);
	sbx_json_set_int(j, "gid", e->gid);
	if (e->link_target)
		sbx_json_set_str(j, "link", e->link_target);
	return j;
}

static void dirent_from_json(json_object *j, struct sbx_dirent *e)
{
	memset(e, 0, sizeof(*e));
	e->name = sbx_xstrdup(sbx_json_str(j, "name") ? sbx_json_str(j, "name") : "");
	e->path = sbx_xstrdup(sbx_json_str(j, "path") ? sbx_json_str(j, "path") : "");
	e->type = (enum sbx_ftype)sbx_json_int(j, "type", 0);
	e->size = sbx_json_int(j, "size", 0);
	e->mtime = sbx_json_int(j, "mtime", 0);
	e->mode = (unsigned)sbx_json_int(j, "mode", 0);
	e->uid = (unsigned)sbx_json_int(j, "uid", 0);
	e->gid = (unsigned)sbx_json_int(j, "gid", 0);
	if (sbx_json_str(j, "link"))
		e->link_target = sbx_xstrdup(sbx_json_str(j, "link"));
}

/* The reads, writing their result to o->fd: file bytes, or a JSON array
 * of entries. */
static int fop_read(struct fop *o, struct sbx_err *err)
{
	struct sbx_dirent *v = NULL, one;
	size_t n = 0;
	switch (o->kind) {
	case FOP_READ: {
		SBX_AUTOFREE char *data = NULL;
		size_t len;
		if (sbx_fsc_read(o->c, o->path, o->max, &data, &len, err) < 0)
			return -1;
		if (sbx_write_all(o->fd, data, len) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "file_read", "pipe");
		return 0;
	}
	case FOP_TAR_GET:
		return sbx_fsc_tar_get(o->c, o->path, o->fd, err);
	case FOP_LIST:
		if (sbx_fsc_list(o->c, o->path, &v, &n, err) < 0)
			return -1;
		break;
	default:
		if (sbx_fsc_stat(o->c, o->path, &one, err) < 0)
			return -1;
		v = sbx_xmalloc(sizeof(*v));
		v[0] = one;
		n = 1;
		break;
	}
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, dirent_to_json(&v[i]));
	sbx_dirents_free(v, n);
	const char *t = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN);
	int rc = sbx_write_all(o->fd, t, strlen(t));
	json_object_put(a);
	return rc < 0 ? sbx_fail_errno(err, SBX_INTERNAL, "files", "pipe") : 0;
}

static int fop_run(void *ctx, struct sbx_err *err)
{
	struct fop *o = ctx;
	switch (o->kind) {
	case FOP_READ: case FOP_LIST: case FOP_STAT: case FOP_TAR_GET:
		return fop_read(o, err);
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

/* Run read `o` with the right identity, its result coming back over a
 * pipe into *out (NUL-terminated; at most cap bytes, more is
 * invalid_request).  The read runs in a child (with uid 1000's identity,
 * or root's for as_root) while this process drains the pipe. */
static int run_read(struct sbx_backend *b, struct sbx_sandbox *sb, struct fop *o, int as_root,
		    size_t cap, char **out, size_t *outlen, struct sbx_err *err)
{
	struct sbx_fsc c;
	SBX_AUTOCLOSE int rootfd = open_root(b, sb, &c, err);
	if (rootfd < 0)
		return -1;
	o->c = &c;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "files", "pipe");
	SBX_AUTOCLOSE int rfd = p[0];
	o->fd = p[1];
	struct sbx_fsc_child ch;
	if (sbx_fsc_child_start(&ch, as_root ? (uid_t)-1 : SANDBOX_UID,
				as_root ? (gid_t)-1 : SANDBOX_GID, fop_run, o, err) < 0) {
		close(p[1]);
		return -1;
	}
	close(p[1]);
	struct sbx_err rerr = {0};
	int rrc = sbx_read_all_fd(rfd, cap, out, outlen, &rerr);
	close(rfd);
	rfd = -1;
	int rc = sbx_fsc_child_wait(&ch, err);
	local_sb_touch(b, sb->id);
	if (rc == 0 && rrc < 0) {
		*err = rerr;
		rc = -1;
	}
	if (rc < 0) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* A read returning entries: the child's JSON array parsed back. */
static int read_entries(struct sbx_backend *b, struct sbx_sandbox *sb, struct fop *o,
			int as_root, struct sbx_dirent **out, size_t *n, struct sbx_err *err)
{
	SBX_AUTOFREE char *text = NULL;
	size_t len;
	*out = NULL;
	*n = 0;
	if (run_read(b, sb, o, as_root, (size_t)1 << 30, &text, &len, err) < 0)
		return -1;
	json_object *a = json_tokener_parse(text);
	if (!a || !json_object_is_type(a, json_type_array)) {
		json_object_put(a);
		return sbx_fail(err, SBX_INTERNAL, "files", "malformed listing from the reader");
	}
	size_t cnt = json_object_array_length(a);
	struct sbx_dirent *v = sbx_xcalloc(cnt ? cnt : 1, sizeof(*v));
	for (size_t i = 0; i < cnt; i++)
		dirent_from_json(json_object_array_get_idx(a, i), &v[i]);
	json_object_put(a);
	*out = v;
	*n = cnt;
	return 0;
}

int local_file_read(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    size_t max, int as_root, char **data, size_t *len, struct sbx_err *err)
{
	struct fop o = {.kind = FOP_READ, .path = path, .max = max};
	*data = NULL;
	*len = 0;
	/* The reader enforces max itself; the pipe's cap only backs it up. */
	return run_read(b, sb, &o, as_root, max ? max + 1 : (size_t)-1 / 2, data, len, err);
}

int local_file_list(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int as_root, struct sbx_dirent **out, size_t *n, struct sbx_err *err)
{
	struct fop o = {.kind = FOP_LIST, .path = path};
	return read_entries(b, sb, &o, as_root, out, n, err);
}

int local_file_stat(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		    int as_root, struct sbx_dirent *out, struct sbx_err *err)
{
	struct fop o = {.kind = FOP_STAT, .path = path};
	struct sbx_dirent *v;
	size_t n;
	memset(out, 0, sizeof(*out));
	if (read_entries(b, sb, &o, as_root, &v, &n, err) < 0)
		return -1;
	if (n != 1) {
		sbx_dirents_free(v, n);
		return sbx_fail(err, SBX_INTERNAL, "file_stat", "malformed answer from the reader");
	}
	*out = v[0];
	free(v);
	return 0;
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
		  int as_root, struct sbx_err *err)
{
	struct fop o = {.kind = FOP_TAR_GET, .path = path, .fd = fd};
	return run(b, sb, &o, as_root, err);
}
