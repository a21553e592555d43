/* config.h - profiles: which backend, where, with which credentials.
 *
 * Sources, later wins: built-in defaults < the config file's profile <
 * environment (SBX_BACKEND, SBX_REDIS_URL, SBX_STATE_DIR) < flags.
 * The config file is $SBX_CONFIG, else $XDG_CONFIG_HOME/sbx/config.json,
 * else /etc/sbx/config.json (missing is fine unless SBX_CONFIG names it):
 *
 *   {"default_profile": "prod",
 *    "profiles": {"prod": {"backend": "e2b", "endpoint": "https://...",
 *                          "api_key_file": "/etc/sbx/e2b.key", ...}}}
 *
 * A profile is self-contained: it never inherits an endpoint or credentials
 * from another profile or from a default.  Secrets are read from a file or an
 * environment variable that the profile names; the values live only in
 * memory returned by sbx_profile_secret and never in error messages. */
#ifndef SBX_CONFIG_H
#define SBX_CONFIG_H

#include <stdint.h>
#include <json-c/json.h>

#include "err.h"

/* Resource limits of a sandbox.  A profile starts from the built-in
 * defaults (SBX_DEFAULT_*), so that no sandbox runs unlimited by accident;
 * a profile value of 0 turns one off explicitly. */
struct sbx_limits {
	int64_t memory_bytes;   /* 0 = unlimited */
	int64_t pids;           /* 0 = unlimited */
	double cpus;            /* 0 = unlimited */
	int64_t disk_bytes;     /* the sandbox's own layer; 0 = unlimited.
				 * Enforced where the file system can (local:
				 * ext4 project quotas), see sbx(7) */
	int64_t shm_bytes;      /* size of /dev/shm; 0 = the built-in default */
};

#define SBX_DEFAULT_MEMORY (1LL << 30)      /* 1 GiB */
#define SBX_DEFAULT_PIDS   1024
#define SBX_DEFAULT_CPUS   1.0
#define SBX_DEFAULT_DISK   (4LL << 30)      /* 4 GiB */

/* A tenant's quota (the profile's "quota" object; quota.h): how many of
 * the tenant's session sandboxes may run, how many may exist, paused or
 * running, and how many bytes their paused layers may hold on disk (the
 * backend measures them at sbx's pause).  -1 = no limit (the default).
 * A tenant's own override in Redis (sbx-ctl quota) wins over these. */
struct sbx_quota {
	int64_t running;
	int64_t sandboxes;
	int64_t paused_bytes;
};
#define SBX_QUOTA_NONE_INIT {.running = -1, .sandboxes = -1, .paused_bytes = -1}
#define SBX_QUOTA_NONE ((struct sbx_quota)SBX_QUOTA_NONE_INIT)
#define SBX_DEFAULT_SHM    (64LL << 20)     /* 64 MiB, like Docker's */
#define SBX_EVENTS_MAXLEN_DEFAULT 10000     /* entries of a tenant's event stream (events.h) */

#define SBX_CHECKPOINTS_KEEP_DEFAULT 20
#define SBX_AUDIT_MAXLEN_DEFAULT 100000   /* records of a tenant's audit stream (audit.h) */

/* The idle timer's action as documents and flags spell it: "pause",
 * "kill", or "hibernate": a pause that the reaper's next run hibernates
 * where the backend can (sbx-reap(1), HIBERNATION).  Sets *pause and
 * *hibernate; -1 for any other word. */
int sbx_on_timeout_parse(const char *word, int *pause, int *hibernate);
/* The word of a (pause, hibernate) pair. */
const char *sbx_on_timeout_word(int pause, int hibernate);

