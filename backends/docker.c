/* docker.c - the Docker backend: one long-lived container per sandbox,
 * driven through the Docker Engine API v1.41 (never the docker CLI).
 *
 * Promises:
 *   - a sandbox is a container labelled sbx.managed=1; its id is the full
 *     64-hex container id, its metadata the container's labels (ours, the
 *     idle TTL and the snapshot labels an image passes down, left out);
 *     calls naming a container that is not ours fail with not_found, so sbx
 *     never touches a container it did not create;
 *   - PID 1 is docker-init running `sleep`: the image's ENTRYPOINT/CMD never
 *     run, zombies are reaped, and the container lives until it is removed;
 *   - network: NetworkMode "none" (only lo) unless egress is asked for, and
 *     egress needs a "bridge" network; host networking is never used;
 *   - capabilities: everything dropped but CHOWN DAC_OVERRIDE FOWNER FSETID
 *     SETGID SETUID KILL, no-new-privileges; commands run as uid 1000 unless
 *     as_root;
 *   - idle policy is kill, never pause (a paused container still holds its
 *     memory): sbx_docker_reap_idle removes containers idle past their
 *     sbx.idle-ttl-seconds label; "gone" means "rebuild on next use";
 *   - snapshot = commit (the image id, "sha256:...", is a template id);
 *     snapshot images carry sbx.snapshot=1 and never appear as templates.
 *
 * HTTP goes through common/http.c (unix socket, or TCP with TLS client
 * certificates and the SSRF dial guard). */
#include "docker.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "doc.h"
#include "fingerprint.h"
#include "tar.h"
#include "util.h"

#define DEFAULT_HOST "unix:///var/run/docker.sock"
#define DEFAULT_IMAGE "sbx/base:latest"
#define SWEEP_INTERVAL_S 60
#define MARKER_SKEW_S 120

/* The container's PID 1 script: the layout every sandbox promises, the
 * activity marker writable by uid 1000 (execs touch it), then sleep. */
static const char entry_script[] =
	"mkdir -p /workspace/input /workspace/output /opt/sbx/skills /var/lib; "
	"chown 1000:1000 /workspace /workspace/input /workspace/output; "
	"touch " DOCKER_MARKER " 2>/dev/null; chmod 666 " DOCKER_MARKER " 2>/dev/null; "
	"exec sleep 2147483647";

/* ---- Engine API calls ------------------------------------------------- */

int docker_status_err(const char *op, const struct sbx_http_resp *resp, struct sbx_err *err)
{
	const char *msg = NULL;
	json_object *j = resp->body && resp->len ? json_tokener_parse(resp->body) : NULL;
	if (j)
		msg = sbx_json_str(j, "message");
	if (!msg && resp->body && resp->len)
		msg = resp->body;
	enum sbx_kind k = sbx_kind_from_http(op, resp->status);
	/* Docker says 409 for most state conflicts but 500 for a few. */
	if (msg && (strstr(msg, "is paused") || strstr(msg, "is not running") ||
		    strstr(msg, "already in progress") || strstr(msg, "is restarting") ||
		    strstr(msg, "is already paused") || strstr(msg, "is not paused") ||
		    strstr(msg, "conflict")))
		k = SBX_CONFLICT;
	if (msg && strstr(msg, "is marked for removal"))
		k = SBX_TERMINAL;
	/* A bad import or archive body is the caller's input, not an outage. */
	if (msg && resp->status == 500 && (strstr(msg, "Error processing tar file") ||
					   strstr(msg, "invalid tar header")))
		k = SBX_INVALID_REQUEST;
	if (msg)
		sbx_fail(err, k, op, "docker: %s", msg);
	else
		sbx_fail(err, k, op, "docker: HTTP %d", resp->status);
	/* Docker messages end with a newline sometimes. */
	sbx_trim(err->msg);
	err->http_status = resp->status;
	json_object_put(j);
	return -1;
}

int docker_raw(struct sbx_backend *b, const char *op, struct sbx_http_req *req,
	       struct sbx_http_resp *resp, struct sbx_err *err)
{
	struct docker *d = docker_of(b);
	SBX_AUTOFREE char *path = sbx_xasprintf(DOCKER_API "%s", req->path);
	struct sbx_http_req r = *req;
	r.path = path;
	if (sbx_http_do(d->http, &r, resp, err) < 0) {
		snprintf(err->op, sizeof(err->op), "%s", op);
		return -1;
	}
	return 0;
}

int docker_api(struct sbx_backend *b, const char *op, const char *method, const char *path,
	       json_object *body, json_object **out, struct sbx_err *err)
{
	const char *hdr[] = {"Content-Type: application/json", NULL};
	const char *js = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL;
	struct sbx_http_req req = {
		.method = method, .path = path, .headers = body ? hdr : NULL,
		.body = js, .body_len = js ? strlen(js) : 0,
	};
	struct sbx_http_resp resp = {0};
	if (out)
		*out = NULL;
	if (docker_raw(b, op, &req, &resp, err) < 0)
		return -1;
	if (resp.status < 200 || resp.status >= 300) {
		docker_status_err(op, &resp, err);
		sbx_http_resp_clear(&resp);
		return -1;
	}
	if (out && resp.body && resp.len)
		*out = json_tokener_parse(resp.body);
	sbx_http_resp_clear(&resp);
	return 0;
}

/* Ids and image references go into URL paths unescaped (Docker routes
 * image names with '/' in them), so only these characters are allowed. */
static int check_ref(const char *s, const char *what, const char *op, struct sbx_err *err)
{
	if (!s || !*s || strlen(s) > 255)
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "empty or overlong %s", what);
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-:/@", *p))
			return sbx_fail(err, SBX_INVALID_REQUEST, op, "invalid %s '%s'", what, s);
	if (strstr(s, ".."))
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "invalid %s '%s'", what, s);
	return 0;
}

/* ---- handles ---------------------------------------------------------- */

static const char *label(json_object *labels, const char *k)
{
	return sbx_json_str(labels, k);
}

static enum sbx_state map_state(const char *s)
{
	if (!s)
		return SBX_STATE_UNKNOWN;
	if (!strcmp(s, "running"))
		return SBX_STATE_RUNNING;
	if (!strcmp(s, "paused"))
		return SBX_STATE_PAUSED;
	if (!strcmp(s, "created") || !strcmp(s, "restarting") || !strcmp(s, "removing"))
		return SBX_STATE_TRANSITIONING;
	if (!strcmp(s, "exited"))
		return SBX_STATE_TERMINAL;
	if (!strcmp(s, "dead"))
		return SBX_STATE_DEAD;
	return SBX_STATE_UNKNOWN;
}

