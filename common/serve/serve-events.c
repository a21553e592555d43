/* serve-events.c - sbx-serve's side of the tenant's event stream
 * (events.h): each API key is the tenant "e2b-<team>" (its key id), whose
 * stream gets the lifecycle events of the key's sandboxes as this server
 * makes them (created, paused, resumed, killed, timeout, snapshot), and
 * E2B's calls over that stream:
 *
 *   GET    /events/sandboxes[/{id}]       the key's events in E2B's shape
 *   POST   /events/webhooks               register (201)
 *   GET    /events/webhooks[/{id}]        list, or one
 *   PATCH  /events/webhooks/{id}          change name, url, enabled, events,
 *                                         signatureSecret (200)
 *   DELETE /events/webhooks/{id}          unregister (200)
 *
 * A webhook is a field of the tenant's hash (keys.h SBX_KEY_WEBHOOKS), its
 * JSON with the secret; the secret is never answered.  The tenant is
 * added to the set of tenants with webhooks, which the deliverer
 * (serve-hooks.c) walks.  A webhook records `since`, Redis's clock when it
 * was registered, where its consumer group starts: it is sent what
 * happened after it was made, never the history.  A key sees, changes and
 * deletes only its own webhooks and events: another key's are 404 / [].
 *
 * Redis is the profile's, opened once per worker process on first use.
 * Without one the event calls answer 503 and events are not written
 * (counted, as every program's). */
#include "serve-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "events.h"
#include "keys.h"
#include "redis.h"
#include "sha.h"
#include "ssrf.h"
#include "util.h"

#define HOOKS_PER_KEY 32
#define HOOK_TEXT_MAX 2048

static const char *const e2b_types[][2] = {
	{"created", "sandbox.lifecycle.created"},
	{"timeout", "sandbox.lifecycle.updated"},
	{"paused", "sandbox.lifecycle.paused"},
	{"resumed", "sandbox.lifecycle.resumed"},
	{"killed", "sandbox.lifecycle.killed"},
	{"snapshot", "sandbox.lifecycle.checkpointed"},
};

const char *serve_e2b_type(const char *type)
{
	for (size_t i = 0; type && i < sizeof(e2b_types) / sizeof(e2b_types[0]); i++)
		if (!strcmp(type, e2b_types[i][0]))
			return e2b_types[i][1];
	return NULL;
}

static int e2b_type_known(const char *t)
{
	for (size_t i = 0; i < sizeof(e2b_types) / sizeof(e2b_types[0]); i++)
		if (!strcmp(t, e2b_types[i][1]))
			return 1;
	return 0;
}

void serve_tenant(const char *team, char out[24])
{
	snprintf(out, 24, "e2b-%s", team);
}

struct sbx_redis *serve_redis(const struct sbx_serve_cfg *cfg, struct sbx_err *err)
{
	static struct sbx_redis *r;
	if (r && !r->c) {
		sbx_redis_close(r);          /* broken: open again */
		r = NULL;
	}
	if (!r && sbx_redis_open(cfg->profile, &r, err) < 0)
		r = NULL;
	return r;
}

void serve_event(const struct sbx_serve_cfg *cfg, const char *team, const char *sandbox,
		 const char *type, const char *why, json_object *detail)
{
	struct sbx_err err = {0};
	char tenant[24];
	serve_tenant(team && *team ? team : "none", tenant);
	struct sbx_redis *r = serve_redis(cfg, &err);
	if (!r)
		sbx_events_lost(&err);
	struct sbx_event ev = {.type = type, .tenant = tenant, .sandbox = sandbox, .why = why,
			       .detail = detail};
	sbx_event_emit(r, &ev);
	json_object_put(detail);
}

/* A stream entry id "MS-SEQ" as a UUID-shaped id, the same for every
 * delivery of the entry (a receiver's idempotency key). */
static void event_uuid(const char *tenant, const char *id, char out[37])
{
	unsigned char h[SBX_SHA256_LEN];
	SBX_AUTOFREE char *s = sbx_xasprintf("%s/%s", tenant, id);
	sbx_sha256(s, strlen(s), h);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11], h[12],
		 h[13], h[14], h[15]);
}

