/* session-stub.c - weak placeholder until resolve.c lands; delete then. */
#include "session.h"

__attribute__((weak)) int sbx_session_resolve(struct sbx_backend *b, struct sbx_redis *r,
			const struct sbx_resolve_req *req, struct sbx_sandbox *out,
			const char **how, struct sbx_err *err)
{
	(void)b; (void)r; (void)req; (void)out; (void)how;
	return sbx_fail(err, SBX_UNSUPPORTED, "resolve", "sessions are not implemented yet");
}

__attribute__((weak)) int sbx_redis_open(const struct sbx_profile *p, struct sbx_redis **out,
					 struct sbx_err *err)
{
	(void)p; (void)out;
	return sbx_fail(err, SBX_UNSUPPORTED, "redis", "redis is not implemented yet");
}

__attribute__((weak)) void sbx_redis_close(struct sbx_redis *r)
{
	(void)r;
}
