/* image.c - the tenant's skill image pointer (see image.h). */
#include "image.h"

#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "util.h"

/* KEYS: image.  ARGV: expected generation, snapshot_id, fingerprint,
 * base_template, now.  Returns {1, new} or {0, current}. */
static struct sbx_script cas_script = {.src =
	"local cur = tonumber(redis.call('HGET', KEYS[1], 'generation') or '0')\n"
	"if cur ~= tonumber(ARGV[1]) then return {0, cur} end\n"
	"local nxt = cur + 1\n"
	"redis.call('HSET', KEYS[1], 'snapshot_id', ARGV[2], 'fingerprint', ARGV[3],\n"
	"  'base_template', ARGV[4], 'updated_at', ARGV[5], 'generation', nxt)\n"
	"return {1, nxt}\n", .durable = 1};

void sbx_image_clear(struct sbx_image *im)
{
	free(im->snapshot_id);
	free(im->fingerprint);
	free(im->base_template);
	memset(im, 0, sizeof(*im));
}

static int parse_i64(const char *s, int64_t *v)
{
	char *end;
	long long x = strtoll(s, &end, 10);
	if (!*s || *end || x < 0)
		return -1;
	*v = x;
	return 0;
}

int sbx_image_get(struct sbx_redis *r, const char *tenant, struct sbx_image *out,
		  struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (sbx_id_check("tenant", tenant, strlen(tenant), err) < 0)
		return -1;
	SBX_AUTOFREE char *key = sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_IMAGE);
	const char *argv[] = {"HGETALL", key};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, err, 2, argv, NULL) < 0)
		return -1;
	if (rep->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(rep);
		return sbx_fail(err, SBX_INTERNAL, "image", "unexpected HGETALL reply");
	}
	if (rep->elements == 0) {
		freeReplyObject(rep);
		return 0;
	}
	const char *gen = NULL;
	for (size_t i = 0; i + 1 < rep->elements; i += 2) {
		const char *k = rep->element[i]->str, *v = rep->element[i + 1]->str;
		if (!k || !v)
			continue;
		if (!strcmp(k, "snapshot_id"))
			out->snapshot_id = sbx_xstrdup(v);
		else if (!strcmp(k, "fingerprint"))
			out->fingerprint = sbx_xstrdup(v);
		else if (!strcmp(k, "base_template"))
			out->base_template = sbx_xstrdup(v);
		else if (!strcmp(k, "generation"))
			gen = v;
		else if (!strcmp(k, "updated_at"))
			parse_i64(v, &out->updated_at);
	}
	int bad = !out->snapshot_id || !*out->snapshot_id || !out->fingerprint ||
		  !gen || parse_i64(gen, &out->generation) < 0 || out->generation == 0;
	freeReplyObject(rep);
	if (bad) {
		sbx_image_clear(out);
		return sbx_fail(err, SBX_INTERNAL, "image",
				"the tenant's image pointer in Redis is malformed");
	}
	if (!out->base_template)
		out->base_template = sbx_xstrdup("");
	return 1;
}

int sbx_image_cas(struct sbx_redis *r, const char *tenant, int64_t expected_generation,
		  const struct sbx_image *next, int64_t *new_generation, struct sbx_err *err)
{
	if (sbx_id_check("tenant", tenant, strlen(tenant), err) < 0)
		return -1;
	if (!next->snapshot_id || !*next->snapshot_id || !next->fingerprint || !*next->fingerprint)
		return sbx_fail(err, SBX_INVALID_REQUEST, "image",
				"an image needs a snapshot id and a fingerprint");
	SBX_AUTOFREE char *key = sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_IMAGE);
	SBX_AUTOFREE char *tenants = sbx_key_tenants(r->prefix);
	const char *sadd[] = {"SADD", tenants, tenant};
	redisReply *rep;
	if (sbx_redis_cmd(r, &rep, err, 3, sadd, NULL) < 0)
		return -1;
	freeReplyObject(rep);
	char exp[24], now[24];
	snprintf(exp, sizeof(exp), "%lld", (long long)expected_generation);
	snprintf(now, sizeof(now), "%lld", (long long)(sbx_now_ms() / 1000));
	const char *keys[] = {key};
	const char *args[] = {exp, next->snapshot_id, next->fingerprint,
			      next->base_template ? next->base_template : "", now};
	if (sbx_redis_eval(r, &cas_script, &rep, 1, keys, 5, args, err) < 0)
		return -1;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
		freeReplyObject(rep);
		return sbx_fail(err, SBX_INTERNAL, "image", "unexpected reply from the image script");
	}
	int rc = (int)rep->element[0]->integer;
	if (new_generation)
		*new_generation = rep->element[1]->integer;
	freeReplyObject(rep);
	return rc;
}
