/* err.c - the error value, its kinds and reasons, the exit table. */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[SBX_KIND_COUNT] = {
	[SBX_OK] = "ok",
	[SBX_NOT_FOUND] = "not_found",
	[SBX_TERMINAL] = "terminal",
	[SBX_AUTHENTICATION] = "authentication",
	[SBX_INVALID_REQUEST] = "invalid_request",
	[SBX_UNSUPPORTED] = "unsupported",
	[SBX_CONFLICT] = "conflict",
	[SBX_CAPACITY] = "capacity",
	[SBX_TIMEOUT] = "timeout",
	[SBX_UNAVAILABLE] = "unavailable",
	[SBX_INTERNAL] = "internal",
	[SBX_FAILED] = "failed",
};

static const char *const reason_names[SBX_R_COUNT] = {
	[SBX_R_NONE] = "none",
	[SBX_R_IS_DIR] = "is_dir",
	[SBX_R_TOO_LARGE] = "too_large",
	[SBX_R_ALREADY_PAUSED] = "already_paused",
	[SBX_R_NOT_PAUSED] = "not_paused",
	[SBX_R_IN_PROGRESS] = "in_progress",
	[SBX_R_IN_USE] = "in_use",
	[SBX_R_NO_TEMPLATE] = "no_template",
	[SBX_R_ENGINE_SETUP] = "engine_setup",
	[SBX_R_STDOUT_GONE] = "stdout_gone",
	[SBX_R_QUOTA] = "quota",
};

static void set_op(struct sbx_err *err, const char *op)
{
	snprintf(err->op, sizeof(err->op), "%s", op ? op : "");
}

static int vfail(struct sbx_err *err, enum sbx_kind kind, const char *op,
		 const char *suffix, const char *fmt, va_list ap)
{
	if (!err)
		return -1;
	err->kind = kind;
	err->reason = SBX_R_NONE;
	err->errnum = 0;
	err->http_status = 0;
	err->exit_status = 0;
	set_op(err, op);
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (suffix && n >= 0 && (size_t)n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", suffix);
	return -1;
}

int sbx_fail(struct sbx_err *err, enum sbx_kind kind, const char *op,
	     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(err, kind, op, NULL, fmt, ap);
	va_end(ap);
	return -1;
}

int sbx_fail_reason(struct sbx_err *err, enum sbx_kind kind, enum sbx_reason reason,
		    const char *op, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(err, kind, op, NULL, fmt, ap);
	va_end(ap);
	if (err)
		err->reason = reason;
	return -1;
}

/* A full disk or an exhausted quota is never the program's fault: it is
 * `capacity` (retryable, exit 75) whatever kind the caller expected, so
 * that every path that reports an errno reports these the same way. */
int sbx_fail_errno(struct sbx_err *err, enum sbx_kind kind, const char *op,
		   const char *fmt, ...)
{
	int e = errno;
	if (e == ENOSPC || e == EDQUOT)
		kind = SBX_CAPACITY;
	const char *why = strerror(e);
	va_list ap;
	va_start(ap, fmt);
	vfail(err, kind, op, why, fmt, ap);
	va_end(ap);
	if (err)
		err->errnum = e;
	return -1;
}

int sbx_fail_config(struct sbx_err *err, const char *op, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(err, SBX_INVALID_REQUEST, op, NULL, fmt, ap);
	va_end(ap);
	if (err)
		err->exit_status = SBX_EXIT_CONFIG;
	return -1;
}

void sbx_err_prefix(struct sbx_err *err, const char *fmt, ...)
{
	char head[256], old[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s: %s", head, old);
}

void sbx_err_clear(struct sbx_err *err)
{
	memset(err, 0, sizeof(*err));
}

const char *sbx_kind_name(enum sbx_kind kind)
{
	if ((int)kind < 0 || kind >= SBX_KIND_COUNT)
		return "internal";
	return kind_names[kind];
}

const char *sbx_reason_name(enum sbx_reason reason)
{
	if ((int)reason < 0 || reason >= SBX_R_COUNT)
		return "none";
	return reason_names[reason];
}

int sbx_kind_from_name(const char *name)
{
	for (int k = 0; name && k < SBX_KIND_COUNT; k++)
		if (strcmp(kind_names[k], name) == 0)
			return k;
	return -1;
}

bool sbx_kind_retryable(enum sbx_kind kind)
{
	switch (kind) {
	case SBX_TIMEOUT: case SBX_UNAVAILABLE: case SBX_CAPACITY: case SBX_CONFLICT:
		return true;
	default:
		return false;
	}
}

bool sbx_err_may_replace_binding(const struct sbx_err *err)
{
	return err && (err->kind == SBX_NOT_FOUND || err->kind == SBX_TERMINAL);
}

enum sbx_kind sbx_kind_from_http(const char *op, int status)
{
	switch (status) {
	case 400: case 422: return SBX_INVALID_REQUEST;
	case 401: case 403: return SBX_AUTHENTICATION;
	case 404:
		return op && strcmp(op, "create") == 0 ? SBX_INVALID_REQUEST : SBX_NOT_FOUND;
	case 408: case 504: return SBX_TIMEOUT;
	case 409: return SBX_CONFLICT;
	case 410: return SBX_TERMINAL;
	case 429: case 507: return SBX_CAPACITY;
	}
	return status >= 500 ? SBX_UNAVAILABLE : SBX_INTERNAL;
}

int sbx_kind_exit_status(enum sbx_kind kind)
{
	switch (kind) {
	case SBX_OK: return SBX_EXIT_OK;
	case SBX_FAILED: return SBX_EXIT_FAILED;
	case SBX_INVALID_REQUEST: return SBX_EXIT_DATAERR;
	case SBX_NOT_FOUND: case SBX_TERMINAL: return SBX_EXIT_NOINPUT;
	case SBX_UNAVAILABLE: case SBX_UNSUPPORTED: return SBX_EXIT_UNAVAILABLE;
	case SBX_TIMEOUT: case SBX_CONFLICT: case SBX_CAPACITY: return SBX_EXIT_TEMPFAIL;
	case SBX_AUTHENTICATION: return SBX_EXIT_NOPERM;
	default: return SBX_EXIT_SOFTWARE;
	}
}

int sbx_err_exit_status(const struct sbx_err *err)
{
	if (err->exit_status)
		return err->exit_status;
	return sbx_kind_exit_status(err->kind);
}

int sbx_raw_exit_status(int timed_out, int signal, int exit_code)
{
	if (timed_out)
		return 124;
	if (signal)
		return 128 + signal;
	return exit_code < 0 ? SBX_EXIT_RAW_SELF : exit_code;
}
