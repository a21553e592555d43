/* docker-proc.h - detached processes in a Docker sandbox (docker-proc.c):
 * the vtable's proc_* entries.  Private to the Docker backend. */
#ifndef SBX_DOCKER_PROC_H
#define SBX_DOCKER_PROC_H

#include "backend.h"

/* Where the records live in the container, and what the command line of
 * every running supervisor holds (its $0 and its record): the idle sweep
 * (docker-sweep.c) finds running detached processes by it in the
 * container's process table. */
#define DOCKER_PROC_ROOT "/run/sbx-procs"
#define DOCKER_PROC_SUP_MARK "sbx-procd " DOCKER_PROC_ROOT "/p-"

int docker_proc_start(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_req *req, struct sbx_proc_info *out,
		      struct sbx_err *err);
int docker_proc_list(struct sbx_backend *b, struct sbx_sandbox *sb,
		     struct sbx_proc_info **out, size_t *n, struct sbx_err *err);
int docker_proc_signal(struct sbx_backend *b, struct sbx_sandbox *sb,
		       const struct sbx_proc_sel *sel, int sig, int as_root, struct sbx_err *err);
int docker_proc_input(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_sel *sel, const void *data, size_t len,
		      int close_stdin, int as_root, struct sbx_err *err);
int docker_proc_output(struct sbx_backend *b, struct sbx_sandbox *sb,
		       const struct sbx_proc_sel *sel, const struct sbx_proc_attach *a,
		       sbx_proc_sink sink, void *ctx, struct sbx_proc_info *end,
		       struct sbx_err *err);
/* The vtable's audit_collect: the ends of the detached processes this
 * host started (its pending list, beside the spool) that the
 * container's supervisors recorded since, appended to the sandbox's
 * audit spool as sbx-procd's records (kind process, event end).  One
 * exec as root while any is pending and the container is not paused;
 * none otherwise.  Weaker than local's, as the records are (docs/docker.md):
 * the process's user can change its own end before it is collected. */
int docker_proc_audit_collect(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);

#endif
