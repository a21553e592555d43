/* The error model: kinds, HTTP mapping, replace rule, exit table. */
#include <errno.h>

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
	return tap_done();
}
