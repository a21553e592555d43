/* cliutil.c - what the programs share on their way to a sandbox (see
 * cliutil.h).  Prints nothing. */
#include "cliutil.h"

#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "cli.h"
#include "metadata.h"
#include "cliopt.h"
#include "doc.h"
#include "util.h"

json_object *sbx_cli_id_seed(const char *id)
{
	if (!id)
		return NULL;
	json_object *seed = json_object_new_object();
	sbx_json_set_str(sbx_json_child(seed, "sandbox"), "id", id);
	return seed;
}

void sbx_cli_audit(struct sbx_app *app, struct sbx_backend *b, const struct sbx_sandbox *sb,
		   const char *kind, json_object *data)
{
	if (!app->profile || !app->profile->redis_url || app->profile->audit_maxlen == 0 || !sb->id)
		return;
	/* A handle made from --id carries no owner: the backend's says it. */
	const char *t = sb->tenant;
	if ((!t || !*t) && sb->metadata)
		t = sbx_json_str(sb->metadata, SBX_MD_TENANT);
	struct sbx_sandbox full = {0};
	struct sbx_err err = {0};
	if (!t || !*t) {
		if (sbx_call(b, get, &err, sb->id, &full) < 0 || !full.metadata ||
		    !sbx_json_str(full.metadata, SBX_MD_TENANT)) {
			sbx_sandbox_clear(&full);
			return;
		}
		sb = &full;
	}
	struct sbx_redis *r;
	if (sbx_app_redis(app, &r, &err) < 0) {
		sbx_events_lost(&err);
	} else {
		sbx_audit_sandbox_drain(r, b, sb, kind, data);
	}
	sbx_sandbox_clear(&full);
}

int sbx_cli_open_sandbox(struct sbx_app *app, json_object *handle, struct sbx_sandbox *sb,
			 struct sbx_backend **b, struct sbx_err *err)
{
	if (sbx_sandbox_from_json(handle, sb, err) < 0)
		return -1;
	if (sbx_app_backend(app, handle, b, err) < 0) {
		sbx_sandbox_clear(sb);
		return -1;
	}
	return 0;
}

int sbx_cli_pair_check(const char *arg, const char *what, struct sbx_err *err)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg)
		return sbx_usage_err(err, "%s must be KEY=VALUE, got '%s'", what, arg);
	return 0;
}

int sbx_cli_pair_add(json_object *o, const char *arg, const char *what, struct sbx_err *err)
{
	if (sbx_cli_pair_check(arg, what, err) < 0)
		return -1;
	const char *eq = strchr(arg, '=');
	char *k = strndup(arg, (size_t)(eq - arg));
	json_object_object_add(o, k, json_object_new_string(eq + 1));
	free(k);
	return 0;
}

int sbx_cli_env_arg(const char *arg, char **kv, struct sbx_err *err)
{
	*kv = NULL;
	if (strchr(arg, '=')) {
		if (sbx_cli_pair_check(arg, "--env", err) < 0)
			return -1;
		*kv = sbx_xstrdup(arg);
		return 0;
	}
	if (!*arg)
		return sbx_usage_err(err, "--env must be KEY=VALUE or KEY, got ''");
	const char *v = getenv(arg);
	if (!v)
		return sbx_usage_err(err, "--env %s: %s is not set in the environment", arg, arg);
	*kv = sbx_xasprintf("%s=%s", arg, v);
	return 0;
}

int sbx_cli_env_add(json_object *o, const char *arg, struct sbx_err *err)
{
	char *kv;
	if (sbx_cli_env_arg(arg, &kv, err) < 0)
		return -1;
	char *eq = strchr(kv, '=');
	*eq = '\0';
	json_object_object_add(o, kv, json_object_new_string(eq + 1));
	sbx_secret_free(kv);
	return 0;
}

int sbx_cli_env_push(char ***env, size_t *n, const char *arg, struct sbx_err *err)
{
	char *kv;
	if (sbx_cli_env_arg(arg, &kv, err) < 0)
		return -1;
	*env = sbx_xrealloc(*env, (*n + 2) * sizeof(char *));
	(*env)[(*n)++] = kv;
	(*env)[*n] = NULL;
	return 0;
}

void sbx_cli_env_free(char **env, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sbx_secret_free(env[i]);
	free(env);
}

int sbx_cli_cwd_arg(const char *arg, const char **cwd, struct sbx_err *err)
{
	if (arg[0] != '/')
		return sbx_usage_err(err, "--cwd must be an absolute path");
	*cwd = arg;
	return 0;
}

int sbx_cli_timeout_arg(const char *arg, int64_t *ms, struct sbx_err *err)
{
	if (sbx_parse_duration_ms(arg, ms, err) < 0)
		return -1;
	return *ms > 0 ? 0 : sbx_usage_err(err, "--timeout must be positive");
}

int sbx_cli_emit_deleted(const char *what, const char *id, int gone, struct sbx_err *err)
{
	json_object *doc = json_object_new_object();
	json_object *o = sbx_json_child(doc, what);
	sbx_json_set_str(o, "id", id);
	sbx_json_set_bool(o, "deleted", !gone);
	sbx_json_set_bool(o, "gone", gone);
	int rc = sbx_emit(doc, err);
	json_object_put(doc);
	return rc;
}