/* Labels that are ours, not the caller's metadata. */
static int internal_label(const char *k)
{
	return !strcmp(k, DOCKER_LABEL_TTL) || !strcmp(k, DOCKER_LABEL_NO_RESUME) ||
	       sbx_str_starts(k, DOCKER_LABEL_SNAPSHOT);
}

/* Fill *sb from a container's labels, id, image, state and creation time. */
static void fill_sandbox(struct sbx_backend *b, struct sbx_sandbox *sb, const char *id,
			 const char *image, json_object *labels, const char *state,
			 int64_t created)
{
	memset(sb, 0, sizeof(*sb));   /* `out` parameters may be uninitialised */
	sb->id = sbx_xstrdup(id);
	sb->backend = sbx_xstrdup("docker");
	sb->profile = sbx_xstrdup(b->profile && b->profile->name ? b->profile->name : "default");
	sb->template_id = image ? sbx_xstrdup(image) : NULL;
	sb->state = map_state(state);
	sb->created_at = created;
	sb->metadata = json_object_new_object();
	if (labels) {
		json_object_object_foreach(labels, k, v) {
			/* Empty labels are blanked ones inherited from a
			 * snapshot image (see docker_snapshot_create). */
			if (internal_label(k) || !json_object_is_type(v, json_type_string) ||
			    !*json_object_get_string(v))
				continue;
			json_object_object_add(sb->metadata, k, json_object_get(v));
		}
	}
	const char *t = label(labels, "sbx.tenant"), *s = label(labels, "sbx.session");
	sb->tenant = t && *t ? sbx_xstrdup(t) : NULL;
	sb->session = s && *s ? sbx_xstrdup(s) : NULL;
}

