/* docker.c - the Docker backend: one long-lived container per sandbox,
 * driven through the Docker Engine API v1.41 (never the docker CLI).  This
 * file is the vtable and the sandbox lifecycle: open, create, get,
 * connect, list, pause, remove.
 *
 * Promises:
 *   - a sandbox is a container of ours (docker-container.h): its id is the
 *     full container id, its metadata the container's labels;
 *   - PID 1 is docker-init running `sleep`: the image's ENTRYPOINT/CMD never
 *     run, zombies are reaped, and the container lives until it is removed;
 *   - network: NetworkMode "none" (only lo) always; egress goes through
 *     the egress broker attached to the container's namespace
 *     (docker-egress.h); host networking is never used;
 *   - capabilities: everything dropped but CHOWN DAC_OVERRIDE FOWNER FSETID
 *     SETGID SETUID KILL, no-new-privileges; commands run as uid 1000 unless
 *     as_root;
 *   - idle policy is kill, never pause (docker-sweep.h): a create that
 *     asks to pause on idle is unsupported.
 *
 * The backend's files:
 *   docker-api.c        transport: the engine connection, requests, JSON
 *                       replies, engine errors as sbx kinds, API version
 *   docker-container.c  one container: ours or not_found, state, handle,
 *                       unpause/start on use, removal
 *   docker-egress.c     egress: the broker on the container's namespace
 *   docker-exec.c       exec: the hijacked /exec/{id}/start stream
 *   docker-files.c      files: exec as the sandbox user for everything a user
 *                       could abuse (symlinks), the archive API where safe
 *   docker-gate.c       the freeze gate: no pause while an exec is starting
 *   docker-image.c      snapshots (commit) and templates (images)
 *   docker-proc.c       detached processes: an in-container supervisor
 *   docker-sweep.c      the idle sweep */
#include <arpa/inet.h>
#include <string.h>

#include "egress-secrets.h"
#include "docker-api.h"
#include "docker-container.h"
#include "docker-egress.h"
#include "docker-exec.h"
#include "docker-files.h"
#include "docker-gate.h"
#include "docker-image.h"
#include "docker-proc.h"
#include "docker-sweep.h"
#include "doc.h"
#include "fingerprint.h"
#include "netpolicy.h"
#include "util.h"

#define DEFAULT_IMAGE "sbx/base:latest"

/* The container's PID 1 script: the layout every sandbox promises, the
 * activity marker writable by uid 1000 (execs touch it), then sleep. */
static const char entry_script[] =
	"mkdir -p /workspace/input /workspace/output /opt/sbx/skills /var/lib; "
	"chown 1000:1000 /workspace /workspace/input /workspace/output; "
	"touch " DOCKER_MARKER " 2>/dev/null; chmod 666 " DOCKER_MARKER " 2>/dev/null; "
	"exec sleep 2147483647";

/* ---- open, caps, health, fingerprint ---------------------------------- */

static const char *const docker_config_keys[] = {"tls_cert_path", "egress_allow", "egress_resolver",
						  "egress_secrets", "egress_upstream_ca", NULL};

static void docker_config_free(void *conf)
{
	struct docker_conf *c = conf;
	if (c) {
		free(c->tls_cert_path);
		sbx_strv_free(c->egress_allow);
		free(c->egress_resolver);
	}
	free(c);
}

static int docker_config_load(const struct sbx_profile *p, json_object *o, void **conf,
			      struct sbx_err *err)
{
	struct docker_conf *c = sbx_xcalloc(1, sizeof(*c));
	*conf = c;
	const char *certs = sbx_json_str(o, "tls_cert_path");
	c->tls_cert_path = certs ? sbx_xstrdup(certs) : NULL;
	if (sbx_egress_secrets_check(p->name, o, err) < 0)
		return -1;
	return sbx_config_egress(p->name, o, &c->egress_resolver, &c->egress_allow, err);
}

static int docker_open(struct sbx_backend *b, struct sbx_err *err)
{
	return docker_conn_open(b, err);
}

static void docker_close(struct sbx_backend *b)
{
	docker_conn_close(b);
}

