/* ledger.h - the skill ledger: one row per (tenant, skill) recording the
 * last install or removal of that skill, written BEFORE the backend takes
 * the snapshot, so that no snapshot can ever exist that nobody can find.
 *
 * A row is a Redis hash at <prefix>:{<tenant>}:skill:<name> (keys.c); the
 * names of a tenant's rows are kept in the set <prefix>:{<tenant>}:ledger,
 * and every tenant with a row is in <prefix>:tenants (for --all-tenants).
 *
 *   state          snapshotting | ready | failed
 *   op             install | remove
 *   planned_name   sbx-sk-<tenant-short>-g<gen>-<8 hex>: the name the
 *                  snapshot is created with; recovery finds it by this name
 *   generation     max(image generation, every row's generation) + 1
 *   fingerprint    the profile's fingerprint the snapshot is valid for
 *   base_template  the base the image stacks on (recorded once per image)
 *   parent         the template the installer sandbox started from (the
 *                  image the new snapshot must replace; see skill.c)
 *   image_generation  the image pointer's generation when the row was
 *                  written: the pointer moves to this row's snapshot only
 *                  by compare-and-set from exactly that generation (image.c
 *                  counts pointer moves; a row's generation is its own,
 *                  always above it)
 *   sandbox_id, owner (host:pid:start), created_at, updated_at (ms),
 *   snapshot_id    set with state ready
 *   published      "1" once the image pointer moved to this row's snapshot
 *                  and the tenant's bindings were marked stale
 *   error          why a row failed
 *
 * The protocol (skill.c drives it, recovery repairs it):
 *   1. begin:   write the row {snapshotting, planned_name, ...}
 *   2. backend: snapshot_create(sandbox, planned_name)
 *   3. ready:   row {ready, snapshot_id}
 *   4. pointer: compare-and-set the tenant's image pointer (image.c) from
 *               image_generation to this row's snapshot
 *   5. stale:   mark the tenant's bindings stale, row published = 1
 * A crash between any two steps leaves a row that sbx_ledger_recover
 * (ledger-recover.h)
 * completes (the snapshot exists: steps 3-5) or fails (it does not, and the
 * run is dead or older than the grace period).  A run that loses the
 * pointer race marks its row failed and deletes its own snapshot: there is
 * never a pointer to a snapshot that does not exist, and never a snapshot
 * that no row or pointer names. */
#ifndef SBX_LEDGER_H
#define SBX_LEDGER_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"
#include "err.h"
#include "redis.h"

#define SBX_LEDGER_GRACE_DEFAULT_MS (10 * 60 * 1000)
#define SBX_SKILL_NAME_MAX 64

struct sbx_ledger_row {
	char *skill;
	char *state;             /* "snapshotting" | "ready" | "failed" */
	char *op;                /* "install" | "remove" */
	char *planned_name;
	char *fingerprint;
	char *base_template;
	char *parent;
	char *sandbox_id;
	char *snapshot_id;       /* NULL until ready */
	char *owner;             /* "host:pid:starttime" of the run that wrote it */
	char *error;
	int64_t generation;
	int64_t image_generation;
	int64_t created_at;      /* unix ms */
	int64_t updated_at;      /* unix ms */
	int published;
};
void sbx_ledger_row_clear(struct sbx_ledger_row *row);
void sbx_ledger_rows_free(struct sbx_ledger_row *rows, size_t n);
/* {"skill", "state", "op", "planned_name", "generation", ...} (ISO times). */
json_object *sbx_ledger_row_to_json(const struct sbx_ledger_row *row);

/* One row: 1 and *out / 0 when the skill has no row / -1. */
int sbx_ledger_get(struct sbx_redis *r, const char *tenant, const char *skill,
		   struct sbx_ledger_row *out, struct sbx_err *err);
/* Every row of the tenant, sorted by generation (then name). */
int sbx_ledger_list(struct sbx_redis *r, const char *tenant, struct sbx_ledger_row **out,
		    size_t *n, struct sbx_err *err);
/* Every tenant that has a ledger row or an image (the <prefix>:tenants set,
 * sorted). */
int sbx_ledger_tenants(struct sbx_redis *r, char ***out, size_t *n, struct sbx_err *err);
/* The highest generation of any row of the tenant (0 when none). */
int sbx_ledger_max_generation(struct sbx_redis *r, const char *tenant, int64_t *out,
			      struct sbx_err *err);

