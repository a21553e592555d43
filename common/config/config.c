/* config.c - see config.h. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doc.h"
#include "netpolicy.h"
#include "ssrf.h"
#include "util.h"

#define CONFIG_MAX (1u << 20)
#define SECRET_MAX (64u << 10)

void sbx_secret_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

void sbx_profile_free(struct sbx_profile *p)
{
	if (!p)
		return;
	char **strs[] = {&p->name, &p->backend, &p->endpoint, &p->template_id, &p->state_dir,
			 &p->redis_url, &p->redis_password_file, &p->prefix, &p->api_key_file,
			 &p->api_key_env};
	for (size_t i = 0; i < SBX_ARRAY_LEN(strs); i++)
		free(*strs[i]);
	sbx_strv_free(p->redis_nodes);
	if (p->backend_conf && p->backend_conf_free)
		p->backend_conf_free(p->backend_conf);
	json_object_put(p->raw);
	free(p);
}

static void set_str(char **dst, const char *v)
{
	if (!v)
		return;
	free(*dst);
	*dst = sbx_xstrdup(v);
}

static const char *config_path(int *explicit)
{
	static char buf[4096];
	const char *p = getenv("SBX_CONFIG");
	*explicit = 0;
	if (p && *p) {
		*explicit = 1;
		return p;
	}
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	if (xdg && *xdg)
		snprintf(buf, sizeof(buf), "%s/sbx/config.json", xdg);
	else if (home && *home)
		snprintf(buf, sizeof(buf), "%s/.config/sbx/config.json", home);
	else
		buf[0] = '\0';
	if (buf[0] && access(buf, F_OK) == 0)
		return buf;
	return "/etc/sbx/config.json";
}

/* The keys of a profile that every backend shares.  Each backend names
 * its own (backend.h config_keys); anything else is refused, by
 * sbx_backend_configure, so that a typo in a security setting
 * ("allow_privte") is not silently ignored. */
static const char *const profile_keys[] = {
	"backend", "endpoint", "template", "state_dir", "redis_url", "redis_password_file",
	"prefix", "api_key_file", "api_key_env", "allow_private",
	"allow_internet", "allow_public", "memory", "pids", "cpus", "disk", "shm",
	"idle_timeout", "on_timeout", "hibernate_paused", "auto_resume", "description", "options", "env",
	"redis_nodes", "events_maxlen", "network_policy", "quota", "retain_paused", "volumes",
	"checkpoints_keep", "audit_maxlen", "audit_max_age", "audit",
};

/* "quota": {"running": N, "sandboxes": M, "paused_bytes": B}, counts >= 0,
 * B also a size ("10M"; absent: no limit).  Any other key is refused. */
static int parse_quota(struct sbx_profile *p, json_object *o, struct sbx_err *err)
{
	json_object *q;
	p->quota = SBX_QUOTA_NONE;
	if (!json_object_object_get_ex(o, "quota", &q))
		return 0;
	if (!json_object_is_type(q, json_type_object))
		return sbx_fail_config(err, "config", "profile '%s': quota must be an object", p->name);
	json_object_object_foreach(q, k, v) {
		int bytes = strcmp(k, "paused_bytes") == 0;
		int64_t *slot = strcmp(k, "running") == 0 ? &p->quota.running
			      : strcmp(k, "sandboxes") == 0 ? &p->quota.sandboxes
			      : bytes ? &p->quota.paused_bytes : NULL;
		if (!slot)
			return sbx_fail_config(err, "config", "profile '%s': quota.%s is not a quota "
					       "(running, sandboxes, paused_bytes)", p->name, k);
		if (bytes && json_object_is_type(v, json_type_string)) {
			struct sbx_err e = {0};
			if (sbx_parse_size(json_object_get_string(v), slot, &e) < 0 || *slot < 0)
				return sbx_fail_config(err, "config", "profile '%s': quota.paused_bytes "
						       "must be a size (bytes, or 10M, 2G)", p->name);
			continue;
		}
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return sbx_fail_config(err, "config", "profile '%s': quota.%s must be a count >= 0",
					       p->name, k);
		*slot = json_object_get_int64(v);
	}
	return 0;
}

/* "network_policy": a policy document (netpolicy.h), the default egress
 * rules of every sandbox the profile creates, read from the raw profile
 * by sbx-create and checked here, at load. */
static int check_netpolicy(const struct sbx_profile *p, json_object *o, struct sbx_err *err)
{
	json_object *v;
	if (!json_object_object_get_ex(o, "network_policy", &v))
		return 0;
	struct sbx_netpolicy np = {0};
	int rc = sbx_np_from_json(v, &np, err);
	sbx_np_clear(&np);
	if (rc < 0) {
		sbx_err_prefix(err, "profile '%s': network_policy", p->name);
		err->exit_status = SBX_EXIT_CONFIG;
	}
	return rc;
}