static unsigned docker_caps(struct sbx_backend *b)
{
	(void)b;
	return SBX_CAP_EXEC | SBX_CAP_FILES | SBX_CAP_PAUSE | SBX_CAP_SNAPSHOTS |
	       SBX_CAP_METADATA | SBX_CAP_LIST | SBX_CAP_TEMPLATES | SBX_CAP_IDLE_KILL |
	       SBX_CAP_INSTALL | SBX_CAP_PROCESS | SBX_CAP_FLATTEN | SBX_CAP_TTY |
	       SBX_CAP_TEMPLATE_IMPORT | SBX_CAP_VOLUMES | SBX_CAP_NETPOLICY;
}

static int docker_health(struct sbx_backend *b, struct sbx_err *err)
{
	return docker_ping(b, err);
}

/* Reference §4.3: the recipe (common/config/fingerprint.h) over ("docker", tls
 * cert path, host), a blank host (the local socket) being "local-daemon".
 * The host is the profile's configured endpoint; a DOCKER_HOST picked up
 * from the environment does not count (the fingerprint is the profile's
 * identity, not the shell's). */
static int docker_fingerprint(struct sbx_backend *b, char out[65], struct sbx_err *err)
{
	struct sbx_profile *p = b->profile;
	const char *host = p ? p->endpoint : NULL;
	return sbx_fingerprint("docker", docker_tls_certs(b),
			       sbx_fingerprint_blank(host) ? "local-daemon" : host, out, err);
}

/* ---- lifecycle --------------------------------------------------------- */

static json_object *jstr_array(const char *const *v)
{
	json_object *a = json_object_new_array();
	for (; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

/* What the docker backend cannot give a create: pause-on-idle, inbound
 * access.  Egress (on, or a policy) is the broker's (docker-egress.h):
 * *use the policy it will hold, NULL for none. */
static int create_network(struct sbx_backend *b, const struct sbx_create_req *req,
			  struct sbx_netpolicy *np, const struct sbx_netpolicy **use, int *named,
			  struct sbx_err *err)
{
	/* Pause-on-idle only matters with an idle timeout (the profile's
	 * default action is pause, with no timeout). */
	if (req->timeout.seconds > 0 && req->timeout.on_timeout_pause)
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the docker backend kills idle sandboxes (a paused container keeps its memory); "
				"use --on-timeout kill (on_timeout \"kill\" in the profile)");
	if (req->net.allow_public)
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"the docker backend has no inbound access by URL (allow_public)");
	return docker_egress_plan(b, req, np, use, named, err) < 0 ? -1 : 0;
}

/* The container's labels: the caller's metadata (our own names left
 * out), sbx.managed, the idle TTL, the no-resume mark and the template
 * id as given (DOCKER_LABEL_TEMPLATE). */
static json_object *create_labels(const struct sbx_create_req *req, const char *image,
				  const char *egress)
{
	json_object *labels = json_object_new_object();
	if (req->metadata) {
		json_object_object_foreach(req->metadata, k, v) {
			if (docker_internal_label(k))
				continue;
			json_object_object_add(labels, k, json_object_new_string(json_object_get_string(v)));
		}
	}
	if (!sbx_json_str(labels, DOCKER_LABEL_MANAGED))
		json_object_object_add(labels, DOCKER_LABEL_MANAGED, json_object_new_string("1"));
	char ttl[32];
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(req->timeout.seconds > 0 ? req->timeout.seconds : 0));
	json_object_object_add(labels, DOCKER_LABEL_TTL, json_object_new_string(ttl));
	if (!req->timeout.auto_resume)
		json_object_object_add(labels, DOCKER_LABEL_NO_RESUME, json_object_new_string("1"));
	json_object_object_add(labels, DOCKER_LABEL_TEMPLATE, json_object_new_string(image));
	if (egress)
		json_object_object_add(labels, DOCKER_LABEL_EGRESS, json_object_new_string(egress));
	return labels;
}

/* HostConfig: no network but lo (egress is the broker's, which is then
 * the resolver), docker-init, the capability set, no-new-privileges, and
 * the limits asked for. */
