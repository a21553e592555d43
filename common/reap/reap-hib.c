/* reap-hib.c - the reaper's hibernate step: paused sandboxes whose memory
 * goes to disk (the backend's hibernate; docs/local.md, Hibernate).
 *
 * Two rules, both about a sandbox already paused, so that nothing a
 * command is using is taken:
 *   idle       its own idle timer paused it (extra.paused_by "idle") and
 *              its idle action is "hibernate" (extra.on_timeout): the
 *              timer runs inside the sandbox and cannot checkpoint its own
 *              tree, so the reaper is the host's actor that finishes it.
 *   retention  a bound session's sandbox paused longer than the profile's
 *              hibernate_paused (session.h, sbx_session_hibernate_at: the
 *              retention's clock).
 * Only sandboxes of this run's keyspace, not ended earlier in the run,
 * not in a refused tenant.  Each goes through sbx_lifecycle_hibernate with
 * SBX_HIBERNATE_IF_PAUSED: the backend re-checks "still paused" where a
 * resume on use cannot slip in, so a sandbox a command woke meanwhile is
 * skipped ("not-paused"); one the backend refuses (a detached process, a
 * network policy) is skipped with the reason ("refused").  Neither is a
 * failure of the run: the next run looks again.  Where the host cannot
 * hibernate at all, nothing is tried and the report says why once
 * (reap.hibernate_unavailable).  A dry run lists (would_hibernate).
 * Report: reap.hibernated, entries {id, tenant?, session?, state, why,
 * hibernate_at? (retention)}. */
#include "reap-int.h"

#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "fault.h"
#include "lifecycle.h"
#include "session.h"
#include "util.h"

/* Why the item is due now ("idle", "retention"), or NULL; *when for the
 * retention rule.  A failure to read the clock is noted, and not due. */
static const char *due(struct run *run, const struct item *it, int64_t *when)
{
	const struct sbx_sandbox *sb = &it->sb;
	*when = 0;
	if (sb->state != SBX_STATE_PAUSED || !strcmp(sbx_sandbox_state(sb), "hibernated"))
		return NULL;
	const char *by = sbx_json_str(sb->extra, "paused_by");
	const char *act = sbx_json_str(sb->extra, "on_timeout");
	if (by && !strcmp(by, "idle") && act && !strcmp(act, "hibernate"))
		return "idle";
	if (!it->reason || strcmp(it->reason, "bound"))
		return NULL;
	struct sbx_err err = {0};
	int rc = sbx_session_hibernate_at(run->b, run->r, sb, when, &err);
	if (rc < 0)
		note_failure(run, sb->id, "hibernate", &err);
	return rc == 1 && *when <= run->now_ms / 1000 ? "retention" : NULL;
}

void do_hibernate(struct run *run)
{
	int checked = 0;
	for (size_t i = 0; i < run->nitems; i++) {
		struct item *it = &run->items[i];
		int64_t when;
		const char *why;
		if (!it->ours || !it->reason || !strcmp(it->reason, "retired") ||
		    !strcmp(it->reason, "expired") || (it->t >= 0 && run->tenants[it->t].refused) ||
		    !(why = due(run, it, &when)))
			continue;
		if (!checked++) {
			struct sbx_err off = {0};
			if (sbx_backend_hibernate_check(run->b, &off) < 0) {
				run->hibernate_off = sbx_xstrdup(off.msg);
				return;
			}
			run->hibernated = json_object_new_array();
		}
		struct sbx_err err = {0};
		if (!run->o->dry_run && lease_keep(run) < 0) {
			json_object_array_add(run->skipped, entry(it, "lease-lost"));
			continue;
		}
		if (!run->o->dry_run)
			sbx_fault("reap:before-hibernate");   /* a command may wake it here */
		if (run->o->dry_run || sbx_lifecycle_hibernate(run->b, run->r, &it->sb,
							       SBX_HIBERNATE_IF_PAUSED, why, &err) == 0) {
			json_object *e = entry(it, NULL);     /* the state after */
			sbx_json_set_str(e, "why", why);
			if (when > 0) {
				char at[32];
				sbx_time_iso(when, at, sizeof(at));
				sbx_json_set_str(e, "hibernate_at", at);
			}
			json_object_array_add(run->hibernated, e);
			continue;
		}
		if (err.kind == SBX_CONFLICT || err.kind == SBX_UNSUPPORTED) {
			json_object *s = entry(it, err.kind == SBX_CONFLICT ? "not-paused" : "refused");
			sbx_json_set_str(s, "detail", err.msg);
			json_object_array_add(run->skipped, s);
		} else if (err.kind != SBX_NOT_FOUND) {
			note_failure(run, it->sb.id, "hibernate", &err);
		}
	}
}
