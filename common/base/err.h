/* err.h - the one error value of sbx.
 *
 * Every fallible library call takes `struct sbx_err *err` last, fills it and
 * returns -1 (or NULL) on failure.  Nothing below main() prints or exits: an
 * error travels up untouched until a program's main turns it into a stderr
 * line, an error document and an exit status (see cli.h).
 *
 * Kinds are stable strings that appear in documents and are part of the
 * protocol (man sbx(7)).  Only not_found and terminal allow a session binding
 * to be replaced; every other kind keeps it, so a flaky network never causes
 * a rebuild. */
#ifndef SBX_ERR_H
#define SBX_ERR_H

#include <stdbool.h>

enum sbx_kind {
	SBX_OK = 0,
	SBX_NOT_FOUND,
	SBX_TERMINAL,
	SBX_AUTHENTICATION,
	SBX_INVALID_REQUEST,
	SBX_UNSUPPORTED,
	SBX_CONFLICT,
	SBX_CAPACITY,
	SBX_TIMEOUT,
	SBX_UNAVAILABLE,
	SBX_INTERNAL,
	SBX_FAILED,          /* a command ran and failed (sbx-exec --check) */
	SBX_KIND_COUNT
};

/* Exit statuses: one table for every program (documented in sbx(7)). */
enum {
	SBX_EXIT_OK = 0,
	SBX_EXIT_FAILED = 1,        /* the checked command failed */
	SBX_EXIT_USAGE = 64,
	SBX_EXIT_DATAERR = 65,      /* invalid_request */
	SBX_EXIT_NOINPUT = 66,      /* not_found, terminal */
	SBX_EXIT_UNAVAILABLE = 69,  /* unavailable, unsupported */
	SBX_EXIT_SOFTWARE = 70,     /* internal */
	SBX_EXIT_IOERR = 74,        /* stdout closed under us (quiet) */
	SBX_EXIT_TEMPFAIL = 75,     /* timeout, conflict, capacity, lock busy */
	SBX_EXIT_NOPERM = 77,       /* authentication */
	SBX_EXIT_CONFIG = 78,       /* configuration */
	SBX_EXIT_RAW_SELF = 125,    /* sbx-exec --raw: sbx itself failed */
};

struct sbx_err {
	enum sbx_kind kind;
	int http_status;     /* 0 when no HTTP exchange was involved */
	int exit_status;     /* 0 = derive from kind; else overrides (usage, config) */
	char op[64];         /* what was being done: "create", "exec", "redis"... */
	char msg[768];
};

/* Fill `err` and return -1.  `op` may be NULL. */
int sbx_fail(struct sbx_err *err, enum sbx_kind kind, const char *op,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Same, appending ": strerror(errno)" (errno is read before formatting).
 * ENOSPC and EDQUOT turn any kind into capacity. */
int sbx_fail_errno(struct sbx_err *err, enum sbx_kind kind, const char *op,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A configuration error: kind invalid_request, exit status 78. */
int sbx_fail_config(struct sbx_err *err, const char *op, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prefix the message with "what: " (context added on the way up). */
void sbx_err_prefix(struct sbx_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sbx_err_clear(struct sbx_err *err);

const char *sbx_kind_name(enum sbx_kind kind);
/* Returns the kind, or -1 for an unknown name. */
int sbx_kind_from_name(const char *name);
bool sbx_kind_retryable(enum sbx_kind kind);
/* The allow-list: only not_found and terminal may replace a binding. */
bool sbx_err_may_replace_binding(const struct sbx_err *err);
/* HTTP status -> kind (reference: httpErrorKind); op "create" maps 404 to
 * invalid_request (a missing template, not a missing sandbox). */
enum sbx_kind sbx_kind_from_http(const char *op, int status);
int sbx_kind_exit_status(enum sbx_kind kind);
int sbx_err_exit_status(const struct sbx_err *err);

#endif