/* GET /containers/{id}/json; not_found when missing or not ours. */
static int inspect(struct sbx_backend *b, const char *id, const char *op, json_object **out,
		   struct sbx_err *err)
{
	if (check_ref(id, "sandbox id", op, err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/json", id);
	json_object *j;
	if (docker_api(b, op, "GET", path, NULL, &j, err) < 0) {
		if (err->kind == SBX_NOT_FOUND)
			snprintf(err->msg, sizeof(err->msg), "no sandbox %s", id);
		return -1;
	}
	json_object *labels = sbx_json_obj(sbx_json_obj(j, "Config"), "Labels");
	const char *managed = label(labels, DOCKER_LABEL_MANAGED);
	if (!j || !managed || !*managed) {
		json_object_put(j);
		return sbx_fail(err, SBX_NOT_FOUND, op, "no sandbox %s (not an sbx container)", id);
	}
	*out = j;
	return 0;
}

static const char *inspect_status(json_object *j)
{
	return sbx_json_str(sbx_json_obj(j, "State"), "Status");
}

static void fill_from_inspect(struct sbx_backend *b, struct sbx_sandbox *sb, json_object *j)
{
	json_object *cfg = sbx_json_obj(j, "Config");
	const char *created = sbx_json_str(j, "Created");
	int64_t t = created ? sbx_time_parse_iso(created) : -1;
	fill_sandbox(b, sb, sbx_json_str(j, "Id"), sbx_json_str(cfg, "Image"),
		     sbx_json_obj(cfg, "Labels"), inspect_status(j), t > 0 ? t : 0);
}

static int container_post(struct sbx_backend *b, const char *id, const char *what,
			  const char *op, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/%s", id, what);
	return docker_api(b, op, "POST", path, NULL, NULL, err);
}

/* See docker.h.  `resume`: connect (sbx-ctl resume, a session resolve)
 * unpauses whatever the sandbox's auto_resume says. */
static int ensure_running(struct sbx_backend *b, const char *id, int resume, struct sbx_err *err)
{
	json_object *j;
	if (inspect(b, id, "connect", &j, err) < 0)
		return -1;
	SBX_AUTOFREE char *st = sbx_xstrdup(inspect_status(j) ? inspect_status(j) : "");
	const char *nr = label(sbx_json_obj(sbx_json_obj(j, "Config"), "Labels"), DOCKER_LABEL_NO_RESUME);
	int on_use = !(nr && !strcmp(nr, "1"));
	json_object_put(j);
	if (!strcmp(st, "running"))
		return 0;
	if (!strcmp(st, "paused") && !resume && !on_use)
		return sbx_fail(err, SBX_CONFLICT, "resume",
				"sandbox %s is paused and does not resume on use (auto_resume off); "
				"run sbx-ctl resume first", id);
	if (!strcmp(st, "paused")) {
		struct sbx_err e2 = {0};
		if (container_post(b, id, "unpause", "resume", &e2) < 0 &&
		    !strstr(e2.msg, "is not paused")) {
			*err = e2;
			return -1;
		}
		return 0;
	}
	if (!strcmp(st, "exited") || !strcmp(st, "created")) {
		if (container_post(b, id, "start", "connect", err) < 0) {
			if (err->kind == SBX_CONFLICT || err->kind == SBX_NOT_FOUND)
				return -1;
			err->kind = SBX_TERMINAL;
			sbx_err_prefix(err, "sandbox %s cannot be restarted", id);
			return -1;
		}
		return 0;
	}
	if (!strcmp(st, "restarting"))
		return sbx_fail(err, SBX_CONFLICT, "connect", "sandbox %s is restarting", id);
	return sbx_fail(err, SBX_TERMINAL, "connect", "sandbox %s is %s", id, *st ? st : "in an unknown state");
}

int docker_ensure_running(struct sbx_backend *b, const char *id, struct sbx_err *err)
{
	return ensure_running(b, id, 0, err);
}

/* ---- open, caps, health, fingerprint ---------------------------------- */

/* The endpoint as errors may show it: userinfo ("user:password@") after
 * the scheme is replaced by "***@", as the Redis URL's is left out. */
static char *shown_endpoint(const char *ep)
{
	const char *hier = strstr(ep, "://");
	hier = hier ? hier + 3 : ep;
	const char *end = hier + strcspn(hier, "/?#");
	const char *at = NULL;
	for (const char *c = hier; c < end; c++)
		if (*c == '@')
			at = c;        /* the last '@' ends the userinfo */
	if (!at)
		return sbx_xstrdup(ep);
	return sbx_xasprintf("%.*s***%s", (int)(hier - ep), ep, at);
}

static int parse_endpoint(struct docker *d, const struct sbx_profile *p, struct sbx_err *err)
{
	const char *ep = d->endpoint && *d->endpoint ? d->endpoint : getenv("DOCKER_HOST");
	if (!ep || !*ep)
		ep = DEFAULT_HOST;
	SBX_AUTOFREE char *shown = shown_endpoint(ep);
	if (sbx_str_starts(ep, "unix://")) {
		const char *path = ep + strlen("unix://");
		if (*path != '/')
			return sbx_fail_config(err, "config", "docker endpoint '%s': unix:// needs an absolute path", shown);
		d->unix_path = sbx_xstrdup(path);
		d->base_url = sbx_xstrdup("http://docker");
		return 0;
	}
	if (sbx_str_starts(ep, "tcp://")) {
		const char *hp = ep + strlen("tcp://");
		if (!*hp || strpbrk(hp, "/?#@ "))
			return sbx_fail_config(err, "config", "docker endpoint '%s': expected tcp://host:port", shown);
		const char *certs = p->tls_cert_path;
		if (!certs || !*certs)
			return sbx_fail_config(err, "config",
					       "docker endpoint %s: tcp:// needs tls_cert_path (ca.pem, cert.pem, key.pem); "
					       "plain TCP to a Docker daemon is root without a password", hp);
		d->ca = sbx_xasprintf("%s/ca.pem", certs);
		d->cert = sbx_xasprintf("%s/cert.pem", certs);
		d->key = sbx_xasprintf("%s/key.pem", certs);
		const char *files[] = {d->ca, d->cert, d->key};
		for (size_t i = 0; i < 3; i++)
			if (access(files[i], R_OK) < 0)
				return sbx_fail_config(err, "config", "docker TLS file %s is not readable", files[i]);
		d->base_url = sbx_xasprintf("https://%s", hp);
		return 0;
	}
	return sbx_fail_config(err, "config", "docker endpoint '%s': expected unix:///path or tcp://host:port", shown);
}

static void docker_close(struct sbx_backend *b)
{
	struct docker *d = docker_of(b);
	if (!d)
		return;
	sbx_http_close(d->http);
	free(d->endpoint);
	free(d->unix_path);
	free(d->base_url);
	free(d->ca);
	free(d->cert);
	free(d->key);
	free(d->state_dir);
	free(d);
	b->priv = NULL;
}

static int docker_open(struct sbx_backend *b, struct sbx_err *err)
{
	struct docker *d = sbx_xcalloc(1, sizeof(*d));
	struct sbx_profile *p = b->profile;
	b->priv = d;
	d->endpoint = sbx_trim(sbx_xstrdup(p && p->endpoint ? p->endpoint : ""));
	d->state_dir = p && p->state_dir ? sbx_xstrdup(p->state_dir) : NULL;
	d->allow_private = p ? p->allow_private : 0;
	if (parse_endpoint(d, p, err) < 0) {
		docker_close(b);
		return -1;
	}
	struct sbx_http_opts o = {
		.base_url = d->base_url, .unix_socket = d->unix_path,
		/* Commit, remove and image deletes of big sandboxes are slow;
		 * exec streams and imports set their own limits. */
		.timeout_ms = 120000,
		/* A unix socket never leaves the host; a tcp:// daemon on a
		 * private address needs the profile's allow_private, as every
		 * other endpoint does. */
		.allow_private = d->allow_private,
		.ca_file = d->ca, .cert_file = d->cert, .key_file = d->key,
	};
	if (sbx_http_open(&o, &d->http, err) < 0) {
		docker_close(b);
		return -1;
	}
	return 0;
}

static unsigned docker_caps(struct sbx_backend *b)
{
	(void)b;
	return SBX_CAP_EXEC | SBX_CAP_FILES | SBX_CAP_PAUSE | SBX_CAP_SNAPSHOTS |
	       SBX_CAP_METADATA | SBX_CAP_LIST | SBX_CAP_TEMPLATES | SBX_CAP_IDLE_KILL |
	       SBX_CAP_INSTALL;
}

static int docker_health(struct sbx_backend *b, struct sbx_err *err)
{
	struct sbx_http_req req = {.method = "GET", .path = "/_ping", .timeout_ms = 10000};
	struct sbx_http_resp resp = {0};
	struct docker *d = docker_of(b);
	if (sbx_http_do(d->http, &req, &resp, err) < 0)
		return -1;
	int ok = resp.status == 200 && resp.body && !strncmp(resp.body, "OK", 2);
	int rc = ok ? 0 : docker_status_err("health", &resp, err);
	if (!ok && err->kind == SBX_INTERNAL)
		err->kind = SBX_UNAVAILABLE;
	sbx_http_resp_clear(&resp);
	return rc;
}

/* Reference §4.3 (common/fingerprint.c): SHA-256 of "docker\n<tls cert
 * path>\n<host>", a blank host being "local-daemon".  The host is the
 * profile's configured endpoint; a DOCKER_HOST picked up from the
 * environment does not count (the fingerprint is the profile's identity,
 * not the shell's). */
static int docker_fingerprint(struct sbx_backend *b, char out[65], struct sbx_err *err)
{
	struct sbx_profile *p = b->profile;
	return sbx_fingerprint_docker(p ? p->tls_cert_path : NULL, p ? p->endpoint : NULL, out, err);
}

/* ---- the opportunistic idle sweep -------------------------------------- */

/* Run the sweep when the stamp file in the state dir is older than a
 * minute (touching it first, so concurrent processes mostly skip).  Errors
 * are ignored: the sweep is housekeeping, never the caller's failure. */
static void maybe_sweep(struct sbx_backend *b)
{
	struct docker *d = docker_of(b);
	if (!d->state_dir || getenv("SBX_DOCKER_NO_SWEEP"))
		return;
	struct sbx_err e = {0};
	if (sbx_mkdir_p(d->state_dir, 0700, &e) < 0)
		return;
	SBX_AUTOFREE char *stamp = sbx_xasprintf("%s/docker-sweep.stamp", d->state_dir);
	struct stat st;
	time_t now = time(NULL);
	if (stat(stamp, &st) == 0 && now - st.st_mtime < SWEEP_INTERVAL_S && st.st_mtime <= now)
		return;
	int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	futimens(fd, NULL);
	close(fd);
	sbx_docker_reap_idle(b, 0, NULL, &e);
}

/* ---- lifecycle --------------------------------------------------------- */

static json_object *jstr_array(const char *const *v)
{
	json_object *a = json_object_new_array();
	for (; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

static int docker_create(struct sbx_backend *b, const struct sbx_create_req *req,
			 struct sbx_sandbox *out, struct sbx_err *err)
{
	struct sbx_profile *p = b->profile;
	const char *image = req->template_id && *req->template_id ? req->template_id
			    : p && p->template_id && *p->template_id ? p->template_id : DEFAULT_IMAGE;
	if (check_ref(image, "template id", "create", err) < 0)
		return -1;
	/* Pause-on-idle only matters with an idle timeout (the profile's
	 * default action is pause, with no timeout). */
	if (req->timeout.seconds > 0 && req->timeout.on_timeout_pause)
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the docker backend kills idle sandboxes (a paused container keeps its memory); "
				"use --on-timeout kill (on_timeout \"kill\" in the profile)");
	if (req->net.allow_public)
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the docker backend has no inbound access by URL (allow_public)");
	if ((req->net.allow_out && json_object_array_length(req->net.allow_out)) ||
	    (req->net.deny_out && json_object_array_length(req->net.deny_out)))
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the docker backend has no egress rules (allow_out/deny_out); only on or off");
	const char *netmode = "none";
	if (req->net.allow_internet) {
		struct sbx_err e2 = {0};
		if (docker_api(b, "create", "GET", "/networks/bridge", NULL, NULL, &e2) < 0)
			return sbx_fail(err, e2.http_status == 404 ? SBX_UNSUPPORTED : e2.kind, "create",
					"egress needs the daemon's bridge network, and this daemon has none (%s); "
					"host networking is never used", e2.msg);
		netmode = "bridge";
	}

	json_object *body = json_object_new_object();
	json_object_object_add(body, "Image", json_object_new_string(image));
	const char *ep[] = {"/bin/sh", "-c", entry_script, NULL};
	json_object_object_add(body, "Entrypoint", jstr_array(ep));
	json_object_object_add(body, "Cmd", json_object_new_array());
	json_object_object_add(body, "User", json_object_new_string("0"));
	json_object_object_add(body, "WorkingDir", json_object_new_string("/workspace"));
	json_object *env = json_object_new_array();
	if (req->env) {
		json_object_object_foreach(req->env, k, v) {
			if (!*k || strchr(k, '=')) {
				json_object_put(env);
				json_object_put(body);
				return sbx_fail(err, SBX_INVALID_REQUEST, "create", "invalid env name '%s'", k);
			}
			SBX_AUTOFREE char *kv = sbx_xasprintf("%s=%s", k, json_object_get_string(v));
			json_object_array_add(env, json_object_new_string(kv));
		}
	}
	json_object_object_add(body, "Env", env);
	json_object *labels = json_object_new_object();
	if (req->metadata) {
		json_object_object_foreach(req->metadata, k, v) {
			if (internal_label(k))
				continue;
			json_object_object_add(labels, k, json_object_new_string(json_object_get_string(v)));
		}
	}
	if (!label(labels, DOCKER_LABEL_MANAGED))
		json_object_object_add(labels, DOCKER_LABEL_MANAGED, json_object_new_string("1"));
	char ttl[32];
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(req->timeout.seconds > 0 ? req->timeout.seconds : 0));
	json_object_object_add(labels, DOCKER_LABEL_TTL, json_object_new_string(ttl));
	if (!req->timeout.auto_resume)
		json_object_object_add(labels, DOCKER_LABEL_NO_RESUME, json_object_new_string("1"));
	json_object_object_add(body, "Labels", labels);

	json_object *hc = json_object_new_object();
	json_object_object_add(hc, "NetworkMode", json_object_new_string(netmode));
	json_object_object_add(hc, "Init", json_object_new_boolean(1));
	const char *drop[] = {"ALL", NULL};
	const char *add[] = {"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETGID", "SETUID", "KILL", NULL};
	const char *sec[] = {"no-new-privileges", NULL};
	json_object_object_add(hc, "CapDrop", jstr_array(drop));
	json_object_object_add(hc, "CapAdd", jstr_array(add));
	json_object_object_add(hc, "SecurityOpt", jstr_array(sec));
	if (req->limits.memory_bytes > 0) {
		json_object_object_add(hc, "Memory", json_object_new_int64(req->limits.memory_bytes));
		json_object_object_add(hc, "MemorySwap", json_object_new_int64(req->limits.memory_bytes));
	}
	if (req->limits.cpus > 0)
		json_object_object_add(hc, "NanoCpus", json_object_new_int64((int64_t)(req->limits.cpus * 1e9)));
	if (req->limits.pids > 0)
		json_object_object_add(hc, "PidsLimit", json_object_new_int64(req->limits.pids));
	json_object_object_add(body, "HostConfig", hc);

	json_object *resp = NULL;
	int rc = docker_api(b, "create", "POST", "/containers/create", body, &resp, err);
	json_object_put(body);
	if (rc < 0) {
		if (err->http_status == 404)
			sbx_err_prefix(err, "template %s", image);
		return -1;
	}
	SBX_AUTOFREE char *id = sbx_xstrdup(sbx_json_str(resp, "Id") ? sbx_json_str(resp, "Id") : "");
	json_object_put(resp);
	if (!*id)
		return sbx_fail(err, SBX_INTERNAL, "create", "docker returned no container id");
	if (container_post(b, id, "start", "create", err) < 0) {
		/* Never leave a half-made sandbox behind. */
		struct sbx_err quiet = {0};
		SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s?force=1&v=1", id);
		docker_api(b, "create", "DELETE", path, NULL, NULL, &quiet);
		sbx_err_prefix(err, "starting the container");
		return -1;
	}
	json_object *j;
	if (inspect(b, id, "create", &j, err) < 0)
		return -1;
	fill_from_inspect(b, out, j);
	json_object_put(j);
	maybe_sweep(b);
	return 0;
}

static int docker_get(struct sbx_backend *b, const char *id, struct sbx_sandbox *out,
		      struct sbx_err *err)
{
	json_object *j;
	/* Sweep first: a sandbox idle past its TTL is gone, and saying so
	 * now lets a session resolve rebuild instead of reusing it. */
	maybe_sweep(b);
	if (inspect(b, id, "get", &j, err) < 0)
		return -1;
	fill_from_inspect(b, out, j);
	json_object_put(j);
	return 0;
}

/* Resume if paused, start if stopped; dead → terminal.  The handle is
 * refreshed from a fresh inspect. */
static int docker_connect(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	if (!sb->id)
		return sbx_fail(err, SBX_INVALID_REQUEST, "connect", "the sandbox has no id");
	maybe_sweep(b);
	if (ensure_running(b, sb->id, 1, err) < 0)
		return -1;
	struct sbx_sandbox fresh;
	if (docker_get(b, sb->id, &fresh, err) < 0)
		return -1;
	sbx_sandbox_clear(sb);
	*sb = fresh;
	return 0;
}

/* GET the listing `what` (a path ending in '?' or '&') with `filters` (a
 * JSON text) escaped onto it.  *arr gets the answer (the caller puts it;
 * may be NULL), *n its length (0 unless it is an array). */
static int docker_get_listing(struct sbx_backend *b, const char *op, const char *what,
			      const char *filters, json_object **arr, size_t *n,
			      struct sbx_err *err)
{
	SBX_AUTOFREE char *q = sbx_http_escape(filters);
	SBX_AUTOFREE char *path = sbx_xasprintf("%sfilters=%s", what, q);
	if (docker_api(b, op, "GET", path, NULL, arr, err) < 0)
		return -1;
	*n = *arr && json_object_is_type(*arr, json_type_array) ? json_object_array_length(*arr) : 0;
	return 0;
}

static int docker_list(struct sbx_backend *b, const struct sbx_list_filter *f,
		       const char *page_token, struct sbx_page *out, struct sbx_err *err)
{
	(void)page_token;      /* one page: the daemon lists everything at once */
	memset(out, 0, sizeof(*out));
	json_object *filters = json_object_new_object();
	json_object *lab = json_object_new_array();
	json_object_array_add(lab, json_object_new_string(DOCKER_LABEL_MANAGED));
	if (f && f->metadata) {
		json_object_object_foreach(f->metadata, k, v) {
			SBX_AUTOFREE char *kv = sbx_xasprintf("%s=%s", k, json_object_get_string(v));
			json_object_array_add(lab, json_object_new_string(kv));
		}
	}
	json_object_object_add(filters, "label", lab);
	json_object *arr;
	size_t n;
	int rc = docker_get_listing(b, "list", "/containers/json?all=1&",
				    json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN),
				    &arr, &n, err);
	json_object_put(filters);
	if (rc < 0)
		return -1;
	out->items = sbx_xcalloc(n ? n : 1, sizeof(*out->items));
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(arr, i);
		enum sbx_state st = map_state(sbx_json_str(c, "State"));
		const char *managed = label(sbx_json_obj(c, "Labels"), DOCKER_LABEL_MANAGED);
		if (!managed || !*managed)
			continue;   /* blanked: made from a snapshot image, not by sbx */
		if (f && f->states && !(f->states & (1u << st)))
			continue;
		fill_sandbox(b, &out->items[out->n], sbx_json_str(c, "Id"), sbx_json_str(c, "Image"),
			     sbx_json_obj(c, "Labels"), sbx_json_str(c, "State"),
			     sbx_json_int(c, "Created", 0));
		out->n++;
	}
	json_object_put(arr);
	return 0;
}

