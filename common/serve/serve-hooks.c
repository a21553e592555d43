/* serve-hooks.c - the webhook deliverer: one process of sbx-serve's own,
 * apart from the connection threads and the workers, so a slow or dead
 * receiver never holds a request.
 *
 * Each webhook reads its tenant's stream (events.h) through a consumer
 * group of its own, "webhook:<id>", created at the webhook's `since` (the
 * moment it was registered), as consumer "sbx-serve".  Every pass (about
 * four a second) walks the tenants with webhooks and, for each webhook not
 * waiting out a backoff, delivers first what it holds pending (a restarted
 * deliverer, or one whose server was killed with -9, sends again what it
 * had not acknowledged), then what is new, in stream order:
 *
 *   - an event without an E2B type, of a type the webhook does not take,
 *     or for a disabled webhook is acknowledged unsent;
 *   - otherwise it is POSTed (serve_e2b_event's JSON) with e2b-webhook-id,
 *     e2b-delivery-id (new each attempt), e2b-signature-version "v1" and
 *     e2b-signature: SHA-256 over the secret followed by the raw body,
 *     base64 without padding, in the URL-safe alphabet E2B's own check
 *     computes (its docs' verifiers turn + and / into - and _);
 *   - a 2xx acknowledges it (XACK); anything else (a status, a refused
 *     address, a timeout) leaves it pending and stops that webhook's pass,
 *     so order holds, with a backoff of 1 s doubling to 5 min.
 *
 * At least once: an event is acknowledged only after its receiver said
 * 2xx, so a crash between the answer and the XACK sends it again; the
 * payload's `id` is the same each time (derived from the stream entry).
 * An event stays pending until delivered or trimmed from the stream (the
 * profile's events_maxlen).  Bounds: one request at a time, 10 s each, the
 * answer's body read and dropped as it comes (nothing is kept), at most
 * 100 entries read from Redis at once.  Every address dialled passes the
 * SSRF guard (http.c's dial hook), loopback and private ones only with
 * --webhook-allow-private.  The process prints nothing: a failure is a
 * retry, and the webhook's state is in Redis. */
#include "serve-int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/prctl.h>
#include <sys/wait.h>

#include "doc.h"
#include "events.h"
#include "http.h"
#include "keys.h"
#include "redis.h"
#include "sha.h"
#include "util.h"

#define HOOK_SLOTS 256
#define HOOK_TIMEOUT_MS 10000
#define HOOK_BACKOFF_MAX_MS 300000

struct backoff {
	char id[40];
	unsigned attempts;
	int64_t next_ms, used_ms;
};

struct hooks {
	const struct sbx_serve_cfg *cfg;
	struct backoff slot[HOOK_SLOTS];
};

struct delivery {
	struct hooks *hs;
	json_object *hook;
	const char *id, *url, *secret;
	int failed;
};

/* The backoff slot of webhook `id`; the least recently used one is taken
 * over when all are in use (its webhook then retries sooner). */
static struct backoff *slot_of(struct hooks *hs, const char *id)
{
	struct backoff *old = &hs->slot[0];
	for (size_t i = 0; i < HOOK_SLOTS; i++) {
		if (!strcmp(hs->slot[i].id, id))
			return &hs->slot[i];
		if (hs->slot[i].used_ms < old->used_ms)
			old = &hs->slot[i];
	}
	memset(old, 0, sizeof(*old));
	snprintf(old->id, sizeof(old->id), "%s", id);
	return old;
}

static int wants(json_object *hook, const char *type)
{
	json_object *ev = serve_json_arr(hook, "events");
	if (!sbx_json_bool(hook, "enabled", 1))
		return 0;
	for (size_t i = 0; ev && i < json_object_array_length(ev); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(ev, i)), type))
			return 1;
	return 0;
}

/* base64url without padding of SHA-256(secret || body). */
static void sign(const char *secret, const char *body, char out[48])
{
	struct sbx_sha256 c;
	unsigned char h[SBX_SHA256_LEN];
	sbx_sha256_init(&c);
	sbx_sha256_update(&c, secret, strlen(secret));
	sbx_sha256_update(&c, body, strlen(body));
	sbx_sha256_final(&c, h);
	size_t n;
	SBX_AUTOFREE char *b = sbx_base64(h, sizeof(h), &n);
	while (n && b[n - 1] == '=')
		b[--n] = '\0';
	for (size_t i = 0; i < n; i++)
		b[i] = b[i] == '+' ? '-' : b[i] == '/' ? '_' : b[i];
	snprintf(out, 48, "%s", b);
}

static int drop_body(void *ctx, const char *data, size_t len, struct sbx_err *err)
{
	(void)ctx, (void)data, (void)len, (void)err;
	return 0;
}

/* POST one payload; 0 when the receiver answered 2xx. */
static int post(const struct delivery *d, const char *body)
{
	struct sbx_err err = {0};
	char sig[48], did[33];
	sign(d->secret, body, sig);
	if (sbx_random_hex(did, 16, &err) < 0)
		return -1;
	SBX_AUTOFREE char *h1 = sbx_xasprintf("e2b-webhook-id: %s", d->id);
	SBX_AUTOFREE char *h2 = sbx_xasprintf("e2b-delivery-id: %s", did);
	SBX_AUTOFREE char *h3 = sbx_xasprintf("e2b-signature: %s", sig);
	const char *hdr[] = {"Content-Type: application/json", "User-Agent: sbx-serve", h1, h2,
			     "e2b-signature-version: v1", h3, NULL};
	struct sbx_http_opts ho = {.base_url = d->url, .timeout_ms = HOOK_TIMEOUT_MS,
				   .allow_private = d->hs->cfg->webhook_allow_private};
	struct sbx_http *h;
	if (sbx_http_open(&ho, &h, &err) < 0)
		return -1;
	struct sbx_http_req rq = {.method = "POST", .path = "", .headers = hdr, .body = body,
				  .body_len = strlen(body), .on_body = drop_body};
	struct sbx_http_resp rs = {0};
	int rc = sbx_http_do(h, &rq, &rs, &err);
	int ok = rc == 0 && rs.status >= 200 && rs.status < 300;
	sbx_http_resp_clear(&rs);
	sbx_http_close(h);
	return ok ? 0 : -1;
}

