/* backend.c - the registry: profile's backend name -> vtable.  Backends are
 * linked in whole (see the Makefile); a weak symbol left NULL is a backend
 * that was not built, and is simply absent from the registry.  Also the
 * destructors of the values the vtable hands out (process descriptions). */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "util.h"

static const struct sbx_backend_ops *registry(size_t i)
{
	const struct sbx_backend_ops *all[] = {
		&sbx_backend_local, &sbx_backend_docker, &sbx_backend_e2b, &sbx_backend_cube,
	};
	return i < SBX_ARRAY_LEN(all) ? all[i] : NULL;
}
#define REGISTRY_SIZE 4

const char *const *sbx_backend_names(void)
{
	static const char *names[REGISTRY_SIZE + 1];
	size_t n = 0;
	for (size_t i = 0; i < REGISTRY_SIZE; i++)
		if (registry(i))
			names[n++] = registry(i)->name;
	names[n] = NULL;
	return names;
}

int sbx_backend_open(struct sbx_profile *p, struct sbx_backend **out, struct sbx_err *err)
{
	const char *want = p->backend ? p->backend : "local";
	for (size_t i = 0; i < REGISTRY_SIZE; i++) {
		const struct sbx_backend_ops *ops = registry(i);
		if (!ops || strcmp(ops->name, want) != 0)
			continue;
		struct sbx_backend *b = sbx_xcalloc(1, sizeof(*b));
		b->ops = ops;
		b->profile = p;
		if (ops->open && ops->open(b, err) < 0) {
			free(b);
			return -1;
		}
		*out = b;
		return 0;
	}
	return sbx_fail_config(err, "config", "backend '%s' is not available in this build", want);
}

void sbx_backend_close(struct sbx_backend *b)
{
	if (!b)
		return;
	if (b->ops->close)
		b->ops->close(b);
	free(b);
}

int sbx_backend_require(struct sbx_backend *b, unsigned need, const char *op,
			struct sbx_err *err)
{
	unsigned have = b->ops->caps ? b->ops->caps(b) : 0;
	if ((have & need) == need)
		return 0;
	return sbx_fail(err, SBX_UNSUPPORTED, op, "the %s backend cannot %s", b->ops->name, op);
}

void sbx_store_gc_json(const struct sbx_store_gc *st, json_object *o)
{
	sbx_json_set_int(o, "work_dirs", st->tmp);
	sbx_json_set_int(o, "unnamed_layers", st->layers);
	sbx_json_set_int(o, "bytes", st->bytes);
}

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
	sbx_json_set_bool(j, "keep_stdin", req->keep_stdin);
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
}

int sbx_proc_may_act(const struct sbx_proc_info *p, int as_root, const char *what,
		     struct sbx_err *err)
{
	if (as_root || !p->as_root)
		return 0;
	return sbx_fail(err, SBX_INVALID_REQUEST, "proc",
			"%s process %d: operation not permitted (it is root's)", what, p->pid);
}