/* Remove the container and its anonymous volumes, running or not.  A
 * container that is already gone is success with *gone = 1; one whose
 * removal is already under way is success too. */
static int docker_remove(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	json_object *j;
	*gone = 0;
	if (inspect(b, id, "remove", &j, err) < 0) {
		if (err->kind == SBX_NOT_FOUND && err->http_status == 404) {
			sbx_err_clear(err);
			*gone = 1;
			return 0;
		}
		return -1;
	}
	SBX_AUTOFREE char *full = sbx_xstrdup(sbx_json_str(j, "Id"));
	json_object_put(j);
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s?force=1&v=1", full);
	if (docker_api(b, "remove", "DELETE", path, NULL, NULL, err) < 0) {
		if (err->http_status == 404) {
			sbx_err_clear(err);
			*gone = 1;
			return 0;
		}
		if (strstr(err->msg, "already in progress")) {
			sbx_err_clear(err);
			return 0;
		}
		return -1;
	}
	return 0;
}

static int docker_pause(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	json_object *j;
	if (!sb->id)
		return sbx_fail(err, SBX_INVALID_REQUEST, "pause", "the sandbox has no id");
	if (inspect(b, sb->id, "pause", &j, err) < 0)
		return -1;
	const char *st = inspect_status(j);
	int running = st && !strcmp(st, "running"), paused = st && !strcmp(st, "paused");
	SBX_AUTOFREE char *id = sbx_xstrdup(sbx_json_str(j, "Id"));
	if (!running && !paused) {
		int rc = sbx_fail(err, SBX_CONFLICT, "pause", "sandbox %s is %s, not running", id, st ? st : "?");
		json_object_put(j);
		return rc;
	}
	json_object_put(j);
	if (running && container_post(b, id, "pause", "pause", err) < 0 &&
	    !strstr(err->msg, "already paused"))
		return -1;
	sbx_err_clear(err);
	struct sbx_sandbox fresh;
	if (docker_get(b, id, &fresh, err) < 0)
		return -1;
	sbx_sandbox_clear(sb);
	*sb = fresh;
	return 0;
}

