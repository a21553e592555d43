/* backend.h - the one interface every backend implements.
 *
 * Programs talk to a `struct sbx_backend` and never know which one it is.
 * A backend advertises what it can do (sbx_caps); a missing capability is
 * an `unsupported` error, never a silent no-op.  Every call returns -1 with
 * `err` filled on failure; `not_found` means the object does not exist
 * (delete of a missing object is NOT an error: it returns 0 and sets
 * *gone = 1 where the signature has it).
 *
 * Handles: `struct sbx_sandbox` is the in-memory form of the document's
 * `sandbox` object (sandbox.c converts both ways); `extra` carries
 * backend-private fields that later stages need, passed through verbatim. */
#ifndef SBX_BACKEND_H
#define SBX_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "config.h"
#include "err.h"

/* The states every backend shares, and all the generic code decides by. */
enum sbx_state {
	SBX_STATE_UNKNOWN = 0,
	SBX_STATE_RUNNING,
	SBX_STATE_PAUSED,
	SBX_STATE_TRANSITIONING,
	SBX_STATE_TERMINAL,      /* gone for good: killed, stopped, failed */
};
const char *sbx_state_name(enum sbx_state s);
/* A generic state's name; SBX_STATE_UNKNOWN for any other word. */
enum sbx_state sbx_state_from_name(const char *s);

/* A state a backend has beyond the generic ones (its vtable's
 * state_words): the word documents show, and the generic state the code
 * above the vtable takes it for (local's "dead" is terminal: replaceable;
 * its "stopped" running: live, the next command continues it). */
struct sbx_state_word {
	const char *name;
	enum sbx_state is;
};
/* Whether a compiled-in backend has state `name`; *is = what it counts as. */
int sbx_state_word_find(const char *name, enum sbx_state *is);

struct sbx_sandbox {
	char *id;
	char *backend;
	char *profile;
	char *template_id;
	char *tenant;            /* NULL when not a session sandbox */
	char *session;
	enum sbx_state state;
	char *state_word;        /* the backend's own word for the state, finer
				  * than `state` (one of its state_words: local
				  * "dead"); NULL: the generic state's name */
	json_object *metadata;   /* object: string -> string (owned) */
	int64_t created_at;      /* unix seconds */
	int64_t active_at;       /* unix seconds of its last recorded use; 0 = the
				  * backend does not know (never retired as idle) */
	json_object *extra;      /* backend-private (owned, may be NULL) */
};
void sbx_sandbox_clear(struct sbx_sandbox *sb);          /* frees fields */
/* The state as documents show it: state_word, else the generic name. */
const char *sbx_sandbox_state(const struct sbx_sandbox *sb);
/* The document form: {"id","backend",...,"created_at": ISO-8601, extra...}. */
json_object *sbx_sandbox_to_json(const struct sbx_sandbox *sb);
/* From a document's `sandbox` object; needs at least "id". */
int sbx_sandbox_from_json(json_object *o, struct sbx_sandbox *sb, struct sbx_err *err);

#define SBX_HIBERNATE_IF_PAUSED 1u   /* hibernate's flags */

struct sbx_timeout_policy {
	int64_t seconds;         /* idle seconds; 0 = never */
	int on_timeout_pause;    /* 1 pause, 0 kill */
	int on_timeout_hibernate; /* with on_timeout_pause: the reaper's next
				  * run hibernates the idle pause (reap.h) */
	int auto_resume;         /* a paused sandbox resumes on the next command;
				  * set_timeout: -1 keeps the sandbox's setting */
};

struct sbx_netpolicy;
struct sbx_network {
	int allow_internet;      /* always sent explicitly */
	int allow_public;
	json_object *allow_out;  /* array of CIDR/domain strings, or NULL */
	json_object *deny_out;
	/* The egress policy (netpolicy.h), or NULL for none: egress is then
	 * allow_internet alone.  A backend that cannot enforce it refuses
	 * the create (unsupported); one with a policy implies egress on. */
	struct sbx_netpolicy *policy;
	/* Headers set on the intercepted HTTPS requests to a name, replacing
	 * the sandbox's own (E2B's network.rules transforms, as sbx-serve
	 * checked them: sbx_egress_headers_from_e2b): an array of {"to",
	 * "header", "value"}, a value perhaps holding ${e2b.secrets.NAME} of
	 * the profile's egress_secrets; NULL none.  Local and docker only,
	 * with a broker; the values never enter the sandbox or its record. */
	json_object *headers;
};

/* A tenant's volume (volume.h) mounted at create.  The backend binds
 * host_dir at path (absolute, the one path rule's spelling), nodev and
 * nosuid, and read-only when read_only, so that no process inside, root
 * included, can write it or remount it otherwise. */
