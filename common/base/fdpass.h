/* fdpass.h - file descriptors over a unix socket (SCM_RIGHTS).
 *
 * Header-only, libc only: the library and the static libexec programs
 * (sbx-procd, sbx-forkd), which link no libsbx, share it.  A receiver
 * keeps at most the descriptors it asked for and closes any others that
 * came, so a malformed or hostile message never leaves one open unseen;
 * received descriptors are O_CLOEXEC. */
#ifndef SBX_FDPASS_H
#define SBX_FDPASS_H

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define SBX_FDPASS_MAX 8

/* sendmsg of iov[niov] with fds[nfds] (nfds <= SBX_FDPASS_MAX; 0 sends
 * none), MSG_NOSIGNAL added, EINTR retried.  The bytes sent, or -1. */
static inline ssize_t sbx_fds_send(int sock, struct iovec *iov, size_t niov, const int *fds,
				   size_t nfds, int flags)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * SBX_FDPASS_MAX)];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = niov};
	if (nfds > SBX_FDPASS_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (nfds) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &m, flags | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

/* recvmsg into iov[niov] (flags | MSG_CMSG_CLOEXEC), EINTR retried; the
 * descriptors that came with it in fds, at most max (<= SBX_FDPASS_MAX),
 * *nfds how many; any more are closed.  The bytes read (0: EOF) or -1. */
static inline ssize_t sbx_fds_recv(int sock, struct iovec *iov, size_t niov, int *fds,
				   size_t max, size_t *nfds, int flags)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * SBX_FDPASS_MAX)];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = niov, .msg_control = u.b,
			   .msg_controllen = sizeof(u.b)};
	ssize_t n;
	*nfds = 0;
	do
		n = recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*nfds < max)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

#endif
