/* ledger.c - the skill ledger: rows written before the snapshot, and the
 * recovery that completes or fails what a crash left half done (see
 * ledger.h for the row layout and the protocol).
 *
 * Promises: a row's state only moves snapshotting -> ready -> (published)
 * or -> failed, each move guarded by the row's planned name so that a late
 * writer never touches a later run's row; the image pointer only moves by
 * compare-and-set from the generation the row recorded (image.c), and only
 * to a snapshot that exists; a snapshot this code deletes is always one a
 * row of ours names (a positive match by id or planned name), never one
 * found by absence. */
#include "ledger.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binding.h"
#include "doc.h"
#include "events.h"
#include "image.h"
#include "keys.h"
#include "fault.h"
#include "pager.h"
#include "util.h"

/* ---- rows <-> hashes ---------------------------------------------------- */

void sbx_ledger_row_clear(struct sbx_ledger_row *row)
{
	free(row->skill);
	free(row->state);
	free(row->op);
	free(row->planned_name);
	free(row->fingerprint);
	free(row->base_template);
	free(row->parent);
	free(row->sandbox_id);
	free(row->snapshot_id);
	free(row->owner);
	free(row->error);
	memset(row, 0, sizeof(*row));
}

void sbx_ledger_rows_free(struct sbx_ledger_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sbx_ledger_row_clear(&rows[i]);
	free(rows);
}

void sbx_ledger_ids_free(char **ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

static void set_iso_ms(json_object *o, const char *key, int64_t ms)
{
	char buf[32];
	if (ms <= 0)
		return;
	sbx_time_iso(ms / 1000, buf, sizeof(buf));
	sbx_json_set_str(o, key, buf);
}

json_object *sbx_ledger_row_to_json(const struct sbx_ledger_row *row)
{
	json_object *o = json_object_new_object();
	const struct { const char *k, *v; } s[] = {
		{"skill", row->skill}, {"state", row->state}, {"op", row->op},
		{"planned_name", row->planned_name}, {"snapshot_id", row->snapshot_id},
		{"fingerprint", row->fingerprint}, {"base_template", row->base_template},
		{"parent", row->parent}, {"sandbox_id", row->sandbox_id}, {"owner", row->owner},
		{"error", row->error},
	};
	for (size_t i = 0; i < SBX_ARRAY_LEN(s); i++)
		if (s[i].v && *s[i].v)
			sbx_json_set_str(o, s[i].k, s[i].v);
	sbx_json_set_int(o, "generation", row->generation);
	sbx_json_set_int(o, "image_generation", row->image_generation);
	sbx_json_set_bool(o, "published", row->published);
	set_iso_ms(o, "created_at", row->created_at);
	set_iso_ms(o, "updated_at", row->updated_at);
	return o;
}

static char *row_key(struct sbx_redis *r, const char *tenant, const char *skill)
{
	return sbx_key_skill(r->prefix, tenant, strlen(tenant), skill, strlen(skill));
}

static char *index_key(struct sbx_redis *r, const char *tenant)
{
	return sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_LEDGER);
}

static int64_t to_i64(const char *s)
{
	return s ? strtoll(s, NULL, 10) : 0;
}

/* HGETALL reply -> row.  A row without state or planned name is malformed
 * (fail closed: recovery must never guess). */
static int row_from_reply(redisReply *rep, const char *skill, struct sbx_ledger_row *out,
			  struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i + 1 < rep->elements; i += 2) {
		const char *k = rep->element[i]->str, *v = rep->element[i + 1]->str;
		if (!k || !v)
			continue;
		char **slot = NULL;
		if (!strcmp(k, "state")) slot = &out->state;
		else if (!strcmp(k, "op")) slot = &out->op;
		else if (!strcmp(k, "planned_name")) slot = &out->planned_name;
		else if (!strcmp(k, "fingerprint")) slot = &out->fingerprint;
		else if (!strcmp(k, "base_template")) slot = &out->base_template;
		else if (!strcmp(k, "parent")) slot = &out->parent;
		else if (!strcmp(k, "sandbox_id")) slot = &out->sandbox_id;
		else if (!strcmp(k, "snapshot_id")) slot = &out->snapshot_id;
		else if (!strcmp(k, "owner")) slot = &out->owner;
		else if (!strcmp(k, "error")) slot = &out->error;
		else if (!strcmp(k, "generation")) out->generation = to_i64(v);
		else if (!strcmp(k, "image_generation")) out->image_generation = to_i64(v);
		else if (!strcmp(k, "created_at")) out->created_at = to_i64(v);
		else if (!strcmp(k, "updated_at")) out->updated_at = to_i64(v);
		else if (!strcmp(k, "published")) out->published = !strcmp(v, "1");
		if (slot) {
			free(*slot);
			*slot = sbx_xstrdup(v);
		}
	}
	out->skill = sbx_xstrdup(skill);
	if (!out->state || !out->planned_name || !out->op) {
		sbx_ledger_row_clear(out);
		return sbx_fail(err, SBX_INTERNAL, "ledger",
				"the ledger row of skill '%s' is malformed", skill);
	}
	return 0;
}