struct sbx_vol_mount {
	const char *name;
	const char *host_dir;    /* NULL when remote is set */
	const char *path;
	int read_only;
	const char *remote;      /* the service's volume (volume_make), or NULL */
};
#define SBX_VOLUMES_MAX 16       /* per sandbox */

struct sbx_create_req {
	const char *template_id; /* NULL = the profile's template */
	struct sbx_timeout_policy timeout;
	json_object *metadata;   /* string -> string, may be NULL */
	json_object *env;        /* string -> string, may be NULL */
	struct sbx_network net;
	struct sbx_limits limits;
	const struct sbx_vol_mount *volumes;   /* SBX_CAP_VOLUMES; may be NULL */
	size_t nvolumes;
	int disk_required;       /* limits.disk_bytes was asked for explicitly:
				  * unsupported where it cannot be enforced
				  * (a profile's default is best effort) */
};

struct sbx_exec_req {
	char *const *argv;       /* NULL-terminated; argv[0] looked up in PATH */
	const char *stdin_data;  /* NULL = no stdin (EOF) */
	size_t stdin_len;
	char *const *env;        /* "KEY=VALUE" entries added to the default env */
	const char *cwd;         /* NULL = /workspace */
	int as_root;             /* else uid/gid 1000 */
	int64_t timeout_ms;      /* 0 = none; kills the whole process tree */
	size_t output_cap;       /* per stream; 0 = default 1 MiB */
	int raw_out_fd;          /* >= 0: stream stdout here instead of capturing */
	int raw_err_fd;          /* >= 0: stream stderr here */
	int raw_in_fd;           /* >= 0: stdin from this fd instead of stdin_data */
	/* A pseudo-terminal (SBX_CAP_TTY; the fields below count only with
	 * tty set).  The command's stdin, stdout and stderr are the slave of
	 * a pty made inside the sandbox, its controlling terminal, in a
	 * session of its own; the terminal's signals (Ctrl-C, Ctrl-Z) reach
	 * its foreground process group.  The master's output goes to
	 * raw_out_fd (else it is captured as stdout; stderr is empty), and
	 * raw_in_fd's bytes (else stdin_data) go to the master unchanged;
	 * at their end the terminal's EOF character (Ctrl-D) is sent once.
	 * The caller's own terminal (raw mode, restoring it) is the
	 * caller's business. */
	int tty;
	unsigned tty_cols, tty_rows;  /* the size at start; 0 = 80x24 */
	int tty_size_fd;         /* >= 0: a stream of struct sbx_tty_size
				  * records (a pipe the caller writes on
				  * SIGWINCH), each one a resize; -1 = none */
};

/* One resize on sbx_exec_req.tty_size_fd (host byte order). */
struct sbx_tty_size {
	uint16_t cols, rows;
};

struct sbx_exec_result {
	int exit_code;           /* -1 when killed by the timeout or a signal */
	int signal;              /* terminating signal, 0 if none */
	int timed_out;
	char *out, *err;         /* captured (NUL-terminated), NULL in raw mode */
	size_t out_len, err_len;
	int out_truncated, err_truncated;
	int64_t duration_ms;
};
void sbx_exec_result_clear(struct sbx_exec_result *r);

enum sbx_ftype { SBX_FT_FILE, SBX_FT_DIR, SBX_FT_SYMLINK, SBX_FT_OTHER };
const char *sbx_ftype_name(enum sbx_ftype t);

struct sbx_dirent {
	char *name;
	char *path;              /* absolute, inside the sandbox */
	enum sbx_ftype type;
	int64_t size;
	int64_t mtime;           /* unix seconds */
	unsigned mode;           /* permission bits */
	unsigned uid, gid;
	char *link_target;       /* symlinks only */
};
void sbx_dirents_free(struct sbx_dirent *e, size_t n);

struct sbx_snapshot_ref {
	char *id;                /* usable as a template id */
	char *name;
	char *parent;            /* the template it was taken over, if known */
	int64_t created_at;
	int64_t size_bytes;      /* -1 unknown */
	int layers;              /* -1 unknown */
};
void sbx_snapshot_refs_free(struct sbx_snapshot_ref *r, size_t n);

struct sbx_template {
	char *id;
	char *name;
	char *kind;              /* "builtin", "rootfs", "image", "snapshot"... */
	int64_t created_at;
	int64_t size_bytes;
};
void sbx_templates_free(struct sbx_template *t, size_t n);

