/* proc.c - the values of the process interface: destructors, the one
 * record format of a start (so that every backend's records read the
 * same), and the users' rule (uid 1000 acts on its own processes only).
 * Nothing here touches a sandbox. */
#include "proc.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "util.h"

static void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

void sbx_proc_info_clear(struct sbx_proc_info *p)
{
	strv_free(p->argv);
	strv_free(p->env);
	free(p->cwd);
	free(p->tag);
	memset(p, 0, sizeof(*p));
}

void sbx_proc_infos_free(struct sbx_proc_info *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++)
		sbx_proc_info_clear(&p[i]);
	free(p);
}

json_object *sbx_proc_record(const struct sbx_proc_req *req)
{
	json_object *j = json_object_new_object();
	json_object *a = json_object_new_array();
	for (char *const *p = req->argv; p && *p; p++)
		json_object_array_add(a, json_object_new_string(*p));
	json_object_object_add(j, "argv", a);
	json_object *env = json_object_new_array();
	for (char *const *p = req->env; p && *p; p++) {
		const char *eq = strchr(*p, '=');
		json_object_array_add(env, eq ? json_object_new_string_len(*p, (int)(eq - *p))
					      : json_object_new_string(*p));
	}
	json_object_object_add(j, "env", env);
	sbx_json_set_str(j, "cwd", req->cwd && *req->cwd ? req->cwd : "/workspace");
	if (req->tag)
		sbx_json_set_str(j, "tag", req->tag);
	sbx_json_set_bool(j, "as_root", req->as_root);
	sbx_json_set_bool(j, "keep_stdin", req->keep_stdin || req->tty);
	sbx_json_set_bool(j, "tty", req->tty);
	sbx_json_set_int(j, "timeout_ms", req->timeout_ms);
	sbx_json_set_int(j, "started_at", sbx_now_ms());
	return j;
}

/* A JSON array of strings as a NULL-terminated vector (empty when
 * absent). */
static char **strv_from(json_object *o, const char *key)
{
	json_object *a = NULL;
	size_t n = json_object_object_get_ex(o, key, &a) && json_object_is_type(a, json_type_array)
		   ? json_object_array_length(a) : 0;
	char **v = sbx_xcalloc(n + 1, sizeof(char *));
	for (size_t k = 0; k < n; k++)
		v[k] = sbx_xstrdup(json_object_get_string(json_object_array_get_idx(a, k)));
	return v;
}

void sbx_proc_from_record(json_object *rec, struct sbx_proc_info *p, int *keep_stdin)
{
	p->argv = strv_from(rec, "argv");
	p->env = strv_from(rec, "env");
	const char *s = sbx_json_str(rec, "cwd");
	p->cwd = sbx_xstrdup(s ? s : "/workspace");
	s = sbx_json_str(rec, "tag");
	p->tag = s ? sbx_xstrdup(s) : NULL;
	p->as_root = sbx_json_bool(rec, "as_root", 0);
	p->started_at = sbx_json_int(rec, "started_at", 0);
	*keep_stdin = sbx_json_bool(rec, "keep_stdin", 0);
	p->tty = sbx_json_bool(rec, "tty", 0);
}

int sbx_proc_may_act(const struct sbx_proc_info *p, int as_root, const char *what,
		     struct sbx_err *err)
{
	if (as_root || !p->as_root)
		return 0;
	return sbx_fail(err, SBX_INVALID_REQUEST, "proc",
			"%s process %d: operation not permitted (it is root's)", what, p->pid);
}

static json_object *strv_json(char **v)
{
	json_object *a = json_object_new_array();
	for (char **p = v; p && *p; p++)
		json_object_array_add(a, json_object_new_string(*p));
	return a;
}

void sbx_proc_info_json(const struct sbx_proc_info *p, json_object *o)
{
	sbx_json_set_int(o, "pid", p->pid);
	json_object_object_add(o, "argv", strv_json(p->argv));
	json_object_object_add(o, "env", strv_json(p->env));
	sbx_json_set_str(o, "cwd", p->cwd ? p->cwd : "/workspace");
	if (p->tag)
		sbx_json_set_str(o, "tag", p->tag);
	sbx_json_set_bool(o, "as_root", p->as_root);
	sbx_json_set_bool(o, "running", p->running);
	if (!p->running) {
		sbx_json_set_int(o, "exit_code", p->exit_code);
		sbx_json_set_int(o, "signal", p->signal);
		sbx_json_set_bool(o, "timed_out", p->timed_out);
		sbx_json_set_int(o, "ended_at_ms", p->ended_at);
	}
	sbx_json_set_bool(o, "stdin_open", p->stdin_open);
	if (p->tty) {        /* only then: the shape of the others stays */
		sbx_json_set_bool(o, "tty", 1);
		sbx_json_set_bool(o, "attached", p->attached);
	}
	sbx_json_set_int(o, "started_at_ms", p->started_at);
	sbx_json_set_int(o, "stdout_end", p->out_end);
	sbx_json_set_int(o, "stderr_end", p->err_end);
	sbx_json_set_int(o, "stdout_start", p->out_start);
	sbx_json_set_int(o, "stderr_start", p->err_start);
}
