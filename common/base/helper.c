/* helper.c - see helper.h. */
#include "helper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/wait.h>

#define READY_MS 10000

void sbx_helper_detach(void)
{
	setsid();
	if (fork() != 0)
		_exit(0);
	int nul = open("/dev/null", O_RDWR);
	dup2(nul, 0);
	dup2(nul, 1);
	dup2(nul, 2);
	if (nul > 2)
		close(nul);
}

/* In the child: keep only the two descriptors (moved to 3 and up, past
 * stdio) and run the program. */
static __attribute__((noreturn)) void run(int exe, int ready, int in, const char **argv,
					  char fd_slot[16])
{
	if (in >= 0 && dup2(in, 0) < 0)
		_exit(127);
	int rfd = fcntl(ready, F_DUPFD, 3);     /* without O_CLOEXEC: the helper writes it */
	int efd = fcntl(exe, F_DUPFD, 3);
	if (rfd < 0 || efd < 0)
		_exit(127);
	int lo = rfd < efd ? rfd : efd, hi = rfd < efd ? efd : rfd;
	if (lo > 3)
		close_range(3, (unsigned)lo - 1, 0);
	if (hi > lo + 1)
		close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
	close_range((unsigned)hi + 1, ~0U, 0);
	fcntl(efd, F_SETFD, FD_CLOEXEC);
	snprintf(fd_slot, 16, "%d", rfd);
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	fexecve(efd, (char *const *)argv, envp);
	_exit(127);
}

int sbx_helper_start(int exe, const char **argv, char fd_slot[16],
		     void (*detach)(void *), void *arg, char *why, size_t cap)
{
	return sbx_helper_start_in(exe, argv, fd_slot, -1, detach, arg, why, cap);
}

int sbx_helper_start_in(int exe, const char **argv, char fd_slot[16], int in,
			void (*detach)(void *), void *arg, char *why, size_t cap)
{
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) < 0)
		return -1;
	pid_t c = fork();
	if (c < 0) {
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	if (c == 0) {
		detach(arg);
		run(exe, ready[1], in, argv, fd_slot);
	}
	close(ready[1]);
	while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
		;
	struct pollfd pf = {.fd = ready[0], .events = POLLIN};
	ssize_t n = cap > 1 && poll(&pf, 1, READY_MS) > 0 ? read(ready[0], why, cap - 1) : -1;
	close(ready[0]);
	if (n <= 0) {
		if (cap)
			why[0] = '\0';
		return SBX_HELPER_SILENT;
	}
	why[n] = '\0';
	return why[0] == 'R' ? SBX_HELPER_READY : SBX_HELPER_FAILED;
}

int sbx_helper_memfd(const char *text)
{
	int fd = memfd_create("sbx-helper-in", MFD_CLOEXEC);
	size_t n = strlen(text), off = 0;
	while (fd >= 0 && off < n) {
		ssize_t w = write(fd, text + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	if (fd >= 0 && lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}
