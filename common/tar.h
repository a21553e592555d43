/* tar.h - our own tar reader and writer (POSIX ustar + pax extended headers
 * for long names and link targets), used by sbx-fs trees, template import
 * and the Docker archive API.
 *
 * Extraction is confined: every entry is resolved inside a root directory
 * fd with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), entries whose
 * names are absolute or contain ".." components are refused, and symlinks
 * inside the archive cannot be used to write outside the root. */
#ifndef SBX_TAR_H
#define SBX_TAR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

enum sbx_tar_type { SBX_TAR_FILE, SBX_TAR_DIR, SBX_TAR_SYMLINK, SBX_TAR_HARDLINK, SBX_TAR_OTHER };

struct sbx_tar_entry {
	char *name;              /* relative path, no leading "/" or "./" */
	enum sbx_tar_type type;
	unsigned mode;           /* permission bits */
	unsigned uid, gid;
	int64_t size;
	int64_t mtime;
	char *link;              /* symlink / hardlink target */
};
void sbx_tar_entry_clear(struct sbx_tar_entry *e);

struct sbx_tar_writer { int fd; int64_t written; };
void sbx_tar_writer_init(struct sbx_tar_writer *w, int fd);
/* Header for e (pax header first when a name/link is too long for ustar). */
int sbx_tar_write_header(struct sbx_tar_writer *w, const struct sbx_tar_entry *e,
			 struct sbx_err *err);
/* Exactly e->size bytes of data in total, then padding by write_header/end. */
int sbx_tar_write_data(struct sbx_tar_writer *w, const void *buf, size_t n, struct sbx_err *err);
int sbx_tar_write_pad(struct sbx_tar_writer *w, int64_t size, struct sbx_err *err);
int sbx_tar_write_end(struct sbx_tar_writer *w, struct sbx_err *err);
/* Write the host tree at `dirfd` (not following symlinks) with names
 * prefixed by `prefix` ("" for none). */
int sbx_tar_write_tree(struct sbx_tar_writer *w, int dirfd, const char *prefix,
		       struct sbx_err *err);

struct sbx_tar_reader {
	int fd;
	int64_t remaining;       /* data bytes left in the current entry */
	int64_t pad;
	int done;
};
void sbx_tar_reader_init(struct sbx_tar_reader *r, int fd);
/* 1 and *e / 0 at the end of the archive / -1 (invalid_request on a
 * malformed header, with the entry number). */
int sbx_tar_next(struct sbx_tar_reader *r, struct sbx_tar_entry *e, struct sbx_err *err);
/* Read up to n bytes of the current entry's data; 0 at its end. */
ssize_t sbx_tar_read_data(struct sbx_tar_reader *r, void *buf, size_t n, struct sbx_err *err);

struct sbx_tar_extract_opts {
	int keep_owner;          /* chown to the archive's uid/gid (root only) */
	int force_uid, force_gid;/* >= 0: chown everything to this owner instead */
};
/* Extract the archive on fd below rootfd (confined, see above). */
int sbx_tar_extract(int fd, int rootfd, const struct sbx_tar_extract_opts *o,
		    struct sbx_err *err);

#endif