int sbx_ledger_get(struct sbx_redis *r, const char *tenant, const char *skill,
		   struct sbx_ledger_row *out, struct sbx_err *err)
{
	if (sbx_ids_check(tenant, "skill", skill, err) < 0)
		return -1;
	SBX_AUTOFREE char *key = row_key(r, tenant, skill);
	const char *argv[] = {"HGETALL", key};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, err, 2, argv, NULL) < 0)
		return -1;
	int rc = 0;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0)
		rc = row_from_reply(rep, skill, out, err) < 0 ? -1 : 1;
	else
		memset(out, 0, sizeof(*out));
	freeReplyObject(rep);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* SMEMBERS as a sorted string array. */
static int smembers(struct sbx_redis *r, const char *key, char ***out, size_t *n,
		    struct sbx_err *err)
{
	const char *argv[] = {"SMEMBERS", key};
	redisReply *rep;
	*out = NULL;
	*n = 0;
	if (sbx_redis_cmd(r, &rep, err, 2, argv, NULL) < 0)
		return -1;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements) {
		*out = sbx_xcalloc(rep->elements, sizeof(char *));
		for (size_t i = 0; i < rep->elements; i++)
			if (rep->element[i]->str)
				(*out)[(*n)++] = sbx_xstrdup(rep->element[i]->str);
		qsort(*out, *n, sizeof(char *), cmp_str);
	}
	freeReplyObject(rep);
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct sbx_ledger_row *x = a, *y = b;
	if (x->generation != y->generation)
		return x->generation < y->generation ? -1 : 1;
	return strcmp(x->skill, y->skill);
}

int sbx_ledger_list(struct sbx_redis *r, const char *tenant, struct sbx_ledger_row **out,
		    size_t *n, struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	if (sbx_ids_check(tenant, NULL, NULL, err) < 0)
		return -1;
	SBX_AUTOFREE char *ikey = index_key(r, tenant);
	char **names;
	size_t nn;
	if (smembers(r, ikey, &names, &nn, err) < 0)
		return -1;
	struct sbx_ledger_row *rows = sbx_xcalloc(nn ? nn : 1, sizeof(*rows));
	size_t k = 0;
	for (size_t i = 0; i < nn; i++) {
		int rc = sbx_ledger_get(r, tenant, names[i], &rows[k], err);
		if (rc < 0) {
			sbx_ledger_rows_free(rows, k);
			sbx_ledger_ids_free(names, nn);
			return -1;
		}
		k += (size_t)rc;     /* an index entry without a row: deleted midway */
	}
	sbx_ledger_ids_free(names, nn);
	qsort(rows, k, sizeof(*rows), cmp_row);
	*out = rows;
	*n = k;
	return 0;
}

int sbx_ledger_tenants(struct sbx_redis *r, char ***out, size_t *n, struct sbx_err *err)
{
	SBX_AUTOFREE char *key = sbx_key_tenants(r->prefix);
	return smembers(r, key, out, n, err);
}

