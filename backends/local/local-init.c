/* local-init.c - start the init of a local sandbox (the library side).
 *
 * The init is its own program, sbx-init (backends/local/sbx-init.c), installed
 * beside the programs as <prefix>/libexec/sbx/sbx-init and found from the
 * running program: /proc/self/exe's directory, then ../libexec/sbx/ (the
 * same layout in the build tree: build/bin and build/libexec/sbx).  There
 * is no override: whatever runs as a sandbox's PID 1 with the sandbox's
 * host fds comes from the same installation as the program that asked.
 *
 * local_init_start forks, and the child execs sbx-init at once: nothing
 * but dup2/close/exec runs between the fork and the exec, so no copy of
 * the creator's memory (which may hold a Redis password or an API key)
 * lives on.  sbx-init gets a fixed argv, an empty environment, /dev/null
 * as stdio, the status pipe and its configuration as a memfd (the
 * contract is local-init.h): nothing of the creator's is in its
 * /proc/<pid>/cmdline or environ.
 *
 * Promise: when local_init_start returns 0 the sandbox is ready for exec
 * and *pid is its init (host pid).  On failure the init is gone or going;
 * remove cleans what is left. */
#include "local-init.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "err.h"
#include "local-clone.h"
#include "util.h"

/* See local-init.h. */
int local_libexec_open(const char *name, const char *op, struct sbx_err *err)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return sbx_fail_errno(err, SBX_INTERNAL, op, "readlink /proc/self/exe");
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return sbx_fail(err, SBX_INTERNAL, op, "odd /proc/self/exe: %s", self);
	*slash = '\0';
	SBX_AUTOFREE char *p = sbx_xasprintf("%s/../libexec/sbx/%s", self, name);
	int fd = open(p, O_PATH | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR)) {
		int e = fd < 0 ? errno : ENOEXEC;
		if (fd >= 0)
			close(fd);
		errno = e;
		return sbx_fail_errno(err, SBX_UNAVAILABLE, op,
				      "the sandbox %s %s (installed with sbx) is missing",
				      strcmp(name, "sbx-init") == 0 ? "init" : "helper", p);
	}
	return fd;
}

static void cfg_add(char **buf, size_t *len, size_t *cap, const char *key, const char *val)
{
	size_t need = strlen(key) + 1 + strlen(val) + 1;
	if (*len + need > *cap) {
		*cap = (*len + need) * 2;
		*buf = sbx_xrealloc(*buf, *cap);
	}
	*len += (size_t)sprintf(*buf + *len, "%s=%s", key, val) + 1;
}

/* The configuration of local-init.h in a memfd, read from offset 0;
 * `joined`: the launcher is born in the cgroup2 group. */
static int write_config(const struct local_init_cfg *c, int joined, struct sbx_err *err)
{
	SBX_AUTOFREE char *buf = NULL;
	size_t len = 0, cap = 0;
	cfg_add(&buf, &len, &cap, SBX_INIT_K_ID, c->id);
	cfg_add(&buf, &len, &cap, SBX_INIT_K_DIR, c->dir);
	cfg_add(&buf, &len, &cap, SBX_INIT_K_OVERLAY, c->overlay_opts);
	if (c->host_view)
		cfg_add(&buf, &len, &cap, SBX_INIT_K_HOST_VIEW, c->host_view);
	const char *shared[][2] = {
		{SBX_INIT_K_SYSFS, c->sysfs}, {SBX_INIT_K_EMPTY, c->empty}, {SBX_INIT_K_DEV, c->dev},
	};
	for (size_t i = 0; i < SBX_ARRAY_LEN(shared); i++)
		if (shared[i][1])
			cfg_add(&buf, &len, &cap, shared[i][0], shared[i][1]);
	for (size_t i = 0; i < c->nvolumes; i++) {
		const struct sbx_vol_mount *v = &c->volumes[i];
		if (strchr(v->path, '\n') || strchr(v->host_dir, '\n'))
			return sbx_fail(err, SBX_INVALID_REQUEST, "create",
					"a volume's path holds a newline");
		SBX_AUTOFREE char *rec = sbx_xasprintf("%c%s\n%s", v->read_only ? 'r' : 'w',
						       v->path, v->host_dir);
		cfg_add(&buf, &len, &cap, SBX_INIT_K_VOLUME, rec);
	}
	if (c->shm_bytes > 0) {
		char v[32];
		snprintf(v, sizeof(v), "%lld", (long long)c->shm_bytes);
		cfg_add(&buf, &len, &cap, SBX_INIT_K_SHM_SIZE, v);
	}
	/* The cgroup2 dir first: the init's freeze, events and kill files. */
	if (!c->cg[0])
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "no cgroup2 hierarchy is mounted");
	for (int i = 0; i < c->ncg; i++)
		if (c->cg[i])
			cfg_add(&buf, &len, &cap, SBX_INIT_K_CG, c->cg[i]);
	if (joined)
		cfg_add(&buf, &len, &cap, SBX_INIT_K_CG_JOINED, "1");
	if (len >= SBX_INIT_CONFIG_MAX)
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "the init's configuration is too long");
	int fd = memfd_create("sbx-init-config", MFD_CLOEXEC);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "memfd_create");
	if (sbx_write_all(fd, buf, len) < 0) {
		close(fd);
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "write the init's configuration");
	}
	return fd;
}

