/* local-proc-output.h - follow the output of a local sandbox's detached
 * process (local-proc-output.c): the vtable's proc_output.  Private to the
 * local backend. */
#ifndef SBX_LOCAL_PROC_OUTPUT_H
#define SBX_LOCAL_PROC_OUTPUT_H

#include "backend.h"

int local_proc_output(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_sel *sel, const struct sbx_proc_attach *a,
		      sbx_proc_sink sink, void *ctx, struct sbx_proc_info *end,
		      struct sbx_err *err);

#endif