int sbx_ledger_max_generation(struct sbx_redis *r, const char *tenant, int64_t *out,
			      struct sbx_err *err)
{
	struct sbx_ledger_row *rows;
	size_t n;
	*out = 0;
	if (sbx_ledger_list(r, tenant, &rows, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (rows[i].generation > *out)
			*out = rows[i].generation;
	sbx_ledger_rows_free(rows, n);
	return 0;
}

/* ---- writes ------------------------------------------------------------- */

/* KEYS: row, index.  ARGV: skill, then field/value pairs.  The row is
 * replaced whole (no field of an older run survives) unless it is still
 * snapshotting: then {0, its planned name}. */
static struct sbx_script begin_script = {.src =
	"if redis.call('HGET', KEYS[1], 'state') == 'snapshotting' then\n"
	"  return {0, redis.call('HGET', KEYS[1], 'planned_name') or ''}\n"
	"end\n"
	"redis.call('DEL', KEYS[1])\n"
	"redis.call('HSET', KEYS[1], unpack(ARGV, 2))\n"
	"redis.call('SADD', KEYS[2], ARGV[1])\n"
	"return {1, ''}\n", .durable = 1};

/* KEYS: row.  ARGV: planned_name, required state ('' = any), number of
 * fields to delete, those names, then field/value pairs to set.  1 when
 * written, 0 when the row is not this run's (or not in that state). */
static struct sbx_script update_script = {.src =
	"if redis.call('HGET', KEYS[1], 'planned_name') ~= ARGV[1] then return 0 end\n"
	"if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'state') ~= ARGV[2] then return 0 end\n"
	"local nd = tonumber(ARGV[3])\n"
	"for i = 1, nd do redis.call('HDEL', KEYS[1], ARGV[3 + i]) end\n"
	"if #ARGV > 3 + nd then redis.call('HSET', KEYS[1], unpack(ARGV, 4 + nd)) end\n"
	"return 1\n", .durable = 1};

/* KEYS: row, index.  ARGV: skill.  Refuses a snapshotting row (-1). */
static struct sbx_script delete_script = {.src =
	"local st = redis.call('HGET', KEYS[1], 'state')\n"
	"if st == 'snapshotting' then return -1 end\n"
	"redis.call('SREM', KEYS[2], ARGV[1])\n"
	"return redis.call('DEL', KEYS[1])\n"};

static void i64s(char *buf, size_t len, int64_t v)
{
	snprintf(buf, len, "%lld", (long long)v);
}

static void pair(const char **args, int *na, const char *k, const char *v)
{
	if (!v)
		return;
	args[(*na)++] = k;
	args[(*na)++] = v;
}

int sbx_ledger_begin(struct sbx_redis *r, const char *tenant, const struct sbx_ledger_row *row,
		     struct sbx_err *err)
{
	if (sbx_ids_check(tenant, "skill", row->skill, err) < 0)
		return -1;
	/* The tenants set first: a crash after the row write must never leave
	 * a row that "--recover" (all tenants) cannot reach.  It lives in
	 * another slot, so it cannot share the script. */
	SBX_AUTOFREE char *tkey = sbx_key_tenants(r->prefix);
	const char *sadd[] = {"SADD", tkey, tenant};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, err, 3, sadd, NULL) < 0)
		return -1;
	freeReplyObject(rep);

	char gen[24], igen[24], cat[24], uat[24];
	i64s(gen, sizeof(gen), row->generation);
	i64s(igen, sizeof(igen), row->image_generation);
	i64s(cat, sizeof(cat), row->created_at);
	i64s(uat, sizeof(uat), row->updated_at ? row->updated_at : row->created_at);
	const char *args[32];
	int na = 0;
	args[na++] = row->skill;
#define PAIR(k, v) pair(args, &na, (k), (v))
	PAIR("state", row->state);
	PAIR("op", row->op);
	PAIR("planned_name", row->planned_name);
	PAIR("fingerprint", row->fingerprint);
	PAIR("base_template", row->base_template);
	PAIR("parent", row->parent);
	PAIR("sandbox_id", row->sandbox_id);
	PAIR("owner", row->owner);
	PAIR("generation", gen);
	PAIR("image_generation", igen);
	PAIR("created_at", cat);
	PAIR("updated_at", uat);
	PAIR("published", "0");
#undef PAIR
	SBX_AUTOFREE char *key = row_key(r, tenant, row->skill);
	SBX_AUTOFREE char *ikey = index_key(r, tenant);
	const char *keys[] = {key, ikey};
	if (sbx_redis_eval(r, &begin_script, &rep, 2, keys, na, args, err) < 0)
		return -1;
	int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
		 rep->element[0]->integer == 1;
	if (!ok) {
		int rc = sbx_fail(err, SBX_CONFLICT, "ledger",
				  "skill '%s' of tenant '%s' is being snapshotted already (%s); "
				  "wait, or run sbx-snap --recover", row->skill, tenant,
				  rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
				  rep->element[1]->str ? rep->element[1]->str : "?");
		freeReplyObject(rep);
		return rc;
	}
	freeReplyObject(rep);
	return 0;
}

