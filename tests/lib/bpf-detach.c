/* bpf-detach - detach the device program from a cgroup2 directory.
 *
 *   bpf-detach CGROUP_DIR
 *
 * A test tool run as root on the host: it takes away the v2 half of a
 * sandbox's device allow-list so that a test can show the v1 half alone
 * (tests/boundary-devices.bats).  Exits 0 when a program was detached. */
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bpf-detach CGROUP_DIR\n");
		return 64;
	}
	int fd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.target_fd = (unsigned)fd;
	a.attach_type = BPF_CGROUP_DEVICE;
	if (syscall(SYS_bpf, BPF_PROG_DETACH, &a, sizeof(a)) < 0) {
		perror("BPF_PROG_DETACH");
		return 1;
	}
	return 0;
}