/* ---- snapshots --------------------------------------------------------- */

/* A Docker tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; everything else → '-'. */
static char *tag_of(const char *name)
{
	size_t n = strlen(name);
	if (n > 120)
		n = 120;
	char *t = sbx_xmalloc(n + 2);
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		t[j++] = isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-' ? c : '-';
	}
	t[j] = 0;
	if (!j || t[0] == '.' || t[0] == '-') {
		memmove(t + 1, t, j + 1);
		t[0] = '_';
	}
	return t;
}

static int docker_snapshot_create(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
				  struct sbx_snapshot_ref *out, struct sbx_err *err)
{
	json_object *j;
	memset(out, 0, sizeof(*out));
	if (!sb->id)
		return sbx_fail(err, SBX_INVALID_REQUEST, "snapshot", "the sandbox has no id");
	if (docker_ensure_running(b, sb->id, err) < 0)
		return -1;
	if (inspect(b, sb->id, "snapshot", &j, err) < 0)
		return -1;
	SBX_AUTOFREE char *id = sbx_xstrdup(sbx_json_str(j, "Id"));
	SBX_AUTOFREE char *parent = sbx_xstrdup(sbx_json_str(sbx_json_obj(j, "Config"), "Image") ?: "");
	/* Commit merges the container's labels into the image, and an image's
	 * labels pass down to every container made from it; a label cannot
	 * be removed, only overridden.  So each of the source's labels is
	 * blanked in the image (empty labels are not metadata, see
	 * fill_sandbox): a sandbox made from a skill snapshot must not carry
	 * the tenant, session or run of the sandbox the skill was installed in. */
	json_object *labels = json_object_new_object();
	json_object *src = sbx_json_obj(sbx_json_obj(j, "Config"), "Labels");
	if (src) {
		json_object_object_foreach(src, k, v) {
			(void)v;
			json_object_object_add(labels, k, json_object_new_string(""));
		}
	}
	json_object_put(j);
	char rnd[17];
	SBX_AUTOFREE char *gen = NULL;
	if (!name || !*name) {
		if (sbx_random_hex(rnd, 8, err) < 0)
			return -1;
		gen = sbx_xasprintf("snap-%s", rnd);
		name = gen;
	}
	SBX_AUTOFREE char *tag = tag_of(name);
	SBX_AUTOFREE char *qtag = sbx_http_escape(tag);
	json_object *body = json_object_new_object();
	json_object_object_add(labels, DOCKER_LABEL_SNAPSHOT, json_object_new_string("1"));
	json_object_object_add(labels, DOCKER_LABEL_SNAPSHOT_NAME, json_object_new_string(name));
	json_object_object_add(labels, DOCKER_LABEL_SNAPSHOT_PARENT, json_object_new_string(parent));
	json_object_object_add(body, "Labels", labels);
	SBX_AUTOFREE char *path = sbx_xasprintf("/commit?container=%s&repo=sbx-snap&tag=%s&pause=true",
						id, qtag);
	json_object *resp;
	int rc = docker_api(b, "snapshot", "POST", path, body, &resp, err);
	json_object_put(body);
	if (rc < 0)
		return -1;
	const char *iid = sbx_json_str(resp, "Id");
	if (!iid) {
		json_object_put(resp);
		return sbx_fail(err, SBX_INTERNAL, "snapshot", "docker commit returned no image id");
	}
	out->id = sbx_xstrdup(iid);
	out->name = sbx_xstrdup(name);
	out->parent = *parent ? sbx_xstrdup(parent) : NULL;
	out->created_at = sbx_now_ms() / 1000;
	out->size_bytes = -1;
	out->layers = -1;
	json_object_put(resp);
	return 0;
}

