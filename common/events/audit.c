/* audit.c - the session record's writers beside the events, the take of
 * a helper's spool, and the chain's check (audit.h). */
#include "audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doc.h"
#include "keys.h"
#include "metadata.h"
#include "sha.h"
#include "spool.h"
#include "util.h"

#define DRAIN_BATCH 100
#define DRAIN_MAX (32 << 20)    /* a spool and a taken file, each at most 16 MiB */

static const char *owner(const struct sbx_sandbox *sb, const char *field, const char *md)
{
	const char *v = field;
	if ((!v || !*v) && sb->metadata)
		v = sbx_json_str(sb->metadata, md);
	return v && *v ? v : NULL;
}

static json_object *parse_line(const char *p, size_t n)
{
	json_tokener *t = json_tokener_new();
	json_object *o = json_tokener_parse_ex(t, p, (int)n);
	json_tokener_free(t);
	return o;
}

/* Append first (when given) and then the lines of text[0..len) as
 * records of sb, first in the same round trip as the first lines (the
 * start of a process before the ends taken with it).  Returns the lines
 * written, or -1 (first lost with the batch that failed). */
static long drain_lines(struct sbx_redis *r, const struct sbx_audit_rec *base,
			const struct sbx_audit_rec *first, char *text, size_t len,
			struct sbx_err *err)
{
	struct sbx_audit_rec recs[DRAIN_BATCH];
	json_object *objs[DRAIN_BATCH];
	size_t n = 0;
	long total = 0;
	if (first) {
		recs[0] = *first;
		objs[0] = NULL;
		n = 1;
		total = -1;     /* counts lines only */
	}
	char *p = text, *end = text + len;
	while (p < end || n) {
		char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
		if (nl) {
			json_object *o = parse_line(p, (size_t)(nl - p));
			p = nl + 1;
			if (!o || !json_object_is_type(o, json_type_object) || !sbx_json_str(o, "kind")) {
				json_object_put(o);
				continue;
			}
			objs[n] = o;
			recs[n] = *base;
			recs[n].kind = sbx_json_str(o, "kind");
			/* The helper that spooled it: the broker, sbx-procd. */
			recs[n].by = sbx_json_str(o, "by") ? sbx_json_str(o, "by") : "sbx-egress";
			recs[n].data = sbx_json_obj(o, "data");
			n++;
			if (n < DRAIN_BATCH)
				continue;
		} else {
			p = end;        /* a torn last line (a writer killed mid-write) */
		}
		int rc = n ? sbx_audit_append(r, base->tenant, recs, n, err) : 0;
		for (size_t i = 0; i < n; i++)
			json_object_put(objs[i]);
		total += rc < 0 ? 0 : (long)n;
		n = 0;
		if (rc < 0)
			return -1;
	}
	return total;
}

/* The drain of sbx_audit_drain with an optional record of the caller's
 * (first, its tenant the sandbox's) written before the taken lines in
 * the same script call: one round trip where there were two.  With
 * nothing to take, first is written alone. */
static long drain_with(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_sandbox *sb,
		       const struct sbx_audit_rec *first)
{
	struct sbx_audit_rec base = {
		.tenant = owner(sb, sb->tenant, SBX_MD_TENANT),
		.session = owner(sb, sb->session, SBX_MD_SESSION), .sandbox = sb->id,
	};
	struct sbx_err err = {0};
	SBX_AUTOFREE char *dir = NULL, *text = NULL;   /* set before any goto */
	size_t len;
	int lk;
	if (!r || !b->ops->audit_dir || !base.tenant || r->audit_maxlen == 0 ||
	    b->ops->audit_dir(b, sb->id, &dir, &err) < 0 || !dir)
		goto alone;
	struct sbx_sandbox s = *sb;     /* the backend's calls take it writable */
	if (b->ops->audit_collect && b->ops->audit_collect(b, &s, &err) < 0) {
		sbx_events_lost(&err);  /* what was spooled before is taken still */
		sbx_err_clear(&err);
	}
	if (sbx_spool_take(dir, DRAIN_MAX, &text, &len, &lk, &err) < 0) {
		sbx_events_lost(&err);
		if (first)
			sbx_audit_emit(r, first);
		return -1;
	}
	if (lk < 0)
		goto alone;     /* an empty spool: a stat, no round trip of its own */
	long n = drain_lines(r, &base, first, text ? text : "", len, &err);
	if (n < 0) {
		close(lk);      /* kept for the next taker */
		sbx_events_lost(&err);
		return -1;
	}
	sbx_spool_done(dir, lk);
	return n;
alone:
	if (first)
		sbx_audit_emit(r, first);
	return 0;
}

long sbx_audit_drain(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_sandbox *sb)
{
	return drain_with(r, b, sb, NULL);
}

void sbx_audit_sandbox_drain(struct sbx_redis *r, struct sbx_backend *b,
			     const struct sbx_sandbox *sb, const char *kind, json_object *data)
{
	struct sbx_audit_rec a = {
		.kind = kind, .tenant = owner(sb, sb->tenant, SBX_MD_TENANT),
		.session = owner(sb, sb->session, SBX_MD_SESSION), .sandbox = sb->id, .data = data,
	};
	drain_with(r, b, sb, kind && a.tenant ? &a : NULL);
}

