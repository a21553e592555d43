/* util.c - see util.h. */
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void sbx_freep(void *p) { free(*(void **)p); }
void sbx_closep(int *fd) { if (*fd >= 0) close(*fd); }
void sbx_fclosep(FILE **f) { if (*f) fclose(*f); }

static void *oom(void)
{
	static const char m[] = "sbx: out of memory\n";
	ssize_t r = write(2, m, sizeof(m) - 1);
	(void)r;
	abort();
}

void *sbx_xmalloc(size_t n) { void *p = malloc(n ? n : 1); return p ? p : oom(); }
void *sbx_xcalloc(size_t n, size_t m) { void *p = calloc(n ? n : 1, m ? m : 1); return p ? p : oom(); }
void *sbx_xrealloc(void *p, size_t n) { p = realloc(p, n ? n : 1); return p ? p : oom(); }
char *sbx_xstrdup(const char *s) { char *p = strdup(s ? s : ""); return p ? p : oom(); }

char *sbx_xasprintf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? oom() : s;
}

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
int64_t sbx_now_ms(void) { return clock_ms(CLOCK_REALTIME); }
int64_t sbx_mono_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

void sbx_sleep_ms(int64_t ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int sbx_poll_until(int64_t timeout_ms, int64_t step_ms, int (*ready)(void *ctx), void *ctx)
{
	int64_t deadline = sbx_mono_ms() + timeout_ms;
	for (;;) {
		int r = ready(ctx);
		int64_t left = deadline - sbx_mono_ms();
		if (r != 0 || left <= 0)
			return r;
		sbx_sleep_ms(step_ms < left ? step_ms : left);
	}
}

void sbx_time_iso(int64_t unix_s, char *buf, size_t len)
{
	time_t t = (time_t)unix_s;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int64_t sbx_time_parse_iso(const char *s)
{
	struct tm tm = {0};
	const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!end)
		return -1;
	while (*end == '.' || isdigit((unsigned char)*end))
		end++;
	if (*end != 'Z' || end[1])
		return -1;
	return (int64_t)timegm(&tm);
}

static int parse_scaled(const char *s, const char *what, const char *const units[],
			const int64_t scales[], size_t nunits, int64_t dflt_scale,
			int64_t *out, struct sbx_err *err)
{
	char *end;
	if (!s || !*s || !isdigit((unsigned char)*s))
		return sbx_fail(err, SBX_INVALID_REQUEST, "parse", "invalid %s '%s'", what, s ? s : "");
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return sbx_fail(err, SBX_INVALID_REQUEST, "parse", "invalid %s '%s'", what, s);
	int64_t scale = dflt_scale;
	if (*end) {
		size_t i;
		for (i = 0; i < nunits; i++)
			if (strcmp(end, units[i]) == 0)
				break;
		if (i == nunits)
			return sbx_fail(err, SBX_INVALID_REQUEST, "parse", "invalid %s '%s'", what, s);
		scale = scales[i];
	}
	if (v > (unsigned long long)(INT64_MAX / scale))
		return sbx_fail(err, SBX_INVALID_REQUEST, "parse", "%s '%s' is too large", what, s);
	*out = (int64_t)v * scale;
	return 0;
}

int sbx_parse_duration_ms(const char *s, int64_t *ms, struct sbx_err *err)
{
	static const char *const u[] = {"ms", "s", "m", "h", "d"};
	static const int64_t sc[] = {1, 1000, 60000, 3600000, 86400000};
	return parse_scaled(s, "duration", u, sc, SBX_ARRAY_LEN(u), 1000, ms, err);
}

int64_t sbx_env_ms(const char *name, int bare_ms, int64_t min, int64_t dflt)
{
	const char *e = getenv(name);
	struct sbx_err ignored = {0};
	int64_t ms;
	if (!e || !*e)
		return dflt;
	char *end;
	long long v = strtoll(e, &end, 10);
	if (bare_ms && end != e && !*end)
		ms = v;
	else if (sbx_parse_duration_ms(e, &ms, &ignored) < 0)
		return dflt;
	return ms >= min ? ms : dflt;
}

char *sbx_base64(const void *data, size_t len, size_t *outlen)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	char *out = sbx_xmalloc(4 * ((len + 2) / 3) + 1), *o = out;
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		if (i + 1 < len)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = abc[v >> 18 & 63];
		*o++ = abc[v >> 12 & 63];
		*o++ = i + 1 < len ? abc[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? abc[v & 63] : '=';
	}
	*o = '\0';
	if (outlen)
		*outlen = (size_t)(o - out);
	return out;
}

