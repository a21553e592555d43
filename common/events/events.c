/* events.c - the tenant's event stream: append (XADD MAXLEN ~), read
 * (XRANGE / XREAD), and read at least once through a consumer group
 * (XREADGROUP, XACK, XAUTOCLAIM).  The contract, the schema and the
 * failure policy are in events.h; the one place these keys are written. */
#include "events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "doc.h"
#include "keys.h"
#include "sha.h"
#include "metadata.h"
#include "util.h"

#define BATCH "100"

static unsigned long failed;
static struct sbx_err last_err;

unsigned long sbx_events_failed(void)
{
	return failed;
}

void sbx_events_lost(const struct sbx_err *err)
{
	failed++, last_err = *err;
	sbx_err_prefix(&last_err, "events not written");
}

const struct sbx_err *sbx_events_last_error(void)
{
	return failed ? &last_err : NULL;
}

static char *stream_key(const struct sbx_redis *r, enum sbx_stream s, const char *tenant)
{
	return sbx_key_tenant(r->prefix, tenant, strlen(tenant),
			      s == SBX_STREAM_AUDIT ? SBX_KEY_AUDIT : SBX_KEY_EVENTS);
}

/* ISO-8601 UTC with milliseconds: 2026-12-02T13:57:49.123Z. */
static void now_iso_ms(char *buf, size_t len)
{
	int64_t ms = sbx_now_ms();
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03dZ", (int)(ms % 1000));
}

static void add(struct sbx_event_xadd *x, const char *k, const char *v)
{
	if (!v)
		return;
	x->argv[x->argc++] = k;
	x->argv[x->argc++] = v;
}

int sbx_event_xadd(struct sbx_redis *r, const struct sbx_event *ev, struct sbx_event_xadd *x)
{
	memset(x, 0, sizeof(*x));
	if (!r || !ev->tenant || r->events_maxlen == 0)
		return 0;
	x->type = ev->type, x->tenant = ev->tenant;
	struct sbx_err err = {0};
	if (sbx_ids_check(ev->tenant, NULL, NULL, &err) < 0) {
		failed++, last_err = err;
		return -1;
	}
	x->key = stream_key(r, ev->stream, ev->tenant);
	snprintf(x->maxlen, sizeof(x->maxlen), "%lld", (long long)r->events_maxlen);
	now_iso_ms(x->when, sizeof(x->when));
	x->argv[x->argc++] = "MAXLEN", x->argv[x->argc++] = "~";
	x->argv[x->argc++] = x->maxlen, x->argv[x->argc++] = "*";
	add(x, "v", "1");
	add(x, "type", ev->type);
	add(x, "time", x->when);
	add(x, "tenant", ev->tenant);
	add(x, "session", ev->session);
	add(x, "sandbox", ev->sandbox);
	add(x, "how", ev->how);
	add(x, "why", ev->why);
	add(x, "by", program_invocation_short_name);
	add(x, "detail",
	    ev->detail ? json_object_to_json_string_ext(ev->detail, JSON_C_TO_STRING_PLAIN) : NULL);
	return 1;
}

static void xadd_failed(struct sbx_event_xadd *x, struct sbx_err *err)
{
	sbx_err_prefix(err, "event '%s' of tenant %s not written", x->type, x->tenant);
	failed++, last_err = *err;
}

void sbx_event_xadd_done(struct sbx_event_xadd *x, const char *redis_err)
{
	if (!redis_err || !*redis_err)
		return;
	struct sbx_err err = {0};
	sbx_fail(&err, SBX_INTERNAL, "redis", "redis XADD: %s", redis_err);
	xadd_failed(x, &err);
}

void sbx_event_xadd_clear(struct sbx_event_xadd *x)
{
	free(x->key);
	x->key = NULL;
}

/* ---- the audit record: a chained append ------------------------------ */

