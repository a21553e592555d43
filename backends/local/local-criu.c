/* local-criu.c - whether CRIU works on this host (contract in
 * local-criu.h).
 *
 * The cache, <dir>/criu-check, is two lines: the key ("boot=<boot id>
 * criu=<dev>:<ino>:<size>:<mtime ns>") and the verdict ("ok", or "fail "
 * and the reason).  A file whose key differs, or that is missing or
 * malformed, is asked again and replaced. */
#include "local-criu.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define CHECK_MS 30000          /* `criu check` takes well under a second */
#define OUT_MAX 8192            /* of its output we keep the head */
#define WHY_MAX 300

/* The criu binary: the first on the caller's PATH, else in the sbin
 * folders (root's PATH may lack them).  Fills `path` (cap bytes) and `st`;
 * 0, or -1 when there is none. */
static int criu_find(char *path, size_t cap, struct stat *st)
{
	const char *env = getenv("PATH");
	char *list = sbx_xasprintf("%s:/usr/sbin:/sbin:/usr/local/sbin", env && *env ? env : "/usr/bin:/bin");
	int rc = -1;
	for (char *save = NULL, *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (*d != '/')
			continue;       /* a relative PATH entry names nothing stable */
		snprintf(path, cap, "%s/criu", d);
		if (stat(path, st) == 0 && S_ISREG(st->st_mode) && access(path, X_OK) == 0) {
			rc = 0;
			break;
		}
	}
	free(list);
	return rc;
}

/* The line of `out` that says why: the first "Error" line, else the last
 * non-empty one; into why (WHY_MAX), control bytes made spaces. */
static void criu_why(const char *out, char *why)
{
	const char *line = NULL, *last = NULL;
	for (const char *p = out; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n) {
			last = p;
			if (!line && memmem(p, n, "Error", 5))
				line = p;
		}
		p += n + (e ? 1 : 0);
	}
	if (!line)
		line = last;
	size_t i = 0;
	for (; line && line[i] && line[i] != '\n' && i < WHY_MAX - 1; i++)
		why[i] = (unsigned char)line[i] < 0x20 ? ' ' : line[i];
	why[i] = '\0';
	if (!i)
		snprintf(why, WHY_MAX, "no output");
}

/* Run `criu check`: its environment is PATH alone, its output (stdout
 * and stderr) read up to OUT_MAX, killed after CHECK_MS.  Returns 1 when
 * it passed, 0 when it failed (why filled), -1 when it could not be run
 * (err). */
static int criu_run_check(const char *criu, char *why, struct sbx_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "criu check", "pipe");
	pid_t c = fork();
	if (c < 0) {
		close(p[0]);
		close(p[1]);
		return sbx_fail_errno(err, SBX_INTERNAL, "criu check", "fork");
	}
	if (c == 0) {
		int nul = open("/dev/null", O_RDONLY);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
			_exit(127);
		close_range(3, ~0U, 0);     /* nothing of the caller's but stdio */
		static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
		char *const argv[] = {(char *)criu, "check", NULL};
		execve(criu, argv, envp);
		_exit(127);
	}
	close(p[1]);
	char *out = sbx_xmalloc(OUT_MAX + 1);
	size_t len = 0;
	int timed_out = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = CHECK_MS - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int r = left > 0 ? poll(&pf, 1, (int)left) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			timed_out = 1;
			kill(c, SIGKILL);
			break;
		}
		char buf[1024];
		ssize_t n = read(p[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		size_t k = (size_t)n < OUT_MAX - len ? (size_t)n : OUT_MAX - len;
		memcpy(out + len, buf, k);   /* the head is kept, the rest drained */
		len += k;
	}
	close(p[0]);
	out[len] = '\0';
	int st = 0;
	while (waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	int ok = !timed_out && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (timed_out)
		snprintf(why, WHY_MAX, "did not finish in %d s", CHECK_MS / 1000);
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && !len)
		snprintf(why, WHY_MAX, "could not be run");
	else if (!ok)
		criu_why(out, why);
	free(out);
	return ok;
}

int local_criu_check(const char *dir, struct sbx_err *err)
{
	char criu[4200];
	struct stat st;
	if (criu_find(criu, sizeof(criu), &st) < 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "hibernate",
				"CRIU is not installed on this host (Debian's criu; docs/local.md, Hibernate)");
	char boot[64] = "";
	SBX_AUTOFREE char *b = NULL;
	size_t blen;
	struct sbx_err e = {0};
	if (sbx_read_file("/proc/sys/kernel/random/boot_id", 64, &b, &blen, &e) == 0)
		snprintf(boot, sizeof(boot), "%s", sbx_trim(b));
	char key[256];
	snprintf(key, sizeof(key), "boot=%s criu=%llu:%llu:%lld:%lld%09ld", boot,
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
		 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	SBX_AUTOFREE char *cache = sbx_xasprintf("%s/criu-check", dir);
	SBX_AUTOFREE char *old = NULL;
	size_t olen;
	char why[WHY_MAX] = "";
	int ok = -1;
	if (sbx_read_file(cache, 1024, &old, &olen, &e) == 0) {
		char *nl = strchr(old, '\n');
		if (nl && (size_t)(nl - old) == strlen(key) && memcmp(old, key, strlen(key)) == 0) {
			char *v = nl + 1, *end = strchr(v, '\n');
			if (end)
				*end = '\0';
			if (strcmp(v, "ok") == 0)
				ok = 1;
			else if (sbx_str_starts(v, "fail ")) {
				ok = 0;
				snprintf(why, sizeof(why), "%s", v + 5);
			}
		}
	}
	if (ok < 0) {
		ok = criu_run_check(criu, why, err);
		if (ok < 0)
			return -1;
		SBX_AUTOFREE char *doc = sbx_xasprintf("%s\n%s%s\n", key, ok ? "ok" : "fail ", ok ? "" : why);
		/* Into the backend's folder only where it exists already: asking
		 * for caps makes no state folder. */
		sbx_err_clear(&e);
		(void)sbx_write_file_atomic(cache, doc, strlen(doc), 0600, SBX_WRITE_NOSYNC, &e);
	}
	if (!ok)
		return sbx_fail(err, SBX_UNSUPPORTED, "hibernate", "`%s check` fails on this host: %s",
				criu, why);
	return 0;
}
