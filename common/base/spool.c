/* spool.c - the bounded NDJSON spool of spool.h: append under a lock,
 * take by rename. */
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static int lock_dir(const char *dir)
{
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/" SBX_SPOOL_LOCK, dir);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int sbx_spool_conf_write(const char *dir, int64_t maxlen, int required, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("%s/" SBX_SPOOL_CONF, dir);
	if (maxlen <= 0) {
		unlink(path);
		return 0;
	}
	int64_t max = maxlen > (16 << 20) / 512 ? (16 << 20) : maxlen * 512;
	if (max < 4096)
		max = 4096;
	SBX_AUTOFREE char *txt = sbx_xasprintf("{\"required\":%s,\"spool_max\":%lld}\n",
					       required ? "true" : "false", (long long)max);
	return sbx_write_file_atomic(path, txt, strlen(txt), 0600, 0, err);
}

int64_t sbx_spool_size(const char *dir)
{
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/" SBX_SPOOL_FILE, dir);
	struct stat st;
	return stat(p, &st) == 0 ? (int64_t)st.st_size : 0;
}

long sbx_spool_append(const char *dir, const char *lines, size_t len, int64_t max, int64_t *size)
{
	*size = 0;
	SBX_AUTOCLOSE int lk = lock_dir(dir);
	if (lk < 0)
		return -1;
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/" SBX_SPOOL_FILE, dir);
	SBX_AUTOCLOSE int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	*size = st.st_size;
	/* The longest run of whole lines that fits. */
	size_t fit = 0;
	for (const char *nl = lines; (nl = memchr(nl, '\n', len - (size_t)(nl - lines)));) {
		size_t end = (size_t)(nl - lines) + 1;
		if (st.st_size + (int64_t)end > max)
			break;
		fit = end;
		nl++;
		if (end == len)
			break;
	}
	if (fit && sbx_write_all(fd, lines, fit) < 0)
		return -1;
	*size += (int64_t)fit;
	return (long)fit;
}

int sbx_spool_take(const char *dir, int64_t max, char **text, size_t *len, int *lockfd,
		   struct sbx_err *err)
{
	*text = NULL, *len = 0, *lockfd = -1;
	SBX_AUTOFREE char *taken = sbx_xasprintf("%s/" SBX_SPOOL_TAKEN, dir);
	SBX_AUTOFREE char *spool = sbx_xasprintf("%s/" SBX_SPOOL_FILE, dir);
	/* The takers' lock is a second lock file, so a writer is never held
	 * up by a taker's Redis round trips, only by its rename. */
	SBX_AUTOFREE char *tl = sbx_xasprintf("%s/" SBX_SPOOL_LOCK ".take", dir);
	if (access(spool, F_OK) != 0 && access(taken, F_OK) != 0)
		return 0;       /* the common case: nothing spooled, no file made */
	int fd = open(tl, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;       /* no folder: no spool */
		return sbx_fail_errno(err, SBX_INTERNAL, "audit", "open %s", tl);
	}
	if (flock(fd, LOCK_EX) < 0) {
		close(fd);
		return sbx_fail_errno(err, SBX_INTERNAL, "audit", "flock %s", tl);
	}
	if (access(taken, F_OK) != 0) {
		int lk = lock_dir(dir);
		int rc = rename(spool, taken);
		int e = errno;
		if (lk >= 0)
			close(lk);
		if (rc < 0) {
			close(fd);
			if (e == ENOENT)
				return 0;
			errno = e;
			return sbx_fail_errno(err, SBX_INTERNAL, "audit", "rename %s", spool);
		}
	}
	if (sbx_read_file(taken, (size_t)max, text, len, err) < 0) {
		close(fd);
		return -1;
	}
	*lockfd = fd;
	return 0;
}

void sbx_spool_done(const char *dir, int lockfd)
{
	SBX_AUTOFREE char *taken = sbx_xasprintf("%s/" SBX_SPOOL_TAKEN, dir);
	unlink(taken);
	if (lockfd >= 0)
		close(lockfd);
}
