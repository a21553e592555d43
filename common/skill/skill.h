/* skill.h - what is skill-specific about a snapshot: the skill tree under
 * /opt/sbx/skills/<name>, cleaning scratch before the freeze, sealing the
 * tree read-only for the sandbox user, the planned snapshot name, the one
 * call that runs the whole ledger protocol for `sbx-snap --skill`, and the
 * tenant views behind `sbx-snap ls|show|rm --tenant`.
 *
 * Everything that runs inside the sandbox runs through the backend's exec
 * as root (the install path), so it works the same on every backend. */
#ifndef SBX_SKILL_H
#define SBX_SKILL_H

#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"
#include "err.h"
#include "redis.h"

#define SBX_SKILLS_ROOT "/opt/sbx/skills"
/* Layer count above which a new image gets a "hint" to flatten. */
#define SBX_SKILL_LAYERS_HINT 8

/* Skill names: [A-Za-z0-9][A-Za-z0-9._-]*, at most 64 bytes (one path
 * segment, never "." or ".."). */
int sbx_skill_name_check(const char *name, struct sbx_err *err);

/* Inside the sandbox, as root:
 * clean scratch - empty /workspace (input/ and output/ are emptied in
 *   place, never removed, so a full disk cannot leave them missing; made
 *   for uid 1000, mode 755, only when absent), and remove what changed
 *   since the sandbox started (ctime >= its created_at) at the top of /tmp
 *   and /var/tmp, of the package managers' lists and caches (apt lists and
 *   archives and *.bin, apk, pip, uv, yarn, npm, pnpm) of root and users.
 *   Plain POSIX sh and tools busybox has too (no GNU-only flags).  A
 *   failure's message keeps the first lines of the script's stderr.
 *   Older entries belong to the template (with the builtin `host` template
 *   they are the host's own files, seen through the overlay): leaving them
 *   keeps the snapshot free of whiteouts for files it never had.
 * seal - chown -R root:root and chmod -R a-w,a+rX of `path`; refuses "/",
 *   a relative path, a symlink, or a path that does not exist.
 * remove tree - rm -rf /opt/sbx/skills/<name> (missing is fine). */
int sbx_skill_clean_scratch(struct sbx_backend *b, struct sbx_sandbox *sb, struct sbx_err *err);
int sbx_skill_seal(struct sbx_backend *b, struct sbx_sandbox *sb, const char *path,
		   struct sbx_err *err);
int sbx_skill_remove_tree(struct sbx_backend *b, struct sbx_sandbox *sb, const char *name,
			  struct sbx_err *err);

/* sbx-sk-<tenant>-g<gen>-<8 random hex>, where <tenant> is the tenant id
 * when it is 1..24 bytes of [a-z0-9-], else "h" + 12 hex of its SHA-256.
 * The pipeline's ledger rows add -k<keyspace id> (keyspace.h). */
int sbx_skill_planned_name(const char *tenant, int64_t generation, char **out,
			   struct sbx_err *err);

struct sbx_skill_snap_req {
	const char *tenant;
	const char *skill;          /* the skill installed (or removed) */
	int remove;                 /* --remove-skill: delete its tree first */
	int clean_scratch;
	const char *seal;           /* NULL = /opt/sbx/skills/<skill> (install only) */
	int64_t flatten_above;      /* > 0: flatten the new image when it has more layers */
	int64_t grace_ms;           /* for the recovery that runs first */
};

/* The whole of `sbx-snap --tenant T --skill NAME` on the installer sandbox
 * `sb` (DESIGN §7):
 *   0. recover the tenant's half-done rows (so generations are right and a
 *      crashed run of the same skill cannot block or be lost);
 *   1. the profile's fingerprint (empty: refused); the image pointer; the
 *      installer must have started from that image (or, when there is none
 *      or it belongs to another fingerprint, from anything: the base) -
 *      else `conflict`, because snapshotting it would drop skills;
 *   2. ledger row `snapshotting` (SBX_FAULT "snap:after-ledger");
 *   3. remove the tree (--remove-skill), clean scratch, seal the tree;
 *   4. snapshot_create with the planned name ("snap:after-snapshot");
 *   5. row `ready` ("snap:after-record");
 *   6. pointer compare-and-set ("snap:after-pointer"), bindings stale,
 *      row published; a lost race deletes our snapshot and fails (conflict);
 *   7. optionally flatten (a second ledger row, ".image", same protocol).
 * `result` gets the `snapshot` object {id, name, skill, op, generation,
 * image_generation, fingerprint, base_template, parent, layers, size_bytes
 * (this layer), image_bytes (every snapshot layer of the image), stale,
 * [flatten], [hint], [warning]}.  A failure before step 4
 * fails the row; a crash anywhere leaves a row sbx_ledger_recover settles. */
int sbx_skill_snapshot(struct sbx_backend *b, struct sbx_redis *r, struct sbx_sandbox *sb,
		       const struct sbx_skill_snap_req *req, json_object *result,
		       struct sbx_err *err);

/* Flatten the tenant's current image into one layer (plus the host layer
 * where it is the base), through the ledger like an install (row ".image",
 * op flatten; SBX_FAULT "flatten:after-ledger", "flatten:after-snapshot").
 * The pointer moves to the flat snapshot; no session is marked stale (no
 * file changed).  `result` gets "flatten": {from, id, name, layers, ...}. */
int sbx_skill_flatten(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		      json_object *result, struct sbx_err *err);

/* The tenant's view for `sbx-snap ls|show --tenant T`: into `out`
 * "tenant", "fingerprint" (the profile's), "image" {snapshot_id,
 * generation, fingerprint, base_template, updated_at, usable, layers,
 * size_bytes, image_bytes, exists}, "skills" (ledger rows), "installed" (names whose
 * last ready row is an install), and "warning" when the image's
 * fingerprint differs from the profile's ("credentials rotated: sessions
 * start from the base template") or its snapshot is gone.  Returns 1 when
 * a warning was set, else 0; -1 on error. */
int sbx_skill_status(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		     json_object *out, struct sbx_err *err);

/* `sbx-snap rm --tenant T --skill NAME [--force]`: delete the row's
 * snapshot and forget the row.  When the tenant's image pointer uses that
 * snapshot: refused (conflict) without force; with force the pointer is
 * cleared first (sessions fall back to the base template), then the
 * snapshot is deleted, so a crash never leaves a pointer to nothing.
 * `out` gets "removed": {skill, snapshot_id, pointer_cleared}. */
int sbx_skill_rm(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		 const char *skill, int force, json_object *out, struct sbx_err *err);

/* Which tenants' image pointers use snapshot `id`.  Appends tenant names
 * to the array `users`; returns how many. */
int sbx_skill_snapshot_users(struct sbx_redis *r, const char *id, json_object *users,
			     struct sbx_err *err);
/* Before plain `sbx-snap rm ID`: when a tenant's image pointer uses `id`,
 * refuse (conflict) unless force; with force clear those pointers first
 * (sessions fall back to the base template), so that no pointer is left
 * naming a deleted snapshot.  The cleared tenants are appended to
 * `cleared` (an array, may be NULL).  Returns how many were cleared. */
int sbx_skill_release_snapshot(struct sbx_redis *r, const char *id, int force,
			       json_object *cleared, struct sbx_err *err);

#endif
