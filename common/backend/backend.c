/* backend.c - the registry: profile's backend name -> vtable.  Backends are
 * linked in whole (see the Makefile); a weak symbol left NULL is a backend
 * that was not built, and is simply absent from the registry. */
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

static const struct sbx_backend_ops *find(const char *name)
{
	for (size_t i = 0; i < REGISTRY_SIZE; i++)
		if (registry(i) && strcmp(registry(i)->name, name) == 0)
			return registry(i);
	return NULL;
}

static int owned(const struct sbx_backend_ops *ops, const char *key)
{
	for (const char *const *k = ops->config_keys; k && *k; k++)
		if (strcmp(*k, key) == 0)
			return 1;
	return 0;
}

int sbx_state_word_find(const char *name, enum sbx_state *is)
{
	for (size_t i = 0; name && i < REGISTRY_SIZE; i++)
		for (const struct sbx_state_word *w = registry(i) ? registry(i)->state_words : NULL;
		     w && w->name; w++)
			if (strcmp(w->name, name) == 0) {
				*is = w->is;
				return 1;
			}
	return 0;
}

int sbx_backend_configure(struct sbx_profile *p, struct sbx_err *err)
{
	if (p->configured)
		return 0;
	if (p->raw) {
		json_object_object_foreach(p->raw, k, v) {
			(void)v;
			int known = sbx_config_key(k);
			for (size_t i = 0; !known && i < REGISTRY_SIZE; i++)
				known = registry(i) && owned(registry(i), k);
			if (!known)
				return sbx_fail_config(err, "config", "profile '%s': unknown key '%s'",
						       p->name, k);
		}
	}
	/* A backend not in this build is sbx_backend_open's error to give. */
	const struct sbx_backend_ops *ops = find(p->backend ? p->backend : "local");
	if (ops && ops->config_load) {
		void *conf = NULL;
		if (ops->config_load(p, p->raw, &conf, err) < 0) {
			if (conf && ops->config_free)
				ops->config_free(conf);
			return -1;
		}
		p->backend_conf = conf;
		p->backend_conf_free = ops->config_free;
	}
	p->backend_conf_of = ops;
	p->configured = 1;
	return 0;
}

int sbx_backend_open(struct sbx_profile *p, struct sbx_backend **out, struct sbx_err *err)
{
	const char *want = p->backend ? p->backend : "local";
	if (sbx_backend_configure(p, err) < 0)
		return -1;
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

unsigned sbx_backend_caps(struct sbx_backend *b)
{
	unsigned c = b->ops->caps ? b->ops->caps(b) : 0;
	if (c & SBX_CAP_SNAPSHOTS)
		c |= SBX_CAP_CHECKPOINT | SBX_CAP_FORK;
	return c;
}

int sbx_backend_hibernate_check(struct sbx_backend *b, struct sbx_err *err)
{
	if (!b->ops->hibernate_check)
		return sbx_fail(err, SBX_UNSUPPORTED, "hibernate", "the %s backend cannot hibernate",
				b->ops->name);
	if (b->ops->hibernate_check(b, err) < 0)
		return -1;
	if (!b->ops->hibernate)
		return sbx_fail(err, SBX_UNSUPPORTED, "hibernate",
				"the %s backend's hibernate is not built yet (CRIU works on this host; "
				"issue 33)", b->ops->name);
	return 0;
}

int sbx_backend_create(struct sbx_backend *b, const struct sbx_create_req *req,
		       struct sbx_sandbox *out, struct sbx_err *err)
{
	if (req->timeout.seconds > 0 && req->timeout.on_timeout_pause &&
	    req->timeout.on_timeout_hibernate && sbx_backend_hibernate_check(b, err) < 0)
		return sbx_err_prefix(err, "on_timeout hibernate"), -1;
	return sbx_call(b, create, err, req, out);
}

int sbx_backend_require(struct sbx_backend *b, unsigned need, const char *op,
			struct sbx_err *err)
{
	unsigned have = sbx_backend_caps(b);
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