static int deliver(json_object *ev, void *ctx, struct sbx_err *err)
{
	struct delivery *d = ctx;
	json_object *p = serve_e2b_event(ev);
	if (!p || !wants(d->hook, sbx_json_str(p, "type"))) {
		json_object_put(p);
		return 0;                                /* acknowledged, unsent */
	}
	int rc = post(d, json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
	json_object_put(p);
	if (rc == 0)
		return 0;
	d->failed = 1;                               /* stop here: order holds */
	return sbx_fail(err, SBX_UNAVAILABLE, "webhook", "delivery failed");
}

static void one_hook(struct hooks *hs, struct sbx_redis *r, const char *tenant, json_object *hook)
{
	const char *id = sbx_json_str(hook, "id"), *since = sbx_json_str(hook, "since");
	struct delivery d = {.hs = hs, .hook = hook, .id = id, .url = sbx_json_str(hook, "url"),
			     .secret = sbx_json_str(hook, "secret")};
	if (!id || !d.url || !d.secret || !since || !sbx_event_id_ok(since))
		return;
	struct backoff *b = slot_of(hs, id);
	int64_t now = sbx_now_ms();
	b->used_ms = now;
	if (b->next_ms > now)
		return;
	SBX_AUTOFREE char *group = sbx_xasprintf("webhook:%s", id);
	struct sbx_event_query q = {.stream = SBX_STREAM_EVENTS, .tenant = tenant, .since = since,
				    .group = group, .consumer = "sbx-serve"};
	struct sbx_err err = {0};
	sbx_events_read(r, &q, deliver, &d, &err);
	if (d.failed) {
		int64_t wait = 1000LL << (b->attempts < 9 ? b->attempts : 9);
		b->attempts++;
		b->next_ms = now + (wait < HOOK_BACKOFF_MAX_MS ? wait : HOOK_BACKOFF_MAX_MS);
	} else {
		b->attempts = 0, b->next_ms = 0;
	}
}

static void one_tenant(struct hooks *hs, struct sbx_redis *r, const char *tenant)
{
	struct sbx_err err = {0};
	if (sbx_ids_check(tenant, NULL, NULL, &err) < 0)
		return;
	SBX_AUTOFREE char *key = sbx_key_tenant(r->prefix, tenant, strlen(tenant), SBX_KEY_WEBHOOKS);
	redisReply *rep = NULL;
	const char *argv[] = {"HVALS", key};
	if (sbx_redis_cmd(r, &rep, &err, 2, argv, NULL) < 0)
		return;
	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
		json_object *h;
		if (rep->element[i]->type == REDIS_REPLY_STRING &&
		    sbx_json_parse_object(rep->element[i]->str, rep->element[i]->len, &h, &err) == 0) {
			one_hook(hs, r, tenant, h);
			json_object_put(h);
		}
	}
	freeReplyObject(rep);
}

static void pass(struct hooks *hs, struct sbx_redis *r)
{
	struct sbx_err err = {0};
	SBX_AUTOFREE char *set = sbx_key_webhook_tenants(r->prefix);
	redisReply *rep = NULL;
	const char *argv[] = {"SMEMBERS", set};
	if (sbx_redis_cmd(r, &rep, &err, 2, argv, NULL) < 0)
		return;
	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++)
		if (rep->element[i]->type == REDIS_REPLY_STRING)
			one_tenant(hs, r, rep->element[i]->str);
	freeReplyObject(rep);
}

static __attribute__((noreturn)) void hooks_main(const struct sbx_serve_cfg *cfg, pid_t parent)
{
	static struct hooks hs;
	hs.cfg = cfg;
	for (;;) {
		if (getppid() != parent)
			_exit(0);
		struct sbx_err err = {0};
		struct sbx_redis *r = serve_redis(cfg, &err);
		if (r)
			pass(&hs, r);
		sbx_sleep_ms(r ? 250 : 1000);
	}
}

/* The deliverer's keeper: a process of one thread that forks the
 * deliverer and forks it again when it dies (a crash, a kill), at most
 * once a second; pending events are in Redis, so nothing is lost with
 * it.  Forking from here, not from the threaded server, is what keeps a
 * new deliverer from inheriting a lock another thread held (the worker
 * pool's forker, serve-pool.c, exists for the same reason). */
static __attribute__((noreturn)) void keeper_main(const struct sbx_serve_cfg *cfg, pid_t server)
{
	prctl(PR_SET_NAME, "sbx-serve-hook");
	for (;;) {
		if (getppid() != server)
			_exit(0);
		pid_t keeper = getpid();
		pid_t c = fork();
		if (c == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			hooks_main(cfg, keeper);
		}
		if (c > 0)
			while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
				;
		sbx_sleep_ms(1000);
	}
}

pid_t serve_hooks_spawn(const struct sbx_serve_cfg *cfg)
{
	pid_t server = getpid();
	pid_t c = fork();
	if (c != 0)
		return c;
	/* Dies with the server's main thread, which forked it before the
	 * server had any other; nothing of the server's lives on. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	close_range(3, ~0U, 0);
	keeper_main(cfg, server);
}
