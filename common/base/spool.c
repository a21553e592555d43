/* spool.c - the writer's side of the bounded NDJSON spool of spool.h:
 * append under a lock, the spool's size, the writer's bound.  libc only
 * (no allocation, no libsbx): sbx-procd, static, links this file too;
 * the takers' side is spool-take.c. */
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int sbx_spool_lock(const char *dir)
{
	char p[PATH_MAX];
	if ((size_t)snprintf(p, sizeof(p), "%s/" SBX_SPOOL_LOCK, dir) >= sizeof(p))
		return -1;
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int64_t sbx_spool_size(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;
	if ((size_t)snprintf(p, sizeof(p), "%s/" SBX_SPOOL_FILE, dir) >= sizeof(p))
		return 0;
	return stat(p, &st) == 0 ? (int64_t)st.st_size : 0;
}

int64_t sbx_spool_conf_max(const char *dir)
{
	char p[PATH_MAX], buf[512];
	if ((size_t)snprintf(p, sizeof(p), "%s/" SBX_SPOOL_CONF, dir) >= sizeof(p))
		return 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	const char *m = strstr(buf, "\"spool_max\":");
	long long v = m ? strtoll(m + strlen("\"spool_max\":"), NULL, 10) : 0;
	return v > 0 ? (int64_t)v : 0;
}

long sbx_spool_append(const char *dir, const char *lines, size_t len, int64_t max, int64_t *size)
{
	*size = 0;
	int lk = sbx_spool_lock(dir);
	if (lk < 0)
		return -1;
	char p[PATH_MAX];
	int fd = -1;
	struct stat st;
	long rc = -1;
	char spare[PATH_MAX];
	if ((size_t)snprintf(p, sizeof(p), "%s/" SBX_SPOOL_FILE, dir) >= sizeof(p) ||
	    (size_t)snprintf(spare, sizeof(spare), "%s/" SBX_SPOOL_SPARE, dir) >= sizeof(spare))
		goto out;
	/* No spool: a taker's emptied file, when there is one, becomes it
	 * (under the lock, as a taker's rename of the spool), else a new one. */
	if ((fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC)) < 0 && errno == ENOENT)
		(void)rename(spare, p);
	if ((fd < 0 && (fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) < 0) ||
	    fstat(fd, &st) < 0)
		goto out;
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
	for (size_t done = 0; done < fit;) {
		ssize_t w = write(fd, lines + done, fit - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto out;
		done += (size_t)w;
	}
	*size += (int64_t)fit;
	rc = (long)fit;
out:
	if (fd >= 0)
		close(fd);
	close(lk);
	return rc;
}