/* The document shapes of these values (sandbox.c), one function each, for
 * every program that writes one.  Each adds its fields to `o`, replacing
 * keys of the same name, so that a result object can carry them beside its
 * own (sbx-fs stat's path, a snapshot's duration_ms).  Fields the backend
 * does not know (NULL, -1; a time of 0) are left out unless noted.
 *
 * dirent: {name, path, type, size, mtime (ISO-8601), mode ("0644"), uid,
 * gid, link_target}; name, path and link_target come from inside the
 * sandbox, so each is bytes (doc.h: "<key>_base64" when not UTF-8), and
 * mtime is always written.
 * snapshot: {id, name (the id when it has none), parent, layers,
 * size_bytes, created_at}; its size part alone (layers, size_bytes) for
 * views that name the snapshot otherwise (the skill image).
 * template: {id, name (or the id), kind ("unknown" when none), backend,
 * created_at, size_bytes}. */
void sbx_dirent_json(const struct sbx_dirent *e, json_object *o);
void sbx_snapshot_ref_json(const struct sbx_snapshot_ref *r, json_object *o);
void sbx_snapshot_size_json(const struct sbx_snapshot_ref *r, json_object *o);
void sbx_template_json(const struct sbx_template *t, const char *backend, json_object *o);

/* A listing filter: every metadata pair must match; states is a bitmask of
 * (1 << enum sbx_state), 0 = any (a backend's own state matches the bit
 * of the generic state it counts as). */
struct sbx_list_filter {
	json_object *metadata;
	unsigned states;
};

/* One page of a listing.  `next` is the page token to pass back (NULL when
 * the listing is complete).  Backends that list everything at once return a
 * single page. */
struct sbx_page {
	struct sbx_sandbox *items;
	size_t n;
	char *next;
};
void sbx_page_clear(struct sbx_page *p);

enum sbx_cap {
	SBX_CAP_EXEC        = 1 << 0,
	SBX_CAP_FILES       = 1 << 1,
	SBX_CAP_PAUSE       = 1 << 2,    /* memory-preserving pause/resume */
	SBX_CAP_SNAPSHOTS   = 1 << 3,
	SBX_CAP_METADATA    = 1 << 4,    /* metadata stored and filterable */
	SBX_CAP_LIST        = 1 << 5,
	SBX_CAP_TEMPLATES   = 1 << 6,
	SBX_CAP_TIMEOUT     = 1 << 7,    /* set_timeout */
	SBX_CAP_NETPOLICY   = 1 << 8,
	SBX_CAP_INBOUND_TOKEN = 1 << 9,
	SBX_CAP_IDLE_KILL   = 1 << 10,   /* idle sandboxes are killed, not paused */
	SBX_CAP_INSTALL     = 1 << 11,   /* exec as root */
	SBX_CAP_PROCESS     = 1 << 12,   /* detached processes: proc_* below */
	SBX_CAP_FLATTEN     = 1 << 13,   /* snapshot_flatten: one layer instead of a chain */
	SBX_CAP_TEMPLATE_IMPORT = 1 << 14, /* template_import from a rootfs */
	SBX_CAP_TIMEOUT_POLICY = 1 << 15, /* set_timeout also changes the idle
					   * action and auto-resume (E2B fixes
					   * them at create) */
	SBX_CAP_HOST_LOCAL  = 1 << 16,   /* sandboxes live on the host that made them (host.h) */
	SBX_CAP_VOLUMES     = 1 << 17,   /* create mounts a tenant's volumes (sbx_vol_mount) */
	SBX_CAP_TTY         = 1 << 18,   /* exec with a pseudo-terminal (sbx_exec_req.tty) */
	/* Derived by sbx_backend_caps from SBX_CAP_SNAPSHOTS, never set by a
	 * backend: a session's checkpoints and rewind (checkpoint.h; the
	 * cost of what changed where the backend has checkpoint_create), and
	 * forks (a session's, sbx-serve's E2B fork). */
	SBX_CAP_CHECKPOINT  = 1 << 19,
	SBX_CAP_FORK        = 1 << 20,
	/* Never set by ops->caps (which every resolve reads): only `sbx-ctl
	 * caps` asks sbx_backend_hibernate_check, which may run a probe
	 * (local: `criu check`, cached). */
	SBX_CAP_HIBERNATE   = 1 << 21,
};
/* Names for documents and `sbx-ctl caps`: {"exec": true, ...}. */
json_object *sbx_caps_to_json(unsigned caps);

/* ---- Detached processes (SBX_CAP_PROCESS) ----
 *
 * A process started with proc_start outlives the call and the caller: it
 * runs until it exits, is signalled, or its sandbox is removed.  Its
 * output (stdout and stderr apart) is kept by the backend in bounded
 * files that nothing inside the sandbox can write, and read from any
 * offset with proc_output; its exit status is kept after it exits, until
 * a later process takes its pid or the backend's bound on kept records
 * drops it (local: at least the 64 latest exited processes).  A process started before a pause is
 * still there after the resume (E2B semantics): listed, taking stdin,
 * signalled, its output followed.  Every proc_* call resumes a paused
 * sandbox the way exec does (auto-resume, unless the sandbox forbids it:
 * conflict).
 *
 * Identity: a process is named by its pid in the sandbox's pid namespace
 * (what `ps` inside shows, and what E2B's process.Process calls `pid`),
 * or by the tag given at start.  A tag is unique among the sandbox's
 * running processes (start with a tag in use: conflict).  An unknown pid
 * or tag is not_found.
 *
 * Users: as_root = 0 acts as uid 1000, which may signal, write to and
 * close the stdin of its own processes only (root's: invalid_request,
 * "operation not permitted", as kill(2) would say); listing and reading
 * output are open to both users. */