/* Guarded update of this run's row (see update_script). */
static int row_update(struct sbx_redis *r, const char *tenant, const char *skill,
		      const char *planned_name, const char *need_state, const char *const *del,
		      int ndel, const char *const *set, int nset, struct sbx_err *err)
{
	if (sbx_ids_check(tenant, "skill", skill, err) < 0)
		return -1;
	SBX_AUTOFREE char *key = row_key(r, tenant, skill);
	const char *args[40];
	int na = 0;
	char nd[8], now[24];
	snprintf(nd, sizeof(nd), "%d", ndel);
	i64s(now, sizeof(now), sbx_now_ms());
	args[na++] = planned_name;
	args[na++] = need_state ? need_state : "";
	args[na++] = nd;
	for (int i = 0; i < ndel; i++)
		args[na++] = del[i];
	for (int i = 0; i < nset && na < 36; i++)
		args[na++] = set[i];
	args[na++] = "updated_at";
	args[na++] = now;
	const char *keys[] = {key};
	redisReply *rep;
	if (sbx_redis_eval(r, &update_script, &rep, 1, keys, na, args, err) < 0)
		return -1;
	int rc = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	return rc;
}

int sbx_ledger_mark_ready(struct sbx_redis *r, const char *tenant, const char *skill,
			  const char *planned_name, const char *snapshot_id, struct sbx_err *err)
{
	const char *set[] = {"state", "ready", "snapshot_id", snapshot_id};
	const char *del[] = {"error"};
	return row_update(r, tenant, skill, planned_name, "snapshotting", del, 1, set, 4, err);
}

/* Fail the row; keep_snapshot names a snapshot that could not be deleted
 * (it stays on the row, so it is still found and deleted later). */
static int mark_failed(struct sbx_redis *r, const char *tenant, const char *skill,
		       const char *planned_name, const char *why, const char *keep_snapshot,
		       struct sbx_err *err)
{
	const char *set[] = {"state", "failed", "error", why ? why : "failed",
			     "snapshot_id", keep_snapshot};
	const char *del[] = {"snapshot_id"};
	if (keep_snapshot)
		return row_update(r, tenant, skill, planned_name, NULL, NULL, 0, set, 6, err);
	return row_update(r, tenant, skill, planned_name, NULL, del, 1, set, 4, err);
}

int sbx_ledger_mark_failed(struct sbx_redis *r, const char *tenant, const char *skill,
			   const char *planned_name, const char *why, struct sbx_err *err)
{
	return mark_failed(r, tenant, skill, planned_name, why, NULL, err);
}

int sbx_ledger_mark_published(struct sbx_redis *r, const char *tenant, const char *skill,
			      const char *planned_name, struct sbx_err *err)
{
	const char *set[] = {"published", "1"};
	return row_update(r, tenant, skill, planned_name, "ready", NULL, 0, set, 2, err);
}

int sbx_ledger_delete(struct sbx_redis *r, const char *tenant, const char *skill,
		      struct sbx_err *err)
{
	if (sbx_ids_check(tenant, "skill", skill, err) < 0)
		return -1;
	SBX_AUTOFREE char *key = row_key(r, tenant, skill);
	SBX_AUTOFREE char *ikey = index_key(r, tenant);
	const char *keys[] = {key, ikey};
	const char *args[] = {skill};
	redisReply *rep;
	if (sbx_redis_eval(r, &delete_script, &rep, 2, keys, 1, args, err) < 0)
		return -1;
	long long v = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
	freeReplyObject(rep);
	if (v < 0)
		return sbx_fail(err, SBX_CONFLICT, "ledger",
				"skill '%s' is being snapshotted; run sbx-snap --recover first", skill);
	return v > 0;
}

/* ---- snapshots ---------------------------------------------------------- */

static void ref_copy(const struct sbx_snapshot_ref *s, struct sbx_snapshot_ref *d)
{
	d->id = s->id ? sbx_xstrdup(s->id) : NULL;
	d->name = s->name ? sbx_xstrdup(s->name) : NULL;
	d->parent = s->parent ? sbx_xstrdup(s->parent) : NULL;
	d->created_at = s->created_at;
	d->size_bytes = s->size_bytes;
	d->layers = s->layers;
}

