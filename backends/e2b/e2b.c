/* e2b.c - the e2b backend: sandboxes on an E2B control plane (E2B's cloud,
 * self-hosted E2B infra, or any server that speaks its wire: sbx-serve),
 * envd for everything inside (e2b-exec.c, e2b-files.c), snapshots and
 * templates in e2b-image.c.  This file is the vtable and the lifecycle:
 * open, create, get, connect, list, pause, set timeout, remove.
 *
 * Promises:
 *   - create is v1 `POST /sandboxes` with "secure": true (every E2B-wire
 *     server has it; Cube refuses v2), both network switches explicit, the
 *     timeout policy as E2B's timeout/autoPause/autoResume; it is sent
 *     once: a 503, a 5xx or a lost connection is reported, never retried
 *     (only a 429, which the server answers before acting);
 *   - a sandbox's access token is never stored: every program that needs
 *     envd looks the sandbox up and takes the token from the answer;
 *   - the listing pages with E2B's nextToken, the pager above detects a
 *     token that repeats;
 *   - delete of a sandbox that is gone succeeds (gone = 1).
 *
 * E2B's timeout is absolute (end = now + timeout); sbx's is idle.  Every
 * connect (a session's resolve, each turn) extends the end to now + the
 * sandbox's idle seconds, so a sandbox in use lives on and one left alone
 * ends after its idle seconds, paused or killed as its policy says. */
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "e2b-sandbox.h"
#include "fingerprint.h"
#include "metadata.h"
#include "netpolicy.h"
#include "util.h"

#define LIST_LIMIT 100

/* ---- open, caps, health, fingerprint ----------------------------------- */

int e2b_open_as(struct sbx_backend *b, int cube, struct sbx_err *err)
{
	return e2b_conn_open(b, cube, err);
}

static int e2b_open(struct sbx_backend *b, struct sbx_err *err) { return e2b_open_as(b, 0, err); }
void e2b_close(struct sbx_backend *b) { e2b_conn_close(b); }

/* What E2B's wire gives every backend on it (docs/remote.md). */
static unsigned e2b_caps(struct sbx_backend *b)
{
	(void)b;
	return SBX_CAP_EXEC | SBX_CAP_FILES | SBX_CAP_PAUSE | SBX_CAP_SNAPSHOTS |
	       SBX_CAP_METADATA | SBX_CAP_LIST | SBX_CAP_TEMPLATES | SBX_CAP_TIMEOUT |
	       SBX_CAP_INSTALL | SBX_CAP_NETPOLICY | SBX_CAP_INBOUND_TOKEN | SBX_CAP_TTY |
	       SBX_CAP_VOLUMES;
}

int e2b_health(struct sbx_backend *b, struct sbx_err *err)
{
	/* /health needs no key: a listing of one checks the key too. */
	json_object *out = NULL;
	int rc = e2b_api(b, "health", "GET", "/v2/sandboxes?limit=1", NULL, E2B_IDEMPOTENT, &out, NULL, err);
	json_object_put(out);
	return rc;
}

/* ("e2b"|"cube", the API key, the endpoint as configured). */
int e2b_fingerprint(struct sbx_backend *b, char out[65], struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	char *key = NULL;
	if (sbx_profile_secret(b->profile, &key, err) < 0)
		return -1;
	int rc = sbx_fingerprint(c->cube ? "cube" : "e2b", key, b->profile->endpoint, out, err);
	if (key)
		sbx_secret_free(key);
	return rc;
}

/* ---- create ------------------------------------------------------------ */

static json_object *str_array_or_empty(json_object *a)
{
	return a ? json_object_get(a) : json_object_new_array();
}

/* The network object, both switches explicit (DESIGN §5). */
static json_object *network_json(const struct sbx_create_req *req)
{
	json_object *n = json_object_new_object();
	sbx_json_set_bool(n, "allowPublicTraffic", req->net.allow_public);
	if (req->net.allow_out)
		json_object_object_add(n, "allowOut", str_array_or_empty(req->net.allow_out));
	if (req->net.deny_out)
		json_object_object_add(n, "denyOut", str_array_or_empty(req->net.deny_out));
	return n;
}

