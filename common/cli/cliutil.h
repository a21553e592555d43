/* cliutil.h - small pieces the programs share on their way to a sandbox:
 * the document `--id ID` stands for, the sandbox and backend of a
 * document, and KEY=VALUE flags.
 *
 * Nothing here prints or exits (that is cli.c's, on behalf of main): every
 * fallible call returns -1 with `err` filled, a usage error (exit 64) for a
 * malformed flag. */
#ifndef SBX_CLIUTIL_H
#define SBX_CLIUTIL_H

#include <json-c/json.h>

#include "app.h"
#include "backend.h"
#include "err.h"

/* The one document `--id ID` stands for: {"sandbox": {"id": ID}}, for
 * sbx_cli_run_docs to act on instead of reading stdin.  NULL when id is
 * NULL (read documents).  The caller puts it (json_object_put(NULL) is a
 * no-op). */
json_object *sbx_cli_id_seed(const char *id);

/* Load the sandbox `handle` (a document's "sandbox" object, may be NULL)
 * into *sb, then open the backend it belongs to through `app` (--profile,
 * else the handle's profile, see app.h), in that order.  On success the
 * caller owns *sb and clears it; on failure *sb holds nothing. */
/* A record of sandbox sb's audit (audit.h), kind and data (borrowed),
 * and then the sandbox's spooled records taken: when the sandbox has a
 * tenant and its profile a Redis (opened once per run); else nothing.
 * Never fails: a failure is counted as an event's (the warning). */
void sbx_cli_audit(struct sbx_app *app, struct sbx_backend *b, const struct sbx_sandbox *sb,
		   const char *kind, json_object *data);
int sbx_cli_open_sandbox(struct sbx_app *app, json_object *handle, struct sbx_sandbox *sb,
			 struct sbx_backend **b, struct sbx_err *err);

/* Check that `arg` is KEY=VALUE with a non-empty KEY; else the usage error
 * "WHAT must be KEY=VALUE, got 'ARG'" (what: the flag, "--env"). */
int sbx_cli_pair_check(const char *arg, const char *what, struct sbx_err *err);
/* sbx_cli_pair_check, then set "KEY": "VALUE" in the object `o` (a
 * repeated KEY keeps the last VALUE). */
int sbx_cli_pair_add(json_object *o, const char *arg, const char *what, struct sbx_err *err);

/* An --env argument: KEY=VALUE as given, or KEY alone, whose value is
 * then taken from this process's environment (so that a secret never has
 * to be on a command line, where /proc/PID/cmdline shows it).  *kv is a
 * malloc'd "KEY=VALUE".  A KEY that is not set is a usage error naming
 * KEY (never a value); so is an empty KEY. */
int sbx_cli_env_arg(const char *arg, char **kv, struct sbx_err *err);
/* sbx_cli_env_arg, then set "KEY": "VALUE" in the object `o`. */
int sbx_cli_env_add(json_object *o, const char *arg, struct sbx_err *err);

/* The flags of a command to run (sbx-exec, sbx-proc start), each checked
 * the same way in both programs:
 *   sbx_cli_env_push: sbx_cli_env_arg, appended to the NULL-terminated
 *     vector *env of *n entries (grown as needed);
 *   sbx_cli_cwd_arg: --cwd must be an absolute path;
 *   sbx_cli_timeout_arg: --timeout is a duration (sbx_parse_duration_ms)
 *     above zero.
 * Each returns 0, or -1 with a usage error. */
int sbx_cli_env_push(char ***env, size_t *n, const char *arg, struct sbx_err *err);
/* Wipe and free what sbx_cli_env_push built (values may be secrets). */
void sbx_cli_env_free(char **env, size_t n);
int sbx_cli_cwd_arg(const char *arg, const char **cwd, struct sbx_err *err);
int sbx_cli_timeout_arg(const char *arg, int64_t *ms, struct sbx_err *err);

/* Write {"<what>": {"id": ID, "deleted": !gone, "gone": gone}}, the
 * document of an idempotent delete (sbx-snap rm, sbx-tpl rm). */
int sbx_cli_emit_deleted(const char *what, const char *id, int gone, struct sbx_err *err);

#endif
