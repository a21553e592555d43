/* local-proc-start.h - start a detached process in a local sandbox
 * (local-proc-start.c): the vtable's proc_start.  Private to the local
 * backend. */
#ifndef SBX_LOCAL_PROC_START_H
#define SBX_LOCAL_PROC_START_H

#include "backend.h"

int local_proc_start(struct sbx_backend *b, struct sbx_sandbox *sb,
		     const struct sbx_proc_req *req, struct sbx_proc_info *out,
		     struct sbx_err *err);

#endif