static json_object *create_body(struct sbx_backend *b, const struct sbx_create_req *req,
				const char *tpl, int64_t secs)
{
	struct e2b_conn *c = e2b_conn(b);
	json_object *body = json_object_new_object();
	sbx_json_set_str(body, "templateID", tpl);
	sbx_json_set_int(body, "timeout", secs);
	if (c->cube) {
		/* cube-wire §2.3: lifecycle wins over the flat fields. */
		json_object *lc = json_object_new_object();
		sbx_json_set_str(lc, "onTimeout", req->timeout.on_timeout_pause ? "pause" : "kill");
		sbx_json_set_bool(lc, "autoResume", req->timeout.auto_resume);
		json_object_object_add(body, "lifecycle", lc);
	} else {
		sbx_json_set_bool(body, "secure", 1);
		sbx_json_set_bool(body, "autoPause", req->timeout.on_timeout_pause);
		json_object *ar = json_object_new_object();
		sbx_json_set_bool(ar, "enabled", req->timeout.auto_resume);
		json_object_object_add(body, "autoResume", ar);
	}
	sbx_json_set_bool(body, "allow_internet_access", req->net.allow_internet);
	json_object_object_add(body, "network", network_json(req));
	json_object_object_add(body, "metadata", e2b_md_to_wire(req->metadata));
	json_object *env = json_object_new_object();
	json_object *penv = b->profile && b->profile->raw ? sbx_json_obj(b->profile->raw, "env") : NULL;
	if (penv) {
		json_object_object_foreach(penv, k, v)
			json_object_object_add(env, k, json_object_get(v));
	}
	if (req->env) {
		json_object_object_foreach(req->env, k, v)
			json_object_object_add(env, k, json_object_get(v));
	}
	json_object_object_add(body, "envVars", env);
	if (req->nvolumes)
		json_object_object_add(body, "volumeMounts", e2b_volume_mounts(req));
	return body;
}

static int e2b_create_mapped(struct sbx_backend *b, const struct sbx_create_req *req,
			     struct sbx_sandbox *out, struct sbx_err *err);

int e2b_create(struct sbx_backend *b, const struct sbx_create_req *req, struct sbx_sandbox *out,
	       struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	if (req->disk_required)
		return sbx_fail(err, SBX_UNSUPPORTED, "create", "the %s backend cannot set a disk size",
				c->cube ? "cube" : "e2b");
	/* An sbx policy goes to the service in its own terms (E2B's lists,
	 * which Cube takes too), or is refused where they cannot say it. */
	struct sbx_create_req mapped;
	json_object *ao = NULL, *dn = NULL;
	if (req->net.policy) {
		if (sbx_np_to_e2b(req->net.policy, &ao, &dn, err) < 0) {
			sbx_err_prefix(err, "the %s backend", c->cube ? "cube" : "e2b");
			return -1;
		}
		mapped = *req;
		mapped.net.allow_out = ao;
		mapped.net.deny_out = dn;
		mapped.net.allow_internet = 1;
		req = &mapped;
	}
	int rc = e2b_create_mapped(b, req, out, err);
	json_object_put(ao);
	json_object_put(dn);
	return rc;
}

