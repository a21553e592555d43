/* keyspace.c - see keyspace.h. */
#include "keyspace.h"

#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "util.h"

static int is_id(const char *s, size_t n)
{
	if (n != SBX_KEYSPACE_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int sbx_keyspace_valid(const char *s)
{
	return s && is_id(s, strlen(s));
}

static int get_id(struct sbx_redis *r, const char *key, char *out, struct sbx_err *err)
{
	redisReply *rep = NULL;
	const char *get[] = {"GET", key};
	if (sbx_redis_cmd(r, &rep, err, 2, get, NULL) < 0)
		return -1;
	if (rep->type != REDIS_REPLY_STRING) {
		freeReplyObject(rep);
		return 0;
	}
	int ok = is_id(rep->str, rep->len);
	if (ok) {
		memcpy(out, rep->str, SBX_KEYSPACE_LEN);
		out[SBX_KEYSPACE_LEN] = '\0';
	}
	freeReplyObject(rep);
	if (!ok)
		return sbx_fail(err, SBX_INTERNAL, "keyspace",
				"%s holds something that is not a keyspace id", key);
	return 1;
}

int sbx_keyspace_read(struct sbx_redis *r, char *out, struct sbx_err *err)
{
	SBX_AUTOFREE char *key = sbx_key_keyspace(r->prefix);
	out[0] = '\0';
	return get_id(r, key, out, err);
}

/* SET NX then GET: whoever sets first wins, everyone reads the winner. */
int sbx_keyspace_id(struct sbx_redis *r, char *out, struct sbx_err *err)
{
	SBX_AUTOFREE char *key = sbx_key_keyspace(r->prefix);
	int rc = get_id(r, key, out, err);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	char id[SBX_KEYSPACE_LEN + 1];
	if (sbx_random_hex(id, SBX_KEYSPACE_LEN / 2, err) < 0)
		return -1;
	redisReply *rep = NULL;
	const char *set[] = {"SET", key, id, "NX"};
	if (sbx_redis_cmd(r, &rep, err, 4, set, NULL) < 0)
		return -1;
	freeReplyObject(rep);
	rc = get_id(r, key, out, err);
	if (rc == 0)
		return sbx_fail(err, SBX_INTERNAL, "keyspace", "%s vanished right after it was set", key);
	return rc < 0 ? -1 : 0;
}

int sbx_keyspace_adopt(struct sbx_redis *r, const char *id, struct sbx_err *err)
{
	if (!sbx_keyspace_valid(id))
		return sbx_fail(err, SBX_INVALID_REQUEST, "keyspace",
				"'%s' is not a keyspace id (%d lowercase hex digits)", id,
				SBX_KEYSPACE_LEN);
	SBX_AUTOFREE char *key = sbx_key_keyspace(r->prefix);
	redisReply *rep = NULL;
	const char *set[] = {"SET", key, id, "NX"};
	if (sbx_redis_cmd(r, &rep, err, 4, set, NULL) < 0)
		return -1;
	freeReplyObject(rep);
	char now[SBX_KEYSPACE_LEN + 1];
	int rc = get_id(r, key, now, err);
	if (rc < 0)
		return -1;
	if (rc == 0 || strcmp(now, id))
		return sbx_fail(err, SBX_CONFLICT, "keyspace",
				"%s is %s, not %s: nothing was adopted", key, rc ? now : "gone", id);
	return 0;
}