struct sbx_proc_req {
	char *const *argv;       /* NULL-terminated; argv[0] looked up in PATH */
	char *const *env;        /* "KEY=VALUE" added to the default env (as exec) */
	const char *cwd;         /* NULL = /workspace; must exist (else
				  * invalid_request and nothing started) */
	int as_root;             /* else uid/gid 1000 */
	int keep_stdin;          /* stdin stays open for proc_input until closed;
				  * else stdin is /dev/null */
	const char *tag;         /* optional: 1 to 256 bytes, any text */
	int64_t timeout_ms;      /* 0 = none; else SIGKILL of the process tree at
				  * expiry (E2B's Connect-Timeout-Ms on Start) */
	/* A terminal (a backend without it: unsupported): stdio is the slave
	 * of a pty made inside the sandbox, as exec's tty; its output is the
	 * stdout stream (stderr stays empty), proc_input writes keys (stdin
	 * is kept open whatever keep_stdin says), proc_resize sets its size,
	 * and proc_claim makes one caller its one writer. */
	int tty;
	unsigned tty_cols, tty_rows;  /* 0 = 80x24 */
};

/* Selects one process: pid > 0, else tag. */
struct sbx_proc_sel {
	int pid;
	const char *tag;
};

struct sbx_proc_info {
	int pid;                 /* in the sandbox's pid namespace */
	char **argv;             /* NULL-terminated (owned) */
	char **env;              /* the "KEY=VALUE" the request added (owned) */
	char *cwd;
	char *tag;               /* NULL when none */
	int as_root;
	int running;             /* 0: exited, see exit_code/signal */
	int exit_code;           /* -1 when killed by a signal */
	int signal;              /* the terminating signal, 0 if none */
	int timed_out;           /* killed at its timeout_ms */
	int stdin_open;          /* proc_input can still write */
	int tty;                 /* started with a terminal */
	int attached;            /* a terminal someone holds the claim of */
	int64_t started_at;      /* unix milliseconds */
	int64_t ended_at;        /* unix milliseconds, 0 while running */
	int64_t out_end, err_end;     /* bytes written so far: the offset the
				       * next byte of each stream will have */
	int64_t out_start, err_start; /* first offset still kept (bounded files
				       * drop the oldest output first) */
};
/* Their destructors, and the record format backends share: proc.h. */

enum { SBX_PROC_TICK = 0, SBX_PROC_STDOUT = 1, SBX_PROC_STDERR = 2 };

/* Where proc_output starts and whether it waits. */
struct sbx_proc_attach {
	int64_t out_offset;      /* first byte wanted; -1 = only output written
				  * after the attach (E2B Connect); an offset
				  * already dropped starts at the first kept */
	int64_t err_offset;
	int follow;              /* wait for more output until the process ends */
	int tick_ms;             /* follow: call the sink with SBX_PROC_TICK after
				  * this long without output (keepalive, checking
				  * for a client gone); 0 = never */
};

/* Receives output in order per stream (the two streams interleave as they
 * were read, not as they were written).  `offset` is the stream offset of
 * data[0]; a jump between calls is output that was dropped.  Return 0 to
 * go on, anything else to stop attaching (proc_output then returns 0 with
 * the process's state as it is, running or not). */
typedef int (*sbx_proc_sink)(void *ctx, int stream, const char *data, size_t len,
			     int64_t offset);

struct sbx_backend;

struct sbx_store_gc;

/* One thing a sandbox's idle timer did (the vtable's idle_notes). */
struct sbx_idle_note {
	int resumed;            /* 0: paused by the idle timer; 1: resumed on use */
	int64_t at_ms;          /* unix ms */
	char awake_by[16];      /* paused: what last kept it awake ("" unknown) */
};