static int b64_value(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

long sbx_base64_decode(unsigned char *out, const char *in, size_t n)
{
	if (n % 4)
		return -1;
	long len = 0;
	for (size_t i = 0; i < n; i += 4) {
		int last = i + 4 == n;
		int pads = last ? (in[n - 1] == '=') + (in[n - 2] == '=' && in[n - 1] == '=') : 0;
		uint32_t v = 0;
		for (int k = 0; k < 4; k++) {
			int d = k >= 4 - pads ? 0 : b64_value(in[i + k]);
			if (d < 0)
				return -1;
			v = v << 6 | (uint32_t)d;
		}
		out[len++] = v >> 16;
		if (pads < 2)
			out[len++] = v >> 8;
		if (pads < 1)
			out[len++] = v;
	}
	return len;
}

int sbx_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int sbx_parse_size(const char *s, int64_t *bytes, struct sbx_err *err)
{
	static const char *const u[] = {"K", "M", "G", "T", "k", "KiB", "MiB", "GiB"};
	static const int64_t sc[] = {1LL << 10, 1LL << 20, 1LL << 30, 1LL << 40,
				     1LL << 10, 1LL << 10, 1LL << 20, 1LL << 30};
	return parse_scaled(s, "size", u, sc, SBX_ARRAY_LEN(u), 1, bytes, err);
}

int sbx_random_hex(char *buf, size_t nbytes, struct sbx_err *err)
{
	unsigned char raw[64];
	if (nbytes > sizeof(raw))
		return sbx_fail(err, SBX_INTERNAL, "random", "too many random bytes requested");
	size_t got = 0;
	while (got < nbytes) {
		ssize_t r = getrandom(raw + got, nbytes - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return sbx_fail_errno(err, SBX_INTERNAL, "random", "getrandom");
		}
		got += (size_t)r;
	}
	for (size_t i = 0; i < nbytes; i++)
		sprintf(buf + 2 * i, "%02x", raw[i]);
	buf[2 * nbytes] = '\0';
	return 0;
}

int sbx_read_all_fd(int fd, size_t max, char **out, size_t *len, struct sbx_err *err)
{
	size_t cap = 4096, n = 0;
	char *buf = sbx_xmalloc(cap);
	for (;;) {
		if (n + 1 >= cap) {
			cap *= 2;
			buf = sbx_xrealloc(buf, cap);
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return sbx_fail_errno(err, SBX_INTERNAL, "read", "read");
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(buf);
			return sbx_fail(err, SBX_INVALID_REQUEST, "read",
					"input larger than %zu bytes", max);
		}
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int sbx_read_file(const char *path, size_t max, char **out, size_t *len,
		  struct sbx_err *err)
{
	SBX_AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail_errno(err, errno == ENOENT ? SBX_NOT_FOUND : SBX_INTERNAL,
				      "read", "%s", path);
	if (sbx_read_all_fd(fd, max, out, len, err) < 0) {
		sbx_err_prefix(err, "%s", path);
		return -1;
	}
	return 0;
}

int sbx_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int sbx_write_file_atomic(const char *path, const void *data, size_t len,
			  unsigned mode, unsigned flags, struct sbx_err *err)
{
	/* Only a file (or a link, which the rename replaces, never follows)
	 * is replaced: a rename over a device or a FIFO would take it off the
	 * host (`sbx-fs get SB /f /dev/null` unlinked the host's /dev/null),
	 * over a folder it fails later and less clearly. */
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		return sbx_fail(err, SBX_CONFLICT, "write",
				"%s exists and is not a regular file: not replaced", path);
	SBX_AUTOFREE char *tmp = sbx_xasprintf("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "write", "%s", tmp);
	int bad = sbx_write_all(fd, data, len) < 0 || (!(flags & SBX_WRITE_NOSYNC) && fsync(fd) < 0);
	int e = errno;
	if (close(fd) < 0 && !bad) {
		bad = 1;
		e = errno;
	}
	if (bad) {
		errno = e;
		sbx_fail_errno(err, SBX_INTERNAL, "write", "%s", tmp);
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) < 0) {
		sbx_fail_errno(err, SBX_INTERNAL, "write", "rename %s", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

int sbx_mkdir_p(const char *path, unsigned mode, struct sbx_err *err)
{
	SBX_AUTOFREE char *p = sbx_xstrdup(path);
	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, mode) < 0 && errno != EEXIST)
				return sbx_fail_errno(err, SBX_INTERNAL, "mkdir", "%s", p);
			*s = c;
			if (!c)
				break;
		}
	}
	return 0;
}

/* One directory of the walk below: its stream (NULL while closed to stay
 * within the descriptor budget), its identity, its name in its parent. */
struct rm_frame {
	DIR *d;
	dev_t dev;
	ino_t ino;
	char *name;
};

#define RM_MAX_OPEN 16

static void rm_frames_free(struct rm_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (f[i].d)
			closedir(f[i].d);
		free(f[i].name);
	}
	free(f);
}

/* Open directory `name` below `dirfd` as a frame: never through a symlink,
 * never onto another filesystem than `dev`. */
static int rm_open(int dirfd, const char *name, dev_t dev, struct rm_frame *fr,
		   struct sbx_err *err)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return sbx_fail_errno(err, SBX_INTERNAL, "rm", "%s", name);
	}
	if (st.st_dev != dev) {
		close(fd);
		return sbx_fail(err, SBX_INTERNAL, "rm", "%s is a mount point", name);
	}
	fr->d = fdopendir(fd);
	if (!fr->d) {
		close(fd);
		return sbx_fail_errno(err, SBX_INTERNAL, "rm", "%s", name);
	}
	fr->dev = st.st_dev;
	fr->ino = st.st_ino;
	fr->name = sbx_xstrdup(name);
	return 0;
}

