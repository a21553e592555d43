/* keys.c - the one place that builds Redis keys (see keys.h for the layout).
 *
 * Promise: distinct (tenant, session) pairs give distinct keys, a tenant's
 * keys all share one hash tag that contains no brace, and no id can reach
 * another tenant's keys or slot.  tests/unit/test-keys.c checks this with
 * random hostile byte strings. */
#include "keys.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const sess_suffix[] = {
	[SBX_KEY_BINDING] = "binding", [SBX_KEY_LOCK] = "lock",
	[SBX_KEY_FENCE] = "fence", [SBX_KEY_TURN] = "turn",
	[SBX_KEY_CHECKPOINTS] = "checkpoints",
};
static const char *const tenant_suffix[] = {
	[SBX_KEY_BOUND] = "bound", [SBX_KEY_IMAGE] = "image", [SBX_KEY_LEDGER] = "ledger",
	[SBX_KEY_EVENTS] = "events", [SBX_KEY_AUDIT] = "audit",
	[SBX_KEY_AUDIT_HEAD] = "audit-head",
	[SBX_KEY_USAGE] = "usage", [SBX_KEY_QUOTA] = "quota",
	[SBX_KEY_PAUSED] = "paused",
	[SBX_KEY_VOLUMES] = "vols",
	[SBX_KEY_WEBHOOKS] = "webhooks",
	[SBX_KEY_CHECKPOINTS_GC] = "checkpoints-gc",
};

int sbx_id_check(const char *what, const char *id, size_t len, struct sbx_err *err)
{
	if (!id || len == 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "keys", "the %s id is empty", what);
	if (len > SBX_ID_MAX)
		return sbx_fail(err, SBX_INVALID_REQUEST, "keys",
				"the %s id is %zu bytes; at most %d are allowed", what, len, SBX_ID_MAX);
	/* An id travels in documents and as a C string: a NUL would cut it,
	 * and bytes that are not UTF-8 would make the output not JSON. */
	if (memchr(id, '\0', len))
		return sbx_fail(err, SBX_INVALID_REQUEST, "keys", "the %s id holds a NUL character", what);
	if (!sbx_utf8_valid(id, len))
		return sbx_fail(err, SBX_INVALID_REQUEST, "keys", "the %s id is not valid UTF-8", what);
	return 0;
}

int sbx_ids_check(const char *tenant, const char *what, const char *id, struct sbx_err *err)
{
	if (sbx_id_check("tenant", tenant, tenant ? strlen(tenant) : 0, err) < 0)
		return -1;
	return id ? sbx_id_check(what, id, strlen(id), err) : 0;
}

static int plain(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

char *sbx_key_escape(const char *id, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = sbx_xmalloc(3 * len + 1), *o = out;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)id[i];
		if (plain(c)) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

/* Upper case only: lower case is never produced, so never accepted. */
static int hexval(char c)
{
	return c >= 'a' && c <= 'f' ? -1 : sbx_hexval(c);
}

char *sbx_key_unescape(const char *s, size_t n, size_t *len)
{
	char *out = sbx_xmalloc(n + 1), *o = out;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (plain(c)) {
			*o++ = (char)c;
			continue;
		}
		if (c != '%' || i + 2 >= n || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0) {
			free(out);
			return NULL;
		}
		unsigned char v = (unsigned char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
		if (plain(v)) {      /* a plain byte is never escaped: not canonical */
			free(out);
			return NULL;
		}
		*o++ = (char)v;
		i += 2;
	}
	*o = '\0';
	*len = (size_t)(o - out);
	return out;
}

char *sbx_key_session(const char *prefix, const char *tenant, size_t tlen,
		      const char *session, size_t slen, enum sbx_sess_key which)
{
	SBX_AUTOFREE char *t = sbx_key_escape(tenant, tlen);
	SBX_AUTOFREE char *s = sbx_key_escape(session, slen);
	return sbx_xasprintf("%s:{%s}:sess:%s:%s", prefix, t, s, sess_suffix[which]);
}

char *sbx_key_tenant(const char *prefix, const char *tenant, size_t tlen,
		     enum sbx_tenant_key which)
{
	SBX_AUTOFREE char *t = sbx_key_escape(tenant, tlen);
	return sbx_xasprintf("%s:{%s}:%s", prefix, t, tenant_suffix[which]);
}

char *sbx_key_skill(const char *prefix, const char *tenant, size_t tlen,
		    const char *name, size_t nlen)
{
	SBX_AUTOFREE char *t = sbx_key_escape(tenant, tlen);
	SBX_AUTOFREE char *n = sbx_key_escape(name, nlen);
	return sbx_xasprintf("%s:{%s}:skill:%s", prefix, t, n);
}

char *sbx_key_volume(const char *prefix, const char *tenant, size_t tlen,
		     const char *name, size_t nlen, int users)
{
	SBX_AUTOFREE char *t = sbx_key_escape(tenant, tlen);
	SBX_AUTOFREE char *n = sbx_key_escape(name, nlen);
	return sbx_xasprintf("%s:{%s}:vol:%s%s", prefix, t, n, users ? ":users" : "");
}

char *sbx_key_tenants(const char *prefix)
{
	return sbx_xasprintf("%s:tenants", prefix);
}

char *sbx_key_webhook_tenants(const char *prefix)
{
	return sbx_xasprintf("%s:webhooks", prefix);
}

char *sbx_key_reap_lease(const char *prefix, const char *host)
{
	if (host)
		return sbx_xasprintf("%s:reap:lease:%s", prefix, host);
	return sbx_xasprintf("%s:reap:lease", prefix);
}

char *sbx_key_keyspace(const char *prefix)
{
	return sbx_xasprintf("%s:keyspace", prefix);
}

char *sbx_key_glob_escape(const char *s)
{
	size_t n = strlen(s);
	char *out = sbx_xmalloc(2 * n + 1), *o = out;
	for (size_t i = 0; i < n; i++) {
		if (strchr("*?[]^\\", s[i]))
			*o++ = '\\';
		*o++ = s[i];
	}
	*o = '\0';
	return out;
}

char *sbx_key_session_pattern(const char *prefix, const char *tenant, size_t tlen,
			      enum sbx_sess_key which)
{
	SBX_AUTOFREE char *p = sbx_key_glob_escape(prefix);
	SBX_AUTOFREE char *t = sbx_key_escape(tenant, tlen);   /* glob-safe by construction */
	return sbx_xasprintf("%s:{%s}:sess:*:%s", p, t, sess_suffix[which]);
}

char *sbx_key_session_of(const char *key, const char *prefix, const char *tenant,
			 size_t tlen, size_t *slen)
{
	SBX_AUTOFREE char *t = sbx_key_escape(tenant, tlen);
	SBX_AUTOFREE char *head = sbx_xasprintf("%s:{%s}:sess:", prefix, t);
	if (!sbx_str_starts(key, head))
		return NULL;
	const char *s = key + strlen(head);
	const char *colon = strchr(s, ':');    /* an escaped id has no ':' */
	if (!colon)
		return NULL;
	int known = 0;
	for (size_t i = 0; i < SBX_ARRAY_LEN(sess_suffix); i++)
		known |= strcmp(colon + 1, sess_suffix[i]) == 0;
	if (!known || colon == s)
		return NULL;
	return sbx_key_unescape(s, (size_t)(colon - s), slen);
}

char *sbx_key_hash_tag(const char *key)
{
	const char *open = strchr(key, '{');
	if (!open)
		return NULL;
	const char *close = strchr(open + 1, '}');
	if (!close || close == open + 1)
		return NULL;
	return strndup(open + 1, (size_t)(close - open - 1));
}
