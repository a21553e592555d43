/* volume.c - named volumes of a tenant: the record, the folder, and files
 * in and out of it (volume.h says what is promised). */
#include "volume.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doc.h"
#include "fsconfine.h"
#include "keys.h"
#include "path.h"
#include "sha.h"
#include "util.h"

static struct sbx_script create_script = {.src =
	"if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
	"redis.call('HSET', KEYS[1], 'name', ARGV[1], 'budget', ARGV[2], 'created_ms', ARGV[3])\n"
	"redis.call('SADD', KEYS[2], ARGV[1])\n"
	"return 1\n"};

/* 1 removed, 0 none, -N in use by N sandboxes. */
static struct sbx_script remove_script = {.src =
	"if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
	"local u = redis.call('SCARD', KEYS[3])\n"
	"if u > 0 then return -u end\n"
	"redis.call('DEL', KEYS[1])\n"
	"redis.call('SREM', KEYS[2], ARGV[1])\n"
	"return 1\n"};

static struct sbx_script attach_script = {.src =
	"if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
	"redis.call('SADD', KEYS[2], ARGV[1])\n"
	"return 1\n"};

int sbx_vol_name_check(const char *name, struct sbx_err *err)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > SBX_VOL_NAME_MAX || name[0] == '.' ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != n)
		return sbx_fail(err, SBX_INVALID_REQUEST, "volume",
				"a volume name is 1..%d of [A-Za-z0-9._-], not starting with '.'",
				SBX_VOL_NAME_MAX);
	return 0;
}

static int check(const char *tenant, const char *name, struct sbx_err *err)
{
	if (!tenant || !*tenant)
		return sbx_fail(err, SBX_INVALID_REQUEST, "volume", "no tenant (--tenant)");
	if (sbx_ids_check(tenant, NULL, NULL, err) < 0)
		return -1;
	return name ? sbx_vol_name_check(name, err) : 0;
}

char *sbx_vol_root(const struct sbx_profile *p)
{
	return sbx_xasprintf("%s/volumes", p && p->state_dir ? p->state_dir : "/var/lib/sbx");
}

/* volumes/<K>: K from the keyspace and the tenant (volume.h). */
static char *tenant_dir(const struct sbx_profile *p, const char *prefix, const char *tenant)
{
	struct sbx_sha256 c;
	unsigned char h[SBX_SHA256_LEN];
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, prefix, strlen(prefix) + 1);
	sbx_sha256_update(&c, tenant, strlen(tenant));
	sbx_sha256_final(&c, h);
	char hex[33];
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
	SBX_AUTOFREE char *root = sbx_vol_root(p);
	return sbx_xasprintf("%s/%s", root, hex);
}

static void keys_of(struct sbx_redis *r, const char *tenant, const char *name, char **rec,
		    char **set, char **users)
{
	size_t tl = strlen(tenant), nl = strlen(name);
	*rec = sbx_key_volume(r->prefix, tenant, tl, name, nl, 0);
	*set = sbx_key_tenant(r->prefix, tenant, tl, SBX_KEY_VOLUMES);
	*users = sbx_key_volume(r->prefix, tenant, tl, name, nl, 1);
}

/* The tenant's folder (0700, made when missing) as an O_PATH fd. */
static int open_tenant_dir(const struct sbx_profile *p, const char *prefix, const char *tenant,
			   struct sbx_err *err)
{
	SBX_AUTOFREE char *root = sbx_vol_root(p);
	SBX_AUTOFREE char *td = tenant_dir(p, prefix, tenant);
	if (sbx_mkdir_p(td, 0700, err) < 0)
		return -1;
	int fd = open(td, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "volume", "%s", td);
	return fd;
}

