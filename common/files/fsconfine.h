/* fsconfine.h - file operations confined below a root directory fd.
 *
 * A `struct sbx_fsc` wraps a directory fd that stands for "/" (a sandbox's
 * root as its processes see it, or a host folder we extract into).  Every
 * path given to these functions is absolute *inside* that root and is
 * resolved by the kernel with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS):
 * "/" and ".." stop at the root, absolute symlinks are re-rooted, magic
 * links (/proc/PID/root, /proc/self/fd/N) are refused, and a rename racing
 * with the walk cannot make it escape (the kernel retries or fails with
 * EAGAIN, which is retried here).  Nothing is ever resolved twice from a
 * string: an operation resolves the *parent* once into an fd and acts on
 * the final component with *at() calls on that fd, not following a symlink
 * there (O_NOFOLLOW / AT_SYMLINK_NOFOLLOW), so a symlink planted as the last
 * component (x -> /etc/passwd) is replaced or refused, never written through.
 *
 * Paths must be absolute, free of NUL and of ".." components (refused with
 * invalid_request so that a typo never silently clamps at the root).
 *
 * In sandbox mode (SBX_FSC_DENY_SPECIAL) the sandbox's /proc, /sys and /dev
 * and everything below them, plus any pseudo filesystem (proc, sysfs,
 * cgroup, devpts, debugfs, ...) wherever it is mounted, are refused as
 * targets: writing /proc/sys/... from the host side would change the host.
 * File data is only ever read from or written to regular files (a device
 * node or FIFO planted where a file was expected is refused, without being
 * opened for I/O).  Recursive removal never crosses a mount point.
 *
 * Identity: these functions act with the caller's credentials.
 * sbx_fsc_as_user() runs one of them in a forked child with fsuid/fsgid set
 * (supplementary groups dropped), so a non-root caller's permissions apply
 * and files it creates are owned by that user. */
#ifndef SBX_FSCONFINE_H
#define SBX_FSCONFINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "err.h"
#include "tar.h"

enum {
	SBX_FSC_DENY_SPECIAL = 1 << 0,   /* refuse /proc, /sys, /dev, pseudo fs */
};

struct sbx_fsc_id { dev_t dev; ino_t ino; };

struct sbx_fsc {
	int rootfd;                      /* borrowed; O_PATH is fine */
	unsigned flags;
	struct sbx_fsc_id root;
	struct sbx_fsc_id deny[3];       /* /proc /sys /dev when present */
	size_t ndeny;
};

/* Set up confinement on rootfd (which must stay open while c is used). */
int sbx_fsc_init(struct sbx_fsc *c, int rootfd, unsigned flags, struct sbx_err *err);

/* Resolve `path` to an fd opened with `oflags` (O_PATH | O_DIRECTORY ...).
 * The last component is followed only when `follow` is set.  The result
 * is checked against the deny rules.  Returns the fd or -1. */
int sbx_fsc_open(const struct sbx_fsc *c, const char *path, int oflags, int follow,
		 struct sbx_err *err);
/* Resolve the parent directory of `path` (followed, confined, checked) and
 * copy the final component into leaf (NAME_MAX + 1 bytes).  "/" itself has
 * no parent: invalid_request.  Returns an O_PATH directory fd or -1. */
int sbx_fsc_parent(const struct sbx_fsc *c, const char *path, char *leaf,
		   struct sbx_err *err);

/* Create or truncate the regular file `path` with `data`.  A new file gets
 * `mode` (& 07777, umask not applied); an existing file keeps its owner and
 * gets `mode` too when the caller may change it (else it keeps its own).  A symlink, directory, device or FIFO at `path` is
 * refused (never followed or opened).  The data is written to the file in
 * place; a crash midway leaves it truncated or partial. */
int sbx_fsc_write(const struct sbx_fsc *c, const char *path, const void *data, size_t len,
		  unsigned mode, struct sbx_err *err);
/* The same, but atomic: the data goes to an unnamed file (O_TMPFILE; a
 * named ".sbx-put.*" one where the file system has none) in `path`'s
 * directory, is synced, and is renamed over `path`.  A reader sees the old
 * file or the new one whole; a crash while writing leaves `path` as it was
 * and, with O_TMPFILE, no other name either.  The new file is the
 * caller's (an existing file's owner is not kept). */
int sbx_fsc_write_atomic(const struct sbx_fsc *c, const char *path, const void *data,
			 size_t len, unsigned mode, struct sbx_err *err);
