/* ledger-recover.h - repair the skill ledger after a crash (ledger.h has
 * the protocol this repairs; sbx-snap --recover and the reaper call it). */
#ifndef SBX_LEDGER_RECOVER_H
#define SBX_LEDGER_RECOVER_H

#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"
#include "err.h"
#include "ledger.h"
#include "redis.h"

/* "host:pid:process-start-time" of this process: a row's owner, so that
 * recovery on the same host knows at once when the writer is dead. */
char *sbx_ledger_owner_self(void);

/* Complete or fail half-done rows (DESIGN §7).  For the tenant (NULL =
 * every tenant in <prefix>:tenants):
 *   - snapshotting, and the planned name finds a snapshot: ready, then the
 *     pointer moves to it by compare-and-set from the row's
 *     image_generation, and the bindings are marked stale; when the image
 *     moved on without it, the row fails and its snapshot is deleted (a
 *     lost race, as in the live path);
 *   - snapshotting, no snapshot, and the run is dead (same host, pid gone)
 *     or the row is older than grace_ms: failed;
 *   (rows whose run is alive on this host, or that are younger than
 *   grace_ms when written on another host, are left to their run: counted
 *   "in_progress", never touched, so recovery never races a live install;)
 *   - ready but not published (a crash after step 3 or 4): steps 4-5;
 *   - failed, and a snapshot with its planned name exists after all (a
 *     remote snapshot that finished after its client died): deleted.
 * Every action appends {"tenant","skill","planned_name","action",...} to
 * the report's "actions" array (created if absent) and counts go under
 * "recovered", "failed", "published", "deleted", "in_progress".  With
 * dry_run the actions are reported ("would": true) and nothing changes.
 * Idempotent: a second run right after the first reports no action.
 * Returns 0, or -1 with the first error (the loop goes on over the other
 * rows; the report says what was done). */
int sbx_ledger_recover(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		       int64_t grace_ms, int dry_run, json_object *report, struct sbx_err *err);

#endif