int sbx_config_key(const char *key)
{
	for (size_t i = 0; i < SBX_ARRAY_LEN(profile_keys); i++)
		if (strcmp(key, profile_keys[i]) == 0)
			return 1;
	return 0;
}

/* "env": {"NAME": "value", ...}: names as a shell takes them, string
 * values (a CA bundle path, proxies).  Not for secrets: they are stored
 * with every sandbox the profile creates. */
static int check_env(const struct sbx_profile *p, json_object *o, struct sbx_err *err)
{
	json_object *env;
	if (!json_object_object_get_ex(o, "env", &env))
		return 0;
	if (!json_object_is_type(env, json_type_object))
		return sbx_fail_config(err, "config", "profile '%s': env must be an object", p->name);
	json_object_object_foreach(env, k, v) {
		int ok = *k && !(k[0] >= '0' && k[0] <= '9');
		for (const char *c = k; ok && *c; c++)
			ok = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
			     (*c >= '0' && *c <= '9') || *c == '_';
		if (!ok)
			return sbx_fail_config(err, "config", "profile '%s': env: bad variable name '%s'",
					       p->name, k);
		if (!json_object_is_type(v, json_type_string))
			return sbx_fail_config(err, "config", "profile '%s': env: %s must be a string",
					       p->name, k);
	}
	return 0;
}

/* One CIDR entry (egress_allow, redis_nodes): "ADDR/LEN" as
 * sbx_cidr_parse reads it.  On success *out is the canonical text
 * (inet_ntop + "/LEN"), which is all that is kept: nothing of the
 * profile's own spelling reaches a filter rule or a comparison. */
static int cidr_canon(const char *s, char **out)
{
	unsigned char b[16];
	int af, len;
	if (sbx_cidr_parse(s, &af, b, &len) < 0)
		return -1;
	char canon[INET6_ADDRSTRLEN];
	inet_ntop(af, b, canon, sizeof(canon));
	*out = sbx_xasprintf("%s/%d", canon, len);
	return 0;
}

int sbx_config_cidrs(const char *name, json_object *o, const char *key, char ***out,
		     struct sbx_err *err)
{
	json_object *a;
	if (!o || !json_object_object_get_ex(o, key, &a))
		return 0;
	if (!json_object_is_type(a, json_type_array))
		return sbx_fail_config(err, "config", "profile '%s': %s must be an array of CIDRs",
				       name, key);
	size_t n = json_object_array_length(a);
	*out = sbx_xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
		if (!s || cidr_canon(s, &(*out)[i]) < 0)
			return sbx_fail_config(err, "config",
					       "profile '%s': %s[%zu] is not a CIDR (ADDR/LEN, no host bits set)",
					       name, key, i);
	}
	return 0;
}

int sbx_config_egress(const char *name, json_object *o, char **resolver, char ***allow,
		      struct sbx_err *err)
{
	json_object *v;
	const char *res = sbx_json_str(o, "egress_resolver");
	struct in_addr ra;
	if (o && json_object_object_get_ex(o, "egress_resolver", &v) &&
	    (!res || inet_pton(AF_INET, res, &ra) != 1))
		return sbx_fail_config(err, "config", "profile '%s': egress_resolver must be an IPv4 address",
				       name);
	*resolver = res ? sbx_xstrdup(res) : NULL;
	return sbx_config_cidrs(name, o, "egress_allow", allow, err);
}

/* The audit record's keys (audit.h): audit_maxlen (a number >= 0; 0 turns
 * the record off), audit_max_age (a duration; records older are trimmed),
 * audit ("best-effort", the default, or "required"). */