static int e2b_create_mapped(struct sbx_backend *b, const struct sbx_create_req *req,
			     struct sbx_sandbox *out, struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	const struct sbx_profile *p = b->profile;
	const char *tpl = req->template_id && *req->template_id ? req->template_id
			  : p && p->template_id && *p->template_id ? p->template_id : "base";
	int64_t secs = req->timeout.seconds > 0 ? req->timeout.seconds : c->cube ? -1 : E2B_NEVER_SECONDS;
	json_object *body = create_body(b, req, tpl, secs);
	json_object *resp = NULL;
	int rc = e2b_api(b, "create", "POST", "/sandboxes", body, E2B_ONCE, &resp, NULL, err);
	json_object_put(body);
	if (rc < 0) {
		if (err->http_status == 404 || (c->cube && err->reason == SBX_R_NO_TEMPLATE))
			err->kind = SBX_INVALID_REQUEST;      /* an unknown template */
		return -1;
	}
	memset(out, 0, sizeof(*out));
	const char *tok = sbx_json_str(resp, "trafficAccessToken");
	if (e2b_fill(b, out, resp, err) < 0 ||
	    (tok && *tok && e2b_reply_token(tok, E2B_TOKEN_MAX, "trafficAccessToken", "create", err) < 0)) {
		/* The server made something we cannot name: say so (it may run). */
		sbx_err_prefix(err, "the answer to the create (a sandbox may have been made)");
		sbx_sandbox_clear(out);
		json_object_put(resp);
		return -1;
	}
	if (!out->id) {
		sbx_sandbox_clear(out);
		json_object_put(resp);
		return sbx_fail(err, SBX_INTERNAL, "create", "the server returned no sandboxID");
	}
	out->state = SBX_STATE_RUNNING;
	out->created_at = sbx_now_ms() / 1000;
	json_object_put(out->metadata);
	out->metadata = json_object_new_object();
	if (req->metadata) {
		json_object_object_foreach(req->metadata, k, v)
			json_object_object_add(out->metadata, k, json_object_get(v));
	}
	const char *t = sbx_json_str(out->metadata, SBX_MD_TENANT), *s = sbx_json_str(out->metadata, SBX_MD_SESSION);
	out->tenant = t && *t ? sbx_xstrdup(t) : NULL;
	out->session = s && *s ? sbx_xstrdup(s) : NULL;
	free(out->template_id);
	out->template_id = sbx_xstrdup(tpl);
	if (!out->extra)
		out->extra = json_object_new_object();
	sbx_json_set_int(out->extra, "idle_seconds", secs);
	if (req->net.policy)   /* as sent; the service enforces it in its terms */
		json_object_object_add(out->extra, "network_policy", sbx_np_to_json(req->net.policy));
	if (tok && *tok)   /* Cube gives it once, at create: the handle carries it */
		sbx_json_set_str(out->extra, "traffic_token", tok);
	json_object_put(resp);
	return 0;
}

/* ---- get, connect, attach ---------------------------------------------- */

int e2b_get(struct sbx_backend *b, const char *id, struct sbx_sandbox *out, struct sbx_err *err)
{
	json_object *j;
	memset(out, 0, sizeof(*out));
	if (e2b_check_id(id, "sandbox id", "get", err) < 0 || e2b_detail(b, id, "get", &j, err) < 0)
		return -1;
	out->id = sbx_xstrdup(id);
	int rc = e2b_fill(b, out, j, err);
	json_object_put(j);
	if (rc < 0)
		sbx_sandbox_clear(out);
	return rc;
}

int e2b_connect(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	if (!sb->id)
		return sbx_fail(err, SBX_INVALID_REQUEST, "connect", "the sandbox has no id");
	if (e2b_connect_raw(b, sb, "connect", err) < 0)
		return -1;
	json_object *j;
	if (e2b_detail(b, sb->id, "connect", &j, err) < 0)
		return -1;
	int rc = e2b_fill(b, sb, j, err);
	json_object_put(j);
	return rc;
}

/* ---- list -------------------------------------------------------------- */

/* e2b-wire §1.5: inner = esc(esc(k)) "=" esc(esc(v)) joined by '&',
 * sent as metadata=esc(inner). */
static char *metadata_query(json_object *md)
{
	SBX_AUTOFREE char *inner = sbx_xstrdup("");
	json_object_object_foreach(md, k, v) {
		SBX_AUTOFREE char *k1 = sbx_http_escape(k);
		SBX_AUTOFREE char *k2 = sbx_http_escape(k1);
		SBX_AUTOFREE char *v1 = sbx_http_escape(json_object_get_string(v));
		SBX_AUTOFREE char *v2 = sbx_http_escape(v1);
		char *n = sbx_xasprintf("%s%s%s=%s", inner, *inner ? "&" : "", k2, v2);
		free(inner);
		inner = n;
	}
	return *inner ? sbx_http_escape(inner) : NULL;
}