struct sbx_backend_ops {
	const char *name;        /* "local", "docker", ... */
	/* The profile keys this backend owns, NULL-terminated (NULL: none),
	 * beside the ones every backend shares (config.c).  config_load, when
	 * present, parses them out of the profile object `o` (NULL when the
	 * profile is not in the file) into a struct of the backend's own,
	 * *conf (freed by config_free; NULL is fine), which the backend reads
	 * back with sbx_backend_conf.  Its errors are configuration errors
	 * (exit 78).  Called once per loaded profile whose backend this is
	 * (sbx_backend_configure), before open. */
	const char *const *config_keys;
	int (*config_load)(const struct sbx_profile *p, json_object *o, void **conf,
			   struct sbx_err *err);
	void (*config_free)(void *conf);
	/* The states this backend has beyond the generic ones, ended by a
	 * NULL name (NULL: none).  Its handles carry the word in state_word
	 * and the generic state it counts as in state. */
	const struct sbx_state_word *state_words;
	int (*open)(struct sbx_backend *b, struct sbx_err *err);
	void (*close)(struct sbx_backend *b);
	unsigned (*caps)(struct sbx_backend *b);
	int (*health)(struct sbx_backend *b, struct sbx_err *err);
	/* Optional: how this backend enforces limits here, for `sbx-ctl caps`
	 * (local: {"cgroup": "v2"|"v1", "cgroup_parent": ..., "disk_quota":
	 * ...}).  A new object, or NULL. */
	json_object *(*limits_info)(struct sbx_backend *b);
	/* The fingerprint inputs (provider, key, url) for skill images. */
	int (*fingerprint)(struct sbx_backend *b, char out[65], struct sbx_err *err);

	int (*create)(struct sbx_backend *b, const struct sbx_create_req *req,
		      struct sbx_sandbox *out, struct sbx_err *err);
	/* Make the sandbox usable (resume if paused) and refresh *sb. */
	int (*connect)(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);
	/* Look a sandbox up by id without touching it; not_found when gone. */
	int (*get)(struct sbx_backend *b, const char *id, struct sbx_sandbox *out,
		   struct sbx_err *err);
	int (*list)(struct sbx_backend *b, const struct sbx_list_filter *f,
		    const char *page_token, struct sbx_page *out, struct sbx_err *err);
	int (*remove)(struct sbx_backend *b, const char *id, int *gone, struct sbx_err *err);
	int (*pause)(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);
	/* Optional: the bytes a pause of the sandbox would hold, measured
	 * now, before the pause (the tenant's paused_bytes quota, quota.h).
	 * NULL: this backend cannot measure them; sbx then refuses a pause
	 * under a paused_bytes quota (unsupported).  Local: the allocated
	 * bytes of its writable layer. */
	int (*paused_bytes)(struct sbx_backend *b, struct sbx_sandbox *sb, int64_t *bytes,
			    struct sbx_err *err);
	/* Optional: 0 when this backend can hibernate sandboxes on this host
	 * (their processes and memory to disk, the memory freed, back with
	 * the same processes on resume); else -1 with `unsupported` and why.
	 * May be slow the first time (local: `criu check`, then cached).
	 * NULL: the backend cannot (sbx_backend_hibernate_check says so). */
	int (*hibernate_check)(struct sbx_backend *b, struct sbx_err *err);
	/* Optional, only where hibernate_check passes: hibernate the sandbox
	 * (a paused state, "hibernated"; a resume or the next command
	 * restores it).  Local only (docs/local.md, Hibernate).  With
	 * SBX_HIBERNATE_IF_PAUSED only a paused sandbox is, checked where a
	 * resume on use cannot slip in between (a running one: conflict),
	 * so the reaper never takes a sandbox that a command just woke. */
	int (*hibernate)(struct sbx_backend *b, struct sbx_sandbox *sb, unsigned flags,
			 struct sbx_err *err);
	int (*set_timeout)(struct sbx_backend *b, struct sbx_sandbox *sb,
			   const struct sbx_timeout_policy *t, struct sbx_err *err);
	/* Replace a running or paused sandbox's egress policy, atomically:
	 * new connections and lookups see it at once (sbx-ctl network). */
	int (*set_network)(struct sbx_backend *b, struct sbx_sandbox *sb,
			   const struct sbx_netpolicy *p, struct sbx_err *err);

	int (*exec)(struct sbx_backend *b, struct sbx_sandbox *sb, const struct sbx_exec_req *req,
		    struct sbx_exec_result *res, struct sbx_err *err);

