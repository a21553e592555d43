/* local-sb.h - the local sandbox store (local-sb.c): the on-disk record
 * of each sandbox and the queries over them.  Private to the local
 * backend.
 *
 * On-disk layout, one directory per sandbox:
 *
 *   <state>/local/sandboxes/<id>/
 *       sandbox.json   the record (written by tmp + rename, never torn)
 *       policy         the idle timer's "SECONDS PAUSE AUTORESUME" (the
 *                      init reads it on SIGHUP)
 *       activity       mtime = last command (the idle timer reads it)
 *       busy           flock(LOCK_SH) held by every running exec
 *       busy-proc      flock(LOCK_SH) held by every running sbx-procd
 *       lease          mtime = until when a turn lease holds it awake
 *       egress         mtime = the broker's last relay
 *                      (these five: the idle rule, local-idle.h)
 *       idle-paused    present while the idle timer's pause lasts
 *       idle-log       the timer's pauses and resumes on use, for events
 *       killed         present when the idle timer killed the sandbox
 *       seccomp.bpf    the filter of every command
 *       upper/ work/   the overlay's writable layer and its workdir
 *       root/          the mount point of the merged tree (inside the
 *                      sandbox's mount namespace only: the host never has
 *                      a mount here, so nothing can be leaked on the host)
 *       procs/         detached processes (local-procd.h)
 *
 * Cgroups are local-cgroup.h's. */
#ifndef SBX_LOCAL_SB_H
#define SBX_LOCAL_SB_H

#include <sys/types.h>
#include <json-c/json.h>

#include "backend.h"
#include "local-cgroup.h"

#define SANDBOX_UID 1000

/* The backend's private part. */
struct local {
	char *dir;               /* <state_dir>/local */
};
static inline struct local *local_of(struct sbx_backend *b) { return b->priv; }

/* The profile keys the local backend owns (local.c's config_load). */
struct local_conf {
	int allow_userns;        /* user namespaces (and mounts in them) inside;
				  * default 0 (the seccomp filter refuses them) */
	char *cgroup_parent;     /* cgroup v2: the delegated parent of sandbox
				  * cgroups, relative to the cgroup2 mount,
				  * without ".."; NULL = system.slice/sbx.service
				  * on systemd hosts, else "sbx" */
	char **egress_allow;     /* destinations the egress filter lets through
				  * although in a refused range (with
				  * allow_internet): canonical CIDRs
				  * (sbx_config_cidrs), NULL-terminated; NULL
				  * when none */
	char *egress_resolver;   /* IPv4 address the egress broker asks for
				  * names (sandboxes with a network policy);
				  * NULL = the host's first nameserver */
};
/* Never NULL: a profile without local keys (or no backend) reads as the
 * defaults. */
static inline const struct local_conf *local_conf_of(const struct sbx_backend *b)
{
	static const struct local_conf defaults;
	const struct local_conf *c = b ? sbx_backend_conf(b) : NULL;
	return c ? c : &defaults;
}

/* Ids are sbx's own form, "sb-" and [a-z0-9-]: nothing else names a
 * directory of the store. */
int local_sb_valid_id(const char *id);
/* <state>/local/sandboxes/<id> (malloc'd). */
char *local_sb_dir(struct sbx_backend *b, const char *id);

struct local_rec {
	char *dir;               /* <state>/local/sandboxes/<id> */
	json_object *j;          /* the parsed record (owned) */
	char *cg[LOCAL_NCG];     /* absolute cgroup dirs, NULL when absent */
	pid_t init_pid;          /* 0 while creating */
};
/* The record's names of the cgroups, in CG_* order. */
extern const char *const local_cg_keys[LOCAL_NCG];

/* Load the record of sandbox `id`; not_found when it does not exist.  A
 * directory without a readable record loads as a record in state
 * "creating" (a create that died before its first write). */
int local_rec_load(struct sbx_backend *b, const char *id, struct local_rec *r,
		   struct sbx_err *err);
/* Replace <dir>/sandbox.json with `j` (tmp + rename; no fsync: the
 * record describes processes, and a power loss kills those anyway). */
int local_rec_write(const char *dir, json_object *j, struct sbx_err *err);
void local_rec_free(struct local_rec *r);
/* A local sandbox's states: the generic ones, and two of the local
 * backend's own (its state_words), which the generic code sees as the
 * state they count as (local_state_is) and documents by their word
 * (local_state_word). */
/* <dir>/hibernate: a whole dump of the sandbox's tree (local-hibernate.h). */
#define LOCAL_HIBERNATE_DIR "hibernate"

enum local_state {
	LOCAL_TRANSITIONING,
	LOCAL_RUNNING,
	LOCAL_PAUSED,
	LOCAL_TERMINAL,
	LOCAL_DEAD,              /* its init died, or its creator did midway:
				  * terminal (replaceable, what sbx-ctl kill cleans) */
	LOCAL_STOPPED,           /* its init is stopped (SIGSTOP): running (live,
				  * the next command continues it) */
	LOCAL_HIBERNATED,        /* its init is gone and <dir>/hibernate holds its
				  * tree (local-hibernate.h): paused, the next
				  * command restores it */
};
enum sbx_state local_state_is(enum local_state st);
/* "dead", "stopped"; NULL for a generic state. */
const char *local_state_word(enum local_state st);
extern const struct sbx_state_word local_state_words[];
/* The state the record and the sandbox's processes give: transitioning
 * or dead before "ready", then terminal (killed), dead (no init),
 * stopped, paused or running. */
enum local_state local_rec_state(const struct local_rec *r);
/* The handle of the sandbox of `r`. */
/* A caller's document's extra after the backend acted on its sandbox:
 * `kept` (the document's own, whose keys the backend does not own stay)
 * without the keys local_rec_to_sandbox owns (network_policy, awake_by,
 * awake, paused_by: a stale one would say the old state), then `fresh`'s.
 * Takes both references; returns the one to keep. */
json_object *local_sb_extra_merge(json_object *kept, json_object *fresh);
void local_rec_to_sandbox(struct sbx_backend *b, const struct local_rec *r,
			  struct sbx_sandbox *sb);

/* The vtable's get and list (one page: everything, oldest first). */
int local_sb_get(struct sbx_backend *b, const char *id, struct sbx_sandbox *out,
		 struct sbx_err *err);
int local_sb_list(struct sbx_backend *b, const struct sbx_list_filter *f,
		  const char *page_token, struct sbx_page *out, struct sbx_err *err);
/* The template id each existing sandbox was created from (for "in use"
 * checks): malloc'd array of malloc'd strings. */
int local_sb_templates_in_use(struct sbx_backend *b, char ***ids, size_t *n,
			      struct sbx_err *err);
/* Host path of the sandbox's own writable layer (the overlay upperdir).
 * Returned string is malloc'd. */
char *local_sb_upper(struct sbx_backend *b, const char *id);
/* Record activity now (resets the idle timer). */
void local_sb_touch(struct sbx_backend *b, const char *id);
/* Write the idle-timer policy file of the sandbox dir `dir`. */
int local_policy_write(const char *dir, const struct sbx_timeout_policy *t,
		       struct sbx_err *err);

#endif