json_object *serve_e2b_event(json_object *ev)
{
	const char *type = serve_e2b_type(sbx_json_str(ev, "type"));
	const char *tenant = sbx_json_str(ev, "tenant"), *id = sbx_json_str(ev, "id");
	const char *sandbox = sbx_json_str(ev, "sandbox"), *time = sbx_json_str(ev, "time");
	if (!type || !tenant || !id || !sandbox || strncmp(tenant, "e2b-", 4) != 0)
		return NULL;
	json_object *detail = sbx_json_obj(ev, "detail");
	const char *tpl = detail ? sbx_json_str(detail, "template") : NULL;
	char uuid[37], when[32] = "";
	event_uuid(tenant, id, uuid);
	if (time)                                /* E2B's has whole seconds */
		snprintf(when, sizeof(when), "%.19sZ", time);
	json_object *o = json_object_new_object();
	sbx_json_set_str(o, "version", "v1");
	sbx_json_set_str(o, "id", uuid);
	sbx_json_set_str(o, "type", type);
	json_object *data = NULL;
	if (detail && sbx_json_str(detail, "end")) {
		data = json_object_new_object();
		sbx_json_set_str(data, "set_timeout", sbx_json_str(detail, "end"));
	}
	json_object_object_add(o, "eventData", data);
	sbx_json_set_str(o, "sandboxBuildId", tpl ? tpl : "");
	sbx_json_set_str(o, "sandboxExecutionId", sandbox);
	sbx_json_set_str(o, "sandboxId", sandbox);
	sbx_json_set_str(o, "sandboxTeamId", tenant + 4);
	sbx_json_set_str(o, "sandboxTemplateId", tpl ? tpl : "");
	sbx_json_set_str(o, "timestamp", when);
	return o;
}

/* ---- the listing ---- */

struct listing {
	const char *sandbox;        /* NULL: every sandbox of the key */
	json_object *arr;
	size_t max;                 /* entries kept: offset + limit */
	int desc;
};

static int list_one(json_object *ev, void *ctx, struct sbx_err *err)
{
	(void)err;
	struct listing *l = ctx;
	const char *sb = sbx_json_str(ev, "sandbox");
	if ((l->sandbox && (!sb || strcmp(sb, l->sandbox) != 0)) ||
	    (!l->desc && json_object_array_length(l->arr) >= l->max))
		return 0;
	json_object *e = serve_e2b_event(ev);
	if (!e)
		return 0;
	json_object_array_add(l->arr, e);
	/* Ascending: the first offset+limit are all we need (above).
	 * Descending: the last ones, so the oldest beyond them goes. */
	if (l->desc && json_object_array_length(l->arr) > l->max)
		json_object_array_del_idx(l->arr, 0, 1);
	return 0;
}

static int query_num(const struct serve_req *r, const char *name, long dflt, long lo, long hi,
		     long *out, struct serve_out *o)
{
	const char *v = serve_query(r, name);
	char *end;
	*out = dflt;
	if (!v)
		return 0;
	long n = strtol(v, &end, 10);
	if (!*v || *end || n < lo || n > hi) {
		serve_reply_error(o, 400, "%s must be a number from %ld to %ld", name, lo, hi);
		return -1;
	}
	*out = n;
	return 0;
}

/* GET /events/sandboxes[/{id}]: offset (0), limit (10, at most 100),
 * orderAsc (false: newest first).  The stream is read whole (it is
 * bounded by the profile's events_maxlen); at most offset + limit events
 * are kept while reading. */