	/* Files.  Paths are absolute inside the sandbox, and reach a backend
	 * in the normal spelling of the one path rule (path.h: callers go
	 * through sbx_file_*, which refuse "..", relative and over-long paths
	 * before the backend is called); the backend confines what they
	 * resolve to (no escape through symlinks or races).  as_root = 0 acts
	 * with uid 1000's permissions, reads included: what the sandbox user
	 * cannot read (directly or through a symlink it planted) is refused. */
	int (*file_write)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
			  const void *data, size_t len, unsigned mode, int as_root,
			  struct sbx_err *err);
	int (*file_read)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
			 size_t max, int as_root, char **data, size_t *len, struct sbx_err *err);
	int (*file_list)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
			 int as_root, struct sbx_dirent **out, size_t *n, struct sbx_err *err);
	int (*file_stat)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
			 int as_root, struct sbx_dirent *out, struct sbx_err *err);
	int (*file_mkdir)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
			  unsigned mode, int as_root, struct sbx_err *err);
	int (*file_remove)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
			   int recursive, int as_root, struct sbx_err *err);
	int (*file_move)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *from,
			 const char *to, int as_root, struct sbx_err *err);
	/* Trees as tar streams (ustar/pax, see tar.h): extract `fd`'s tar
	 * under `dir` / write `path` as a tar to `fd`: one top entry named by
	 * its final component, or, when `path` ends in "/.", the folder's
	 * contents. */
	int (*tar_put)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *dir, int fd,
		       int as_root, struct sbx_err *err);
	int (*tar_get)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path, int fd,
		       int as_root, struct sbx_err *err);

	/* Snapshots: taken from a running sandbox, which keeps running. */
	/* Volumes the service keeps (a backend whose sandboxes run
	 * elsewhere; NULL: a volume is a host folder, host_dir).  After
	 * volume_make the service's volume `remote` exists (one already there
	 * is fine); after volume_drop it does not (a missing one is fine, one
	 * in use is conflict).  Create mounts them by sbx_vol_mount.remote. */
	int (*volume_make)(struct sbx_backend *b, const char *remote, struct sbx_err *err);
	int (*volume_drop)(struct sbx_backend *b, const char *remote, struct sbx_err *err);
	int (*snapshot_create)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
			       struct sbx_snapshot_ref *out, struct sbx_err *err);
	/* Optional (NULL: callers take snapshot_create instead): a snapshot
	 * of a running sandbox for a session's history of checkpoints
	 * (checkpoint.h), which keeps running.  `prev` is the session's
	 * previous checkpoint (NULL: none).  When prev was taken of this same
	 * sandbox, the new snapshot is prev's stack plus one layer of what
	 * changed since prev (its cost in time and disk is what changed), and
	 * out->size_bytes counts that layer only; otherwise it is a plain
	 * snapshot of the sandbox.  The sandbox is frozen no longer than a
	 * snapshot's second pass.  *taken_at_ns: the moment the state was
	 * taken (realtime ns).  A crash leaves no record (the work is
	 * collected by store_gc) and may leave the sandbox paused. */
	int (*checkpoint_create)(struct sbx_backend *b, struct sbx_sandbox *sb, const char *prev,
				 const char *name, struct sbx_snapshot_ref *out,
				 int64_t *taken_at_ns, struct sbx_err *err);
	int (*snapshot_list)(struct sbx_backend *b, const char *page_token,
			     struct sbx_snapshot_ref **out, size_t *n, char **next,
			     struct sbx_err *err);
	int (*snapshot_delete)(struct sbx_backend *b, const char *id, int *gone,
			       struct sbx_err *err);
	/* Merge the layer stack of snapshot/template `id` into one new
	 * snapshot named `name` (NULL: "<id>-flat"); the source is untouched
	 * and no longer referenced by the result.  Absent: unsupported. */
	int (*snapshot_flatten)(struct sbx_backend *b, const char *id, const char *name,
				struct sbx_snapshot_ref *out, struct sbx_err *err);
	/* Reclaim what crashed image work left in a store the backend keeps
	 * itself (work directories of dead snapshots and imports, layers no
	 * record names; a live one's work is never touched).  dry_run only
	 * counts.  Absent (the engine keeps its own store): unsupported. */
	int (*store_gc)(struct sbx_backend *b, int dry_run, struct sbx_store_gc *out,
			struct sbx_err *err);

	/* Templates: never include snapshots. */
	int (*template_list)(struct sbx_backend *b, struct sbx_template **out, size_t *n,
			     struct sbx_err *err);
	int (*template_get)(struct sbx_backend *b, const char *id, struct sbx_template *out,
			    struct sbx_err *err);
	/* Import from a tar stream on fd, or from a host folder (dir != NULL). */
	int (*template_import)(struct sbx_backend *b, const char *name, int fd, const char *dir,
			       struct sbx_template *out, struct sbx_err *err);
	int (*template_delete)(struct sbx_backend *b, const char *id, int *gone,
			       struct sbx_err *err);

	/* Detached processes (see "Detached processes" above).
	 *
	 * proc_start: the process is running (or has already exited) when
	 * this returns 0; *out describes it.  A command that cannot be
	 * exec'd still starts and exits 127 (not found) or 126, with the
	 * reason on its stderr, as exec reports it.  A crash of the caller
	 * at any point leaves either no process or a supervised one.
	 *
	 * proc_list: every process started with proc_start whose record is
	 * kept (running ones, and exited ones until their pid is reused),
	 * oldest first.
	 *
	 * proc_signal: send `sig` to the process (not its group).  An exited
	 * process: not_found only if its record is gone; else 0 and nothing
	 * is sent (the pid is never signalled once the process is reaped).
	 *
	 * proc_input: write all of data to its stdin (blocking while the
	 * pipe is full, up to 10 s: then timeout), then close stdin when
	 * `close_stdin`.  len 0 with close_stdin only closes.  A process
	 * started without keep_stdin, or whose stdin is closed: conflict.
	 *
	 * proc_output: feed the kept output from the attach offsets to
	 * `sink`; with follow, go on until the process has exited and its
	 * output is drained (or the sink stops).  *end gets the process's
	 * state at return (end->running = 0 after its exit). */
	int (*proc_start)(struct sbx_backend *b, struct sbx_sandbox *sb,
			  const struct sbx_proc_req *req, struct sbx_proc_info *out,
			  struct sbx_err *err);
	int (*proc_list)(struct sbx_backend *b, struct sbx_sandbox *sb,
			 struct sbx_proc_info **out, size_t *n, struct sbx_err *err);
	int (*proc_signal)(struct sbx_backend *b, struct sbx_sandbox *sb,
			   const struct sbx_proc_sel *sel, int sig, int as_root,
			   struct sbx_err *err);
	int (*proc_input)(struct sbx_backend *b, struct sbx_sandbox *sb,
			  const struct sbx_proc_sel *sel, const void *data, size_t len,
			  int close_stdin, int as_root, struct sbx_err *err);
	int (*proc_output)(struct sbx_backend *b, struct sbx_sandbox *sb,
			   const struct sbx_proc_sel *sel, const struct sbx_proc_attach *a,
			   sbx_proc_sink sink, void *ctx, struct sbx_proc_info *end,
			   struct sbx_err *err);
	/* Terminals (a process started with tty; another: conflict).
	 * proc_resize: set its size (the foreground group inside gets
	 * SIGWINCH).  proc_claim: become its one writer: *hold is an fd
	 * whose close (or our exit, kill -9 included) gives the claim up;
	 * conflict while another caller holds it.  The process shows
	 * `attached` while the claim is held.  Both act as as_root's user
	 * may (proc_signal's rule). */
	int (*proc_resize)(struct sbx_backend *b, struct sbx_sandbox *sb,
			   const struct sbx_proc_sel *sel, unsigned cols, unsigned rows,
			   int as_root, struct sbx_err *err);
	int (*proc_claim)(struct sbx_backend *b, struct sbx_sandbox *sb,
			  const struct sbx_proc_sel *sel, int as_root, int *hold,
			  struct sbx_err *err);

	/* Backends whose idle policy is kill (SBX_CAP_IDLE_KILL): delete the
	 * sandboxes idle past their timeout, re-checking each right before
	 * deleting.  What the backend cannot see itself (a turn lease) it
	 * asks b->idle_seen.  Adds {"id", "idle_seconds", "deleted"} objects
	 * to the `report` array, with "awake_by" (sbx(7) IDLE: "exec",
	 * "process", "lease") for one past its timeout that something kept
	 * awake.  NULL when the backend pauses instead. */
	int (*reap_idle)(struct sbx_backend *b, int dry_run, json_object *report,
			 struct sbx_err *err);

	/* A turn lease on the sandbox's session is held until `until_ms`
	 * (unix ms; 0: it ended now): the idle timer does not fire before
	 * then, and counts from the lease's end afterwards.  The deadline is
	 * the lease's TTL, so a holder that never ends it keeps the sandbox
	 * no longer than Redis keeps the lease.  Never resumes a sandbox.
	 * NULL when the backend's idle timer cannot see leases. */
	int (*hold)(struct sbx_backend *b, const char *id, int64_t until_ms,
		    struct sbx_err *err);

	/* Take, and forget, what the sandbox's own idle timer did while no
	 * program with Redis watched: its idle pauses and its resumes on use
	 * (a command on a paused sandbox), oldest first; *out malloc'd (NULL
	 * when none).  Each is handed out once: a crash between the take and
	 * the caller's event loses it (an event may be lost, never invented).
	 * NULL when the backend's timer is the caller's own (docker). */
	int (*idle_notes)(struct sbx_backend *b, const char *id, struct sbx_idle_note **out,
			  size_t *n, struct sbx_err *err);
	/* The host folder where the sandbox's helpers (the egress broker)
	 * spool audit records (spool.h), malloc'd into *dir; *dir NULL when
	 * it has none.  A program with Redis takes them (audit.h).  NULL
	 * when the backend has no such helper. */
	int (*audit_dir)(struct sbx_backend *b, const char *id, char **dir, struct sbx_err *err);
	/* Before a take of that spool: move the records the backend's helpers
	 * keep elsewhere (docker: its supervisors' process ends, inside the
	 * container) into it.  Never resumes a paused sandbox.  NULL: none. */
	int (*audit_collect)(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);
};