/* In the forked child: put the fds where local-init.h says and exec.
 * Only dup/close/exec here (async-signal-safe), and no return. */
static __attribute__((noreturn)) void exec_init(int exe, int status, int cfg, int nul)
{
	static char *const argv[] = {"sbx-init", NULL};
	static char *const envp[] = {NULL};
	/* Out of the way of 0..4 first, then into place (dup2 clears
	 * CLOEXEC: these are inherited). */
	int s = fcntl(status, F_DUPFD_CLOEXEC, 10), c = fcntl(cfg, F_DUPFD_CLOEXEC, 10);
	int n = fcntl(nul, F_DUPFD_CLOEXEC, 10), e = fcntl(exe, F_DUPFD_CLOEXEC, 10);
	if (s < 0 || c < 0 || n < 0 || e < 0 || dup2(n, 0) < 0 || dup2(n, 1) < 0 ||
	    dup2(n, 2) < 0 || dup2(s, SBX_INIT_FD_STATUS) < 0 || dup2(c, SBX_INIT_FD_CONFIG) < 0)
		goto fail;
	/* Everything else goes; the exe fd is CLOEXEC, so it goes too. */
	if (e > SBX_INIT_FD_CONFIG + 1)
		syscall(SYS_close_range, SBX_INIT_FD_CONFIG + 1, e - 1, 0);
	syscall(SYS_close_range, e + 1, ~0U, 0);
	fexecve(e, argv, envp);
fail:;
	char msg[64];
	int len = snprintf(msg, sizeof(msg), "E %d exec sbx-init\n", errno);
	(void)!write(s >= 0 ? s : status, msg, (size_t)len);
	_exit(127);
}

int local_init_start(const struct local_init_cfg *c, pid_t *pid, struct sbx_err *err)
{
	*pid = 0;
	SBX_AUTOCLOSE int exe = local_libexec_open("sbx-init", "create", err);
	if (exe < 0)
		return -1;
	SBX_AUTOCLOSE int cfg = write_config(c, 1, err);
	if (cfg < 0)
		return -1;
	SBX_AUTOCLOSE int cgdir = open(c->cg[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cgdir < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "open %s", c->cg[0]);
	SBX_AUTOCLOSE int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "open /dev/null");
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "pipe");
	/* Born in the cgroup2 group (local-clone.h); where the kernel cannot,
	 * a fork, and the launcher moves itself. */
	pid_t l = local_clone_into_cgroup(cgdir);
	if (l < 0) {
		close(cfg);
		if ((cfg = write_config(c, 0, err)) < 0) {
			close(pfd[0]);
			close(pfd[1]);
			return -1;
		}
		l = fork();
	}
	if (l < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return sbx_fail_errno(err, SBX_INTERNAL, "create", "fork");
	}
	if (l == 0)
		exec_init(exe, pfd[1], cfg, nul);
	close(pfd[1]);
	/* Read until EOF: the launcher says "P pid", the init says "K" (ready)
	 * or "E errno what".  Both ends close when they exit or get ready. */
	char buf[1024];
	size_t len = 0;
	int64_t deadline = sbx_mono_ms() + 30000;
	for (;;) {
		struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
		int64_t left = deadline - sbx_mono_ms();
		if (left <= 0)
			break;
		int r = poll(&pf, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		ssize_t n = read(pfd[0], buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len >= sizeof(buf) - 1)
			break;
	}
	close(pfd[0]);
	buf[len] = '\0';
	waitpid(l, NULL, 0);
	int ready = 0, e = 0;
	char what[256] = "";
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		int v;
		if (sscanf(line, "P %d", &v) == 1)
			*pid = v;
		else if (strcmp(line, "K") == 0)
			ready = 1;
		else if (sscanf(line, "E %d %255[^\n]", &e, what) >= 1)
			ready = 0;
	}
	if (ready && *pid > 0)
		return 0;
	if (what[0])
		return sbx_fail(err, SBX_INTERNAL, "create", "sandbox init: %s: %s", what,
				strerror(e));
	return sbx_fail(err, SBX_INTERNAL, "create", "sandbox init did not report ready");
}