/* KEYS[1] the stream, KEYS[2] its head ("ID HASH" of the last record);
 * ARGV[1] MAXLEN (exact), ARGV[2] MINID or "", then per record its field
 * count N and N field/value pairs.  Each record gets prev (the head's
 * hash) and hash (events.h: SHA-1 over its fields), and becomes the
 * head.  Returns the number of records appended. */
static struct sbx_script audit_script = {.src =
	"local head = redis.call('GET', KEYS[2])\n"
	"local prev = ''\n"
	"if head then prev = string.match(head, ' (.*)$') or '' end\n"
	"local i, n = 3, 0\n"
	"while i <= #ARGV do\n"
	"  local nf = tonumber(ARGV[i]); i = i + 1\n"
	"  local args = {'XADD', KEYS[1], 'MAXLEN', ARGV[1], '*'}\n"
	"  local canon = {}\n"
	"  for j = 0, nf - 1 do\n"
	"    local k, v = ARGV[i + 2 * j], ARGV[i + 2 * j + 1]\n"
	"    args[#args + 1] = k; args[#args + 1] = v\n"
	"    canon[#canon + 1] = k .. ':' .. #v .. ':' .. v .. '\\n'\n"
	"  end\n"
	"  i = i + 2 * nf\n"
	"  canon[#canon + 1] = 'prev:' .. #prev .. ':' .. prev .. '\\n'\n"
	"  local h = redis.sha1hex(table.concat(canon))\n"
	"  args[#args + 1] = 'prev'; args[#args + 1] = prev\n"
	"  args[#args + 1] = 'hash'; args[#args + 1] = h\n"
	"  local id = redis.call(unpack(args))\n"
	"  redis.call('SET', KEYS[2], id .. ' ' .. h)\n"
	"  prev = h; n = n + 1\n"
	"end\n"
	"if ARGV[2] ~= '' then redis.call('XTRIM', KEYS[1], 'MINID', ARGV[2]) end\n"
	"return n\n"};

#define AUDIT_FIELDS 11       /* pairs a record may have */

/* The record's fields, in the stored order, after its field count. */
static void audit_fields(const struct sbx_audit_rec *a, const char *when, const char **av, int *ac,
			 char *count, size_t clen)
{
	int start = *ac;
	*ac += 1;
	const char *kv[AUDIT_FIELDS * 2] = {
		"v", "1", "kind", a->kind, "time", when, "tenant", a->tenant,
		"session", a->session, "sandbox", a->sandbox, "type", a->type, "how", a->how,
		"why", a->why, "by", a->by ? a->by : program_invocation_short_name,
		"data", a->data ? json_object_to_json_string_ext(a->data, JSON_C_TO_STRING_PLAIN |
								 JSON_C_TO_STRING_NOSLASHESCAPE)
				: NULL,
	};
	int nf = 0;
	for (int i = 0; i < AUDIT_FIELDS * 2; i += 2) {
		if (!kv[i + 1])
			continue;
		av[(*ac)++] = kv[i], av[(*ac)++] = kv[i + 1];
		nf++;
	}
	snprintf(count, clen, "%d", nf);
	av[start] = count;
}

