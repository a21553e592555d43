/* The error model: kinds, HTTP mapping, replace rule, exit table. */
#include <errno.h>

#include "cliopt.h"
#include "err.h"
#include "tap.h"

int main(void)
{
	struct sbx_err e = {0};
	for (int k = 0; k < SBX_KIND_COUNT; k++)
		is_int(sbx_kind_from_name(sbx_kind_name(k)), k, "kind %s round-trips", sbx_kind_name(k));
	is_int(sbx_kind_from_name("nonsense"), -1, "unknown kind name");

	struct { int status; const char *op; enum sbx_kind want; } http[] = {
		{400, "get", SBX_INVALID_REQUEST}, {422, "get", SBX_INVALID_REQUEST},
		{401, "get", SBX_AUTHENTICATION}, {403, "get", SBX_AUTHENTICATION},
		{404, "get", SBX_NOT_FOUND}, {404, "create", SBX_INVALID_REQUEST},
		{408, "get", SBX_TIMEOUT}, {504, "get", SBX_TIMEOUT}, {409, "get", SBX_CONFLICT},
		{410, "get", SBX_TERMINAL}, {429, "get", SBX_CAPACITY}, {507, "get", SBX_CAPACITY},
		{500, "get", SBX_UNAVAILABLE}, {503, "get", SBX_UNAVAILABLE}, {302, "get", SBX_INTERNAL},
		{418, "get", SBX_INTERNAL},
	};
	for (size_t i = 0; i < sizeof(http) / sizeof(http[0]); i++)
		is_int(sbx_kind_from_http(http[i].op, http[i].status), http[i].want,
		       "HTTP %d on %s", http[i].status, http[i].op);

	for (int k = 1; k < SBX_KIND_COUNT; k++) {
		sbx_fail(&e, k, "op", "m");
		ok(sbx_err_may_replace_binding(&e) == (k == SBX_NOT_FOUND || k == SBX_TERMINAL),
		   "only not_found/terminal replace a binding (%s)", sbx_kind_name(k));
	}
	struct { enum sbx_kind k; int st; } ex[] = {
		{SBX_INVALID_REQUEST, 65}, {SBX_NOT_FOUND, 66}, {SBX_TERMINAL, 66},
		{SBX_UNAVAILABLE, 69}, {SBX_INTERNAL, 70}, {SBX_TIMEOUT, 75}, {SBX_CONFLICT, 75},
		{SBX_CAPACITY, 75}, {SBX_AUTHENTICATION, 77}, {SBX_FAILED, 1}, {SBX_UNSUPPORTED, 69},
	};
	for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++)
		is_int(sbx_kind_exit_status(ex[i].k), ex[i].st, "exit status of %s", sbx_kind_name(ex[i].k));
	errno = ENOSPC;
	sbx_fail_errno(&e, SBX_INTERNAL, "write", "f");
	is_int(e.kind, SBX_CAPACITY, "ENOSPC is capacity, whatever the caller expected");
	errno = EDQUOT;
	sbx_fail_errno(&e, SBX_INTERNAL, "write", "f");
	is_int(e.kind, SBX_CAPACITY, "EDQUOT is capacity");
	errno = EIO;
	sbx_fail_errno(&e, SBX_INTERNAL, "write", "f");
	is_int(e.kind, SBX_INTERNAL, "other errnos keep the caller's kind");
	sbx_fail_config(&e, "config", "x");
	is_int(sbx_err_exit_status(&e), 78, "configuration errors exit 78");
	sbx_fail(&e, SBX_INTERNAL, "op", "inner");
	sbx_err_prefix(&e, "outer %d", 1);
	is_str(e.msg, "outer 1: inner", "prefix");
	char big[2000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	sbx_fail(&e, SBX_INTERNAL, "op", "%s", big);
	ok(strlen(e.msg) == sizeof(e.msg) - 1, "long messages are truncated, not overflowed");

	/* Reasons: set where the error is made, kept on the way up, cleared
	 * by the next failure. */
	int distinct = 1;
	for (int r = 0; r < SBX_R_COUNT; r++)
		for (int q = 0; q < r; q++)
			distinct &= sbx_reason_name(r) && strcmp(sbx_reason_name(r), sbx_reason_name(q)) != 0;
	ok(distinct, "every reason has a name of its own");
	is_str(sbx_reason_name(SBX_R_COUNT), "none", "an unknown reason is none");
	sbx_fail_reason(&e, SBX_INVALID_REQUEST, SBX_R_IS_DIR, "read", "/w: is a directory");
	sbx_err_prefix(&e, "get");
	ok(e.reason == SBX_R_IS_DIR && e.kind == SBX_INVALID_REQUEST && !strcmp(e.op, "read"),
	   "a reason survives a prefix");
	is_str(e.msg, "get: /w: is a directory", "... and the message is the text given");
	sbx_fail(&e, SBX_INTERNAL, "op", "other");
	is_int(e.reason, SBX_R_NONE, "sbx_fail clears the reason");
	errno = EPIPE;
	sbx_fail_errno(&e, SBX_INTERNAL, "tar", "writing the archive");
	ok(e.errnum == EPIPE && e.reason == SBX_R_NONE, "sbx_fail_errno keeps errno in errnum");
	is_str(e.msg, "writing the archive: Broken pipe", "... and its text in the message");
	sbx_fail(&e, SBX_INTERNAL, "op", "other");
	is_int(e.errnum, 0, "sbx_fail clears errnum");
	sbx_fail_reason(&e, SBX_CONFLICT, SBX_R_IN_USE, "rm", "busy");
	sbx_usage_err(&e, "--grace: %s", e.msg);
	ok(e.reason == SBX_R_NONE && sbx_err_exit_status(&e) == SBX_EXIT_USAGE, "a usage error has no reason");
	is_str(e.msg, "--grace: busy", "sbx_usage_err may quote the message it replaces");

	struct { int to, sig, code, want; } raw[] = {
		{0, 0, 0, 0}, {0, 0, 3, 3}, {1, 9, -1, 124}, {0, 9, -1, 137}, {0, 15, -1, 143},
		{0, 0, -1, SBX_EXIT_RAW_SELF}, {0, 0, 255, 255},
	};
	for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++)
		is_int(sbx_raw_exit_status(raw[i].to, raw[i].sig, raw[i].code), raw[i].want,
		       "--raw status: timed_out %d signal %d exit %d", raw[i].to, raw[i].sig, raw[i].code);
	return tap_done();
}