static int matches(const struct sbx_sandbox *sb, const struct sbx_list_filter *f)
{
	if (f && f->states && !(f->states & (1u << sb->state)))
		return 0;
	if (!f || !f->metadata)
		return 1;
	json_object_object_foreach(f->metadata, k, v) {
		const char *have = sbx_json_str(sb->metadata, k);
		if (!have || strcmp(have, json_object_get_string(v)) != 0)
			return 0;
	}
	return 1;
}

static const char *states_query(const struct sbx_list_filter *f)
{
	unsigned run = 1u << SBX_STATE_RUNNING, pau = 1u << SBX_STATE_PAUSED;
	if (f && f->states && (f->states & (run | pau)) == run)
		return "running";
	if (f && f->states && (f->states & (run | pau)) == pau)
		return "paused";
	return "running,paused";
}

int e2b_list(struct sbx_backend *b, const struct sbx_list_filter *f, const char *page_token,
	     struct sbx_page *out, struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	memset(out, 0, sizeof(*out));
	json_object *wire = f && f->metadata ? e2b_md_to_wire(f->metadata) : NULL;
	/* Cube filters after its cap (cube-wire §5): filter here, never there. */
	SBX_AUTOFREE char *mq = wire && !c->cube ? metadata_query(wire) : NULL;
	json_object_put(wire);
	SBX_AUTOFREE char *tok = page_token ? sbx_http_escape(page_token) : NULL;
	SBX_AUTOFREE char *path = sbx_xasprintf("/v2/sandboxes?%s%s%sstate=%s&limit=%d%s%s",
						mq ? "metadata=" : "", mq ? mq : "", mq ? "&" : "",
						states_query(f), LIST_LIMIT, tok ? "&nextToken=" : "",
						tok ? tok : "");
	json_object *arr = NULL;
	char *next = NULL;
	if (e2b_api(b, "list", "GET", path, NULL, E2B_IDEMPOTENT, &arr, &next, err) < 0)
		return -1;
	if (!arr || !json_object_is_type(arr, json_type_array)) {
		json_object_put(arr);
		free(next);
		return sbx_fail(err, SBX_INTERNAL, "list", "the sandbox listing is not an array");
	}
	size_t n = json_object_array_length(arr);
	if (c->cube && n >= LIST_LIMIT) {
		/* /v2/sandboxes ignores the page token and says nothing of more
		 * (cube-wire §5, #1792): a full page may be a partial view, and
		 * nobody (the reaper least) may judge from one. */
		json_object_put(arr);
		free(next);
		return sbx_fail(err, SBX_UNAVAILABLE, "list",
				"Cube listed %zu sandboxes, its page size, and cannot page further: "
				"the listing may be partial (docs/remote.md)", n);
	}
	out->items = sbx_xcalloc(n ? n : 1, sizeof(*out->items));
	for (size_t i = 0; i < n; i++) {
		struct sbx_sandbox *sb = &out->items[out->n];
		if (e2b_fill(b, sb, json_object_array_get_idx(arr, i), err) < 0) {
			/* A listing with an entry we refuse is not a listing. */
			sbx_sandbox_clear(sb);
			json_object_put(arr);
			free(next);
			sbx_page_clear(out);
			return -1;
		}
		if (sb->id && matches(sb, f))
			out->n++;
		else
			sbx_sandbox_clear(sb);
	}
	json_object_put(arr);
	out->next = c->cube ? (free(next), NULL) : next;
	return 0;
}

/* ---- pause, timeout, remove -------------------------------------------- */