int sbx_audit_append(struct sbx_redis *r, const char *tenant, const struct sbx_audit_rec *recs,
		     size_t n, struct sbx_err *err)
{
	if (!r || !tenant || r->audit_maxlen == 0 || n == 0)
		return 0;
	if (sbx_ids_check(tenant, NULL, NULL, err) < 0)
		return -1;
	SBX_AUTOFREE char *key = stream_key(r, SBX_STREAM_AUDIT, tenant);
	SBX_AUTOFREE char *head = sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_AUDIT_HEAD);
	char maxlen[24], minid[32] = "", when[40];
	snprintf(maxlen, sizeof(maxlen), "%lld", (long long)r->audit_maxlen);
	if (r->audit_max_age_ms > 0)
		snprintf(minid, sizeof(minid), "%lld", (long long)(sbx_now_ms() - r->audit_max_age_ms));
	now_iso_ms(when, sizeof(when));
	const char **av = sbx_xcalloc(2 + n * (1 + AUDIT_FIELDS * 2), sizeof(*av));
	char (*counts)[8] = sbx_xcalloc(n, sizeof(*counts));
	int ac = 0;
	av[ac++] = maxlen, av[ac++] = minid;
	for (size_t i = 0; i < n; i++) {
		if (recs[i].tenant && strcmp(recs[i].tenant, tenant) != 0) {
			free(av), free(counts);
			return sbx_fail(err, SBX_INTERNAL, "audit", "one append, one tenant");
		}
		audit_fields(&recs[i], when, av, &ac, counts[i], sizeof(counts[i]));
	}
	const char *keys[] = {key, head};
	redisReply *rep = NULL;
	int rc = sbx_redis_eval(r, &audit_script, &rep, 2, keys, ac, av, err);
	free(av), free(counts);
	if (rc < 0)
		return sbx_err_prefix(err, "audit record of tenant %s not written", tenant), -1;
	freeReplyObject(rep);
	return 0;
}

void sbx_audit_emit(struct sbx_redis *r, const struct sbx_audit_rec *rec)
{
	struct sbx_err err = {0};
	if (rec->tenant && sbx_audit_append(r, rec->tenant, rec, 1, &err) < 0)
		failed++, last_err = err;
}

void sbx_event_audit(struct sbx_redis *r, const struct sbx_event *ev)
{
	if (ev->stream != SBX_STREAM_EVENTS)
		return;
	struct sbx_audit_rec a = {
		.kind = "lifecycle", .tenant = ev->tenant, .session = ev->session,
		.sandbox = ev->sandbox, .type = ev->type, .how = ev->how, .why = ev->why,
		.data = ev->detail,
	};
	sbx_audit_emit(r, &a);
}

void sbx_event_emit(struct sbx_redis *r, const struct sbx_event *ev)
{
	sbx_event_audit(r, ev);
	struct sbx_event_xadd x;
	if (sbx_event_xadd(r, ev, &x) <= 0)
		return;
	const char *argv[32] = {"XADD", x.key};
	memcpy(argv + 2, x.argv, (size_t)x.argc * sizeof(*argv));
	struct sbx_err err = {0};
	redisReply *rep = NULL;
	if (sbx_redis_cmd(r, &rep, &err, x.argc + 2, argv, NULL) < 0)
		xadd_failed(&x, &err);
	else
		freeReplyObject(rep);
	sbx_event_xadd_clear(&x);
}

void sbx_event_sandbox(struct sbx_redis *r, const struct sbx_sandbox *sb, const char *type,
		       const char *how, const char *why, json_object *detail)
{
	/* As sbx_binding_owner reads it (binding.c, which writes events
	 * itself), but a tenant without a session (an installer) counts. */
	const char *tenant = sb->tenant, *session = sb->session;
	if ((!tenant || !*tenant) && sb->metadata)
		tenant = sbx_json_str(sb->metadata, SBX_MD_TENANT);
	if ((!session || !*session) && sb->metadata)
		session = sbx_json_str(sb->metadata, SBX_MD_SESSION);
	if (!tenant || !*tenant)
		return;
	if (session && !*session)
		session = NULL;
	struct sbx_event ev = {
		.type = type, .tenant = tenant, .session = session, .sandbox = sb->id,
		.how = how, .why = why, .detail = detail,
	};
	sbx_event_emit(r, &ev);
}

int sbx_event_id_ok(const char *s)
{
	if (!s || !*s)
		return 0;
	const char *p = s;
	int dash = 0;
	for (; *p; p++) {
		if (*p == '-' && !dash && p > s && p[1])
			dash = 1;
		else if (*p < '0' || *p > '9')
			return 0;
	}
	return p - s <= 41;
}

