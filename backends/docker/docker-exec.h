/* docker-exec.h - commands in a Docker sandbox: the vtable's exec, and
 * the small helper scripts the files code runs as the sandbox user. */
#ifndef SBX_DOCKER_EXEC_H
#define SBX_DOCKER_EXEC_H

#include <stddef.h>

#include "backend.h"

/* The vtable's exec (contract in backend.h), the container resumed first
 * when it is paused. */
int docker_exec(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req,
		struct sbx_exec_result *res, struct sbx_err *err);
/* Run a small helper script as uid 1000 (or root) with `args` as "$1"...;
 * stdout captured up to `cap`.  Fails with an error mapped from the
 * script's stderr ("No such file" -> not_found, ...) when it exits
 * non-zero. */
int docker_sh(struct sbx_backend *b, struct sbx_sandbox *sb, int as_root, const char *script,
	      const char *const *args, const void *in, size_t in_len, int in_fd, size_t cap,
	      struct sbx_exec_result *res, const char *op, struct sbx_err *err);

#endif