/* Step 1: write `row` (state snapshotting) in one script that refuses with
 * `conflict` when the skill's current row is itself snapshotting (another
 * install of the same skill is in flight, or crashed and not yet
 * recovered).  Registers the tenant and the skill name in the indexes. */
int sbx_ledger_begin(struct sbx_redis *r, const char *tenant, const struct sbx_ledger_row *row,
		     struct sbx_err *err);
/* Step 3: snapshotting -> ready with snapshot_id, only if the row still
 * carries `planned_name` (a later run's row is never touched).  Returns 1
 * when written, 0 when the row moved on, -1 on error. */
int sbx_ledger_mark_ready(struct sbx_redis *r, const char *tenant, const char *skill,
			  const char *planned_name, const char *snapshot_id, struct sbx_err *err);
/* -> failed with `why`; snapshot_id is cleared (the caller deleted the
 * snapshot, or there never was one).  Same guard and returns as above. */
int sbx_ledger_mark_failed(struct sbx_redis *r, const char *tenant, const char *skill,
			   const char *planned_name, const char *why, struct sbx_err *err);
/* Step 5's record: published = 1 (same guard). */
int sbx_ledger_mark_published(struct sbx_redis *r, const char *tenant, const char *skill,
			      const char *planned_name, struct sbx_err *err);
/* Forget the row (sbx-snap rm --skill).  Refused (conflict) while it is
 * snapshotting.  1 removed, 0 there was none. */
int sbx_ledger_delete(struct sbx_redis *r, const char *tenant, const char *skill,
		      struct sbx_err *err);

/* Steps 4-5 for a row that is ready: move the image pointer to
 * row->snapshot_id by compare-and-set from row->image_generation (unless
 * it points there already), mark the tenant's bindings stale (not for a
 * flatten: no file changed) and set published.  check_exists first makes
 * sure the snapshot is still there (recovery; the live path just made it).
 * When the image moved on without this row (a lost race), the row's
 * snapshot is deleted, the row fails, `out` gets "outcome": "lost_race"
 * and the call fails with `conflict`.  Stale marking that fails for some
 * sessions is not an error (the image did move): `out` gets "warning" and
 * the row stays unpublished, so recovery marks again.  `out` (may be NULL)
 * gets "image_generation" and "stale": {marked, failed}.  Returns 1, or
 * -1 with err.  SBX_FAULT point "snap:after-pointer" sits after the move. */
int sbx_ledger_publish(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		       const struct sbx_ledger_row *row, int check_exists, json_object *out,
		       struct sbx_err *err);
/* fn(ctx, T, err) for `tenant`, or for every tenant with a ledger when it
 * is NULL (sbx_ledger_tenants order); stops at the first failure. */
int sbx_ledger_each_tenant(struct sbx_redis *r, const char *tenant,
			   int (*fn)(void *ctx, const char *tenant, struct sbx_err *err), void *ctx,
			   struct sbx_err *err);


/* Every snapshot id a ledger row or an image pointer refers to, for the
 * reaper's unreferenced-snapshot sweep (tenant NULL = all tenants), plus
 * every planned name of a row that is still snapshotting (a snapshot with
 * that name is being made: not unreferenced).  *ids is a malloc'd array of
 * malloc'd strings, sorted and without duplicates. */
int sbx_ledger_referenced(struct sbx_redis *r, const char *tenant, char ***ids, size_t *n,
			  struct sbx_err *err);
void sbx_ledger_ids_free(char **ids, size_t n);

/* Find a snapshot by id or name across every page of snapshot_list (a
 * repeated page token is an error).  1 and *out (may be NULL) / 0 / -1. */
int sbx_ledger_find_snapshot(struct sbx_backend *b, const char *id_or_name,
			     struct sbx_snapshot_ref *out, struct sbx_err *err);
/* The snapshot of all[0..n) that answers to x: by id, by name, or
 * (Docker-style repository names) by a name ending in "/x"; NULL if none. */
const struct sbx_snapshot_ref *sbx_ledger_snapshot_in(const struct sbx_snapshot_ref *all, size_t n,
						      const char *x);

/* The bytes of an image: the sizes of snapshot `id` and of every snapshot
 * below it in its parent chain (the base template is not counted), from
 * one listing.  *bytes = -1 when a size is unknown. */
int sbx_ledger_image_bytes(struct sbx_backend *b, const char *id, int64_t *bytes,
			   struct sbx_err *err);

#endif