/* Remove `name` below `at` and everything under it, depth first, with
 * at most RM_MAX_OPEN directories open however deep the tree is (a sandbox
 * can build a tree deeper than the descriptor limit).  Directories above
 * the open window are closed on the way down and reopened through ".." on
 * the way up; a reopened one must be the same inode as before, so a tree
 * moved under us fails the removal instead of redirecting it. */
static int rm_at(int at, const char *name, dev_t dev, struct sbx_err *err)
{
	struct stat st;
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : sbx_fail_errno(err, SBX_INTERNAL, "rm", "%s", name);
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(at, name, 0) < 0 && errno != ENOENT)
			return sbx_fail_errno(err, SBX_INTERNAL, "rm", "%s", name);
		return 0;
	}
	if (st.st_dev != dev)
		return sbx_fail(err, SBX_INTERNAL, "rm", "%s is a mount point", name);
	size_t cap = 16, depth = 0, lo = 0;     /* frames lo..depth are open */
	struct rm_frame *f = sbx_xcalloc(cap, sizeof(*f));
	if (rm_open(at, name, dev, &f[0], err) < 0) {
		free(f);
		return -1;
	}
	for (;;) {
		struct rm_frame *cur = &f[depth];
		int fd = dirfd(cur->d);
		errno = 0;
		struct dirent *e = readdir(cur->d);
		if (e) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno == ENOENT)
					continue;
				sbx_fail_errno(err, SBX_INTERNAL, "rm", "%s", e->d_name);
				break;
			}
			if (!S_ISDIR(st.st_mode)) {
				if (unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT) {
					sbx_fail_errno(err, SBX_INTERNAL, "rm", "%s", e->d_name);
					break;
				}
				continue;
			}
			if (depth + 1 == cap) {
				f = sbx_xrealloc(f, 2 * cap * sizeof(*f));
				memset(f + cap, 0, cap * sizeof(*f));
				cap *= 2;
			}
			if (rm_open(fd, e->d_name, dev, &f[depth + 1], err) < 0)
				break;
			depth++;
			if (depth - lo >= RM_MAX_OPEN) {
				closedir(f[lo].d);
				f[lo++].d = NULL;
			}
			continue;
		}
		if (errno) {
			sbx_fail_errno(err, SBX_INTERNAL, "rm", "readdir %s", cur->name);
			break;
		}
		/* cur is empty: remove it from its parent. */
		if (depth == 0) {
			closedir(cur->d);
			cur->d = NULL;
			rm_frames_free(f, 1);
			if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
				return sbx_fail_errno(err, SBX_INTERNAL, "rm", "%s", name);
			return 0;
		}
		struct rm_frame *up = &f[depth - 1];
		if (!up->d) {
			int pfd = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (pfd < 0 || fstat(pfd, &st) < 0 || st.st_dev != up->dev ||
			    st.st_ino != up->ino || !(up->d = fdopendir(pfd))) {
				if (pfd >= 0)
					close(pfd);
				sbx_fail(err, SBX_INTERNAL, "rm", "%s moved during removal", up->name);
				break;
			}
			lo--;
		}
		closedir(cur->d);
		cur->d = NULL;
		if (unlinkat(dirfd(up->d), cur->name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
			sbx_fail_errno(err, SBX_INTERNAL, "rm", "%s", cur->name);
			break;
		}
		free(cur->name);
		cur->name = NULL;
		depth--;
	}
	rm_frames_free(f, depth + 1);
	return -1;
}

int sbx_rm_rf(const char *path, struct sbx_err *err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : sbx_fail_errno(err, SBX_INTERNAL, "rm", "%s", path);
	return rm_at(AT_FDCWD, path, st.st_dev, err);
}

char *sbx_trim(char *s)
{
	char *e;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

bool sbx_str_starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Strict UTF-8: shortest form only, no surrogates, nothing above U+10FFFF. */
int sbx_utf8_valid(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		size_t len;
		uint32_t cp;
		if (c < 0x80) { i++; continue; }
		else if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; }
		else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; }
		else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; }
		else return 0;
		if (i + len > n)
			return 0;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}