/* Does snapshot `s` answer to x?  By id, by name, or (Docker-style
 * repository names) by a name ending in "/x". */
static int ref_matches(const struct sbx_snapshot_ref *s, const char *x)
{
	if ((s->id && !strcmp(s->id, x)) || (s->name && !strcmp(s->name, x)))
		return 1;
	if (s->name) {
		size_t ln = strlen(s->name), lx = strlen(x);
		if (ln > lx && s->name[ln - lx - 1] == '/' && !strcmp(s->name + ln - lx, x))
			return 1;
	}
	return 0;
}

const struct sbx_snapshot_ref *sbx_ledger_snapshot_in(const struct sbx_snapshot_ref *all, size_t n,
						      const char *x)
{
	for (size_t i = 0; i < n; i++)
		if (ref_matches(&all[i], x))
			return &all[i];
	return NULL;
}

int sbx_ledger_find_snapshot(struct sbx_backend *b, const char *id_or_name,
			     struct sbx_snapshot_ref *out, struct sbx_err *err)
{
	struct sbx_snapshot_ref *all;
	size_t n;
	if (sbx_snapshots_all(b, &all, &n, err) < 0)
		return -1;
	const struct sbx_snapshot_ref *s = sbx_ledger_snapshot_in(all, n, id_or_name);
	if (s && out)
		ref_copy(s, out);
	sbx_snapshot_refs_free(all, n);
	return s != NULL;
}

int sbx_ledger_image_bytes(struct sbx_backend *b, const char *id, int64_t *bytes,
			   struct sbx_err *err)
{
	struct sbx_snapshot_ref *all;
	size_t n;
	*bytes = 0;
	if (sbx_snapshots_all(b, &all, &n, err) < 0)
		return -1;
	const char *cur = id;
	for (size_t depth = 0; cur && depth <= n; depth++) {
		const struct sbx_snapshot_ref *s = NULL;
		for (size_t i = 0; i < n && !s; i++)
			if (all[i].id && !strcmp(all[i].id, cur))
				s = &all[i];
		if (!s)
			break;      /* the base template: not a snapshot */
		if (s->size_bytes < 0 || *bytes < 0)
			*bytes = -1;
		else
			*bytes += s->size_bytes;
		cur = s->parent;
	}
	sbx_snapshot_refs_free(all, n);
	return 0;
}

/* ---- publish: pointer + stale ------------------------------------------- */

/* Delete a snapshot one of our rows names.  0 deleted or already gone,
 * -1 could not (kept on the row for a later try). */
static int drop_snapshot(struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	int gone = 0;
	return sbx_call(b, snapshot_delete, err, id, &gone);
}

/* The row lost the pointer race (the image moved on without it): delete
 * its snapshot and fail the row.  A snapshot that cannot be deleted stays
 * named on the failed row, so the next recovery tries again. */
static int lose_race(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		     const struct sbx_ledger_row *row, const char *why, struct sbx_err *err)
{
	struct sbx_err derr = {0};
	const char *keep = NULL;
	if (row->snapshot_id && drop_snapshot(b, row->snapshot_id, &derr) < 0)
		keep = row->snapshot_id;
	if (mark_failed(r, tenant, row->skill, row->planned_name, why, keep, err) < 0)
		return -1;
	if (keep) {
		*err = derr;
		sbx_err_prefix(err, "delete the superseded snapshot %s", keep);
		return -1;
	}
	return 0;
}

/* Did the image pass through snapshot `id` on its way to `cur`?  Every
 * install stands on the image it replaces and records it as its row's
 * parent, so following parents through the ledger from the current image
 * finds every earlier image that is still named by a row.  Used when a
 * run crashed between its pointer move and its publish, and the image has
 * moved on since: that row won, it did not lose.  1 yes, 0 no, -1 error. */
