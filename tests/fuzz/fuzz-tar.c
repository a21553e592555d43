/* libFuzzer target for the tar reader and confined extractor (common/files/tar.c).
 *
 * Each input is an archive, fed through a memfd to sbx_tar_extract into a
 * fresh directory `root` inside a private temporary directory, confined
 * as every real caller does it (a directory fd as the root); the first
 * byte sometimes sets a small --max budget ('M' then one byte: 512 to
 * 131,072 bytes).  Properties checked beyond "no crash, no leak, no UB":
 *   - an error has one of the kinds the contract names (invalid_request,
 *     unsupported, capacity, internal) and a message without a newline;
 *   - nothing is made outside `root`: its parent holds `root` alone;
 *   - with a budget, the regular files made add up to no more than it.
 * The tree is removed after each input. */
// fuzz-sources: common/files/tar.c common/base/util.c common/base/err.c
// fuzz-max-len: 8192
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tar.h"
#include "util.h"

static char top[64];
static double file_bytes;     /* each inode once: a size over its links */

static int open_up(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)f;
	if (type == FTW_D)
		chmod(p, 0700);
	else if (type == FTW_F)
		file_bytes += (double)st->st_size / (double)(st->st_nlink ? st->st_nlink : 1);
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	remove(p);
	return 0;
}

static void rm_tree(const char *path)
{
	nftw(path, open_up, 64, FTW_PHYS);
	nftw(path, rm_one, 64, FTW_PHYS | FTW_DEPTH);
}

static void rm_top(void) { rmdir(top); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!*top) {
		snprintf(top, sizeof(top), "/tmp/fuzz-tar-XXXXXX");
		if (!mkdtemp(top))
			abort();
		atexit(rm_top);
	}
	int64_t max = 0;
	if (size >= 2 && data[0] == 'M') {
		max = 512 + (int64_t)data[1] * 512;
		data += 2;
		size -= 2;
	}
	char root[96];
	snprintf(root, sizeof(root), "%s/root", top);
	if (mkdir(root, 0755) < 0)
		abort();
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = memfd_create("fuzz-tar", MFD_CLOEXEC);
	if (rfd < 0 || fd < 0 || (size && sbx_write_all(fd, data, size) < 0))
		abort();
	lseek(fd, 0, SEEK_SET);
	struct sbx_tar_extract_opts o = {.force_uid = -1, .force_gid = -1, .max_bytes = max};
	struct sbx_err err = {0};
	int rc = sbx_tar_extract(fd, rfd, &o, &err);
	if (rc < 0) {
		if (err.kind != SBX_INVALID_REQUEST && err.kind != SBX_UNSUPPORTED &&
		    err.kind != SBX_CAPACITY && err.kind != SBX_INTERNAL) {
			fprintf(stderr, "unexpected kind %s: %s\n", sbx_kind_name(err.kind), err.msg);
			abort();
		}
		if (strchr(err.msg, '\n')) {
			fprintf(stderr, "a newline in the message: %s\n", err.msg);
			abort();
		}
	}
	close(fd);
	close(rfd);
	DIR *d = opendir(top);
	struct dirent *de;
	int others = 0;
	while (d && (de = readdir(d)))
		others += strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "root");
	if (d)
		closedir(d);
	if (others) {
		fprintf(stderr, "the archive made something outside the root\n");
		abort();
	}
	file_bytes = 0;
	nftw(root, open_up, 64, FTW_PHYS);
	if (max && file_bytes > (double)max + 0.5) {
		fprintf(stderr, "%.0f bytes of files for a budget of %lld\n", file_bytes, (long long)max);
		abort();
	}
	rm_tree(root);
	return 0;
}
