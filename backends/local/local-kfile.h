/* local-kfile.h - one small read or write of a kernel file (/proc,
 * cgroupfs), inline: sbx-init and sbx-procd link only libc and do the
 * same reads and writes as the backend. */
#ifndef SBX_LOCAL_KFILE_H
#define SBX_LOCAL_KFILE_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Read a small kernel file into buf (at most len - 1 bytes, one read: a
 * kernel file answers whole), NUL-terminated; 0, or -1 with errno. */
static inline int local_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Write `s` to a kernel file in one write (cgroup.procs, cgroup.freeze,
 * uid_map...); 0, or -1 with the write's errno. */
static inline int local_write_small(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n < 0 ? -1 : 0;
}

/* The pid (in our namespace) of the process a pidfd holds, from its
 * fdinfo; -1 when it has none here. */
static inline pid_t local_pidfd_pid(int pidfd)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	if (local_read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	const char *l = strstr(buf, "\nPid:");
	long v = l ? strtol(l + 5, NULL, 10) : -1;
	return v > 0 ? (pid_t)v : -1;
}

#endif
