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
	char *name;              /* relative path, no leading "./" and no trailing
	                          * "/" ("." for the archive's root); the reader
	                          * keeps a leading "/" so that extraction can
	                          * refuse it */
	enum sbx_tar_type type;
	unsigned mode;           /* permission bits */
	unsigned uid, gid;
	int64_t size;            /* data bytes (0 for everything but files) */
	int64_t mtime;
	char *link;              /* symlink / hardlink target */
	/* Added: SBX_TAR_OTHER details.  typeflag is the raw ustar type ('3'
	 * char device, '4' block device, '6' FIFO, or what the archive said);
	 * the reader fills it for every entry, the writer uses it only for
	 * SBX_TAR_OTHER. */
	char typeflag;
	unsigned devmajor, devminor;
};
void sbx_tar_entry_clear(struct sbx_tar_entry *e);

struct sbx_tar_writer {
	int fd;
	int64_t written;
	int64_t data_end;        /* added: where the current entry's data must end */
};
void sbx_tar_writer_init(struct sbx_tar_writer *w, int fd);
/* Header for e (pax header first when a name/link is too long for ustar). */
int sbx_tar_write_header(struct sbx_tar_writer *w, const struct sbx_tar_entry *e,
			 struct sbx_err *err);
/* Exactly e->size bytes of data in total, then padding by write_header/end.
 * Writing more than e->size, or starting the next header (or the end)
 * before all of it was written, is refused (internal): the archive would be
 * corrupt.  write_pad pads whatever is missing to the 512-byte boundary
 * (its size argument is not needed and ignored). */
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
	int done;                /* 1 once the end of the archive was read */
	long long entries;       /* added: entries returned so far (for messages) */
	int64_t header_bytes;    /* header blocks and extended records read so
	                          * far (what the archive spends on metadata) */
	int64_t header_max;      /* > 0: sbx_tar_next fails with `capacity`
	                          * before header_bytes would pass it (set it
	                          * after sbx_tar_reader_init) */
};
void sbx_tar_reader_init(struct sbx_tar_reader *r, int fd);
/* 1 and *e / 0 at the end of the archive / -1 (invalid_request on a
 * malformed header, with the entry number). */
int sbx_tar_next(struct sbx_tar_reader *r, struct sbx_tar_entry *e, struct sbx_err *err);
/* Read up to n bytes of the current entry's data; 0 at its end. */
ssize_t sbx_tar_read_data(struct sbx_tar_reader *r, void *buf, size_t n, struct sbx_err *err);

struct sbx_tar_extract_opts {
	int keep_owner;          /* chown to the archive's uid/gid (root only) */
	int force_uid, force_gid;/* chown everything to this owner instead; only
	                          * when either is > 0, so a zeroed struct means
	                          * "no forcing" (a -1 leaves that id as is) */
	int allow_devices;       /* added: device nodes other than overlay
	                          * whiteouts (0:0 char) are refused unless set;
	                          * any device node needs root */
	int drop_devices;        /* skip device nodes other than whiteouts
	                          * instead of refusing them (wins over
	                          * allow_devices) */
	int64_t max_bytes;       /* > 0: the archive as a whole may add up to
	                          * this much: the regular files' sizes plus
	                          * every header block and extended record
	                          * (so entries, directories and long names
	                          * count, not only file bytes); the entry
	                          * that would pass it fails with `capacity`
	                          * before anything of it is made */
};
/* Extract the archive on fd below rootfd (confined, see above).  o may be
 * NULL (defaults).  Symlinks in an entry's parent path are followed as if
 * rootfd were "/" (an entry "x/passwd" after "x -> /etc" lands in
 * <root>/etc/passwd); the final component is never followed: an existing
 * file, symlink or FIFO there is replaced (unlink + O_EXCL create), so no
 * entry writes through a link planted by an earlier one.  Hardlink targets
 * must name something already inside the root.  Missing parent
 * directories are created (0755).  Directory modes and mtimes are applied
 * at the end (a read-only directory can still receive its entries).
 * Runs of zeros in file data are left as holes (a sparse file stays
 * sparse, and a file of zeros costs no disk).
 * -1 on the first failure (entries before it stay extracted): invalid_request
 * for a hostile or malformed entry (naming it), unsupported for an entry
 * type we do not extract (sparse files), internal for I/O errors. */
int sbx_tar_extract(int fd, int rootfd, const struct sbx_tar_extract_opts *o,
		    struct sbx_err *err);

#endif
