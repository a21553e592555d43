/* local-proc.h - the records of a local sandbox's detached processes, as
 * the library reads them, and the vtable entries that only read or touch
 * a record (local-proc.c).  The files that start processes
 * (local-proc-start.c) and follow their output (local-proc-output.c) use
 * the records through this header; the files themselves and sbx-procd,
 * which writes most of them, are described in local-procd.h. */
#ifndef SBX_LOCAL_PROC_H
#define SBX_LOCAL_PROC_H

#include <sys/types.h>

#include "local-sb.h"

/* One process record, loaded. */
struct local_prec {
	struct sbx_proc_info i;
	char *dir;                        /* procs/<pid> */
	pid_t host_pid, sup_pid;          /* the process and its sbx-procd */
	unsigned long long host_start, sup_start;
	int keep_stdin;
};
void local_prec_free(struct local_prec *p);

/* <sandbox dir>/procs (malloc'd), from a loaded sandbox record. */
char *local_procs_dir(const struct local_rec *r);

/* Load procs/<name>.  not_found when there is no such record (or it is
 * not complete yet).  A record whose sbx-procd died while it said
 * running reads as running while the process lives (its output is lost
 * from then on) and as exited with exit_code -1 once it is gone. */
int local_prec_load(const char *procs, const char *name, struct local_prec *p,
		    struct sbx_err *err);
/* Re-read only the parts sbx-procd changes (state, output sizes). */
int local_prec_refresh(struct local_prec *p, struct sbx_err *err);
/* Every complete record under `procs`, oldest first. */
int local_prec_list(const char *procs, struct local_prec **out, size_t *n,
		    struct sbx_err *err);
void local_precs_free(struct local_prec *p, size_t n);
/* The record `sel` names: by pid, or by tag (the running process with
 * that tag, else the newest exited one).  not_found when none. */
int local_prec_find(const char *procs, const struct sbx_proc_sel *sel, struct local_prec *p,
		    struct sbx_err *err);

/* Whether the terminal of the record at `dir` is claimed (its attach
 * file is flock'ed exclusively by a live proc_claim). */
int local_proc_claimed(const char *dir);

/* The vtable's proc_list, proc_signal and proc_input (contracts in
 * backend.h); proc_resize and proc_claim in local-proc-tty.c. */
int local_proc_list(struct sbx_backend *b, struct sbx_sandbox *sb,
		    struct sbx_proc_info **out, size_t *n, struct sbx_err *err);
int local_proc_signal(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_sel *sel, int sig, int as_root, struct sbx_err *err);
int local_proc_input(struct sbx_backend *b, struct sbx_sandbox *sb,
		     const struct sbx_proc_sel *sel, const void *data, size_t len,
		     int close_stdin, int as_root, struct sbx_err *err);
int local_proc_resize(struct sbx_backend *b, struct sbx_sandbox *sb,
		      const struct sbx_proc_sel *sel, unsigned cols, unsigned rows, int as_root,
		      struct sbx_err *err);
int local_proc_claim(struct sbx_backend *b, struct sbx_sandbox *sb,
		     const struct sbx_proc_sel *sel, int as_root, int *hold, struct sbx_err *err);

#endif