static int image_descends_from(struct sbx_redis *r, const char *tenant, const char *cur,
			       const char *id, struct sbx_err *err)
{
	struct sbx_ledger_row *rows;
	size_t n;
	if (sbx_ledger_list(r, tenant, &rows, &n, err) < 0)
		return -1;
	int found = 0;
	const char *at = cur;
	for (size_t hops = 0; at && *at && hops <= n && !found; hops++) {
		if (!strcmp(at, id)) {
			found = 1;
			break;
		}
		const char *next = NULL;
		for (size_t i = 0; i < n && !next; i++)
			if (rows[i].snapshot_id && !strcmp(rows[i].snapshot_id, at) &&
			    !strcmp(rows[i].state, "ready"))
				next = rows[i].parent;
		at = next;
	}
	sbx_ledger_rows_free(rows, n);
	return found;
}

/* The event of a moved image pointer (events.h), before the stale marks
 * it causes. */
static void publish_event(struct sbx_redis *r, const char *tenant,
			  const struct sbx_ledger_row *row, int64_t generation)
{
	json_object *d = json_object_new_object();
	sbx_json_set_str(d, "skill", row->skill);
	sbx_json_set_str(d, "op", row->op);
	sbx_json_set_str(d, "snapshot", row->snapshot_id);
	sbx_json_set_int(d, "generation", generation);
	struct sbx_event ev = {.type = "published", .tenant = tenant, .detail = d};
	sbx_event_emit(r, &ev);
	json_object_put(d);
}

int sbx_ledger_publish(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		       const struct sbx_ledger_row *row, int check_exists, json_object *out,
		       struct sbx_err *err)
{
	struct sbx_image im = {0};
	int have = sbx_image_get(r, tenant, &im, err);
	if (have < 0)
		return -1;
	int already = have && im.snapshot_id && row->snapshot_id &&
		      !strcmp(im.snapshot_id, row->snapshot_id);
	int64_t cur_gen = im.generation, new_gen = im.generation;
	if (!already && have && cur_gen > row->image_generation && row->snapshot_id) {
		int d = image_descends_from(r, tenant, im.snapshot_id, row->snapshot_id, err);
		if (d < 0) {
			sbx_image_clear(&im);
			return -1;
		}
		if (d) {
			/* We moved the pointer, then died; later installs stacked
			 * on us and marked the sessions stale themselves. */
			sbx_image_clear(&im);
			if (out)
				sbx_json_set_str(out, "outcome", "superseded");
			return sbx_ledger_mark_published(r, tenant, row->skill, row->planned_name,
							 err) < 0 ? -1 : 1;
		}
	}
	sbx_image_clear(&im);
	if (!already) {
		if (cur_gen != row->image_generation) {
			SBX_AUTOFREE char *why = sbx_xasprintf(
				"lost the image race: the image moved from generation %lld to %lld "
				"while this snapshot was made; install again from the new image",
				(long long)row->image_generation, (long long)cur_gen);
			if (lose_race(b, r, tenant, row, why, err) < 0)
				return -1;
			if (out)
				sbx_json_set_str(out, "outcome", "lost_race");
			return sbx_fail(err, SBX_CONFLICT, "image", "%s", why);
		}
		if (check_exists) {
			int found = sbx_ledger_find_snapshot(b, row->snapshot_id, NULL, err);
			if (found < 0)
				return -1;
			if (!found) {
				if (mark_failed(r, tenant, row->skill, row->planned_name,
						"the snapshot vanished before the image pointer moved",
						NULL, err) < 0)
					return -1;
				return sbx_fail(err, SBX_NOT_FOUND, "image",
						"snapshot %s of skill '%s' no longer exists",
						row->snapshot_id, row->skill);
			}
		}
		struct sbx_image next = {
			.snapshot_id = row->snapshot_id, .fingerprint = row->fingerprint,
			.base_template = row->base_template,
		};
		int rc = sbx_image_cas(r, tenant, row->image_generation, &next, &new_gen, err);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			/* Lost - unless the winner published this very row (a
			 * recovery and its run racing): then nothing is lost. */
			struct sbx_image again = {0};
			int h = sbx_image_get(r, tenant, &again, err);
			int ours = h > 0 && !strcmp(again.snapshot_id, row->snapshot_id);
			sbx_image_clear(&again);
			if (h < 0)
				return -1;
			if (ours)
				rc = 1;
		}
		if (rc == 0) {
			SBX_AUTOFREE char *why = sbx_xasprintf(
				"lost the image race: another install moved the image to generation "
				"%lld first; install again from the new image", (long long)new_gen);
			if (lose_race(b, r, tenant, row, why, err) < 0)
				return -1;
			if (out)
				sbx_json_set_str(out, "outcome", "lost_race");
			return sbx_fail(err, SBX_CONFLICT, "image", "%s", why);
		}
		sbx_fault("snap:after-pointer");
		publish_event(r, tenant, row, new_gen);
	}
	if (out)
		sbx_json_set_int(out, "image_generation", new_gen);

	/* A flatten changes no file: sessions on the old stack need no rebuild. */
	long marked = 0, failed = 0;
	if (strcmp(row->op, "flatten") != 0) {
		struct sbx_err serr = {0};
		int rc = sbx_bindings_mark_stale(r, tenant, sbx_now_ms() / 1000, &marked, &failed,
						 &serr);
		if (out) {
			json_object *st = json_object_new_object();
			sbx_json_set_int(st, "marked", marked);
			sbx_json_set_int(st, "failed", failed);
			json_object_object_add(out, "stale", st);
		}
		if (rc < 0 || failed) {
			/* The image moved: the install succeeded.  The row stays
			 * unpublished so that the next recovery marks again. */
			if (out)
				sbx_json_set_str(out, "warning", serr.msg[0] ? serr.msg :
						 "some sessions could not be marked stale; "
						 "sbx-snap --recover will retry");
			return 1;
		}
	}
	if (sbx_ledger_mark_published(r, tenant, row->skill, row->planned_name, err) < 0)
		return -1;
	return 1;
}