static json_object *create_host_config(const struct sbx_create_req *req, int egress)
{
	json_object *hc = json_object_new_object();
	json_object_object_add(hc, "NetworkMode", json_object_new_string("none"));
	if (egress) {
		const char *dns[] = {DOCKER_SANDBOX_RESOLVER, NULL};
		json_object_object_add(hc, "Dns", jstr_array(dns));
	}
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
	/* Volumes: a bind of the volume's folder (docs/docker.md says why not
	 * an engine volume), rprivate, read-only when asked.  Root inside has
	 * no CAP_SYS_ADMIN (nor MKNOD) and runs with no-new-privileges: it
	 * can neither remount nor unmount it, make a device in it, or gain
	 * anything from a setuid file on it. */
	json_object *mounts = NULL;
	for (size_t i = 0; i < req->nvolumes; i++) {
		const struct sbx_vol_mount *v = &req->volumes[i];
		json_object *m = json_object_new_object(), *bo = json_object_new_object();
		json_object_object_add(m, "Type", json_object_new_string("bind"));
		json_object_object_add(m, "Source", json_object_new_string(v->host_dir));
		json_object_object_add(m, "Target", json_object_new_string(v->path));
		json_object_object_add(m, "ReadOnly", json_object_new_boolean(v->read_only));
		json_object_object_add(bo, "Propagation", json_object_new_string("rprivate"));
		json_object_object_add(m, "BindOptions", bo);
		if (!mounts)
			mounts = json_object_new_array();
		json_object_array_add(mounts, m);
	}
	if (mounts)
		json_object_object_add(hc, "Mounts", mounts);
	return hc;
}

/* The body of POST /containers/create, or NULL with err (invalid_request)
 * for an env name that is empty or holds '='. */
static json_object *create_body(const struct sbx_create_req *req, const char *image,
				const char *egress, json_object *req_env, struct sbx_err *err)
{
	json_object *env = json_object_new_array();
	if (req_env) {
		json_object_object_foreach(req_env, k, v) {
			if (!*k || strchr(k, '=')) {
				json_object_put(env);
				sbx_fail(err, SBX_INVALID_REQUEST, "create", "invalid env name '%s'", k);
				return NULL;
			}
			SBX_AUTOFREE char *kv = sbx_xasprintf("%s=%s", k, json_object_get_string(v));
			json_object_array_add(env, json_object_new_string(kv));
		}
	}
	json_object *body = json_object_new_object();
	json_object_object_add(body, "Image", json_object_new_string(image));
	const char *ep[] = {"/bin/sh", "-c", entry_script, NULL};
	json_object_object_add(body, "Entrypoint", jstr_array(ep));
	json_object_object_add(body, "Cmd", json_object_new_array());
	json_object_object_add(body, "User", json_object_new_string("0"));
	json_object_object_add(body, "WorkingDir", json_object_new_string("/workspace"));
	json_object_object_add(body, "Env", env);
	json_object_object_add(body, "Labels", create_labels(req, image, egress));
	json_object_object_add(body, "HostConfig", create_host_config(req, egress != NULL));
	return body;
}

/* A sandbox created with a network policy shows it as its broker holds
 * it (sbx-ctl network replaces it). */
static void docker_handle_policy(struct sbx_backend *b, struct sbx_sandbox *sb, int named)
{
	json_object *np = named && sb->id ? docker_egress_policy_doc(b, sb->id) : NULL;
	if (!np)
		return;
	if (!sb->extra)
		sb->extra = json_object_new_object();
	json_object_object_add(sb->extra, "network_policy", np);
}

/* The container's resolver is the broker's address.  dockerd writes it
 * from HostConfig.Dns; podman ignores Dns under NetworkMode none, so the
 * file is written from inside as well when it says otherwise (as root,
 * through the engine's bind mount, never from the host: a path in the
 * container is the container's to resolve). */
static int create_resolver(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	char *argv[] = {"/bin/sh", "-c",
			"grep -qx 'nameserver " DOCKER_SANDBOX_RESOLVER "' /etc/resolv.conf 2>/dev/null || "
			"echo 'nameserver " DOCKER_SANDBOX_RESOLVER "' >/etc/resolv.conf", NULL};
	struct sbx_exec_req req = {.argv = argv, .as_root = 1, .raw_out_fd = -1, .raw_err_fd = -1,
				   .raw_in_fd = -1};
	struct sbx_exec_result r = {0};
	int rc = docker_exec(b, sb, &req, &r, err);
	if (rc == 0 && r.exit_code != 0)
		rc = sbx_fail(err, SBX_INTERNAL, "create", "the sandbox's resolv.conf could not be written");
	sbx_exec_result_clear(&r);
	return rc;
}

/* Remove the half-made container `id` quietly. */
static void create_undo(struct sbx_backend *b, const char *id)
{
	struct sbx_err quiet = {0};
	SBX_AUTOFREE char *path = sbx_xasprintf("/containers/%s?force=1&v=1", id);
	docker_api(b, "create", "DELETE", path, NULL, NULL, &quiet);
	docker_egress_forget(b, id);
}