/* Remove the volume's folder (and everything below) if it is there. */
static int clear_dir(const struct sbx_profile *p, const char *prefix, const char *tenant,
		     const char *name, struct sbx_err *err)
{
	SBX_AUTOCLOSE int tfd = open_tenant_dir(p, prefix, tenant, err);
	struct sbx_fsc c;
	if (tfd < 0 || sbx_fsc_init(&c, tfd, 0, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/%s", name);
	if (sbx_fsc_remove(&c, path, 1, err) < 0) {
		if (err->kind != SBX_NOT_FOUND)
			return -1;
		sbx_err_clear(err);
	}
	return 0;
}

static void fill(struct sbx_vol *v, const struct sbx_profile *p, const char *prefix,
		 const char *tenant, const char *name)
{
	SBX_AUTOFREE char *td = tenant_dir(p, prefix, tenant);
	v->tenant = sbx_xstrdup(tenant);
	v->name = sbx_xstrdup(name);
	v->dir = sbx_xasprintf("%s/%s", td, name);
}

int sbx_vol_create(struct sbx_redis *r, const struct sbx_profile *p, const char *tenant,
		   const char *name, int64_t budget, struct sbx_vol *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (check(tenant, name, err) < 0)
		return -1;
	if (budget < 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "volume", "the size budget is negative");
	SBX_AUTOFREE char *rec = NULL, *set = NULL, *users = NULL;
	keys_of(r, tenant, name, &rec, &set, &users);
	char b[32], t[32];
	int64_t now = sbx_now_ms();
	snprintf(b, sizeof(b), "%lld", (long long)budget);
	snprintf(t, sizeof(t), "%lld", (long long)now);
	const char *keys[] = {rec, set}, *args[] = {name, b, t};
	redisReply *rep = NULL;
	if (sbx_redis_eval(r, &create_script, &rep, 2, keys, 3, args, err) < 0)
		return -1;
	long long made = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
	freeReplyObject(rep);
	if (made != 1)
		return sbx_fail(err, SBX_CONFLICT, "volume", "volume %s exists", name);
	fill(out, p, r->prefix, tenant, name);
	out->budget = budget;
	out->created_ms = now;
	if (clear_dir(p, r->prefix, tenant, name, err) < 0 || sbx_mkdir_p(out->dir, 0755, err) < 0)
		return -1;
	/* The sandbox user (uid 1000 on every backend) owns the top folder,
	 * so a writable mount is writable without --root.  Only root can
	 * give it away; another creator keeps it (volume.h). */
	if (geteuid() == 0 && chown(out->dir, SBX_VOL_UID, SBX_VOL_UID) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "volume", "chown %s", out->dir);
	return 0;
}

static int64_t field_int(const redisReply *h, const char *key)
{
	for (size_t i = 0; i + 1 < h->elements; i += 2)
		if (h->element[i]->type == REDIS_REPLY_STRING && !strcmp(h->element[i]->str, key) &&
		    h->element[i + 1]->type == REDIS_REPLY_STRING)
			return strtoll(h->element[i + 1]->str, NULL, 10);
	return 0;
}

int sbx_vol_load(struct sbx_redis *r, const struct sbx_profile *p, const char *tenant,
		 const char *name, struct sbx_vol *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (check(tenant, name, err) < 0)
		return -1;
	SBX_AUTOFREE char *rec = NULL, *set = NULL, *users = NULL;
	keys_of(r, tenant, name, &rec, &set, &users);
	redisReply *h = NULL, *u = NULL;
	const char *hv[] = {"HGETALL", rec}, *uv[] = {"SCARD", users};
	if (sbx_redis_cmd(r, &h, err, 2, hv, NULL) < 0)
		return -1;
	if (h->type != REDIS_REPLY_ARRAY || h->elements == 0) {
		freeReplyObject(h);
		return sbx_fail(err, SBX_NOT_FOUND, "volume", "tenant %s has no volume %s",
				tenant, name);
	}
	out->budget = field_int(h, "budget");
	out->created_ms = field_int(h, "created_ms");
	freeReplyObject(h);
	if (sbx_redis_cmd(r, &u, err, 2, uv, NULL) < 0)
		return -1;
	out->users = u->type == REDIS_REPLY_INTEGER ? u->integer : 0;
	freeReplyObject(u);
	fill(out, p, r->prefix, tenant, name);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int sbx_vol_list(struct sbx_redis *r, const struct sbx_profile *p, const char *tenant,
		 struct sbx_vol **out, size_t *n, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	if (check(tenant, NULL, err) < 0)
		return -1;
	SBX_AUTOFREE char *set = sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_VOLUMES);
	redisReply *m = NULL;
	const char *mv[] = {"SMEMBERS", set};
	if (sbx_redis_cmd(r, &m, err, 2, mv, NULL) < 0)
		return -1;
	size_t k = m->type == REDIS_REPLY_ARRAY ? m->elements : 0;
	char **names = sbx_xcalloc(k + 1, sizeof(*names));
	size_t nn = 0;
	for (size_t i = 0; i < k; i++)
		if (m->element[i]->type == REDIS_REPLY_STRING)
			names[nn++] = sbx_xstrdup(m->element[i]->str);
	freeReplyObject(m);
	qsort(names, nn, sizeof(*names), cmp_str);
	struct sbx_vol *v = sbx_xcalloc(nn + 1, sizeof(*v));
	size_t got = 0;
	int rc = 0;
	for (size_t i = 0; i < nn; i++) {
		if (rc == 0 && sbx_vol_load(r, p, tenant, names[i], &v[got], err) == 0)
			got++;
		else if (rc == 0 && err->kind == SBX_NOT_FOUND)
			sbx_err_clear(err);    /* removed while we listed */
		else
			rc = -1;
		free(names[i]);
	}
	free(names);
	if (rc < 0) {
		sbx_vols_free(v, got);
		return -1;
	}
	*out = v;
	*n = got;
	return 0;
}

int sbx_vol_remove(struct sbx_redis *r, const struct sbx_profile *p, const char *tenant,
		   const char *name, struct sbx_err *err)
{
	if (check(tenant, name, err) < 0)
		return -1;
	SBX_AUTOFREE char *rec = NULL, *set = NULL, *users = NULL;
	keys_of(r, tenant, name, &rec, &set, &users);
	const char *keys[] = {rec, set, users}, *args[] = {name};
	redisReply *rep = NULL;
	if (sbx_redis_eval(r, &remove_script, &rep, 3, keys, 1, args, err) < 0)
		return -1;
	long long rc = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
	freeReplyObject(rep);
	if (rc == 0)
		return sbx_fail(err, SBX_NOT_FOUND, "volume", "tenant %s has no volume %s",
				tenant, name);
	if (rc < 0)
		return sbx_fail_reason(err, SBX_CONFLICT, SBX_R_IN_USE, "volume",
				       "volume %s is mounted by %lld sandbox(es)", name, -rc);
	return clear_dir(p, r->prefix, tenant, name, err);
}

int sbx_vol_attach(struct sbx_redis *r, const char *tenant, const char *name, const char *id,
		   struct sbx_err *err)
{
	if (check(tenant, name, err) < 0)
		return -1;
	SBX_AUTOFREE char *rec = NULL, *set = NULL, *users = NULL;
	keys_of(r, tenant, name, &rec, &set, &users);
	const char *keys[] = {rec, users}, *args[] = {id};
	redisReply *rep = NULL;
	if (sbx_redis_eval(r, &attach_script, &rep, 2, keys, 1, args, err) < 0)
		return -1;
	long long ok = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
	freeReplyObject(rep);
	if (!ok)
		return sbx_fail(err, SBX_NOT_FOUND, "volume", "tenant %s has no volume %s",
				tenant, name);
	return 0;
}

int sbx_vol_detach(struct sbx_redis *r, const char *tenant, const char *name, const char *id,
		   struct sbx_err *err)
{
	if (check(tenant, name, err) < 0)
		return -1;
	SBX_AUTOFREE char *users = sbx_key_volume(r->prefix, tenant, strlen(tenant), name,
						  strlen(name), 1);
	redisReply *rep = NULL;
	const char *v[] = {"SREM", users, id};
	if (sbx_redis_cmd(r, &rep, err, 3, v, NULL) < 0)
		return -1;
	freeReplyObject(rep);
	return 0;
}

int sbx_vol_spec_parse(const char *spec, char **name, char **path, int *ro,
		       struct sbx_err *err)
{
	*name = *path = NULL;
	*ro = 0;
	const char *c = strchr(spec, ':');
	if (!c || c == spec)
		return sbx_fail(err, SBX_INVALID_REQUEST, "volume",
				"--volume takes NAME:/PATH[:ro], got '%s'", spec);
	SBX_AUTOFREE char *n = sbx_xasprintf("%.*s", (int)(c - spec), spec);
	SBX_AUTOFREE char *rest = sbx_xstrdup(c + 1);
	size_t rl = strlen(rest);
	if (rl > 3 && (!strcmp(rest + rl - 3, ":ro") || !strcmp(rest + rl - 3, ":rw"))) {
		*ro = rest[rl - 1] == 'o';
		rest[rl - 3] = '\0';
	}
	if (sbx_vol_name_check(n, err) < 0)
		return -1;
	char *p = sbx_path_norm(rest, "volume", err);
	if (!p)
		return -1;
	if (!strcmp(p, "/")) {
		free(p);
		return sbx_fail(err, SBX_INVALID_REQUEST, "volume", "a volume cannot be mounted at /");
	}
	*name = n, n = NULL;
	*path = p;
	return 0;
}

int sbx_vol_is_remote(const struct sbx_backend *b)
{
	return b && b->ops->volume_make != NULL;
}

char *sbx_vol_remote_name(const char *prefix, const char *tenant, const char *name,
			  struct sbx_err *err)
{
	if (check(tenant, name, err) < 0)
		return NULL;
	if (strchr(name, '.') || strlen(name) > 111) {
		sbx_fail(err, SBX_INVALID_REQUEST, "volume",
			 "a volume on this backend's service is named without '.', in at most 111 bytes");
		return NULL;
	}
	SBX_AUTOFREE char *td = tenant_dir(NULL, prefix, tenant);   /* .../volumes/<32 hex> */
	const char *k = strrchr(td, '/') + 1;
	return sbx_xasprintf("%.16s_%s", k, name);
}

int sbx_vol_mounts(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_profile *p,
		   const char *tenant, const char *const *specs, size_t n, struct sbx_vol *vols,
		   char **paths, struct sbx_vol_mount *out, struct sbx_err *err)
{
	int remote = sbx_vol_is_remote(b);
	if (n > SBX_VOLUMES_MAX)
		return sbx_fail(err, SBX_INVALID_REQUEST, "volume", "more than %d volumes",
				SBX_VOLUMES_MAX);
	for (size_t i = 0; i < n; i++) {
		SBX_AUTOFREE char *name = NULL;
		int ro;
		if (sbx_vol_spec_parse(specs[i], &name, &paths[i], &ro, err) < 0 ||
		    sbx_vol_load(r, p, tenant, name, &vols[i], err) < 0)
			return -1;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(paths[j], paths[i]))
				return sbx_fail(err, SBX_INVALID_REQUEST, "volume",
						"two volumes at %s", paths[i]);
		if (remote) {
			if (!(vols[i].remote = sbx_vol_remote_name(r->prefix, tenant, vols[i].name, err)))
				return -1;
		} else if (sbx_mkdir_p(vols[i].dir, 0755, err) < 0)
			return -1;
		out[i] = (struct sbx_vol_mount){.name = vols[i].name, .path = paths[i], .read_only = ro,
						.host_dir = remote ? NULL : vols[i].dir,
						.remote = vols[i].remote};
	}
	return 0;
}

int sbx_vol_users(struct sbx_redis *r, const char *tenant, const char *name, char ***ids,
		  size_t *n, struct sbx_err *err)
{
	*ids = NULL;
	*n = 0;
	if (check(tenant, name, err) < 0)
		return -1;
	SBX_AUTOFREE char *users = sbx_key_volume(r->prefix, tenant, strlen(tenant), name,
						  strlen(name), 1);
	redisReply *m = NULL;
	const char *mv[] = {"SMEMBERS", users};
	if (sbx_redis_cmd(r, &m, err, 2, mv, NULL) < 0)
		return -1;
	size_t k = m->type == REDIS_REPLY_ARRAY ? m->elements : 0;
	char **v = sbx_xcalloc(k + 1, sizeof(*v));
	for (size_t i = 0; i < k; i++)
		if (m->element[i]->type == REDIS_REPLY_STRING)
			v[(*n)++] = sbx_xstrdup(m->element[i]->str);
	freeReplyObject(m);
	*ids = v;
	return 0;
}

int sbx_vol_prune(struct sbx_redis *r, struct sbx_backend *b, const char *tenant,
		  const char *name, struct sbx_err *err)
{
	char **ids;
	size_t n;
	if (sbx_vol_users(r, tenant, name, &ids, &n, err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct sbx_sandbox sb = {0};
		if (sbx_call(b, get, err, ids[i], &sb) == 0)
			sbx_sandbox_clear(&sb);
		else if (err->kind == SBX_NOT_FOUND || err->kind == SBX_TERMINAL) {
			sbx_err_clear(err);
			rc = sbx_vol_detach(r, tenant, name, ids[i], err);
		} else
			rc = -1;
	}
	sbx_strv_free(ids);
	return rc;
}

int sbx_vol_attach_all(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		       const struct sbx_vol_mount *m, size_t n, const char *id,
		       struct sbx_err *err)
{
	for (size_t i = 0; i < n; i++) {
		if (sbx_vol_attach(r, tenant, m[i].name, id, err) == 0)
			continue;
		struct sbx_err e = {0};
		int gone = 0;
		(void)sbx_call(b, remove, &e, id, &gone);
		for (size_t j = 0; j < i; j++)
			(void)sbx_vol_detach(r, tenant, m[j].name, id, &e);
		return -1;
	}
	return 0;
}

struct orphans {
	struct sbx_redis *r;
	json_object *out;
	int n;
};

/* One <prefix>:{<tenant>}:vols key: is its tenant known elsewhere? */
static int orphan_key(const char *key, size_t len, void *ctx, struct sbx_err *err)
{
	(void)len;
	struct orphans *o = ctx;
	SBX_AUTOFREE char *tag = sbx_key_hash_tag(key);
	size_t tl = 0;
	SBX_AUTOFREE char *tenant = tag ? sbx_key_unescape(tag, strlen(tag), &tl) : NULL;
	if (!tenant || strlen(tenant) != tl)
		return 0;                /* not one of ours */
	SBX_AUTOFREE char *idx = sbx_key_tenants(o->r->prefix);
	SBX_AUTOFREE char *bound = sbx_key_tenant(o->r->prefix, tenant, tl, SBX_KEY_BOUND);
	redisReply *a = NULL, *b = NULL;
	const char *av[] = {"SISMEMBER", idx, tenant}, *bv[] = {"EXISTS", bound};
	if (sbx_redis_cmd(o->r, &a, err, 3, av, NULL) < 0)
		return -1;
	int known = a->type == REDIS_REPLY_INTEGER && a->integer == 1;
	freeReplyObject(a);
	if (!known && sbx_redis_cmd(o->r, &b, err, 2, bv, NULL) < 0)
		return -1;
	if (b) {
		known = b->type == REDIS_REPLY_INTEGER && b->integer == 1;
		freeReplyObject(b);
	}
	if (known)
		return 0;
	struct sbx_vol *v;
	size_t n;
	if (sbx_vol_list(o->r, NULL, tenant, &v, &n, err) < 0)
		return -1;
	json_object *e = json_object_new_object(), *names = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(names, json_object_new_string(v[i].name));
	sbx_vols_free(v, n);
	sbx_json_set_str(e, "tenant", tenant);
	json_object_object_add(e, "volumes", names);
	json_object_array_add(o->out, e);
	o->n++;
	return 0;
}

int sbx_vol_orphans(struct sbx_redis *r, json_object *out, struct sbx_err *err)
{
	struct orphans o = {.r = r, .out = out};
	SBX_AUTOFREE char *gp = sbx_key_glob_escape(r->prefix);
	SBX_AUTOFREE char *pat = sbx_xasprintf("%s:{*}:vols", gp);
	if (sbx_redis_scan_all(r, pat, orphan_key, &o, err) < 0)
		return -1;
	return o.n;
}

/* nftw has no context argument; one walk at a time per process. */
static __thread int64_t walk_bytes;

static int walk_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path, (void)flag, (void)f;
	walk_bytes += (int64_t)st->st_blocks * 512;
	return 0;
}

int sbx_vol_used(const struct sbx_vol *v, int64_t *bytes, struct sbx_err *err)
{
	walk_bytes = 0;
	if (nftw(v->dir, walk_one, 16, FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
		return sbx_fail_errno(err, SBX_INTERNAL, "volume", "%s", v->dir);
	*bytes = walk_bytes;
	return 0;
}

/* The volume's folder as a confinement root (made when a create crashed
 * before making it). */
static int open_root(const struct sbx_vol *v, struct sbx_fsc *c, struct sbx_err *err)
{
	if (sbx_mkdir_p(v->dir, 0755, err) < 0)
		return -1;
	int fd = open(v->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "volume", "%s", v->dir);
	if (sbx_fsc_init(c, fd, 0, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int sbx_vol_put(const struct sbx_vol *v, const char *path, const void *data, size_t len,
		unsigned mode, struct sbx_err *err)
{
	struct sbx_fsc c;
	SBX_AUTOCLOSE int fd = open_root(v, &c, err);
	if (fd < 0)
		return -1;
	if (v->budget > 0) {
		int64_t used = 0, old = 0;
		struct sbx_dirent e = {0};
		if (sbx_vol_used(v, &used, err) < 0)
			return -1;
		if (sbx_fsc_stat(&c, path, &e, err) == 0 && e.type == SBX_FT_FILE)
			old = e.size;    /* replaced: its bytes come back */
		free(e.name), free(e.path), free(e.link_target);
		sbx_err_clear(err);
		if (used - old + (int64_t)len > v->budget)
			return sbx_fail(err, SBX_CAPACITY, "put",
					"volume %s: %zu bytes more would pass its budget of %lld (%lld used)",
					v->name, len, (long long)v->budget, (long long)used);
	}
	return sbx_fsc_write_atomic(&c, path, data, len, mode, err);
}

int sbx_vol_get(const struct sbx_vol *v, const char *path, size_t max, char **data,
		size_t *len, unsigned *mode, struct sbx_err *err)
{
	struct sbx_fsc c;
	SBX_AUTOCLOSE int fd = open_root(v, &c, err);
	if (fd < 0)
		return -1;
	struct sbx_dirent e = {0};
	if (sbx_fsc_stat(&c, path, &e, err) < 0)
		return -1;
	*mode = e.type == SBX_FT_FILE ? e.mode : 0600;   /* a link's own mode says nothing */
	free(e.name), free(e.path), free(e.link_target);
	return sbx_fsc_read(&c, path, max, data, len, err);
}

void sbx_vol_json(const struct sbx_vol *v, json_object *o)
{
	sbx_json_set_str(o, "tenant", v->tenant);
	sbx_json_set_str(o, "name", v->name);
	sbx_json_set_int(o, "budget", v->budget);
	sbx_json_set_int(o, "created_ms", v->created_ms);
	sbx_json_set_int(o, "users", v->users);
}

void sbx_vol_clear(struct sbx_vol *v)
{
	free(v->tenant);
	free(v->name);
	free(v->dir);
	free(v->remote);
	memset(v, 0, sizeof(*v));
}

void sbx_vols_free(struct sbx_vol *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sbx_vol_clear(&v[i]);
	free(v);
}