static int docker_snapshot_list(struct sbx_backend *b, const char *page_token,
				struct sbx_snapshot_ref **out, size_t *n, char **next,
				struct sbx_err *err)
{
	(void)page_token;
	*out = NULL;
	*n = 0;
	if (next)
		*next = NULL;
	json_object *arr;
	size_t m;
	if (docker_get_listing(b, "snapshot_list", "/images/json?",
			       "{\"label\":[\"" DOCKER_LABEL_SNAPSHOT "=1\"]}", &arr, &m, err) < 0)
		return -1;
	*out = sbx_xcalloc(m ? m : 1, sizeof(**out));
	for (size_t i = 0; i < m; i++) {
		json_object *im = json_object_array_get_idx(arr, i);
		json_object *labels = sbx_json_obj(im, "Labels");
		struct sbx_snapshot_ref *r = &(*out)[(*n)++];
		r->id = sbx_xstrdup(sbx_json_str(im, "Id") ?: "");
		const char *nm = label(labels, DOCKER_LABEL_SNAPSHOT_NAME);
		const char *pa = label(labels, DOCKER_LABEL_SNAPSHOT_PARENT);
		r->name = nm ? sbx_xstrdup(nm) : NULL;
		r->parent = pa && *pa ? sbx_xstrdup(pa) : NULL;
		r->created_at = sbx_json_int(im, "Created", 0);
		r->size_bytes = sbx_json_int(im, "Size", -1);
		r->layers = -1;
	}
	json_object_put(arr);
	return 0;
}

/* DELETE /images/{id}: gone → *gone = 1; in use by a container → conflict. */
static int image_delete(struct sbx_backend *b, const char *id, const char *op, int want_snapshot,
			int *gone, struct sbx_err *err)
{
	*gone = 0;
	if (check_ref(id, "image id", op, err) < 0)
		return -1;
	SBX_AUTOFREE char *ipath = sbx_xasprintf("/images/%s/json", id);
	json_object *j;
	if (docker_api(b, op, "GET", ipath, NULL, &j, err) < 0) {
		if (err->http_status == 404) {
			sbx_err_clear(err);
			*gone = 1;
			return 0;
		}
		return -1;
	}
	int is_snap = label(sbx_json_obj(sbx_json_obj(j, "Config"), "Labels"), DOCKER_LABEL_SNAPSHOT) != NULL;
	json_object_put(j);
	if (want_snapshot && !is_snap)
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "%s is a template, not a snapshot", id);
	if (!want_snapshot && is_snap)
		return sbx_fail(err, SBX_INVALID_REQUEST, op, "%s is a snapshot; delete it with the snapshot commands", id);
	SBX_AUTOFREE char *path = sbx_xasprintf("/images/%s", id);
	if (docker_api(b, op, "DELETE", path, NULL, NULL, err) < 0) {
		if (err->http_status == 404) {
			sbx_err_clear(err);
			*gone = 1;
			return 0;
		}
		return -1;
	}
	return 0;
}

static int docker_snapshot_delete(struct sbx_backend *b, const char *id, int *gone,
				  struct sbx_err *err)
{
	return image_delete(b, id, "snapshot_delete", 1, gone, err);
}

/* ---- templates ----------------------------------------------------------- */

static int docker_template_list(struct sbx_backend *b, struct sbx_template **out, size_t *n,
				struct sbx_err *err)
{
	*out = NULL;
	*n = 0;
	json_object *arr;
	if (docker_api(b, "template_list", "GET", "/images/json", NULL, &arr, err) < 0)
		return -1;
	size_t m = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	size_t cap = 0;
	for (size_t i = 0; i < m; i++) {
		json_object *im = json_object_array_get_idx(arr, i);
		json_object *tags = NULL;
		if (label(sbx_json_obj(im, "Labels"), DOCKER_LABEL_SNAPSHOT) ||
		    !json_object_object_get_ex(im, "RepoTags", &tags) ||
		    !json_object_is_type(tags, json_type_array))
			continue;
		for (size_t t = 0; t < json_object_array_length(tags); t++) {
			const char *tag = json_object_get_string(json_object_array_get_idx(tags, t));
			if (!tag || !strcmp(tag, "<none>:<none>") || sbx_str_starts(tag, "sbx-snap:"))
				continue;
			if (*n == cap) {
				cap = cap ? 2 * cap : 8;
				*out = sbx_xrealloc(*out, cap * sizeof(**out));
			}
			struct sbx_template *tp = &(*out)[(*n)++];
			memset(tp, 0, sizeof(*tp));
			tp->id = sbx_xstrdup(tag);
			tp->name = sbx_xstrdup(tag);
			tp->kind = sbx_xstrdup("image");
			tp->created_at = sbx_json_int(im, "Created", 0);
			tp->size_bytes = sbx_json_int(im, "Size", -1);
		}
	}
	json_object_put(arr);
	return 0;
}

