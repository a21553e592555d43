/* util.h - small things every module uses: scoped cleanup, time, durations,
 * random tokens, whole-file reads.  No policy lives here. */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>

#include "err.h"

void sbx_freep(void *p);
void sbx_closep(int *fd);
void sbx_fclosep(FILE **f);
#define SBX_AUTOFREE __attribute__((cleanup(sbx_freep)))
#define SBX_AUTOCLOSE __attribute__((cleanup(sbx_closep)))
#define SBX_AUTOFCLOSE __attribute__((cleanup(sbx_fclosep)))

#define SBX_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Allocation failures abort: there is no useful recovery in a CLI, and an
 * unchecked NULL is worse.  These are the only functions that may abort. */
void *sbx_xmalloc(size_t n);
void *sbx_xcalloc(size_t n, size_t m);
void *sbx_xrealloc(void *p, size_t n);
char *sbx_xstrdup(const char *s);
char *sbx_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int64_t sbx_now_ms(void);          /* CLOCK_REALTIME, milliseconds */
int64_t sbx_mono_ms(void);         /* CLOCK_MONOTONIC, milliseconds */
/* Sleep `ms` milliseconds whole (a signal does not cut it short); <= 0
 * returns at once.  The one way the library sleeps. */
void sbx_sleep_ms(int64_t ms);
/* Wait until `ready(ctx)` says so: it is called at once, then every
 * `step_ms` until `timeout_ms` have passed on the monotonic clock, and a
 * last time at the deadline (so a condition that became true during the
 * last sleep is seen).  Returns the first non-zero value of `ready` (a
 * negative one stops the wait too: a failure, the caller's to say what),
 * or 0 when the time ran out. */
int sbx_poll_until(int64_t timeout_ms, int64_t step_ms, int (*ready)(void *ctx), void *ctx);
/* "2026-11-29T08:30:00Z" for a unix time in seconds; buf >= 21. */
void sbx_time_iso(int64_t unix_s, char *buf, size_t len);
/* Inverse of sbx_time_iso; -1 when malformed. */
int64_t sbx_time_parse_iso(const char *s);

/* "1500ms", "10s", "5m", "2h", "1d", or a bare number of seconds.
 * Returns 0 and sets *ms, or -1 with an invalid_request error. */
int sbx_parse_duration_ms(const char *s, int64_t *ms, struct sbx_err *err);
/* $name as a duration in milliseconds (sbx_parse_duration_ms; with
 * bare_ms a bare number is milliseconds, not seconds): dflt when it is
 * unset, malformed or below min. */
int64_t sbx_env_ms(const char *name, int bare_ms, int64_t min, int64_t dflt);
/* "512M", "2G", "1048576" -> bytes. */
int sbx_parse_size(const char *s, int64_t *bytes, struct sbx_err *err);

/* `n` random bytes from getrandom(2) as lowercase hex into buf (2n+1). */
int sbx_random_hex(char *buf, size_t nbytes, struct sbx_err *err);

/* Read a whole file (at most `max` bytes; more is invalid_request).
 * *out is NUL-terminated; *len excludes the NUL. */
int sbx_read_file(const char *path, size_t max, char **out, size_t *len,
		  struct sbx_err *err);
/* Replace `path` by a file holding `data` with `mode`: written to a
 * temporary beside it (same folder, so the same filesystem), fsync'd, then
 * rename(2)d over it, so that a reader sees the old file or the new one
 * whole, never a torn one, whatever crashes.  SBX_WRITE_NOSYNC skips the
 * fsync (a disk flush), for files whose meaning no power loss outlives
 * (they describe processes, which die with the host): a crash of the
 * writer still leaves the old file or the new one, a power loss may leave
 * an empty one.  On failure the temporary is removed and `path` is as it
 * was.  An existing `path` that is neither a file nor a link (a device, a
 * FIFO, a folder) is refused (conflict), never replaced.  The one atomic writer: every tmp + rename goes through it. */
#define SBX_WRITE_NOSYNC 1u
int sbx_write_file_atomic(const char *path, const void *data, size_t len,
			  unsigned mode, unsigned flags, struct sbx_err *err);
/* mkdir -p with `mode` for the directories it creates. */
int sbx_mkdir_p(const char *path, unsigned mode, struct sbx_err *err);
/* rm -rf that never crosses a mount point and never follows symlinks, in
 * a bounded number of descriptors however deep the tree. */
int sbx_rm_rf(const char *path, struct sbx_err *err);

/* Read all of fd until EOF (at most max bytes; beyond -> invalid_request). */
int sbx_read_all_fd(int fd, size_t max, char **out, size_t *len, struct sbx_err *err);
/* write(2) until done, retrying EINTR. 0 or -1 (errno set). */
int sbx_write_all(int fd, const void *buf, size_t len);

/* Strict UTF-8: shortest forms only, no surrogates, nothing above
 * U+10FFFF.  NUL bytes are valid UTF-8 here; callers that hand the bytes on
 * as C strings check for them separately. */
int sbx_utf8_valid(const char *s, size_t n);

/* The value of a hex digit (either case), -1 for anything else. */
int sbx_hexval(char c);

/* Standard base64 (with padding) of data, NUL-terminated, *outlen (may
 * be NULL) its length. */
char *sbx_base64(const void *data, size_t len, size_t *outlen);
/* Decode the base64 (standard alphabet, '=' padding) text in[0..n) into
 * out (room for n / 4 * 3 bytes).  Returns the decoded length, or -1 if
 * the text is not base64 (bad character, length not a multiple of 4,
 * padding anywhere but the end). */
long sbx_base64_decode(unsigned char *out, const char *in, size_t n);

/* Trim ASCII whitespace at both ends, in place; returns s. */
char *sbx_trim(char *s);
bool sbx_str_starts(const char *s, const char *prefix);

#endif
