/* tests/bench/cgroup-attach.c - what putting a new process into a cgroup2
 * group costs, the two ways (for tests/bench/vm.sh; not a test):
 *
 *   write     fork, then write the child's pid into <cg>/cgroup.procs
 *             (what sbx did; the global cgroup_threadgroup_rwsem for writing)
 *   clone3    clone3(CLONE_INTO_CGROUP) (what local-clone.c does)
 *   fork      a plain fork, the floor both include
 *
 * Rounds alternate the three, GAP ms apart (a quiet spell, like real calls
 * have between them); each child exits at once.  Prints one markdown row
 * per way: median and max µs.  Usage: cgroup-attach CGROUP_DIR ROUNDS GAP_MS */
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One way, once: µs from before the fork until the child is in the group. */
static double once(int way, int procs, int dirfd)
{
	double t0 = now_us();
	pid_t c;
	if (way == 1) {
		struct clone_args a;
		memset(&a, 0, sizeof(a));
		a.flags = CLONE_INTO_CGROUP;
		a.exit_signal = SIGCHLD;
		a.cgroup = (uint64_t)dirfd;
		c = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	} else {
		c = fork();
	}
	if (c == 0)
		_exit(0);
	if (c < 0) {
		perror("cgroup-attach: fork");
		exit(1);
	}
	if (way == 0) {
		char b[32];
		int n = snprintf(b, sizeof(b), "%d", (int)c);
		/* The child may be gone already: the lock was taken all the same. */
		(void)!pwrite(procs, b, (size_t)n, 0);
	}
	double d = now_us() - t0;
	waitpid(c, NULL, 0);
	return d;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int rounds = atoi(argv[2]), gap = atoi(argv[3]);
	char p[4096];
	snprintf(p, sizeof(p), "%s/cgroup.procs", argv[1]);
	int procs = open(p, O_WRONLY | O_CLOEXEC), dirfd = open(argv[1], O_PATH | O_DIRECTORY);
	if (procs < 0 || dirfd < 0 || rounds <= 0) {
		perror("cgroup-attach");
		return 1;
	}
	static const char *const name[] = {"fork + write cgroup.procs", "clone3(CLONE_INTO_CGROUP)",
					   "fork alone (the floor)"};
	double *t[3];
	for (int w = 0; w < 3; w++)
		t[w] = calloc((size_t)rounds, sizeof(double));
	for (int r = 0; r < rounds; r++)
		for (int w = 0; w < 3; w++) {
			usleep((useconds_t)gap * 1000);
			t[w][r] = once(w, procs, dirfd);
		}
	for (int w = 0; w < 3; w++) {
		qsort(t[w], (size_t)rounds, sizeof(double), cmp);
		printf("| %s | %d ms | %.0f | %.0f |\n", name[w], gap, t[w][rounds / 2], t[w][rounds - 1]);
	}
	return 0;
}