/* ---- reading --------------------------------------------------------------- */

/* One entry [id, [field, value, ...]] as the reader's JSON object; NULL
 * when the entry was trimmed (a group's pending history shows it as nil). */
static json_object *entry_json(const redisReply *e)
{
	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || e->element[0]->type != REDIS_REPLY_STRING ||
	    e->element[1]->type != REDIS_REPLY_ARRAY)
		return NULL;
	json_object *o = json_object_new_object();
	sbx_json_set_str(o, "id", e->element[0]->str);
	const redisReply *f = e->element[1];
	for (size_t i = 0; i + 1 < f->elements; i += 2) {
		const char *k = f->element[i]->str, *v = f->element[i + 1]->str;
		if (!k || !v || strcmp(k, "v") == 0)
			continue;
		json_object *d;
		if (strcmp(k, "detail") == 0 && (d = json_tokener_parse(v)))
			json_object_object_add(o, k, d);
		else if (strcmp(k, "data") == 0 && (d = json_tokener_parse(v)) &&
			 json_object_is_type(d, json_type_object)) {
			/* An audit record's kind fields, at the top level. */
			json_object_object_foreach(d, dk, dv)
				if (!json_object_object_get_ex(o, dk, NULL))
					json_object_object_add(o, dk, json_object_get(dv));
			json_object_put(d);
		} else if (strcmp(k, "data") == 0 && d) {
			json_object_object_add(o, k, d);
		} else
			sbx_json_set_str(o, k, v);
	}
	return o;
}

static const char *entry_id(const redisReply *e)
{
	return e->type == REDIS_REPLY_ARRAY && e->elements >= 1 &&
		       e->element[0]->type == REDIS_REPLY_STRING
		       ? e->element[0]->str
		       : NULL;
}

struct reader {
	struct sbx_redis *r;
	const struct sbx_event_query *q;
	char *key;
	sbx_event_fn fn;
	void *ctx;
	char last[48];            /* the last entry id seen */
	char block[24];           /* XREAD(GROUP) BLOCK milliseconds */
};

static int ack(struct reader *rd, const char *id, struct sbx_err *err)
{
	redisReply *rep = NULL;
	const char *argv[] = {"XACK", rd->key, rd->q->group, id};
	if (sbx_redis_cmd(rd->r, &rep, err, 4, argv, NULL) < 0)
		return -1;
	freeReplyObject(rep);
	return 0;
}

/* Deliver the entries of one reply array; *n receives their count.  In a
 * group, an accepted (or trimmed) entry is acknowledged. */
static int deliver(struct reader *rd, const redisReply *entries, size_t *n, struct sbx_err *err)
{
	*n = 0;
	if (!entries || entries->type != REDIS_REPLY_ARRAY)
		return 0;
	for (size_t i = 0; i < entries->elements; i++) {
		const redisReply *e = entries->element[i];
		const char *id = entry_id(e);
		if (!id)
			continue;
		(*n)++;
		snprintf(rd->last, sizeof(rd->last), "%s", id);
		json_object *o = entry_json(e);
		int rc = 0;
		const char *s = o ? sbx_json_str(o, "session") : NULL;
		const char *k = o ? sbx_json_str(o, "kind") : NULL;
		if (o && (!rd->q->session || (s && strcmp(s, rd->q->session) == 0)) &&
		    (!rd->q->kind || (k && strcmp(k, rd->q->kind) == 0)))
			rc = rd->fn(o, rd->ctx, err);
		json_object_put(o);
		if (rc < 0)
			return -1;
		if (rc == 0 && rd->q->group && ack(rd, id, err) < 0)
			return -1;
	}
	return 0;
}

/* XREAD / XREADGROUP reply: nil, or [[key, entries]]. */
static const redisReply *stream_entries(const redisReply *rep)
{
	if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 1)
		return NULL;
	const redisReply *s = rep->element[0];
	return s->type == REDIS_REPLY_ARRAY && s->elements >= 2 ? s->element[1] : NULL;
}