static int post_op(struct sbx_backend *b, const char *id, const char *op, const char *what,
		   json_object *body, struct sbx_err *err)
{
	if (e2b_check_id(id, "sandbox id", op, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/sandboxes/%s/%s", id, what);
	return e2b_api(b, op, "POST", path, body, E2B_IDEMPOTENT, NULL, NULL, err);
}

int e2b_pause(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	json_object *body = json_object_new_object();
	int rc = post_op(b, sb->id, "pause", "pause", body, err);
	json_object_put(body);
	if (rc < 0 && err->http_status == 409 && err->reason == SBX_R_ALREADY_PAUSED)
		rc = 0;                              /* pausing twice is done */
	if (rc == 0)
		sb->state = SBX_STATE_PAUSED;
	return rc;
}

/* E2B sets the end only: the action and auto-resume are fixed at create,
 * so a request that would change them is unsupported (never a silent
 * no-op); one that restates them is fine. */
int e2b_set_timeout(struct sbx_backend *b, struct sbx_sandbox *sb,
		    const struct sbx_timeout_policy *t, struct sbx_err *err)
{
	json_object *j;
	if (e2b_detail(b, sb->id, "set_timeout", &j, err) < 0)
		return -1;
	json_object *lc = sbx_json_obj(j, "lifecycle");
	const char *on = lc ? sbx_json_str(lc, "onTimeout") : NULL;
	int pause = on && !strcmp(on, "pause");
	int resume = lc ? sbx_json_bool(lc, "autoResume", 0) : 0;
	json_object_put(j);
	if (lc && (pause != t->on_timeout_pause || (t->auto_resume >= 0 && resume != t->auto_resume)))
		return sbx_fail(err, SBX_UNSUPPORTED, "set_timeout",
				"E2B fixes the idle action (%s) and auto-resume (%s) at create; "
				"only the seconds can change", pause ? "pause" : "kill", resume ? "on" : "off");
	json_object *body = json_object_new_object();
	sbx_json_set_int(body, "timeout", t->seconds > 0 ? t->seconds : E2B_NEVER_SECONDS);
	int rc = post_op(b, sb->id, "set_timeout", "timeout", body, err);
	json_object_put(body);
	if (rc == 0) {
		if (!sb->extra)
			sb->extra = json_object_new_object();
		sbx_json_set_int(sb->extra, "idle_seconds", t->seconds > 0 ? t->seconds : -1);
	}
	return rc;
}

/* E2B's updateNetwork (PUT /sandboxes/{id}/network, 204): the body's
 * allowOut and denyOut replace the whole egress configuration, so the
 * policy is mapped whole, as on create (sbx_np_to_e2b); a rule the lists
 * cannot say (ports, a domain deny, an allow after a deny) is refused as
 * unsupported, naming the rule, before anything is sent.  The handle
 * shows the policy as sent (extra.network_policy). */
int e2b_set_network(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_netpolicy *p,
		    struct sbx_err *err)
{
	struct e2b_conn *c = e2b_conn(b);
	if (e2b_check_id(sb->id, "sandbox id", "network", err) < 0)
		return -1;
	json_object *ao, *dn;
	if (sbx_np_to_e2b(p, &ao, &dn, err) < 0) {
		sbx_err_prefix(err, "the %s backend", c->cube ? "cube" : "e2b");
		return -1;
	}
	json_object *body = json_object_new_object();
	json_object_object_add(body, "allowOut", ao);
	json_object_object_add(body, "denyOut", dn);
	SBX_AUTOFREE char *path = sbx_xasprintf("/sandboxes/%s/network", sb->id);
	/* A PUT that replaces the whole configuration: safe to repeat. */
	int rc = e2b_api(b, "network", "PUT", path, body, E2B_IDEMPOTENT, NULL, NULL, err);
	json_object_put(body);
	if (rc == 0) {
		if (!sb->extra)
			sb->extra = json_object_new_object();
		json_object_object_add(sb->extra, "network_policy", sbx_np_to_json(p));
	}
	return rc;
}

int e2b_remove(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	*gone = 0;
	if (e2b_check_id(id, "sandbox id", "delete", err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/sandboxes/%s", id);
	if (e2b_api(b, "delete", "DELETE", path, NULL, E2B_IDEMPOTENT, NULL, NULL, err) == 0)
		return 0;
	if (err->http_status == 404) {
		sbx_err_clear(err);
		*gone = 1;
		return 0;
	}
	return -1;
}

const struct sbx_backend_ops sbx_backend_e2b = {
	.name = "e2b",
	.open = e2b_open,
	.caps = e2b_caps,
	E2B_OPS_COMMON
};