/* Read the regular file `path` (symlinks followed, confined).  More than
 * `max` bytes is invalid_request.  *data is NUL-terminated, caller frees. */
int sbx_fsc_read(const struct sbx_fsc *c, const char *path, size_t max, char **data,
		 size_t *len, struct sbx_err *err);
/* lstat-like: describe `path` itself (a symlink is reported, with its
 * target, not followed).  Fill *out (caller frees the strings, or use
 * sbx_dirents_free on an array). */
int sbx_fsc_stat(const struct sbx_fsc *c, const char *path, struct sbx_dirent *out,
		 struct sbx_err *err);
/* The entries of directory `path` (followed, confined), sorted by name,
 * without "." and "..".  A non-directory lists as itself (one entry). */
int sbx_fsc_list(const struct sbx_fsc *c, const char *path, struct sbx_dirent **out,
		 size_t *n, struct sbx_err *err);
/* mkdir -p: every missing directory is created with `mode`; an existing
 * directory (or symlink to one, inside the root) is success; an existing
 * non-directory is a conflict. */
int sbx_fsc_mkdir(const struct sbx_fsc *c, const char *path, unsigned mode,
		  struct sbx_err *err);
/* Remove `path` itself (a symlink is removed, not its target).  A
 * non-empty directory needs `recursive`; recursion never follows symlinks
 * and never crosses a mount point (a mount point found below is a conflict
 * error after the rest was removed).  Missing `path`: not_found. */
int sbx_fsc_remove(const struct sbx_fsc *c, const char *path, int recursive,
		   struct sbx_err *err);
/* rename(2) `from` to `to` within the root: the final components are not
 * followed; an existing file at `to` is replaced, a directory only when
 * empty.  Across mount points: invalid_request. */
int sbx_fsc_move(const struct sbx_fsc *c, const char *from, const char *to,
		 struct sbx_err *err);

/* Write `path` as a tar stream to outfd.  Names: the final component of
 * `path` is the top entry ("out", "out/a.txt", ...), as Docker's archive
 * API does; when `path` ends in "/." only the directory's contents are
 * written ("a.txt", ...).  Symlinks are stored, not followed; sockets,
 * FIFOs and devices are skipped, and so are denied mounts below `path`. */
int sbx_fsc_tar_get(const struct sbx_fsc *c, const char *path, int outfd,
		    struct sbx_err *err);
/* The same with adjustments to what is stored (not to the tree itself):
 * mode bits OR'ed in (files get them, directories get them plus the
 * matching x bits), and owner/group replaced when >= 0. */
struct sbx_fsc_tar_opts {
	unsigned mode_or;
	int uid, gid;
};
int sbx_fsc_tar_get_opts(const struct sbx_fsc *c, const char *path, int outfd,
			 const struct sbx_fsc_tar_opts *o, struct sbx_err *err);
/* Extract the tar stream on infd below directory `dir` (created like
 * sbx_fsc_mkdir when missing), confined to `dir` by sbx_tar_extract. */
int sbx_fsc_tar_put(const struct sbx_fsc *c, const char *dir, int infd,
		    const struct sbx_tar_extract_opts *o, struct sbx_err *err);

/* Run fn(ctx, err) in a forked child whose filesystem identity is
 * uid/gid (setgroups(0), setfsgid, setfsuid: the filesystem capabilities
 * drop with it), and return what it returned, with its error copied back
 * over a pipe.  uid (uid_t)-1 keeps the caller's identity (just a child,
 * e.g. to feed a pipe while the parent reads it).  fn's side effects on
 * memory are lost: only its return value and error come back.  A child
 * that dies without reporting is internal. */
int sbx_fsc_as_user(uid_t uid, gid_t gid, int (*fn)(void *ctx, struct sbx_err *err),
		    void *ctx, struct sbx_err *err);
/* The same in two halves, so the parent can work while the child runs:
 * start forks (0 or -1), wait reaps and returns fn's result. */
struct sbx_fsc_child { pid_t pid; int fd; uid_t uid; };
int sbx_fsc_child_start(struct sbx_fsc_child *ch, uid_t uid, gid_t gid,
			int (*fn)(void *ctx, struct sbx_err *err), void *ctx,
			struct sbx_err *err);
int sbx_fsc_child_wait(struct sbx_fsc_child *ch, struct sbx_err *err);

/* errno -> kind for file operations (ENOENT not_found, EACCES/EPERM/EROFS
 * invalid_request, EEXIST/ENOTEMPTY/EBUSY conflict, ENOSPC capacity...). */
enum sbx_kind sbx_fsc_errno_kind(int e);

#endif