static int parse_audit(struct sbx_profile *p, json_object *o, struct sbx_err *err)
{
	json_object *v;
	if (json_object_object_get_ex(o, "audit_maxlen", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return sbx_fail_config(err, "config", "profile '%s': audit_maxlen must be a number >= 0",
					       p->name);
		p->audit_maxlen = json_object_get_int64(v);
	}
	if (json_object_object_get_ex(o, "audit_max_age", &v)) {
		const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
		if (!s || sbx_parse_duration_ms(s, &p->audit_max_age_ms, err) < 0)
			return sbx_fail_config(err, "config",
					       "profile '%s': audit_max_age must be a duration (\"30d\", \"12h\")",
					       p->name);
	}
	if (json_object_object_get_ex(o, "audit", &v)) {
		const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
		if (!s || (strcmp(s, "required") && strcmp(s, "best-effort")))
			return sbx_fail_config(err, "config", "profile '%s': audit must be required or best-effort",
					       p->name);
		p->audit_required = strcmp(s, "required") == 0;
	}
	return 0;
}

static int apply_profile(struct sbx_profile *p, json_object *o, struct sbx_err *err)
{
	if (check_env(p, o, err) < 0)
		return -1;
	if (sbx_json_obj(o, "api_key") || sbx_json_str(o, "api_key"))
		return sbx_fail_config(err, "config", "profile '%s': put the key in a file (api_key_file)", p->name);
	set_str(&p->backend, sbx_json_str(o, "backend"));
	set_str(&p->endpoint, sbx_json_str(o, "endpoint"));
	set_str(&p->template_id, sbx_json_str(o, "template"));
	set_str(&p->state_dir, sbx_json_str(o, "state_dir"));
	set_str(&p->redis_url, sbx_json_str(o, "redis_url"));
	set_str(&p->redis_password_file, sbx_json_str(o, "redis_password_file"));
	set_str(&p->prefix, sbx_json_str(o, "prefix"));
	set_str(&p->api_key_file, sbx_json_str(o, "api_key_file"));
	set_str(&p->api_key_env, sbx_json_str(o, "api_key_env"));
	p->allow_private = sbx_json_bool(o, "allow_private", p->allow_private);
	p->allow_internet = sbx_json_bool(o, "allow_internet", p->allow_internet);
	p->allow_public = sbx_json_bool(o, "allow_public", p->allow_public);
	p->auto_resume = sbx_json_bool(o, "auto_resume", p->auto_resume);
	const char *s;
	if ((s = sbx_json_str(o, "memory")) && sbx_parse_size(s, &p->limits.memory_bytes, err) < 0)
		return sbx_err_prefix(err, "profile '%s': memory", p->name), err->exit_status = SBX_EXIT_CONFIG, -1;
	if ((s = sbx_json_str(o, "disk")) && sbx_parse_size(s, &p->limits.disk_bytes, err) < 0)
		return sbx_err_prefix(err, "profile '%s': disk", p->name), err->exit_status = SBX_EXIT_CONFIG, -1;
	if ((s = sbx_json_str(o, "shm")) && sbx_parse_size(s, &p->limits.shm_bytes, err) < 0)
		return sbx_err_prefix(err, "profile '%s': shm", p->name), err->exit_status = SBX_EXIT_CONFIG, -1;
	p->limits.pids = sbx_json_int(o, "pids", p->limits.pids);
	p->events_maxlen = sbx_json_int(o, "events_maxlen", p->events_maxlen);
	if (p->events_maxlen < 0)
		return sbx_fail_config(err, "config", "profile '%s': events_maxlen must be >= 0", p->name);
	if (parse_audit(p, o, err) < 0)
		return -1;
	json_object *keep;
	if (json_object_object_get_ex(o, "checkpoints_keep", &keep)) {
		if (!json_object_is_type(keep, json_type_int) || json_object_get_int64(keep) < 0)
			return sbx_fail_config(err, "config",
					       "profile '%s': checkpoints_keep must be a number >= 0", p->name);
		p->checkpoints_keep = json_object_get_int64(keep);
	}
	json_object *cpus;
	if (json_object_object_get_ex(o, "cpus", &cpus))
		p->limits.cpus = json_object_get_double(cpus);
	if ((s = sbx_json_str(o, "idle_timeout")) && sbx_parse_duration_ms(s, &p->idle_timeout_ms, err) < 0)
		return sbx_err_prefix(err, "profile '%s': idle_timeout", p->name), err->exit_status = SBX_EXIT_CONFIG, -1;
	if ((s = sbx_json_str(o, "retain_paused")) &&
	    sbx_parse_duration_ms(s, &p->retain_paused_ms, err) < 0)
		return sbx_err_prefix(err, "profile '%s': retain_paused", p->name), err->exit_status = SBX_EXIT_CONFIG, -1;
	if ((s = sbx_json_str(o, "hibernate_paused")) &&
	    sbx_parse_duration_ms(s, &p->hibernate_paused_ms, err) < 0)
		return sbx_err_prefix(err, "profile '%s': hibernate_paused", p->name), err->exit_status = SBX_EXIT_CONFIG, -1;
	if ((s = sbx_json_str(o, "on_timeout")) &&
	    sbx_on_timeout_parse(s, &p->on_timeout_pause, &p->on_timeout_hibernate) < 0)
		return sbx_fail_config(err, "config", "profile '%s': on_timeout must be pause, kill or hibernate",
				       p->name);
	if (sbx_json_bool(o, "auto_resume", 0) && !p->on_timeout_pause)
		return sbx_fail_config(err, "config", "profile '%s': auto_resume needs on_timeout pause or hibernate",
				       p->name);
	if (check_netpolicy(p, o, err) < 0 || parse_quota(p, o, err) < 0)
		return -1;
	return sbx_config_cidrs(p->name, o, "redis_nodes", &p->redis_nodes, err);
}

int sbx_on_timeout_parse(const char *word, int *pause, int *hibernate)
{
	if (strcmp(word, "pause") && strcmp(word, "kill") && strcmp(word, "hibernate"))
		return -1;
	*pause = strcmp(word, "kill") != 0;
	*hibernate = strcmp(word, "hibernate") == 0;
	return 0;
}

const char *sbx_on_timeout_word(int pause, int hibernate)
{
	return !pause ? "kill" : hibernate ? "hibernate" : "pause";
}

int sbx_config_load(const char *name, struct sbx_profile **out, struct sbx_err *err)
{
	struct sbx_profile *p = sbx_xcalloc(1, sizeof(*p));
	int explicit;
	const char *path = config_path(&explicit);
	json_object *file = NULL;
	SBX_AUTOFREE char *text = NULL;
	size_t len;
	struct sbx_err ferr;

	if (sbx_read_file(path, CONFIG_MAX, &text, &len, &ferr) == 0) {
		struct sbx_err jerr = {0};
		if (sbx_json_parse_object(text, len, &file, &jerr) < 0) {
			sbx_profile_free(p);
			return sbx_fail_config(err, "config", "%s: not a JSON object (%s)", path, jerr.msg);
		}
	} else if (explicit || ferr.kind != SBX_NOT_FOUND) {
		sbx_profile_free(p);
		*err = ferr;
		err->exit_status = SBX_EXIT_CONFIG;
		return -1;
	}

	int named = 1;
	if (!name || !*name)
		name = getenv("SBX_PROFILE");
	if (!name || !*name)
		name = sbx_json_str(file, "default_profile");
	if (!name || !*name) {
		name = "default";
		named = 0;
	}
	p->name = sbx_xstrdup(name);
	p->backend = sbx_xstrdup("local");
	p->prefix = sbx_xstrdup("sbx");
	p->on_timeout_pause = 1;
	p->events_maxlen = SBX_EVENTS_MAXLEN_DEFAULT;
	p->checkpoints_keep = SBX_CHECKPOINTS_KEEP_DEFAULT;
	p->audit_maxlen = SBX_AUDIT_MAXLEN_DEFAULT;
	p->quota = SBX_QUOTA_NONE;
	p->limits = (struct sbx_limits){.memory_bytes = SBX_DEFAULT_MEMORY, .pids = SBX_DEFAULT_PIDS,
					.cpus = SBX_DEFAULT_CPUS, .disk_bytes = SBX_DEFAULT_DISK,
					.shm_bytes = SBX_DEFAULT_SHM};
	p->auto_resume = 1;     /* E2B's autoResume default, and sbx's behaviour before the flag */

	json_object *profiles = sbx_json_obj(file, "profiles");
	json_object *po = sbx_json_obj(profiles, name);
	if (!po && named) {
		json_object_put(file);
		sbx_fail_config(err, "config", "no profile named '%s' in %s", name, path);
		sbx_profile_free(p);
		return -1;
	}
	if (po) {
		p->raw = json_object_get(po);
		if (apply_profile(p, po, err) < 0) {
			json_object_put(file);
			sbx_profile_free(p);
			return -1;
		}
	}
	json_object_put(file);

	/* Environment overrides.  SBX_BACKEND only picks a backend: it never
	 * brings an endpoint or credentials with it. */
	const char *e;
	if ((e = getenv("SBX_BACKEND")) && *e && (!p->backend || strcmp(e, p->backend))) {
		set_str(&p->backend, e);
		free(p->endpoint);
		p->endpoint = NULL;
	}
	if ((e = getenv("SBX_REDIS_URL")) && *e)
		set_str(&p->redis_url, e);
	if ((e = getenv("SBX_STATE_DIR")) && *e)
		set_str(&p->state_dir, e);
	if ((e = getenv("SBX_PREFIX")) && *e)
		set_str(&p->prefix, e);
	if (!p->state_dir)
		p->state_dir = sbx_xstrdup(geteuid() == 0 ? "/var/lib/sbx" : "/tmp/sbx-state");
	*out = p;
	return 0;
}

int sbx_profile_secret(const struct sbx_profile *p, char **out, struct sbx_err *err)
{
	*out = NULL;
	if (p->api_key_file) {
		char *s;
		size_t len;
		if (sbx_read_file(p->api_key_file, SECRET_MAX, &s, &len, err) < 0) {
			/* The path is not secret; the content never reaches a message. */
			err->exit_status = SBX_EXIT_CONFIG;
			return -1;
		}
		char *t = sbx_trim(s);
		memmove(s, t, strlen(t) + 1);
		*out = s;
		return 0;
	}
	if (p->api_key_env) {
		const char *v = getenv(p->api_key_env);
		if (!v || !*v)
			return sbx_fail_config(err, "config", "profile '%s': variable %s is not set",
					       p->name, p->api_key_env);
		char *s = sbx_xstrdup(v);
		char *t = sbx_trim(s);
		memmove(s, t, strlen(t) + 1);
		*out = s;
	}
	return 0;
}

struct strv {
	char **v;
	size_t n, cap;
};

static void strv_add(struct strv *s, const char *path)
{
	if (!path || !*path)
		return;
	char *abs;
	if (path[0] == '/') {
		abs = sbx_xstrdup(path);
	} else {
		char cwd[4096];
		if (!getcwd(cwd, sizeof(cwd)))
			return;
		abs = sbx_xasprintf("%s/%s", cwd, path);
	}
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], abs) == 0) {
			free(abs);
			return;
		}
	if (s->n + 2 > s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = sbx_xrealloc(s->v, s->cap * sizeof(char *));
	}
	s->v[s->n++] = abs;
	s->v[s->n] = NULL;
}