/* Create and start the container, then (egress on) its broker; a
 * container that does not start, or whose broker does not come up, is
 * removed again, so a failed create leaves nothing behind.  A start the
 * engine refuses because of how it is set up, not for a passing reason
 * (SBX_R_ENGINE_SETUP: no init binary, rlimits the host cannot grant; see
 * docker_status_err), is a configuration error (exit 78), not
 * `unavailable`: retrying cannot help. */
static int docker_create(struct sbx_backend *b, const struct sbx_create_req *req,
			 struct sbx_sandbox *out, struct sbx_err *err)
{
	struct sbx_profile *p = b->profile;
	const char *image = req->template_id && *req->template_id ? req->template_id
			    : p && p->template_id && *p->template_id ? p->template_id : DEFAULT_IMAGE;
	if (req->nvolumes && !docker_engine_local(b))
		return sbx_fail(err, SBX_UNSUPPORTED, "create",
				"volumes need the engine on this host (a unix:// endpoint): "
				"a volume's folder is bound from here");
	struct sbx_netpolicy np = {0};
	const struct sbx_netpolicy *use = NULL;
	int named = 0;
	if (docker_check_ref(image, "template id", "create", err) < 0 ||
	    create_network(b, req, &np, &use, &named, err) < 0) {
		sbx_np_clear(&np);
		return -1;
	}
	/* An intercepted sandbox: its placeholders and CA variables
	 * (egress-secrets.h) in the container's env. */
	json_object *env = sbx_egress_l7_env(p ? p->raw : NULL, use, req->net.headers, req->env);
	json_object *body = create_body(req, image, !use ? NULL : named ? "policy" : "open", env, err);
	json_object_put(env);
	if (!body) {
		sbx_np_clear(&np);
		return -1;
	}
	json_object *resp = NULL;
	int rc = docker_api(b, "create", "POST", "/containers/create", body, &resp, err);
	json_object_put(body);
	if (rc < 0) {
		sbx_np_clear(&np);
		if (err->http_status == 404)
			sbx_err_prefix(err, "template %s", image);
		return -1;
	}
	SBX_AUTOFREE char *id = sbx_xstrdup(sbx_json_str(resp, "Id") ? sbx_json_str(resp, "Id") : "");
	json_object_put(resp);
	if (!*id) {
		sbx_np_clear(&np);
		return sbx_fail(err, SBX_INTERNAL, "create", "docker returned no container id");
	}
	if (docker_container_post(b, id, "start", "create", err) < 0) {
		/* Never leave a half-made sandbox behind. */
		sbx_np_clear(&np);
		create_undo(b, id);
		if (err->reason == SBX_R_ENGINE_SETUP) {
			err->kind = SBX_INVALID_REQUEST;
			err->exit_status = SBX_EXIT_CONFIG;
			sbx_err_prefix(err, "the engine cannot start containers as configured");
		} else {
			sbx_err_prefix(err, "starting the container");
		}
		return -1;
	}
	json_object *j;
	if (docker_inspect(b, id, "create", &j, err) < 0) {
		sbx_np_clear(&np);
		return -1;
	}
	if (use) {
		long pid = (long)sbx_json_int(sbx_json_obj(j, "State"), "Pid", 0);
		rc = docker_egress_start(b, id, pid, use, req->net.headers, err);
		sbx_np_clear(&np);
		if (rc < 0) {
			json_object_put(j);
			create_undo(b, id);
			return -1;
		}
	}
	docker_fill_from_inspect(b, out, j);
	json_object_put(j);
	if (use && create_resolver(b, out, err) < 0) {
		sbx_sandbox_clear(out);
		create_undo(b, id);
		return -1;
	}
	docker_handle_policy(b, out, named);
	docker_maybe_sweep(b);
	return 0;
}

static int docker_get(struct sbx_backend *b, const char *id, struct sbx_sandbox *out,
		      struct sbx_err *err)
{
	json_object *j;
	/* Sweep first: a sandbox idle past its TTL is gone, and saying so
	 * now lets a session resolve rebuild instead of reusing it. */
	docker_maybe_sweep(b);
	if (docker_inspect(b, id, "get", &j, err) < 0)
		return -1;
	const char *eg = sbx_json_str(sbx_json_obj(sbx_json_obj(j, "Config"), "Labels"), DOCKER_LABEL_EGRESS);
	int named = eg && !strcmp(eg, "policy");
	docker_fill_from_inspect(b, out, j);
	json_object_put(j);
	docker_handle_policy(b, out, named);
	return 0;
}