static int read_range(struct reader *rd, struct sbx_err *err)
{
	SBX_AUTOFREE char *start = rd->q->since ? sbx_xasprintf("(%s", rd->q->since) : sbx_xstrdup("-");
	for (;;) {
		redisReply *rep = NULL;
		const char *argv[] = {"XRANGE", rd->key, start, "+", "COUNT", BATCH};
		if (sbx_redis_cmd(rd->r, &rep, err, 6, argv, NULL) < 0)
			return -1;
		size_t n;
		int rc = deliver(rd, rep, &n, err);
		freeReplyObject(rep);
		if (rc < 0)
			return -1;
		if (n < (size_t)atoi(BATCH))
			return 0;
		free(start);
		start = sbx_xasprintf("(%s", rd->last);
	}
}

static int follow_plain(struct reader *rd, struct sbx_err *err)
{
	for (;;) {
		redisReply *rep = NULL;
		const char *argv[] = {"XREAD", "COUNT", BATCH, "BLOCK", rd->block, "STREAMS",
				      rd->key, rd->last};
		if (sbx_redis_cmd(rd->r, &rep, err, 8, argv, NULL) < 0)
			return -1;
		size_t n;
		int rc = deliver(rd, stream_entries(rep), &n, err);
		freeReplyObject(rep);
		if (rc < 0)
			return -1;
	}
}

static int group_create(struct reader *rd, struct sbx_err *err)
{
	redisReply *rep = NULL;
	const char *argv[] = {"XGROUP", "CREATE", rd->key, rd->q->group,
			      rd->q->since ? rd->q->since : "0", "MKSTREAM"};
	if (sbx_redis_cmd(rd->r, &rep, err, 6, argv, NULL) < 0) {
		if (!strstr(err->msg, "BUSYGROUP"))
			return -1;
		sbx_err_clear(err);     /* the group exists: it keeps its place */
		return 0;
	}
	freeReplyObject(rep);
	return 0;
}

/* XREADGROUP from `from` ("0"-based history of our pending events, or
 * ">" for new ones); *n entries delivered. */
static int group_read(struct reader *rd, const char *from, int block, size_t *n,
		      struct sbx_err *err)
{
	redisReply *rep = NULL;
	const char *argv[12];
	int argc = 0;
	argv[argc++] = "XREADGROUP", argv[argc++] = "GROUP", argv[argc++] = rd->q->group;
	argv[argc++] = rd->q->consumer, argv[argc++] = "COUNT", argv[argc++] = BATCH;
	if (block)
		argv[argc++] = "BLOCK", argv[argc++] = rd->block;
	argv[argc++] = "STREAMS", argv[argc++] = rd->key, argv[argc++] = from;
	if (sbx_redis_cmd(rd->r, &rep, err, argc, argv, NULL) < 0)
		return -1;
	int rc = deliver(rd, stream_entries(rep), n, err);
	freeReplyObject(rep);
	return rc;
}

static int group_pending(struct reader *rd, struct sbx_err *err)
{
	char from[48] = "0";
	for (;;) {
		size_t n;
		if (group_read(rd, from, 0, &n, err) < 0)
			return -1;
		if (n == 0)
			return 0;
		snprintf(from, sizeof(from), "%s", rd->last);
	}
}

static int group_claim(struct reader *rd, struct sbx_err *err)
{
	char idle[24], cursor[48] = "0-0";
	snprintf(idle, sizeof(idle), "%lld", (long long)rd->q->claim_idle_ms);
	do {
		redisReply *rep = NULL;
		const char *argv[] = {"XAUTOCLAIM", rd->key, rd->q->group, rd->q->consumer,
				      idle, cursor, "COUNT", BATCH};
		if (sbx_redis_cmd(rd->r, &rep, err, 8, argv, NULL) < 0)
			return -1;
		size_t n;
		int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 2 &&
			 rep->element[0]->type == REDIS_REPLY_STRING;
		int rc = ok ? deliver(rd, rep->element[1], &n, err) : 0;
		snprintf(cursor, sizeof(cursor), "%s", ok ? rep->element[0]->str : "0-0");
		freeReplyObject(rep);
		if (rc < 0)
			return -1;
	} while (strcmp(cursor, "0-0") != 0);
	return 0;
}