static int list_events(const struct serve_req *r, struct serve_out *o, struct sbx_redis *rd,
		       const char *tenant, const char *sandbox)
{
	long offset, limit;
	if (query_num(r, "offset", 0, 0, 100000, &offset, o) < 0 ||
	    query_num(r, "limit", 10, 1, 100, &limit, o) < 0)
		return 0;
	const char *asc = serve_query(r, "orderAsc");
	struct listing l = {.sandbox = sandbox, .arr = json_object_new_array(),
			    .max = (size_t)(offset + limit), .desc = !asc || strcmp(asc, "true") != 0};
	struct sbx_event_query q = {.stream = SBX_STREAM_EVENTS, .tenant = tenant};
	struct sbx_err err = {0};
	if (sbx_events_read(rd, &q, list_one, &l, &err) < 0) {
		json_object_put(l.arr);
		return serve_reply_err(o, &err);
	}
	json_object *out = json_object_new_array();
	size_t n = json_object_array_length(l.arr);
	for (size_t i = (size_t)offset; i < n && i < (size_t)(offset + limit); i++) {
		size_t k = l.desc ? n - 1 - i : i;
		json_object_array_add(out, json_object_get(json_object_array_get_idx(l.arr, k)));
	}
	json_object_put(l.arr);
	return serve_reply_json(o, 200, out);
}

/* ---- webhooks ---- */

static int hook_id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n != 36)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != '-'
							    : !strchr("0123456789abcdef", s[i]))
			return 0;
	return 1;
}

/* The webhook as answered: everything but the secret and our `since`. */
static json_object *hook_public(json_object *h)
{
	json_object *o = json_object_new_object();
	static const char *const keys[] = {"id", "teamId", "name", "createdAt", "enabled", "url",
					   "events"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_object *v;
		if (json_object_object_get_ex(h, keys[i], &v))
			json_object_object_add(o, keys[i], json_object_get(v));
	}
	return o;
}

/* Check and apply the fields of a create or PATCH body to h.  -1 with a
 * 400 answered. */
static int hook_apply(const struct serve_req *r, struct serve_out *o, json_object *in,
		      json_object *h, int create)
{
	json_object *v;
	struct sbx_err err = {0};
	static const char *const allowed[] = {"name", "url", "enabled", "events", "signatureSecret"};
	json_object_object_foreach(in, k, val) {
		size_t i = 0;
		(void)val;
		while (i < 5 && strcmp(k, allowed[i]) != 0)
			i++;
		if (i == 5)
			return serve_reply_error(o, 400, "sbx-serve does not implement '%.64s'", k), -1;
	}
	static const char *const texts[] = {"name", "url", "signatureSecret"};
	for (size_t i = 0; i < 3; i++) {
		if (!json_object_object_get_ex(in, texts[i], &v))
			continue;
		const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
		if (!s || strlen(s) > HOOK_TEXT_MAX || (i && !*s))
			return serve_reply_error(o, 400, "%s must be a non-empty string of at most %d bytes",
						 texts[i], HOOK_TEXT_MAX), -1;
		sbx_json_set_str(h, i == 2 ? "secret" : texts[i], s);
	}
	if (create && (!sbx_json_str(in, "url") || !sbx_json_str(in, "signatureSecret")))
		return serve_reply_error(o, 400, "a webhook needs url and signatureSecret"), -1;
	if (json_object_object_get_ex(in, "url", &v) &&
	    sbx_ssrf_check_url(json_object_get_string(v), r->cfg->webhook_allow_private, &err) < 0)
		return serve_reply_error(o, 400, "webhook url refused: %s", err.msg), -1;
	if (json_object_object_get_ex(in, "enabled", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return serve_reply_error(o, 400, "enabled must be true or false"), -1;
		sbx_json_set_bool(h, "enabled", json_object_get_boolean(v));
	}
	if (json_object_object_get_ex(in, "events", &v)) {
		size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
		if (!n)
			return serve_reply_error(o, 400, "events must be a non-empty array"), -1;
		for (size_t i = 0; i < n; i++) {
			const char *t = json_object_get_string(json_object_array_get_idx(v, i));
			if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string) ||
			    !e2b_type_known(t))
				return serve_reply_error(o, 400, "unknown event type '%.64s'", t ? t : ""), -1;
		}
		json_object_object_add(h, "events", json_object_get(v));
	}
	return 0;
}

static int hook_save(struct sbx_redis *rd, const char *key, const char *id, json_object *h,
		     struct sbx_err *err)
{
	redisReply *rep = NULL;
	const char *argv[] = {"HSET", key, id, json_object_to_json_string_ext(h, JSON_C_TO_STRING_PLAIN)};
	if (sbx_redis_cmd(rd, &rep, err, 4, argv, NULL) < 0)
		return -1;
	freeReplyObject(rep);
	return 0;
}

