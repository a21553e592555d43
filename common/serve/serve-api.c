/* serve-api.c - E2B's control plane over the backend vtable: sandboxes
 * (list v1/v2, get, kill, pause, resume, connect, timeout, refreshes,
 * metrics, snapshots; create in serve-create.c, fork in serve-fork.c) and
 * the routes to templates and snapshots (serve-tpl.c).  Runs in a worker process
 * (serve.h); each handler opens the backend, makes the same vtable calls
 * the programs make, and answers in E2B's JSON.
 *
 * Promises: a sandbox is visible to the key that created it only (its
 * record names the key's id, and the listing filters on the metadata
 * `sbx.serve.team`); an id from a URL is checked before it reaches the
 * backend or a file name; template `base` is the profile's template;
 * listings page with X-Next-Token on (created_at, id) and never repeat or
 * skip a sandbox that exists throughout; a key at its sandbox limit gets
 * 429 with Retry-After. */
#include "serve-int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "doc.h"
#include "netpolicy.h"
#include "util.h"

/* Go's url.QueryUnescape: %XX and '+' as space; -1 when malformed. */
static int query_unescape(const char *s, char *out)
{
	for (; *s; s++) {
		if (*s == '+') {
			*out++ = ' ';
		} else if (*s == '%') {
			unsigned v;
			if (!s[1] || !s[2] || sscanf(s + 1, "%2x", &v) != 1)
				return -1;
			*out++ = (char)v;
			s += 2;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
	return 0;
}

/* E2B's metadata filter (the query value once decoded by HTTP): unescape
 * the whole, split on & and =, unescape each side. */
static json_object *metadata_filter(const char *q, struct sbx_err *err)
{
	json_object *m = json_object_new_object();
	if (!q || !*q)
		return m;
	SBX_AUTOFREE char *all = sbx_xmalloc(strlen(q) + 1);
	if (query_unescape(q, all) < 0) {
		json_object_put(m);
		sbx_fail(err, SBX_INVALID_REQUEST, "list", "Error parsing metadata: bad escape");
		return NULL;
	}
	char *save = NULL;
	for (char *pair = strtok_r(all, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');
		if (!eq || strchr(eq + 1, '=')) {
			json_object_put(m);
			sbx_fail(err, SBX_INVALID_REQUEST, "list",
				 "Error parsing metadata: invalid key value pair in query");
			return NULL;
		}
		*eq = '\0';
		SBX_AUTOFREE char *k = sbx_xmalloc(strlen(pair) + 1);
		SBX_AUTOFREE char *v = sbx_xmalloc(strlen(eq + 1) + 1);
		if (query_unescape(pair, k) < 0 || query_unescape(eq + 1, v) < 0) {
			json_object_put(m);
			sbx_fail(err, SBX_INVALID_REQUEST, "list", "Error parsing metadata: bad escape");
			return NULL;
		}
		sbx_json_set_str(m, k, v);
	}
	return m;
}

/* Page token: base64 of "<created_at>__<id>" (E2B's "__asc" appended
 * in ascending order), the last item sent. */
static char *page_token(const struct sbx_sandbox *sb, int asc)
{
	SBX_AUTOFREE char *raw = sbx_xasprintf("%lld__%s%s", (long long)sb->created_at, sb->id,
					       asc ? "__asc" : "");
	char *t = serve_b64(raw, strlen(raw));
	for (char *p = t; *p; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	return t;
}

/* Whether `sb` comes after the token's item in the listing's order:
 * newest first with ties by id, or (asc) that order reversed. */
static int after_token(const struct sbx_sandbox *sb, int64_t tc, const char *tid, int asc)
{
	if (asc)
		return sb->created_at > tc || (sb->created_at == tc && strcmp(sb->id, tid) < 0);
	return sb->created_at < tc || (sb->created_at == tc && strcmp(sb->id, tid) > 0);
}

/* RFC 3339 (E2B's startedAfter: "2026-12-01T10:00:00Z", fractions and
 * offsets allowed) to unix ms; -1 when it is not one. */
static int64_t rfc3339_ms(const char *s)
{
	struct tm tm = {0};
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -1;
	int64_t ms = 0, scale = 100;
	if (*p == '.' || *p == ',') {
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			ms += scale ? (*p - '0') * scale : 0;
	}
	int64_t off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int h = atoi(p + 1), m = atoi(p + 4);
		off = (*p == '-' ? -1 : 1) * (h * 3600 + m * 60);
		p += 6;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	return ((int64_t)timegm(&tm) - off) * 1000 + ms;
}

static int list(const struct serve_req *r, struct serve_out *o, int v2)
{
	struct sbx_err err = {0};
	unsigned states = 1u << SBX_STATE_RUNNING;
	const char *st = serve_query(r, "state");
	if (v2 && (!st || !*st || strstr(st, "paused")))
		states |= 1u << SBX_STATE_PAUSED;
	if (v2 && st && *st && !strstr(st, "running"))
		states &= ~(1u << SBX_STATE_RUNNING);
	int cube = r->cfg->flavor == SBX_SERVE_CUBE;
	long limit = v2 ? strtol(serve_query(r, "limit") ? serve_query(r, "limit") : "100", NULL, 10)
			: cube ? 200 : 0;      /* Cube caps v1 at 200 */
	if (v2 && (limit < 1 || limit > 100))
		limit = 100;
	/* order: E2B's v2 parameter; a token names the order it was made in */
	const char *ord = v2 ? serve_query(r, "order") : NULL;
	int asc = ord && !strcmp(ord, "asc");
	if (ord && *ord && !asc && strcmp(ord, "desc") != 0)
		return serve_reply_error(o, 400, "Invalid order parameter: must be 'asc' or 'desc'");
	int64_t tc = 0;
	char tid[80] = "";
	const char *next = v2 && !cube ? serve_query(r, "nextToken") : NULL;
	if (next && *next) {
		char *raw;
		size_t n;
		char *sep, *tail = NULL;
		if (serve_unb64(next, &raw, &n) == 0 && (sep = strstr(raw, "__")) &&
		    (tail = strstr(sep + 2, "__")) && !strcmp(tail, "__asc"))
			*tail = '\0';
		if (!raw || !(sep = strstr(raw, "__")) || (tail != NULL) != asc ||
		    snprintf(tid, sizeof(tid), "%s", sep + 2) >= (int)sizeof(tid) ||
		    !serve_id_ok(tid)) {
			if (raw)
				free(raw);
			return serve_reply_error(o, 400, "Invalid next token");
		}
		tc = strtoll(raw, NULL, 10);
		free(raw);
	}
	/* startedAfter, template: E2B's v2 list parameters */
	const char *sa = v2 ? serve_query(r, "startedAfter") : NULL;
	int64_t after_ms = sa && *sa ? rfc3339_ms(sa) : -1;
	if (sa && *sa && after_ms < 0)
		return serve_reply_error(o, 400, "Invalid startedAfter: not an RFC 3339 time");
	const char *want_tpl = v2 ? serve_query(r, "template") : NULL;
	if (want_tpl && !*want_tpl)
		want_tpl = NULL;
	/* A tag is E2B's 400; a snapshot's own id may hold a ':' (docker's
	 * image references), so one this server took is not a tag. */
	char snap_sb[72], snap_team[17];
	if (want_tpl && strchr(want_tpl, ':') &&
	    serve_snap_owner(r->serve_dir, want_tpl, snap_sb, snap_team) != 0)
		return serve_reply_error(o, 400, "Invalid template: tags are not supported here because "
					 "sandboxes are not tag-scoped");
	json_object *md = metadata_filter(serve_query(r, "metadata"), &err);
	if (!md)
		return serve_reply_err(o, &err);
	struct sbx_backend *b = NULL;
	struct sbx_sandbox *v = NULL;
	size_t n = 0;
	if (serve_open_backend(r, &b, &err) < 0 || serve_team_list(r, b, md, states, &v, &n, &err) < 0) {
		json_object_put(md);
		sbx_backend_close(b);
		return serve_reply_err(o, &err);
	}
	json_object_put(md);
	json_object *arr = json_object_new_array();
	size_t sent = 0, running = 0;
	const struct sbx_sandbox *last = NULL;
	int more = 0;
	for (size_t k = 0; k < n; k++) {
		struct sbx_sandbox *sb = &v[asc ? n - 1 - k : k];
		if (sb->state == SBX_STATE_TERMINAL)
			continue;
		struct serve_rec rec;
		struct sbx_err e2 = {0};
		if (serve_rec_load(r->serve_dir, sb->id, &rec, &e2) < 0)
			continue;
		int64_t started = rec.started_at_ms ? rec.started_at_ms : sb->created_at * 1000;
		if ((after_ms >= 0 && started < after_ms) ||
		    (want_tpl && !(rec.alias && !strcmp(rec.alias, want_tpl)) &&
		     !(sb->template_id && !strcmp(sb->template_id, want_tpl)))) {
			serve_rec_clear(&rec);
			continue;
		}
		if (sb->state != SBX_STATE_PAUSED)
			running++;
		if ((tid[0] && !after_token(sb, tc, tid, asc)) || (limit && sent == (size_t)limit)) {
			more |= !tid[0] || after_token(sb, tc, tid, asc);
			serve_rec_clear(&rec);
			continue;
		}
		json_object_array_add(arr, serve_listed_json(r, sb, &rec, 0));
		serve_rec_clear(&rec);
		sent++;
		last = sb;
	}
	if (more && last && !cube) {
		char *t = page_token(last, asc);
		serve_out_header(o, "X-Next-Token", "%s", t);
		free(t);
	}
	if (v2 && (states & (1u << SBX_STATE_RUNNING)))
		serve_out_header(o, "X-Total-Running", "%zu", running);
	for (size_t i = 0; i < n; i++)
		sbx_sandbox_clear(&v[i]);
	free(v);
	sbx_backend_close(b);
	return serve_reply_json(o, 200, arr);
}

/* The E2B timeout moved: the record and the backend's backstop timer. */
static int set_end(const struct serve_req *r, struct sbx_backend *b, struct sbx_sandbox *sb,
		   struct serve_rec *rec, int64_t seconds, struct sbx_err *err)
{
	if (seconds < 0)
		seconds = 0;
	rec->end_at_ms = sbx_now_ms() + seconds * 1000;
	if (serve_rec_save(r->serve_dir, sb->id, rec, err) < 0)
		return -1;
	struct sbx_timeout_policy t = {.seconds = seconds ? seconds : 1,
				       .on_timeout_pause = rec->auto_pause, .auto_resume = -1};
	struct sbx_err e2 = {0};
	if (rec->auto_pause && (sbx_backend_caps(b) & SBX_CAP_IDLE_KILL))
		return 0;                              /* it would kill: see create */
	if (b->ops->set_timeout)
		b->ops->set_timeout(b, sb, &t, &e2);   /* a backstop: best effort */
	return 0;
}

/* POST /sandboxes/{id}/timeout: the new end, and its event (E2B's
 * "updated", eventData.set_timeout the end). */
static int set_timeout(const struct serve_req *r, struct sbx_backend *b, struct sbx_sandbox *sb,
		       struct serve_rec *rec, int64_t seconds, struct sbx_err *err)
{
	if (set_end(r, b, sb, rec, seconds, err) < 0)
		return -1;
	char end[40];
	json_object *d = json_object_new_object();
	sbx_time_iso(rec->end_at_ms / 1000, end, sizeof(end));
	sbx_json_set_int(d, "seconds", seconds < 0 ? 0 : seconds);
	sbx_json_set_str(d, "end", end);
	serve_event(r->cfg, r->team, sb->id, "timeout", "command", d);
	return 0;
}

/* What a metric sample reads inside the sandbox, as "name value" lines:
 * its own cgroup, which a sandbox with a cgroup namespace sees at
 * /sys/fs/cgroup (v2: cpu.stat, memory.current; v1 as docker mounts it:
 * cpuacct.usage, memory.usage_in_bytes): the CPU time twice, METRIC_GAP
 * apart, the memory charge, limit and page cache; the CPUs, the machine's
 * memory, the root filesystem.  Plain sh (busybox templates). */
#define METRIC_GAP "0.5"
static const char metric_script[] =
	"cg=/sys/fs/cgroup\n"
	"s() {\n"
	"  if [ -r $cg/cpu.stat ]; then while read -r k v; do [ \"$k\" = usage_usec ] && echo \"usec$1 $v\"; done < $cg/cpu.stat\n"
	"  elif [ -r $cg/cpuacct/cpuacct.usage ]; then read -r v < $cg/cpuacct/cpuacct.usage && echo \"usec$1 $((v / 1000))\"; fi\n"
	"}\n"
	"s 1; sleep " METRIC_GAP "; s 2\n"
	"if [ -r $cg/memory.current ]; then read -r v < $cg/memory.current && echo \"cgmem $v\"\n"
	"  read -r v < $cg/memory.max && echo \"cgmax $v\"\n"
	"  while read -r k v; do [ \"$k\" = file ] && echo \"cgcache $v\"; done < $cg/memory.stat\n"
	"elif [ -r $cg/memory/memory.usage_in_bytes ]; then read -r v < $cg/memory/memory.usage_in_bytes && echo \"cgmem $v\"\n"
	"  read -r v < $cg/memory/memory.limit_in_bytes && echo \"cgmax $v\"\n"
	"  while read -r k v; do [ \"$k\" = cache ] && echo \"cgcache $v\"; done < $cg/memory/memory.stat\n"
	"fi\n"
	"while read -r k v u; do [ \"$k\" = MemTotal: ] && echo \"memtotal $v\"; done < /proc/meminfo\n"
	"echo \"ncpu $(nproc 2>/dev/null || grep -c ^processor /proc/cpuinfo)\"\n"
	"df -kP / 2>/dev/null | while read -r f t u a rest; do [ \"$f\" = Filesystem ] || printf 'disktotal %s\\ndiskused %s\\n' \"$t\" \"$u\"; done\n";

/* The sample's value for `name`: the line "name V", V decimal digits only
 * and at most METRIC_MAX (1 PiB, whether bytes, kB or microseconds); -1
 * when no line names it, -2 when V is anything else.  The sample comes from
 * inside the sandbox, whose root may replace every program and file it
 * reads: nothing in it is trusted further than this. */
#define METRIC_MAX (1LL << 50)
static int64_t metric_val(const char *out, const char *name)
{
	size_t n = strlen(name);
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, name, n) || l[n] != ' ')
			continue;
		const char *p = l + n + 1;
		int64_t v = 0;
		if (*p < '0' || *p > '9')
			return -2;
		for (; *p >= '0' && *p <= '9'; p++)
			if ((v = v * 10 + (*p - '0')) > METRIC_MAX)
				return -2;
		return *p == '\n' || !*p ? v : -2;
	}
	return -1;
}

/* One SandboxMetric of a running sandbox, sampled now by an exec in it.
 * CPU: the share of the sandbox's CPUs its cgroup used over METRIC_GAP;
 * memory: the cgroup's charge; memTotal: the profile's limit, else the
 * cgroup's, else the machine's; disk: the root filesystem.  A sandbox that
 * sees no cgroup of its own (the local backend on a cgroup v1 host) has no
 * numbers to tell: SBX_UNSUPPORTED, never the machine's numbers as the
 * sandbox's.  SBX_UNSUPPORTED too when the backend cannot exec. */
static int metric_sample(const struct serve_req *r, struct sbx_backend *b, struct sbx_sandbox *sb,
			 json_object **out, struct sbx_err *err)
{
	if (!b->ops->exec || !(sbx_backend_caps(b) & SBX_CAP_EXEC))
		return sbx_fail(err, SBX_UNSUPPORTED, "metrics",
				"the backend cannot run a command in the sandbox, so it has no metrics");
	char *argv[] = {"/bin/sh", "-c", (char *)metric_script, NULL};
	struct sbx_exec_req req = {.argv = argv, .timeout_ms = 10000, .output_cap = 4096,
				   .raw_out_fd = -1, .raw_err_fd = -1, .raw_in_fd = -1};
	struct sbx_exec_result res = {0};
	if (sbx_call(b, exec, err, sb, &req, &res) < 0)
		return -1;
	if (res.exit_code < 0 || !res.out) {
		sbx_exec_result_clear(&res);
		return sbx_fail(err, SBX_INTERNAL, "metrics", "the metric sample did not finish");
	}
	const char *o = res.out;
	const struct sbx_limits *l = &r->cfg->profile->limits;
	int64_t ncpu = metric_val(o, "ncpu"), u1 = metric_val(o, "usec1"), u2 = metric_val(o, "usec2");
	int64_t mem = metric_val(o, "cgmem"), cgmax = metric_val(o, "cgmax"), cache = metric_val(o, "cgcache");
	int64_t host = metric_val(o, "memtotal"), dt = metric_val(o, "disktotal"), du = metric_val(o, "diskused");
	int bad = res.out_truncated || ncpu > 65536;
	const int64_t all[] = {ncpu, u1, u2, mem, cache, host, dt, du};   /* not cgmax: "max" */
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		bad |= all[i] == -2;
	if (bad) {
		sbx_exec_result_clear(&res);
		return sbx_fail(err, SBX_INTERNAL, "metrics",
				"the sandbox's metric sample is malformed (its programs or files changed?)");
	}
	if (u1 < 0 || u2 < 0 || mem < 0) {
		sbx_exec_result_clear(&res);
		return sbx_fail(err, SBX_UNSUPPORTED, "metrics",
				"the sandbox sees no cgroup of its own (a cgroup v1 host?), so the backend "
				"cannot tell its CPU and memory");
	}
	int64_t cpus = l->cpus > 0 ? (int64_t)(l->cpus + 0.999) : ncpu > 0 ? ncpu : 1;
	double used_s = (double)(u2 - u1) / 1e6;
	double share = l->cpus > 0 ? l->cpus : (double)cpus;
	double pct = used_s < 0 ? 0 : used_s / atof(METRIC_GAP) / share * 100.0;
	if (pct > 100)
		pct = 100;
	host = host > 0 ? host * 1024 : 0;
	int64_t total = l->memory_bytes > 0 ? l->memory_bytes : cgmax;
	if (total <= 0 || (host > 0 && total > host))    /* "max", or v1's huge number */
		total = host;
	json_object *j = json_object_new_object();
	char t[48];
	int64_t now = sbx_now_ms();
	serve_iso_ms(now, t, sizeof(t));
	sbx_json_set_str(j, "timestamp", t);
	sbx_json_set_int(j, "timestampUnix", now / 1000);
	sbx_json_set_int(j, "cpuCount", cpus);
	json_object_object_add(j, "cpuUsedPct", json_object_new_double((double)(int64_t)(pct * 100) / 100));
	sbx_json_set_int(j, "memUsed", mem);
	sbx_json_set_int(j, "memTotal", total);
	sbx_json_set_int(j, "memCache", cache > 0 ? cache : 0);
	sbx_json_set_int(j, "diskUsed", du > 0 ? du * 1024 : 0);
	sbx_json_set_int(j, "diskTotal", dt > 0 ? dt * 1024 : 0);
	sbx_exec_result_clear(&res);
	*out = j;
	return 0;
}

/* GET /sandboxes/{id}/metrics?start&end: one sample, now, when now lies in
 * [start, end] (unix seconds, either optional) and the sandbox runs; []
 * otherwise (a paused sandbox uses no CPU; E2B's list may be empty).  The
 * server keeps no history: E2B's series of past samples is not there. */
static int metrics(const struct serve_req *r, struct sbx_backend *b, struct sbx_sandbox *sb,
		   json_object **out, struct sbx_err *err)
{
	const char *qs = serve_query(r, "start"), *qe = serve_query(r, "end");
	char *end;
	int64_t now = sbx_now_ms() / 1000, start = 0, stop = INT64_MAX;
	if (qs && *qs && ((start = strtoll(qs, &end, 10)), *end || start < 0))
		return sbx_fail(err, SBX_INVALID_REQUEST, "metrics", "start must be unix seconds");
	if (qe && *qe && ((stop = strtoll(qe, &end, 10)), *end || stop < 0))
		return sbx_fail(err, SBX_INVALID_REQUEST, "metrics", "end must be unix seconds");
	if (start > stop)
		return sbx_fail(err, SBX_INVALID_REQUEST, "metrics", "start is after end");
	json_object *arr = json_object_new_array();
	if (sb->state == SBX_STATE_RUNNING && now >= start && now <= stop) {
		json_object *m = NULL;
		if (metric_sample(r, b, sb, &m, err) < 0) {
			json_object_put(arr);
			return -1;
		}
		json_object_array_add(arr, m);
	}
	*out = arr;
	return 0;
}

/* PUT /sandboxes/{id}/network (E2B's updateNetwork): the body's allowOut
 * and denyOut replace the whole egress configuration, mapped onto an sbx
 * policy exactly as on create (sbx_np_from_e2b: allow wins, the rest
 * allowed unless denyOut says 0.0.0.0/0).  Other keys are a 400; a
 * backend without set_network, or a sandbox that cannot take one, is the
 * backend's error (unsupported: 501). */
static int update_network(struct sbx_backend *b, struct sbx_sandbox *sb, json_object *in,
			  struct sbx_err *err)
{
	json_object_object_foreach(in, k, v) {
		if (strcmp(k, "allowOut") && strcmp(k, "denyOut") && !serve_unset(v))
			return sbx_fail(err, SBX_INVALID_REQUEST, "network",
					"sbx-serve does not implement 'network.%.64s'", k);
	}
	struct sbx_netpolicy p = {0};
	int rc = sbx_np_from_e2b(serve_json_arr(in, "allowOut"), serve_json_arr(in, "denyOut"), 1, &p, err);
	if (rc == 0)
		rc = sbx_call(b, set_network, err, sb, &p);
	sbx_np_clear(&p);
	return rc;
}

/* The calls E2B has and this server does not: 501 with the call's name, so
 * that an SDK reports an unsupported call, not a missing sandbox. */
static const char *unimplemented_call(const char *method, const char *op)
{
	if (!strcmp(method, "GET") && !strcmp(op, "logs"))
		return "logs";
	return NULL;
}

/* The operations on one sandbox, by id (/sandboxes/{id}[/{op}]): get,
 * delete, pause, resume, connect, timeout, refreshes, metrics, snapshots,
 * fork (serve-fork.c). */
static int sandbox_op(const struct serve_req *r, struct serve_out *o, const char *id,
		      const char *op)
{
	struct sbx_err err = {0};
	struct sbx_backend *b = NULL;
	struct sbx_sandbox sb = {0};
	struct serve_rec rec = {0};
	int post = strcmp(r->method, "POST") == 0, put = strcmp(r->method, "PUT") == 0;
	json_object *in = post || put ? serve_body_obj(r, o) : json_object_new_object();
	if (!in)
		return 0;
	if (serve_open_backend(r, &b, &err) < 0 || serve_load_sandbox(r, b, id, &sb, &rec, &err) < 0) {
		json_object_put(in);
		sbx_backend_close(b);
		return serve_reply_err(o, &err);
	}
	int rc = 0;
	json_object *out = NULL;
	int status = 204;
	if (!*op && !strcmp(r->method, "GET")) {
		out = serve_listed_json(r, &sb, &rec, 1);
		status = 200;
	} else if (!*op && !strcmp(r->method, "DELETE")) {
		int gone;
		serve_audit(r->cfg, b, &sb, NULL, NULL);   /* its spool outlives it */
		rc = sbx_call(b, remove, &err, id, &gone);
		if (rc == 0) {
			serve_rec_remove(r->serve_dir, id);
			serve_event(r->cfg, r->team, id, "killed", "command", NULL);
		}
	} else if (post && !strcmp(op, "pause")) {
		json_object *mem;
		if (json_object_object_get_ex(in, "memory", &mem) && mem && !json_object_get_boolean(mem)) {
			sbx_fail(&err, SBX_INVALID_REQUEST, "pause",
				 "sbx-serve does not implement 'memory': false (a pause keeps memory)");
			rc = -1;
		} else if (sb.state == SBX_STATE_PAUSED) {
			sbx_fail(&err, SBX_CONFLICT, "pause",
				 "Error pausing sandbox - sandbox '%s' is already paused", id);
			rc = -1;
		} else if ((rc = serve_pause(b, &sb, &err)) == 0) {
			serve_event(r->cfg, r->team, id, "paused", "command", NULL);
			rec.end_at_ms = 0;             /* paused: no end time */
			rc = serve_rec_save(r->serve_dir, id, &rec, &err);
		}
	} else if (post && (!strcmp(op, "connect") || !strcmp(op, "resume"))) {
		int was_paused = sb.state == SBX_STATE_PAUSED;
		int64_t t = sbx_json_int(in, "timeout", strcmp(op, "resume") ? 300 : 15);
		if (!strcmp(op, "resume") && !was_paused) {
			sbx_fail(&err, SBX_CONFLICT, "resume", "Sandbox %s is already running", id);
			rc = -1;
		} else if ((rc = sbx_call(b, connect, &err, &sb)) == 0) {
			if (was_paused)
				serve_event(r->cfg, r->team, id, "resumed", "command", NULL);
			int64_t end = sbx_now_ms() + t * 1000;
			if (was_paused || end > rec.end_at_ms)
				rc = set_end(r, b, &sb, &rec, t, &err);
			if (rc == 0)
				rc = serve_sandbox_json(r, &sb, &rec, &out, &err);
			status = was_paused && r->cfg->flavor != SBX_SERVE_CUBE ? 201 : 200;
		}
	} else if (post && !strcmp(op, "timeout")) {
		rc = set_timeout(r, b, &sb, &rec, sbx_json_int(in, "timeout", 0), &err);
	} else if (post && !strcmp(op, "refreshes")) {
		int64_t d = sbx_json_int(in, "duration", 0);
		if (d < 0 || d > 3600) {
			sbx_fail(&err, SBX_INVALID_REQUEST, "refresh", "duration must be 0 to 3600");
			rc = -1;
		} else if (sbx_now_ms() + d * 1000 > rec.end_at_ms) {
			rc = set_end(r, b, &sb, &rec, d, &err);
		}
	} else if (put && !strcmp(op, "network")) {
		rc = update_network(b, &sb, in, &err);
	} else if (!strcmp(r->method, "GET") && !strcmp(op, "metrics")) {
		rc = metrics(r, b, &sb, &out, &err);
		status = 200;
	} else if (post && !strcmp(op, "fork")) {
		serve_fork(r, o, b, &sb, &rec, in);
		rc = 2;
	} else if (unimplemented_call(r->method, op)) {
		serve_reply_error(o, 501, "sbx-serve does not implement %s", unimplemented_call(r->method, op));
		rc = 2;
	} else if (post && !strcmp(op, "snapshots")) {
		struct sbx_snapshot_ref ref = {0};
		const char *name = sbx_json_str(in, "name");
		rc = sbx_call(b, snapshot_create, &err, &sb, name, &ref);
		if (rc == 0 && (rc = serve_snap_note(r->serve_dir, ref.id, id, r->team, &err)) == 0) {
			json_object *d = json_object_new_object();
			sbx_json_set_str(d, "snapshot", ref.id);
			serve_event(r->cfg, r->team, id, "snapshot", "command", d);
			out = json_object_new_object();
			sbx_json_set_str(out, "snapshotID", ref.id);
			json_object *names = json_object_new_array();
			if (name || r->cfg->flavor == SBX_SERVE_CUBE)   /* Cube echoes the id */
				json_object_array_add(names, json_object_new_string(name ? name : ref.id));
			json_object_object_add(out, "names", names);
			status = 201;
		}
		free(ref.id);
		free(ref.name);
		free(ref.parent);
	} else {
		rc = 1;
	}
	if (rc == 2)
		;                                       /* answered */
	else if (rc == 1)
		serve_reply_error(o, 404, "no such route");
	else if (rc < 0)
		serve_reply_err(o, &err);
	else if (out)
		serve_reply_json(o, status, out);
	else
		serve_reply(o, 204, NULL, NULL, 0);
	json_object_put(in);
	sbx_sandbox_clear(&sb);
	serve_rec_clear(&rec);
	sbx_backend_close(b);
	return 0;
}

int serve_api_templates(const struct serve_req *r, struct serve_out *o, const char *rest);
int serve_api_snapshots(const struct serve_req *r, struct serve_out *o);

int serve_api(const struct serve_req *r, struct serve_out *o)
{
	const char *p = r->path, *m = r->method;
	int v2 = 0;
	if (sbx_str_starts(p, "/v2/sandboxes")) {
		v2 = 1;
		p += 3;
	}
	if (!strcmp(p, "/sandboxes")) {
		if (v2 && !strcmp(m, "POST") && r->cfg->flavor == SBX_SERVE_CUBE)
			return serve_reply_error(o, 405, "method not allowed");   /* Cube has no v2 create */
		if (!strcmp(m, "POST"))
			return serve_api_create(r, o, v2);
		if (!strcmp(m, "GET"))
			return list(r, o, v2);
		return serve_reply_error(o, 405, "method not allowed");
	}
	if (sbx_str_starts(p, "/sandboxes/")) {
		char id[80];
		const char *s = p + 11, *slash = strchr(s, '/');
		size_t n = slash ? (size_t)(slash - s) : strlen(s);
		if (n == 0 || n >= sizeof(id))
			return serve_reply_error(o, 400, "Invalid sandbox ID");
		memcpy(id, s, n);
		id[n] = '\0';
		char *dash = strchr(id, '-');         /* legacy "<id>-<clientID>" */
		if (dash && !strcmp(dash + 1, SERVE_CLIENT_ID))
			*dash = '\0';
		if (!serve_id_ok(id))
			return serve_reply_error(o, 400, "Invalid sandbox ID");
		const char *op = slash ? slash + 1 : "";
		if (v2 && strcmp(op, "connect") != 0 && strcmp(op, "logs") != 0)
			return serve_reply_error(o, 404, "no such route");
		if (!strcmp(id, "metrics") && !slash)   /* GET /sandboxes/metrics?sandbox_ids= */
			return serve_reply_error(o, 501, "sbx-serve does not implement the metrics of several sandboxes at once");
		return sandbox_op(r, o, id, op);
	}
	if (!v2 && sbx_str_starts(p, "/events/"))
		return serve_api_events(r, o);
	if (!strcmp(p, "/snapshots") && !strcmp(m, "GET"))
		return serve_api_snapshots(r, o);
	if (!v2 && (!strcmp(p, "/volumes") || sbx_str_starts(p, "/volumes/")))
		return serve_api_volumes(r, o, p[8] ? p + 9 : NULL);
	if (!strcmp(p, "/templates") || !strcmp(p, "/v2/templates") || sbx_str_starts(p, "/templates/"))
		return serve_api_templates(r, o, sbx_str_starts(p, "/templates/") ? p + 11 : NULL);
	return serve_reply_error(o, 404, "no such route");
}