static int read_group(struct reader *rd, struct sbx_err *err)
{
	if (group_create(rd, err) < 0 || group_pending(rd, err) < 0)
		return -1;
	if (rd->q->claim_idle_ms > 0 && group_claim(rd, err) < 0)
		return -1;
	for (;;) {
		size_t n;
		if (group_read(rd, ">", rd->q->follow, &n, err) < 0)
			return -1;
		if (n == 0 && !rd->q->follow)
			return 0;
	}
}

int sbx_events_read(struct sbx_redis *r, const struct sbx_event_query *q, sbx_event_fn fn,
		    void *ctx, struct sbx_err *err)
{
	if (sbx_ids_check(q->tenant, "session", q->session, err) < 0)
		return -1;
	if (q->since && !sbx_event_id_ok(q->since))
		return sbx_fail(err, SBX_INVALID_REQUEST, "events",
				"'%s' is not a stream entry id (MS or MS-SEQ)", q->since);
	if (q->group && (q->session || !q->consumer || !*q->group || !*q->consumer))
		return sbx_fail(err, SBX_INVALID_REQUEST, "events",
				"a group reads the tenant's whole stream, by a named consumer");
	struct reader rd = {.r = r, .q = q, .fn = fn, .ctx = ctx};
	rd.key = stream_key(r, q->stream, q->tenant);
	/* Below the command timeout, so a quiet stream is a wait, not an error. */
	snprintf(rd.block, sizeof(rd.block), "%lld",
		 (long long)(r->timeout_ms > 200 ? r->timeout_ms / 2 : 100));
	snprintf(rd.last, sizeof(rd.last), "%s", q->since ? q->since : "0-0");
	int rc;
	if (q->group)
		rc = read_group(&rd, err);
	else
		rc = read_range(&rd, err) < 0 ? -1 : q->follow ? follow_plain(&rd, err) : 0;
	free(rd.key);
	return rc;
}

int sbx_events_group_destroy(struct sbx_redis *r, enum sbx_stream s, const char *tenant,
			     const char *group, struct sbx_err *err)
{
	if (sbx_ids_check(tenant, NULL, NULL, err) < 0)
		return -1;
	SBX_AUTOFREE char *key = stream_key(r, s, tenant);
	redisReply *rep = NULL;
	const char *argv[] = {"XGROUP", "DESTROY", key, group};
	if (sbx_redis_cmd(r, &rep, err, 4, argv, NULL) < 0) {
		if (!strstr(err->msg, "requires the key to exist"))
			return -1;
		sbx_err_clear(err);     /* no stream: no group */
		return 0;
	}
	freeReplyObject(rep);
	return 0;
}

int sbx_event_run(const char *cmd, json_object *ev, int *status, struct sbx_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_fail_errno(err, SBX_INTERNAL, "events", "pipe");
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]), close(p[1]);
		return sbx_fail_errno(err, SBX_INTERNAL, "events", "fork");
	}
	if (pid == 0) {
		dup2(p[0], 0);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	const char *text = json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN);
	/* A command that does not read its stdin is its own business: EPIPE
	 * (SIGPIPE is ignored by every program) is not a failure. */
	if (sbx_write_all(p[1], text, strlen(text)) == 0)
		sbx_write_all(p[1], "\n", 1);
	close(p[1]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return sbx_fail_errno(err, SBX_INTERNAL, "events", "waitpid");
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}
