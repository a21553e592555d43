/* sbx_fds_send / sbx_fds_recv (fdpass.h): descriptors cross with their
 * bytes, arrive O_CLOEXEC, and a receiver asking for fewer than came
 * keeps only those: the rest are closed, not left open unseen (a worker
 * or a supervisor fed a malformed message would otherwise leak them). */
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fdpass.h"
#include "tap.h"

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n - 1;   /* the DIR's own */
}

int main(void)
{
	int sv[2], p[2];
	ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && pipe(p) == 0, "a socket pair and a pipe");
	int before = open_fds();

	char b = 'x', got = 0;
	struct iovec iov = {.iov_base = &b, .iov_len = 1};
	int three[3] = {p[0], p[1], p[0]};
	is_int(sbx_fds_send(sv[0], &iov, 1, three, 3, 0), 1, "one byte and three descriptors sent");
	struct iovec riov = {.iov_base = &got, .iov_len = 1};
	int kept = -1;
	size_t n = 9;
	is_int(sbx_fds_recv(sv[1], &riov, 1, &kept, 1, &n, 0), 1, "the byte received");
	is_int(got, 'x', "its value");
	is_int(n, 1, "one descriptor kept when one was asked for");
	ok(kept >= 0 && (fcntl(kept, F_GETFD) & FD_CLOEXEC), "it is open and O_CLOEXEC");
	is_int(open_fds(), before + 1, "the two others were closed");
	close(kept);

	is_int(sbx_fds_send(sv[0], &iov, 1, NULL, 0, 0), 1, "a byte with no descriptor");
	is_int(sbx_fds_recv(sv[1], &riov, 1, &kept, 1, &n, 0), 1, "received");
	is_int(n, 0, "no descriptor");

	int many[SBX_FDPASS_MAX + 1] = {0};
	is_int(sbx_fds_send(sv[0], &iov, 1, many, SBX_FDPASS_MAX + 1, 0), -1, "more than the most refused");
	close(sv[0]);
	is_int(sbx_fds_recv(sv[1], &riov, 1, &kept, 1, &n, 0), 0, "EOF is 0");
	return tap_done();
}