struct sbx_profile {
	char *name;             /* "default" when none is configured */
	char *backend;          /* "local", "docker", "e2b", "cube" */
	char *endpoint;         /* backend-specific; NULL = the backend's default */
	char *template_id;      /* base template for new sandboxes */
	char *state_dir;        /* local backend state ($SBX_STATE_DIR) */
	char *redis_url;        /* $SBX_REDIS_URL */
	char *redis_password_file;
	char *prefix;           /* Redis key prefix, default "sbx" */
	char *api_key_file;     /* secret sources (never the secret itself) */
	char *api_key_env;
	int allow_private;      /* SSRF: loopback and private ranges allowed */
	int allow_internet;     /* egress; default 0 */
	int allow_public;       /* inbound by URL; default 0 */
	/* redis_nodes: the Redis nodes (CIDRs, canonical as sbx_config_cidrs)
	 * that a cluster's CLUSTER SLOTS or MOVED/ASK, or a sentinel, may
	 * name besides the URL's own hosts; only those are connected to and
	 * get the password.  NULL-terminated; NULL when the profile has none. */
	char **redis_nodes;
	struct sbx_limits limits;
	int64_t idle_timeout_ms;  /* idle timer; 0 = never */
	int on_timeout_pause;     /* 1 = pause when idle, 0 = kill */
	int on_timeout_hibernate; /* with on_timeout_pause: the idle pause is
				   * then hibernated (sbx_on_timeout_parse) */
	int64_t hibernate_paused_ms; /* a paused session sandbox is hibernated
				   * this long after its pause (the reaper);
				   * 0 = never */
	int auto_resume;
	int64_t events_maxlen;    /* the event stream's length (events.h); 0 = no events */
	int64_t audit_maxlen;     /* the audit stream's length (audit.h); 0 = no record */
	int64_t audit_max_age_ms; /* records older than this are trimmed; 0 = by length only */
	int audit_required;       /* audit: required (egress refused while its record
				   * cannot be kept) rather than best-effort (drops counted) */
	struct sbx_quota quota;   /* per tenant; -1 = no limit (quota.h) */
	int64_t retain_paused_ms; /* a paused session sandbox is ended this long
				   * after its pause (the reaper); 0 = kept */
	int64_t checkpoints_keep; /* the last this many checkpoints of a session
				   * are kept (the reaper collects older ones);
				   * 0 = every one */
	json_object *raw;       /* the profile object as configured (may be NULL);
				 * "env" there: variables for every sandbox it creates */
	/* The keys a backend owns are not here: the backend parses them into
	 * a struct of its own (backend.h config_load, sbx_backend_configure),
	 * kept here for it until the profile is freed. */
	int configured;                   /* sbx_backend_configure ran */
	const void *backend_conf_of;      /* the ops that parsed backend_conf */
	void *backend_conf;
	void (*backend_conf_free)(void *conf);
};

/* Load `name` (NULL: $SBX_PROFILE, else the file's default_profile, else
 * "default").  A named profile that does not exist is a configuration error
 * (exit 78); the implicit "default" may be absent (built-in defaults). */
int sbx_config_load(const char *name, struct sbx_profile **out, struct sbx_err *err);
void sbx_profile_free(struct sbx_profile *p);
/* Whether `key` is one of the profile keys every backend shares (the
 * others belong to a backend: backend.h config_keys). */
int sbx_config_key(const char *key);
/* The profile object's list `key` of CIDRs into *out, NULL-terminated, in
 * canonical text ("10.1.0.0/16", "fd00::/64": inet_ntop + "/LEN"); absent:
 * *out stays NULL.  Anything but an array of CIDRs (ADDR/LEN, no host bits
 * set) is a configuration error naming profile `name` and the entry.  For
 * redis_nodes here and any backend's own lists (local's egress_allow). */
int sbx_config_cidrs(const char *name, json_object *o, const char *key, char ***out,
		     struct sbx_err *err);
/* A backend's egress keys of the profile object: egress_resolver (an
 * IPv4 address, else a configuration error; absent: *resolver NULL) and
 * egress_allow (sbx_config_cidrs).  Local's and docker's. */
int sbx_config_egress(const char *name, json_object *o, char **resolver, char ***allow,
		      struct sbx_err *err);
/* Read the profile's API key (from api_key_file or the variable named by
 * api_key_env).  *out is heap memory the caller must wipe and free;
 * *out = NULL when the profile names no secret. */
int sbx_profile_secret(const struct sbx_profile *p, char **out, struct sbx_err *err);
/* Free a secret after overwriting it. */
void sbx_secret_free(char *s);

/* Every host path the configuration names, whichever profile is in use:
 * the config file candidates ($SBX_CONFIG, the XDG and $HOME ones,
 * /etc/sbx/config.json), and for *every* profile of the file its
 * state_dir, api_key_file, redis_password_file, tls_cert_path and the
 * socket of a unix:// redis_url or endpoint; then the environment's
 * overrides (SBX_STATE_DIR, SBX_REDIS_URL, DOCKER_HOST) and the default
 * state dirs.  Paths are absolute (a relative one is taken from the
 * current directory) and may not exist.  A config file that exists but
 * cannot be read or parsed is an error: the caller cannot know what to
 * hide.  *out is a NULL-terminated array; free it with sbx_strv_free. */
int sbx_config_paths(char ***out, size_t *n, struct sbx_err *err);
void sbx_strv_free(char **v);

#endif
