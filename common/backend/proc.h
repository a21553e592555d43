/* proc.h - the values of the process interface (backend.h's "Detached
 * processes"): their destructors, and what every backend that implements
 * the interface shares (proc.c): the record of a start, and the users'
 * rule.  Programs use the destructors; backends the rest. */
#ifndef SBX_PROC_H
#define SBX_PROC_H

#include <json-c/json.h>

#include "backend.h"
#include "err.h"

void sbx_proc_info_clear(struct sbx_proc_info *p);
void sbx_proc_infos_free(struct sbx_proc_info *p, size_t n);
/* The document shape of a process, added to `o` (replacing): {pid, argv,
 * env, cwd ("/workspace" when none), tag (when one), as_root, running,
 * exit_code, signal, timed_out, ended_at_ms (these four once it exited),
 * stdin_open, started_at_ms, stdout_end, stderr_end, stdout_start,
 * stderr_start}.  env lists names only: the record of a start keeps no
 * values (they may be secrets, sbx_proc_record). */
void sbx_proc_info_json(const struct sbx_proc_info *p, json_object *o);

/* For backends that implement the interface: the record of what a start
 * asked (argv, env *names* only, cwd, tag, as_root, keep_stdin,
 * started_at = now), and the fields of *p it gives back (*keep_stdin
 * too).  One format for every backend's records. */
json_object *sbx_proc_record(const struct sbx_proc_req *req);
void sbx_proc_from_record(json_object *rec, struct sbx_proc_info *p, int *keep_stdin);
/* The users' rule: 0 when `as_root` or the process is uid 1000's, else
 * invalid_request "WHAT process PID: operation not permitted". */
int sbx_proc_may_act(const struct sbx_proc_info *p, int as_root, const char *what,
		     struct sbx_err *err);

#endif