static int docker_template_get(struct sbx_backend *b, const char *id, struct sbx_template *out,
			       struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (check_ref(id, "template id", "template_get", err) < 0)
		return -1;
	SBX_AUTOFREE char *path = sbx_xasprintf("/images/%s/json", id);
	json_object *j;
	if (docker_api(b, "template_get", "GET", path, NULL, &j, err) < 0)
		return -1;
	json_object *labels = sbx_json_obj(sbx_json_obj(j, "Config"), "Labels");
	int snap = label(labels, DOCKER_LABEL_SNAPSHOT) != NULL;
	out->id = sbx_xstrdup(id);
	const char *nm = snap ? label(labels, DOCKER_LABEL_SNAPSHOT_NAME) : NULL;
	json_object *tags = NULL;
	if (!nm && json_object_object_get_ex(j, "RepoTags", &tags) &&
	    json_object_is_type(tags, json_type_array) && json_object_array_length(tags))
		nm = json_object_get_string(json_object_array_get_idx(tags, 0));
	out->name = sbx_xstrdup(nm ? nm : id);
	out->kind = sbx_xstrdup(snap ? "snapshot" : "image");
	const char *created = sbx_json_str(j, "Created");
	int64_t t = created ? sbx_time_parse_iso(created) : -1;
	out->created_at = t > 0 ? t : 0;
	out->size_bytes = sbx_json_int(j, "Size", -1);
	json_object_put(j);
	return 0;
}

/* Import a rootfs tar (from fd, or made from the host folder `dir`) as the
 * image `name` ("repo" or "repo:tag").  The daemon answers 200 and reports
 * failures inside its progress stream, so the stream is read for "error". */
static int docker_template_import(struct sbx_backend *b, const char *name, int fd, const char *dir,
				  struct sbx_template *out, struct sbx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (check_ref(name, "template name", "template_import", err) < 0)
		return -1;
	if (strchr(name, '@') || name[0] == '/' || strstr(name, "sha256:"))
		return sbx_fail(err, SBX_INVALID_REQUEST, "template_import", "invalid template name '%s'", name);
	SBX_AUTOFREE char *repo = sbx_xstrdup(name);
	const char *tag = "latest";
	char *colon = strrchr(repo, ':');
	if (colon && !strchr(colon, '/')) {
		*colon = 0;
		tag = colon + 1;
	}
	for (char *p = repo; *p; p++)
		if (isupper((unsigned char)*p))
			return sbx_fail(err, SBX_INVALID_REQUEST, "template_import",
					"template name '%s' must be lower-case (a Docker repository)", name);
	if (!strncmp(repo, "sbx-snap", 8) && (!repo[8] || repo[8] == '/'))
		return sbx_fail(err, SBX_INVALID_REQUEST, "template_import", "sbx-snap is reserved for snapshots");
	SBX_AUTOCLOSE int tmp = -1;
	if (dir) {
		SBX_AUTOCLOSE int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return sbx_fail_errno(err, SBX_INVALID_REQUEST, "template_import", "%s", dir);
		tmp = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
		if (tmp < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "template_import", "temporary file");
		struct sbx_tar_writer w;
		sbx_tar_writer_init(&w, tmp);
		if (sbx_tar_write_tree(&w, dfd, "", err) < 0 || sbx_tar_write_end(&w, err) < 0)
			return -1;
		if (lseek(tmp, 0, SEEK_SET) < 0)
			return sbx_fail_errno(err, SBX_INTERNAL, "template_import", "lseek");
		fd = tmp;
	}
	if (fd < 0)
		return sbx_fail(err, SBX_INVALID_REQUEST, "template_import", "no tar stream and no folder");
	/* body_fd 0 means "none" to http.c: stdin is passed as a dup. */
	SBX_AUTOCLOSE int body = fd == 0 ? dup(fd) : -1;
	SBX_AUTOFREE char *qr = sbx_http_escape(repo);
	SBX_AUTOFREE char *qt = sbx_http_escape(tag);
	SBX_AUTOFREE char *path = sbx_xasprintf("/images/create?fromSrc=-&repo=%s&tag=%s", qr, qt);
	const char *hdr[] = {"Content-Type: application/x-tar", NULL};
	struct sbx_http_req req = {
		.method = "POST", .path = path, .headers = hdr, .body_fd = fd == 0 ? body : fd,
		.timeout_ms = -1,
	};
	struct sbx_http_resp resp = {0};
	if (docker_raw(b, "template_import", &req, &resp, err) < 0)
		return -1;
	if (resp.status < 200 || resp.status >= 300) {
		docker_status_err("template_import", &resp, err);
		sbx_http_resp_clear(&resp);
		return -1;
	}
	/* The progress stream: JSON objects one after another. */
	json_tokener *tok = json_tokener_new();
	const char *p = resp.body ? resp.body : "";
	const char *end = p + resp.len;
	int failed = 0;
	while (p < end && !failed) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (p >= end)
			break;
		json_object *o = json_tokener_parse_ex(tok, p, (int)(end - p));
		if (!o)
			break;
		p += json_tokener_get_parse_end(tok);
		const char *e = sbx_json_str(o, "error");
		if (e) {
			sbx_fail(err, SBX_INVALID_REQUEST, "template_import", "docker: %s", e);
			failed = 1;
		}
		json_object_put(o);
		json_tokener_reset(tok);
	}
	json_tokener_free(tok);
	sbx_http_resp_clear(&resp);
	if (failed)
		return -1;
	SBX_AUTOFREE char *ref = sbx_xasprintf("%s:%s", repo, tag);
	return docker_template_get(b, ref, out, err);
}

static int docker_template_delete(struct sbx_backend *b, const char *id, int *gone,
				  struct sbx_err *err)
{
	return image_delete(b, id, "template_delete", 0, gone, err);
}

/* ---- the idle sweep ------------------------------------------------------ */

/* Last activity of a container: the marker's mtime, or `fallback` when the
 * marker is missing or too far in the future (a clock trick must not keep
 * a container alive).  -1 when the container is gone. */
static int64_t last_activity(struct sbx_backend *b, const char *id, int64_t fallback,
			     int64_t now, struct sbx_err *err)
{
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s/archive?path=%s", id, DOCKER_MARKER);
	struct sbx_http_req req = {.method = "HEAD", .path = path};
	struct sbx_http_resp resp = {0};
	if (docker_raw(b, "reap", &req, &resp, err) < 0)
		return -2;
	int64_t t = fallback;
	if (resp.status == 200) {
		SBX_AUTOFREE char *h = sbx_http_header(&resp, "X-Docker-Container-Path-Stat");
		if (h) {
			unsigned char dec[1024];
			int n = EVP_DecodeBlock(dec, (const unsigned char *)h, (int)strlen(h));
			if (n > 0 && n < (int)sizeof(dec)) {
				dec[n] = 0;
				/* Decoding pads with NULs; the parser stops there. */
				json_object *j = json_tokener_parse((char *)dec);
				const char *mt = sbx_json_str(j, "mtime");
				int64_t m = mt ? sbx_time_parse_iso(mt) : -1;
				if (m > 0 && m <= now + MARKER_SKEW_S)
					t = m;
				json_object_put(j);
			}
		}
	} else if (resp.status == 404) {
		/* No marker, or no container: tell them apart by the body. */
		if (resp.body && strstr(resp.body, "No such container"))
			t = -1;
	} else {
		docker_status_err("reap", &resp, err);
		t = -2;
	}
	sbx_http_resp_clear(&resp);
	return t;
}