/* What keeps a sandbox awake that its backend cannot see: a held turn
 * lease, which is Redis's (lease.h, sbx_turn_idle_seen).  A program that
 * has Redis sets it on its backend (sbx_backend.idle_seen); a backend whose
 * idle timer is its own sweep (docker's reap_idle) asks it about each
 * session sandbox, at the first look and again right before the delete.
 * `awake` answers 1 (held: "lease"), 0 (not) or -1 (cannot tell: the
 * sandbox is kept).  A sweep that has no idle_seen does not judge session
 * sandboxes at all (one that ran past a held lease would cut a turn). */
struct sbx_idle_seen {
	int (*awake)(void *ctx, const char *tenant, const char *session);
	void *ctx;
};

struct sbx_backend {
	const struct sbx_backend_ops *ops;
	struct sbx_profile *profile;   /* borrowed; outlives the backend */
	void *priv;
	const struct sbx_idle_seen *idle_seen;  /* borrowed; NULL: none */
};

/* Check a loaded profile's keys and let its backend parse its own
 * (config_load, into p->backend_conf).  A key that neither config.c nor
 * any compiled-in backend owns is refused, naming it (a typo in a
 * security switch must not leave the default in place); a key another
 * backend owns is accepted and left alone, so a profile still loads when
 * SBX_BACKEND picks another backend for it.  Idempotent: sbx_app_use calls
 * it right after sbx_config_load (so every program refuses a bad profile),
 * sbx_backend_open again. */