/* fn(ctx, T, err) for `tenant`, or for every tenant with a ledger when it
 * is NULL, in sbx_ledger_tenants order; stops at the first failure. */
int sbx_ledger_each_tenant(struct sbx_redis *r, const char *tenant,
			    int (*fn)(void *ctx, const char *tenant, struct sbx_err *err), void *ctx,
			    struct sbx_err *err)
{
	if (tenant)
		return fn(ctx, tenant, err);
	char **ts;
	size_t nt;
	if (sbx_ledger_tenants(r, &ts, &nt, err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < nt && rc == 0; i++)
		rc = fn(ctx, ts[i], err);
	sbx_ledger_ids_free(ts, nt);
	return rc;
}

/* ---- what the reaper must keep ------------------------------------------ */

static void ids_add(char ***v, size_t *n, size_t *cap, const char *s)
{
	if (!s || !*s)
		return;
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*v = sbx_xrealloc(*v, *cap * sizeof(char *));
	}
	(*v)[(*n)++] = sbx_xstrdup(s);
}

struct referenced {
	struct sbx_redis *r;
	char **v;
	size_t n, cap;
};

static int referenced_tenant(void *ctx, const char *tenant, struct sbx_err *err)
{
	struct referenced *s = ctx;
	struct sbx_ledger_row *rows;
	size_t nr;
	if (sbx_ledger_list(s->r, tenant, &rows, &nr, err) < 0)
		return -1;
	for (size_t i = 0; i < nr; i++) {
		ids_add(&s->v, &s->n, &s->cap, rows[i].snapshot_id);
		if (!strcmp(rows[i].state, "snapshotting"))
			ids_add(&s->v, &s->n, &s->cap, rows[i].planned_name);
	}
	sbx_ledger_rows_free(rows, nr);
	struct sbx_image im = {0};
	if (sbx_image_get(s->r, tenant, &im, err) < 0)
		return -1;
	ids_add(&s->v, &s->n, &s->cap, im.snapshot_id);
	sbx_image_clear(&im);
	return 0;
}

int sbx_ledger_referenced(struct sbx_redis *r, const char *tenant, char ***ids, size_t *n,
			  struct sbx_err *err)
{
	struct referenced s = {.r = r};
	int rc = sbx_ledger_each_tenant(r, tenant, referenced_tenant, &s, err);
	char **v = s.v;
	size_t nv = s.n;
	if (rc < 0) {
		sbx_ledger_ids_free(v, nv);
		return -1;
	}
	if (nv)
		qsort(v, nv, sizeof(char *), cmp_str);
	size_t k = 0;
	for (size_t i = 0; i < nv; i++) {
		if (k && !strcmp(v[k - 1], v[i])) {
			free(v[i]);
			continue;
		}
		v[k++] = v[i];
	}
	*ids = v;
	*n = k;
	return 0;
}