/* One idle candidate's line in the vtable report. */
static void report_item(json_object *arr, const char *id, int64_t idle_s, int deleted,
			const struct sbx_err *e)
{
	if (!arr)
		return;
	json_object *o = json_object_new_object();
	sbx_json_set_str(o, "id", id);
	sbx_json_set_int(o, "idle_seconds", idle_s);
	sbx_json_set_bool(o, "deleted", deleted);
	if (e) {
		json_object *eo = json_object_new_object();
		sbx_json_set_str(eo, "kind", sbx_kind_name(e->kind));
		sbx_json_set_str(eo, "message", e->msg);
		json_object_object_add(o, "error", eo);
	}
	json_object_array_add(arr, o);
}

/* The sweep.  `items` (an array, may be NULL) gets one object per idle
 * container or per container that could not be judged: {"id",
 * "idle_seconds", "deleted"[, "error": {kind, message}]}.  *checked counts
 * the containers that have an idle TTL. */
static int sweep(struct sbx_backend *b, int dry_run, json_object *items, int *checked,
		 struct sbx_err *err)
{
	json_object *arr;
	size_t m;
	*checked = 0;
	if (docker_get_listing(b, "reap", "/containers/json?all=1&",
			       "{\"label\":[\"" DOCKER_LABEL_MANAGED "\"]}", &arr, &m, err) < 0)
		return -1;
	for (size_t i = 0; i < m; i++) {
		json_object *c = json_object_array_get_idx(arr, i);
		const char *id = sbx_json_str(c, "Id");
		json_object *labels = sbx_json_obj(c, "Labels");
		const char *managed = label(labels, DOCKER_LABEL_MANAGED);
		const char *ttls = label(labels, DOCKER_LABEL_TTL);
		long long ttl = ttls ? strtoll(ttls, NULL, 10) : 0;
		if (!id || !managed || !*managed || ttl <= 0)
			continue;
		(*checked)++;
		int64_t created = sbx_json_int(c, "Created", 0);
		int64_t now = sbx_now_ms() / 1000;
		struct sbx_err e = {0};
		int64_t last = last_activity(b, id, created, now, &e);
		if (last == -2) {
			report_item(items, id, 0, 0, &e);
			continue;
		}
		if (last < 0 || now - last <= ttl)
			continue;
		if (dry_run) {
			report_item(items, id, now - last, 0, NULL);
			continue;
		}
		/* Re-check right before the delete: a command may have touched
		 * the marker since the first look. */
		now = sbx_now_ms() / 1000;
		last = last_activity(b, id, created, now, &e);
		if (last == -2) {
			report_item(items, id, 0, 0, &e);
			continue;
		}
		if (last < 0 || now - last <= ttl)
			continue;
		int gone = 0;
		if (docker_remove(b, id, &gone, &e) < 0) {
			report_item(items, id, now - last, 0, &e);
			continue;
		}
		report_item(items, id, now - last, 1, NULL);
	}
	json_object_put(arr);
	return 0;
}

static int docker_reap_idle(struct sbx_backend *b, int dry_run, json_object *report,
			    struct sbx_err *err)
{
	int checked;
	return sweep(b, dry_run, report && json_object_is_type(report, json_type_array) ? report : NULL,
		     &checked, err);
}

int sbx_docker_reap_idle(struct sbx_backend *b, int dry_run, json_object *report,
			 struct sbx_err *err)
{
	if (!b || !b->ops || strcmp(b->ops->name, "docker") != 0)
		return sbx_fail(err, SBX_UNSUPPORTED, "reap", "idle sweep is a docker backend operation");
	json_object *items = json_object_new_array();
	int checked = 0;
	if (sweep(b, dry_run, items, &checked, err) < 0) {
		json_object_put(items);
		return -1;
	}
	if (report) {
		json_object *idle = json_object_new_array(), *deleted = json_object_new_array(),
			    *errors = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			json_object *it = json_object_array_get_idx(items, i);
			json_object *id = NULL, *eo = NULL;
			json_object_object_get_ex(it, "id", &id);
			if (json_object_object_get_ex(it, "error", &eo)) {
				json_object *x = json_object_get(eo);
				json_object_object_add(x, "id", json_object_get(id));
				json_object_array_add(errors, x);
				continue;
			}
			json_object_array_add(idle, json_object_get(id));
			if (sbx_json_bool(it, "deleted", 0))
				json_object_array_add(deleted, json_object_get(id));
		}
		json_object_object_add(report, "checked", json_object_new_int(checked));
		json_object_object_add(report, "idle", idle);
		json_object_object_add(report, "deleted", deleted);
		json_object_object_add(report, "errors", errors);
	}
	json_object_put(items);
	return 0;
}

/* ---- the vtable ---------------------------------------------------------- */

const struct sbx_backend_ops sbx_backend_docker = {
	.name = "docker",
	.open = docker_open,
	.close = docker_close,
	.caps = docker_caps,
	.health = docker_health,
	.fingerprint = docker_fingerprint,
	.create = docker_create,
	.connect = docker_connect,
	.get = docker_get,
	.list = docker_list,
	.remove = docker_remove,
	.pause = docker_pause,
	.set_timeout = NULL,     /* labels are immutable on a container */
	.exec = docker_exec,
	.file_write = docker_file_write,
	.file_read = docker_file_read,
	.file_list = docker_file_list,
	.file_stat = docker_file_stat,
	.file_mkdir = docker_file_mkdir,
	.file_remove = docker_file_remove,
	.file_move = docker_file_move,
	.tar_put = docker_tar_put,
	.tar_get = docker_tar_get,
	.snapshot_create = docker_snapshot_create,
	.snapshot_list = docker_snapshot_list,
	.snapshot_delete = docker_snapshot_delete,
	.template_list = docker_template_list,
	.template_get = docker_template_get,
	.template_import = docker_template_import,
	.template_delete = docker_template_delete,
	.reap_idle = docker_reap_idle,
};
