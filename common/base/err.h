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
 * a rebuild.
 *
 * A kind says what the caller may do (retry, rebuild, give up); a reason
 * says which of the few failures that a caller tells apart this one is
 * (a read that met a folder, a pause of a paused sandbox...).  It is set
 * where the error is made, next to the message, and it is what callers
 * test: a message is for people and may change, a reason may not.
 * `errnum` is the errno of a failed system call (sbx_fail_errno), 0 when
 * none was involved.  Neither is part of the protocol (documents carry
 * the kind and the message). */
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

/* The failures that callers tell apart (see above).  Append only. */
enum sbx_reason {
	SBX_R_NONE = 0,
	SBX_R_IS_DIR,           /* a file operation met a folder */
	SBX_R_TOO_LARGE,        /* more bytes than the caller's limit */
	SBX_R_ALREADY_PAUSED,   /* a pause of a paused sandbox */
	SBX_R_NOT_PAUSED,       /* a resume of a running one (another resume won) */
	SBX_R_IN_PROGRESS,      /* the same change is already under way (a removal) */
	SBX_R_IN_USE,           /* a template or snapshot that sandboxes still use */
	SBX_R_NO_TEMPLATE,      /* a create named a template the server does not have */
	SBX_R_ENGINE_SETUP,     /* the engine as configured cannot start containers */
	SBX_R_STDOUT_GONE,      /* stdout closed under us: end quietly (no message) */
	SBX_R_QUOTA,            /* capacity: a tenant's quota (quota.h) is reached */
	SBX_R_COUNT
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
	enum sbx_reason reason;  /* SBX_R_NONE unless set where the error was made */
	int errnum;          /* errno of the failed system call, 0 if none */
	int http_status;     /* 0 when no HTTP exchange was involved */
	int exit_status;     /* 0 = derive from kind; else overrides (usage, config) */
	char op[64];         /* what was being done: "create", "exec", "redis"... */
	char msg[768];
};

/* Fill `err` and return -1.  `op` may be NULL. */
int sbx_fail(struct sbx_err *err, enum sbx_kind kind, const char *op,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Same, with a reason (sbx_fail clears it). */
int sbx_fail_reason(struct sbx_err *err, enum sbx_kind kind, enum sbx_reason reason,
		    const char *op, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Same as sbx_fail, appending ": strerror(errno)" (errno is read before
 * formatting) and keeping errno in err->errnum.  ENOSPC and EDQUOT turn
 * any kind into capacity. */
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
/* A reason's stable name ("is_dir"...), for tests and logs. */
const char *sbx_reason_name(enum sbx_reason reason);
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
/* The status of a --raw run (sbx-exec --raw, sbx-proc output --raw): the
 * command's own, as a shell reports it: 124 for its timeout, 128+N for
 * signal N, else its exit code; SBX_EXIT_RAW_SELF when it has none (an
 * exit code below 0 and no signal). */
int sbx_raw_exit_status(int timed_out, int signal, int exit_code);

#endif