/* Resume if paused, start if stopped; dead → terminal.  The handle is
 * refreshed from a fresh inspect. */
static int docker_connect(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	if (!sb->id)
		return sbx_fail(err, SBX_INVALID_REQUEST, "connect", "the sandbox has no id");
	docker_maybe_sweep(b);
	if (docker_resume(b, sb->id, err) < 0)
		return -1;
	struct sbx_sandbox fresh;
	if (docker_get(b, sb->id, &fresh, err) < 0)
		return -1;
	sbx_sandbox_clear(sb);
	*sb = fresh;
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
		enum sbx_state st = docker_map_state(sbx_json_str(c, "State"));
		const char *managed = sbx_json_str(sbx_json_obj(c, "Labels"), DOCKER_LABEL_MANAGED);
		if (!managed || !*managed)
			continue;   /* blanked: made from a snapshot image, not by sbx */
		if (f && f->states && !(f->states & (1u << st)))
			continue;
		docker_fill_sandbox(b, &out->items[out->n], sbx_json_str(c, "Id"), sbx_json_str(c, "Image"),
			     sbx_json_obj(c, "Labels"), sbx_json_str(c, "State"),
			     sbx_json_int(c, "Created", 0));
		out->n++;
	}
	json_object_put(arr);
	return 0;
}

static int docker_pause(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err)
{
	json_object *j;
	if (!sb->id)
		return sbx_fail(err, SBX_INVALID_REQUEST, "pause", "the sandbox has no id");
	if (docker_inspect(b, sb->id, "pause", &j, err) < 0)
		return -1;
	const char *st = docker_inspect_status(j);
	int running = st && !strcmp(st, "running"), paused = st && !strcmp(st, "paused");
	SBX_AUTOFREE char *id = sbx_xstrdup(sbx_json_str(j, "Id"));
	if (!running && !paused) {
		int rc = sbx_fail(err, SBX_CONFLICT, "pause", "sandbox %s is %s, not running", id, st ? st : "?");
		json_object_put(j);
		return rc;
	}
	json_object_put(j);
	/* Never while an exec into it is starting (docker-gate.h). */
	if (running && docker_gate_enter(b, id, 1, DOCKER_GATE_PAUSE_WAIT_MS, err) < 0)
		return -1;
	int rc = running ? docker_container_post(b, id, "pause", "pause", err) : 0;
	if (running)
		docker_gate_leave(id);
	if (rc < 0 && err->reason != SBX_R_ALREADY_PAUSED)
		return -1;
	sbx_err_clear(err);
	struct sbx_sandbox fresh;
	if (docker_get(b, id, &fresh, err) < 0)
		return -1;
	sbx_sandbox_clear(sb);
	*sb = fresh;
	return 0;
}

static int docker_remove(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err)
{
	if (docker_container_remove(b, id, gone, err) < 0)
		return -1;
	/* The broker ended with the container's init; its policy goes too
	 * (a short id is the container's full one only by inspect: the
	 * handle's ids are full). */
	docker_egress_forget(b, id);
	return 0;
}

/* ---- the vtable ---------------------------------------------------------- */

/* The vtable's audit_dir: the folder of the container's broker. */
static int docker_audit_dir(struct sbx_backend *b, const char *id, char **dir, struct sbx_err *err)
{
	(void)err;
	*dir = id && *id ? docker_egress_audit_dir(b, id) : NULL;
	return 0;
}

const struct sbx_backend_ops sbx_backend_docker = {
	.name = "docker",
	.config_keys = docker_config_keys,
	.config_load = docker_config_load,
	.config_free = docker_config_free,
	.state_words = docker_state_words,
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
	.set_network = docker_egress_set_network,
	.audit_dir = docker_audit_dir,
	.audit_collect = docker_proc_audit_collect,
	.exec = docker_exec,
	.proc_start = docker_proc_start,
	.proc_list = docker_proc_list,
	.proc_signal = docker_proc_signal,
	.proc_input = docker_proc_input,
	.proc_output = docker_proc_output,
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
	.snapshot_flatten = docker_snapshot_flatten,
	.template_list = docker_template_list,
	.template_get = docker_template_get,
	.template_import = docker_template_import,
	.template_delete = docker_template_delete,
	.reap_idle = docker_reap_idle,
	.hold = docker_hold,
};