/* The webhook `id` of the tenant, or NULL (404 answered, or the error). */
static json_object *hook_load(struct sbx_redis *rd, const char *key, const char *id,
			      struct serve_out *o)
{
	redisReply *rep = NULL;
	struct sbx_err err = {0};
	const char *argv[] = {"HGET", key, id};
	if (sbx_redis_cmd(rd, &rep, &err, 3, argv, NULL) < 0)
		return serve_reply_err(o, &err), NULL;
	json_object *h = NULL;
	if (rep->type == REDIS_REPLY_STRING)
		sbx_json_parse_object(rep->str, rep->len, &h, &err);
	freeReplyObject(rep);
	if (!h)
		serve_reply_error(o, 404, "webhook '%s' not found", id);
	return h;
}

static int hook_create(const struct serve_req *r, struct serve_out *o, struct sbx_redis *rd,
		       const char *tenant, const char *key, json_object *in)
{
	struct sbx_err err = {0};
	redisReply *rep = NULL;
	const char *hlen[] = {"HLEN", key}, *time[] = {"TIME"};
	if (sbx_redis_cmd(rd, &rep, &err, 2, hlen, NULL) < 0)
		return serve_reply_err(o, &err);
	long long have = rep->integer;
	freeReplyObject(rep);
	if (have >= HOOKS_PER_KEY)
		return serve_reply_error(o, 400, "the key has %lld webhooks, its limit", have);
	json_object *h = json_object_new_object();
	char hex[33], id[37], since[48], when[32];
	sbx_json_set_str(h, "teamId", r->team);
	sbx_json_set_str(h, "name", "");
	sbx_json_set_bool(h, "enabled", 1);
	json_object *all = json_object_new_array();
	for (size_t i = 0; i < sizeof(e2b_types) / sizeof(e2b_types[0]); i++)
		json_object_array_add(all, json_object_new_string(e2b_types[i][1]));
	json_object_object_add(h, "events", all);
	if (hook_apply(r, o, in, h, 1) < 0) {
		json_object_put(h);
		return 0;
	}
	/* Redis's clock, which names the stream's entries. */
	if (sbx_random_hex(hex, 16, &err) < 0 || sbx_redis_cmd(rd, &rep, &err, 1, time, NULL) < 0) {
		json_object_put(h);
		return serve_reply_err(o, &err);
	}
	long long ms = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2
			       ? atoll(rep->element[0]->str) * 1000 + atoll(rep->element[1]->str) / 1000
			       : sbx_now_ms();
	freeReplyObject(rep);
	snprintf(id, sizeof(id), "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
	snprintf(since, sizeof(since), "%lld-0", ms);
	sbx_time_iso(ms / 1000, when, sizeof(when));
	sbx_json_set_str(h, "id", id);
	sbx_json_set_str(h, "createdAt", when);
	sbx_json_set_str(h, "since", since);
	SBX_AUTOFREE char *set = sbx_key_webhook_tenants(rd->prefix);
	const char *sadd[] = {"SADD", set, tenant};
	if (hook_save(rd, key, id, h, &err) < 0 || sbx_redis_cmd(rd, &rep, &err, 3, sadd, NULL) < 0) {
		json_object_put(h);
		return serve_reply_err(o, &err);
	}
	freeReplyObject(rep);
	json_object *out = hook_public(h);
	json_object_put(h);
	return serve_reply_json(o, 201, out);
}

static int hook_list(struct serve_out *o, struct sbx_redis *rd, const char *key)
{
	redisReply *rep = NULL;
	struct sbx_err err = {0};
	const char *argv[] = {"HVALS", key};
	if (sbx_redis_cmd(rd, &rep, &err, 2, argv, NULL) < 0)
		return serve_reply_err(o, &err);
	json_object *arr = json_object_new_array();
	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
		json_object *h;
		if (rep->element[i]->type == REDIS_REPLY_STRING &&
		    sbx_json_parse_object(rep->element[i]->str, rep->element[i]->len, &h, &err) == 0) {
			json_object_array_add(arr, hook_public(h));
			json_object_put(h);
		}
	}
	freeReplyObject(rep);
	return serve_reply_json(o, 200, arr);
}