/* The socket path of a unix:// URL (redis or docker), without a query. */
static void strv_add_socket(struct strv *s, const char *url)
{
	if (!url || !sbx_str_starts(url, "unix://"))
		return;
	SBX_AUTOFREE char *p = sbx_xstrdup(url + strlen("unix://"));
	char *q = strchr(p, '?');
	if (q)
		*q = '\0';
	if (p[0] == '/')
		strv_add(s, p);
}

void sbx_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

int sbx_config_paths(char ***out, size_t *n, struct sbx_err *err)
{
	struct strv s = {0};
	int explicit;
	const char *path = config_path(&explicit);
	strv_add(&s, getenv("SBX_CONFIG"));
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	if (xdg && *xdg) {
		SBX_AUTOFREE char *p = sbx_xasprintf("%s/sbx/config.json", xdg);
		strv_add(&s, p);
	}
	if (home && *home) {
		SBX_AUTOFREE char *p = sbx_xasprintf("%s/.config/sbx/config.json", home);
		strv_add(&s, p);
	}
	strv_add(&s, "/etc/sbx/config.json");
	strv_add(&s, path);

	SBX_AUTOFREE char *text = NULL;
	size_t len;
	struct sbx_err ferr;
	if (sbx_read_file(path, CONFIG_MAX, &text, &len, &ferr) == 0) {
		json_object *file;
		struct sbx_err jerr = {0};
		if (sbx_json_parse_object(text, len, &file, &jerr) < 0) {
			sbx_strv_free(s.v);
			return sbx_fail_config(err, "config", "%s: not a JSON object (%s)", path, jerr.msg);
		}
		json_object *profiles = sbx_json_obj(file, "profiles");
		if (profiles && json_object_is_type(profiles, json_type_object)) {
			json_object_object_foreach(profiles, name, po) {
				(void)name;
				if (!json_object_is_type(po, json_type_object))
					continue;
				static const char *const files[] = {
					"state_dir", "api_key_file", "redis_password_file", "tls_cert_path",
				};
				for (size_t i = 0; i < SBX_ARRAY_LEN(files); i++)
					strv_add(&s, sbx_json_str(po, files[i]));
				strv_add_socket(&s, sbx_json_str(po, "redis_url"));
				strv_add_socket(&s, sbx_json_str(po, "endpoint"));
			}
		}
		json_object_put(file);
	} else if (explicit || ferr.kind != SBX_NOT_FOUND) {
		sbx_strv_free(s.v);
		*err = ferr;
		err->exit_status = SBX_EXIT_CONFIG;
		return -1;
	}
	strv_add(&s, getenv("SBX_STATE_DIR"));
	strv_add_socket(&s, getenv("SBX_REDIS_URL"));
	strv_add_socket(&s, getenv("DOCKER_HOST"));
	strv_add(&s, "/var/lib/sbx");
	strv_add(&s, "/tmp/sbx-state");
	if (!s.v)
		s.v = sbx_xcalloc(1, sizeof(char *));
	*out = s.v;
	*n = s.n;
	return 0;
}