int sbx_backend_configure(struct sbx_profile *p, struct sbx_err *err);
/* The backend's own configuration (its config_load's *conf); NULL when it
 * has none or the profile was parsed for another backend.  Inline: a
 * backend reads it without calling the registry's file (no circle). */
static inline void *sbx_backend_conf(const struct sbx_backend *b)
{
	return b->profile && b->profile->backend_conf_of == b->ops ? b->profile->backend_conf : NULL;
}
/* Open the backend the profile names (registry lookup).  Unknown name or
 * a backend not compiled in: configuration error. */
int sbx_backend_open(struct sbx_profile *p, struct sbx_backend **out, struct sbx_err *err);
void sbx_backend_close(struct sbx_backend *b);
/* The registry (names of compiled-in backends, NULL-terminated). */
const char *const *sbx_backend_names(void);
/* What the backend advertises (SBX_CAP_* bits, and the derived ones);
 * 0 when it has no caps operation.  The one place that reads ops->caps. */
unsigned sbx_backend_caps(struct sbx_backend *b);
/* The backend's create, after what every create asks of it: an idle
 * timer whose action is hibernate needs a backend that can hibernate
 * here (else unsupported with the reason: never a plain pause in its
 * place).  Every create goes through here, never ops->create itself. */
int sbx_backend_create(struct sbx_backend *b, const struct sbx_create_req *req,
		       struct sbx_sandbox *out, struct sbx_err *err);
/* 0 when the backend can hibernate sandboxes here (ops->hibernate_check
 * passes and it has ops->hibernate); else -1 with `unsupported` and the
 * reason: never a plain pause in its place. */
int sbx_backend_hibernate_check(struct sbx_backend *b, struct sbx_err *err);
/* Fails with `unsupported` unless every bit of `need` is advertised. */
int sbx_backend_require(struct sbx_backend *b, unsigned need, const char *op,
			struct sbx_err *err);

/* Registered backends: each backends/<name>.c defines one; missing ones are
 * weak and left out of the registry. */
extern const struct sbx_backend_ops sbx_backend_local __attribute__((weak));
extern const struct sbx_backend_ops sbx_backend_docker __attribute__((weak));
extern const struct sbx_backend_ops sbx_backend_e2b __attribute__((weak));
extern const struct sbx_backend_ops sbx_backend_cube __attribute__((weak));

/* Call an operation, or fail with `unsupported` when the backend has none:
 *   if (sbx_call(b, pause, err, sb) < 0) ... */
/* What store_gc reclaimed (or, dry run, would). */
struct sbx_store_gc {
	int64_t tmp;             /* work directories removed */
	int64_t layers;          /* unnamed layers removed */
	int64_t bytes;           /* their apparent size */
};
/* The report of a store_gc run as sbx-reap and sbx-snap --recover write
 * it: {work_dirs, unnamed_layers, bytes} added to `o`. */
void sbx_store_gc_json(const struct sbx_store_gc *st, json_object *o);

#define sbx_call(b, fn, err, ...)                                              \
	((b)->ops->fn ? (b)->ops->fn((b), __VA_ARGS__, (err))                  \
		      : sbx_fail((err), SBX_UNSUPPORTED, #fn,                  \
				 "the %s backend does not support %s",         \
				 (b)->ops->name, #fn))

#endif
