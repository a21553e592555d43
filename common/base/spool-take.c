/* spool-take.c - the takers' side of the spool of spool.h (a program
 * with Redis takes the lines whole, by rename) and the writer's
 * configuration a create leaves beside it. */
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "util.h"

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
		int lk = sbx_spool_lock(dir);
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

/* audit.taken, its lines written, is emptied first and then renamed to
 * the writer's spare (never a spare with lines: they would be written
 * twice); where either step fails it is removed. */
void sbx_spool_done(const char *dir, int lockfd)
{
	SBX_AUTOFREE char *taken = sbx_xasprintf("%s/" SBX_SPOOL_TAKEN, dir);
	SBX_AUTOFREE char *spare = sbx_xasprintf("%s/" SBX_SPOOL_SPARE, dir);
	if (truncate(taken, 0) < 0 || renameat2(AT_FDCWD, taken, AT_FDCWD, spare, RENAME_NOREPLACE) < 0)
		unlink(taken);
	if (lockfd >= 0)
		close(lockfd);
}
