/* Keys: escaping is injective, hostile ids cannot forge another id's key or
 * hash slot, every key of a tenant shares one brace-free hash tag, and the
 * SCAN pattern of a tenant matches only that tenant's keys. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "tap.h"
#include "util.h"

static const char hostile[] = "}{:*?[]\\% \t\n\r\0";

/* A random id of 1..maxlen bytes, biased towards the hostile characters. */
static size_t rand_id(char *buf, size_t maxlen)
{
	size_t n = 1 + (size_t)rand() % maxlen;
	for (size_t i = 0; i < n; i++) {
		int r = rand() % 4;
		if (r == 0)
			buf[i] = hostile[rand() % (int)(sizeof(hostile) - 1)];
		else if (r == 1)
			buf[i] = (char)(rand() % 256);
		else
			buf[i] = "ab%3A7Bc"[rand() % 8];   /* look-alikes of escapes */
	}
	return n;
}

/* Redis glob with backslash escapes behaves like fnmatch without FNM_NOESCAPE
 * for the characters we use; '^' is only special inside [...]. */
static int matches(const char *pat, const char *key)
{
	return fnmatch(pat, key, 0) == 0;
}

int main(void)
{
	struct sbx_err err = {0};
	srand(12345);

	/* Fixed shapes. */
	char *k = sbx_key_session("sbx", "acme", 4, "s42", 3, SBX_KEY_BINDING);
	is_str(k, "sbx:{acme}:sess:s42:binding", "binding key layout");
	free(k);
	k = sbx_key_tenant("sbx", "acme", 4, SBX_KEY_BOUND);
	is_str(k, "sbx:{acme}:bound", "bound set key layout");
	free(k);
	k = sbx_key_tenant("sbx", "acme", 4, SBX_KEY_CHECKPOINTS_GC);
	is_str(k, "sbx:{acme}:checkpoints-gc", "pending checkpoints key layout (the tenant's slot)");
	free(k);
	k = sbx_key_tenant("sbx", "acme", 4, SBX_KEY_CHECKPOINTS_PLANNED);
	is_str(k, "sbx:{acme}:checkpoints-planned", "planned checkpoints key layout (the tenant's slot)");
	free(k);
	k = sbx_key_session("p", "a}b", 3, "x:y", 3, SBX_KEY_LOCK);
	is_str(k, "p:{a%7Db}:sess:x%3Ay:lock", "hostile characters are percent-encoded");
	free(k);
	k = sbx_key_skill("sbx", "t", 1, "pdf", 3);
	is_str(k, "sbx:{t}:skill:pdf", "skill key layout");
	free(k);
	k = sbx_key_glob_escape("a*b?c[d]e^f\\g");
	is_str(k, "a\\*b\\?c\\[d\\]e\\^f\\\\g", "glob escape");
	free(k);

	/* Id limits. */
	ok(sbx_id_check("tenant", "", 0, &err) < 0 && err.kind == SBX_INVALID_REQUEST, "empty id refused");
	char *big = sbx_xmalloc(SBX_ID_MAX + 1);
	memset(big, 'x', SBX_ID_MAX + 1);
	ok(sbx_id_check("session", big, SBX_ID_MAX, &err) == 0, "a %d-byte id is accepted", SBX_ID_MAX);
	ok(sbx_id_check("session", big, SBX_ID_MAX + 1, &err) < 0 && err.kind == SBX_INVALID_REQUEST,
	   "a %d-byte id is refused with invalid_request", SBX_ID_MAX + 1);
	free(big);

	/* Property: thousands of random pairs. */
	enum { N = 4000 };
	char ta[64], sa[64], tb[64], sb[64];
	int distinct_ok = 1, tag_ok = 1, cross_ok = 1, round_ok = 1, pattern_ok = 1, parse_ok = 1;
	for (int i = 0; i < N; i++) {
		size_t tal = rand_id(ta, 12), sal = rand_id(sa, 12);
		size_t tbl, sbl;
		/* Half the time B shares A's tenant, sometimes the session too. */
		if (rand() % 2) {
			memcpy(tb, ta, tal);
			tbl = tal;
		} else {
			tbl = rand_id(tb, 12);
		}
		if (rand() % 4 == 0) {
			memcpy(sb, sa, sal);
			sbl = sal;
		} else {
			sbl = rand_id(sb, 12);
		}
		int same_t = tal == tbl && memcmp(ta, tb, tal) == 0;
		int same = same_t && sal == sbl && memcmp(sa, sb, sal) == 0;

		for (int w = SBX_KEY_BINDING; w <= SBX_KEY_TURN; w++) {
			SBX_AUTOFREE char *ka = sbx_key_session("sbx", ta, tal, sa, sal, w);
			SBX_AUTOFREE char *kb = sbx_key_session("sbx", tb, tbl, sb, sbl, w);
			if ((strcmp(ka, kb) == 0) != same)
				distinct_ok = 0;
			SBX_AUTOFREE char *taga = sbx_key_hash_tag(ka);
			SBX_AUTOFREE char *tagb = sbx_key_hash_tag(kb);
			SBX_AUTOFREE char *bound = sbx_key_tenant("sbx", ta, tal, SBX_KEY_BOUND);
			SBX_AUTOFREE char *image = sbx_key_tenant("sbx", ta, tal, SBX_KEY_IMAGE);
			SBX_AUTOFREE char *skill = sbx_key_skill("sbx", ta, tal, sb, sbl);
			SBX_AUTOFREE char *tb1 = sbx_key_hash_tag(bound);
			SBX_AUTOFREE char *tb2 = sbx_key_hash_tag(image);
			SBX_AUTOFREE char *tb3 = sbx_key_hash_tag(skill);
			if (!taga || !tagb || strpbrk(taga, "{}") || strcmp(taga, tb1) ||
			    strcmp(taga, tb2) || strcmp(taga, tb3))
				tag_ok = 0;
			if ((strcmp(taga, tagb) == 0) != same_t)
				cross_ok = 0;
			/* Other tenant's keys never equal ours, whatever the kind. */
			if (!same_t) {
				SBX_AUTOFREE char *ob = sbx_key_tenant("sbx", tb, tbl, SBX_KEY_BOUND);
				if (strcmp(ob, bound) == 0 || strcmp(ob, ka) == 0)
					cross_ok = 0;
			}
			/* The tenant's SCAN pattern matches our keys and no other tenant's. */
			SBX_AUTOFREE char *pat = sbx_key_session_pattern("sbx", ta, tal, w);
			if (!matches(pat, ka) || (!same_t && matches(pat, kb)))
				pattern_ok = 0;
			/* The session can be read back from the key. */
			size_t got_len = 0;
			SBX_AUTOFREE char *got = sbx_key_session_of(ka, "sbx", ta, tal, &got_len);
			if (!got || got_len != sal || memcmp(got, sa, sal))
				parse_ok = 0;
			if (!same_t) {
				SBX_AUTOFREE char *no = sbx_key_session_of(kb, "sbx", ta, tal, &got_len);
				if (no)
					parse_ok = 0;
			}
		}
		SBX_AUTOFREE char *e = sbx_key_escape(sa, sal);
		size_t ul = 0;
		SBX_AUTOFREE char *u = sbx_key_unescape(e, strlen(e), &ul);
		if (!u || ul != sal || memcmp(u, sa, sal) || strlen(e) != strspn(e,
			"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-%"))
			round_ok = 0;
	}
	ok(distinct_ok, "%d random pairs: distinct (tenant, session) give distinct keys", N);
	ok(tag_ok, "every key of a tenant has the same hash tag, without braces");
	ok(cross_ok, "different tenants never share a hash tag or a key");
	ok(round_ok, "escape is reversible and uses only [A-Za-z0-9._-%%]");
	ok(pattern_ok, "a tenant's SCAN pattern matches its keys and no other tenant's");
	ok(parse_ok, "the session id is recovered from a key, only for the right tenant");

	/* Non-canonical escapes are refused (so unescape is a bijection's inverse). */
	size_t l;
	ok(sbx_key_unescape("%41", 3, &l) == NULL, "an escaped plain byte is refused");
	ok(sbx_key_unescape("%7d", 3, &l) == NULL, "lower-case hex is refused");
	ok(sbx_key_unescape("%7", 2, &l) == NULL, "a truncated escape is refused");

	/* 10 KB ids: refused by the check, but keys stay well-formed if built. */
	char *ten = sbx_xmalloc(10240);
	memset(ten, '}', 10240);
	ok(sbx_id_check("tenant", ten, 10240, &err) < 0, "a 10 KB id is refused (max %d)", SBX_ID_MAX);
	k = sbx_key_tenant("sbx", ten, 10240, SBX_KEY_BOUND);
	char *tag = sbx_key_hash_tag(k);
	ok(tag && strlen(tag) == 3 * 10240 && !strpbrk(tag, "{}"), "a 10 KB hostile id still escapes cleanly");
	free(tag);
	free(k);
	free(ten);
	return tap_done();
}
