/* local-exec.h - run one command in a local sandbox and wait for it
 * (local-exec.c): the vtable's exec.  Private to the local backend. */
#ifndef SBX_LOCAL_EXEC_H
#define SBX_LOCAL_EXEC_H

#include "backend.h"

int local_exec(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req,
	       struct sbx_exec_result *res, struct sbx_err *err);

#endif