static int hook_delete(struct serve_out *o, struct sbx_redis *rd, const char *tenant,
		       const char *key, const char *id)
{
	struct sbx_err err = {0};
	redisReply *rep = NULL;
	const char *argv[] = {"HDEL", key, id};
	if (sbx_redis_cmd(rd, &rep, &err, 3, argv, NULL) < 0)
		return serve_reply_err(o, &err);
	long long gone = rep->integer;
	freeReplyObject(rep);
	if (!gone)
		return serve_reply_error(o, 404, "webhook '%s' not found", id);
	SBX_AUTOFREE char *group = sbx_xasprintf("webhook:%s", id);
	if (sbx_events_group_destroy(rd, SBX_STREAM_EVENTS, tenant, group, &err) < 0)
		return serve_reply_err(o, &err);
	return serve_reply(o, 200, NULL, NULL, 0);
}

static json_object *body_obj(const struct serve_req *r, struct serve_out *o)
{
	json_object *j = NULL;
	struct sbx_err e = {0};
	if (sbx_json_parse_object(r->body_len ? r->body : "{}", r->body_len ? r->body_len : 2, &j, &e) < 0)
		serve_reply_error(o, 400, "Error when parsing request: the body is not a JSON object (%s)",
				  e.msg);
	return j;
}

static int webhooks(const struct serve_req *r, struct serve_out *o, struct sbx_redis *rd,
		    const char *tenant, const char *id)
{
	const char *m = r->method;
	SBX_AUTOFREE char *key = sbx_key_tenant(rd->prefix, tenant, strlen(tenant), SBX_KEY_WEBHOOKS);
	if (!id) {
		if (!strcmp(m, "GET"))
			return hook_list(o, rd, key);
		if (strcmp(m, "POST") != 0)
			return serve_reply_error(o, 405, "method not allowed");
		json_object *in = body_obj(r, o);
		int rc = in ? hook_create(r, o, rd, tenant, key, in) : 0;
		json_object_put(in);
		return rc;
	}
	if (!hook_id_ok(id))
		return serve_reply_error(o, 404, "webhook '%.64s' not found", id);
	if (!strcmp(m, "DELETE"))
		return hook_delete(o, rd, tenant, key, id);
	if (strcmp(m, "GET") != 0 && strcmp(m, "PATCH") != 0)
		return serve_reply_error(o, 405, "method not allowed");
	json_object *h = hook_load(rd, key, id, o);
	if (!h)
		return 0;
	if (!strcmp(m, "PATCH")) {
		struct sbx_err err = {0};
		json_object *in = body_obj(r, o);
		int bad = !in || hook_apply(r, o, in, h, 0) < 0;
		json_object_put(in);
		if (bad || hook_save(rd, key, id, h, &err) < 0) {
			json_object_put(h);
			return bad ? 0 : serve_reply_err(o, &err);
		}
	}
	json_object *out = hook_public(h);
	json_object_put(h);
	return serve_reply_json(o, 200, out);
}

int serve_api_events(const struct serve_req *r, struct serve_out *o)
{
	struct sbx_err err = {0};
	char tenant[24];
	serve_tenant(r->team, tenant);
	const char *p = r->path + strlen("/events");
	struct sbx_redis *rd = serve_redis(r->cfg, &err);
	if (!rd)
		return serve_reply_error(o, 503, "sbx-serve has no Redis for events: %s", err.msg);
	if (!strcmp(p, "/webhooks"))
		return webhooks(r, o, rd, tenant, NULL);
	if (sbx_str_starts(p, "/webhooks/") && !strchr(p + 10, '/'))
		return webhooks(r, o, rd, tenant, p + 10);
	if (strcmp(r->method, "GET") != 0)
		return serve_reply_error(o, 405, "method not allowed");
	if (!strcmp(p, "/sandboxes"))
		return list_events(r, o, rd, tenant, NULL);
	if (sbx_str_starts(p, "/sandboxes/") && serve_id_ok(p + 11))
		return list_events(r, o, rd, tenant, p + 11);
	return serve_reply_error(o, 404, "no such route");
}