static void hex(const unsigned char *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* The hash a record's fields (entry e: [id, [f, v, ...]]) should carry;
 * *prev and *hash point at its stored ones (NULL when absent). */
static void entry_hash(const redisReply *f, char out[41], const char **prev, const char **hash)
{
	*prev = *hash = NULL;
	size_t cap = 256, len = 0;
	char *buf = sbx_xmalloc(cap);
	for (size_t i = 0; i + 1 < f->elements; i += 2) {
		const redisReply *k = f->element[i], *v = f->element[i + 1];
		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
			continue;
		if (strcmp(k->str, "hash") == 0) {
			*hash = v->str;
			continue;
		}
		if (strcmp(k->str, "prev") == 0)
			*prev = v->str;
		size_t need = k->len + v->len + 32;
		if (len + need > cap)
			buf = sbx_xrealloc(buf, cap = (len + need) * 2);
		len += (size_t)sprintf(buf + len, "%s:%zu:", k->str, v->len);
		memcpy(buf + len, v->str, v->len);
		len += v->len;
		buf[len++] = '\n';
	}
	unsigned char d[SBX_SHA1_LEN];
	sbx_sha1(buf, len, d);
	hex(d, SBX_SHA1_LEN, out);
	free(buf);
}

static void broken(json_object *list, const char *id, const char *why)
{
	json_object *b = json_object_new_object();
	sbx_json_set_str(b, "id", id);
	sbx_json_set_str(b, "why", why);
	json_object_array_add(list, b);
}

int sbx_audit_verify(struct sbx_redis *r, const char *tenant, json_object **report,
		     struct sbx_err *err)
{
	*report = NULL;
	if (sbx_ids_check(tenant, NULL, NULL, err) < 0)
		return -1;
	SBX_AUTOFREE char *key = sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_AUDIT);
	SBX_AUTOFREE char *headk = sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_AUDIT_HEAD);
	redisReply *hr = NULL;
	const char *gv[] = {"GET", headk};
	if (sbx_redis_cmd(r, &hr, err, 2, gv, NULL) < 0)
		return -1;
	SBX_AUTOFREE char *head = hr->type == REDIS_REPLY_STRING ? sbx_xstrdup(hr->str) : NULL;
	freeReplyObject(hr);
	json_object *rep = json_object_new_object(), *bad = json_object_new_array();
	char last_hash[41] = "", last_id[48] = "", first[48] = "";
	long count = 0;
	SBX_AUTOFREE char *start = sbx_xstrdup("-");
	for (;;) {
		redisReply *x = NULL;
		const char *av[] = {"XRANGE", key, start, "+", "COUNT", "500"};
		if (sbx_redis_cmd(r, &x, err, 6, av, NULL) < 0) {
			json_object_put(rep), json_object_put(bad);
			return -1;
		}
		size_t got = x->type == REDIS_REPLY_ARRAY ? x->elements : 0;
		for (size_t i = 0; i < got; i++) {
			const redisReply *e = x->element[i];
			if (e->type != REDIS_REPLY_ARRAY || e->elements < 2)
				continue;
			const char *id = e->element[0]->str;
			char want[41];
			const char *prev, *hash;
			entry_hash(e->element[1], want, &prev, &hash);
			if (!hash || strcmp(hash, want) != 0)
				broken(bad, id, "altered: its fields do not match its hash");
			if (count == 0)
				snprintf(first, sizeof(first), "%s", id);
			else if (!prev || strcmp(prev, last_hash) != 0)
				broken(bad, id, "a record before it was removed or altered (prev)");
			snprintf(last_hash, sizeof(last_hash), "%s", hash ? hash : "");
			snprintf(last_id, sizeof(last_id), "%s", id);
			count++;
		}
		freeReplyObject(x);
		if (got < 500)
			break;
		free(start);
		start = sbx_xasprintf("(%s", last_id);
	}
	if (head || count) {
		char *sp = head ? strchr(head, ' ') : NULL;
		if (!sp || strncmp(head, last_id, (size_t)(sp - head)) != 0 || last_id[sp - head] ||
		    strcmp(sp + 1, last_hash) != 0)
			broken(bad, head ? head : "-",
			       "the last record is not the one last appended (removed or added after)");
	}
	sbx_json_set_bool(rep, "ok", json_object_array_length(bad) == 0);
	sbx_json_set_str(rep, "tenant", tenant);
	sbx_json_set_int(rep, "records", count);
	if (count) {
		sbx_json_set_str(rep, "first", first);
		sbx_json_set_str(rep, "last", last_id);
	}
	json_object_object_add(rep, "broken", bad);
	*report = rep;
	return 0;
}

int sbx_audit_since(const char *s, char *id, size_t len)
{
	int64_t ms = -1, ago;
	struct sbx_err e = {0};
	int64_t t = sbx_time_parse_iso(s);
	if (t >= 0)
		ms = t * 1000;
	else if (sbx_parse_duration_ms(s, &ago, &e) == 0)
		ms = sbx_now_ms() - ago;
	if (ms < 1)
		return -1;
	/* Exclusive in the reader: the last id before ms. */
	snprintf(id, len, "%lld-18446744073709551615", (long long)(ms - 1));
	return 0;
}
