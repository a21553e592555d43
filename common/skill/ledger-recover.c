/* ledger-recover.c - complete or fail the skill ledger's half-done rows
 * (see ledger-recover.h for the contract, ledger.h for the protocol).
 *
 * Promises: a row whose run is alive (same host) or young (another host)
 * is never touched; every action is reported; a second run right after
 * the first does nothing; the image's own snapshot is never deleted. */
#include "ledger-recover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doc.h"
#include "host.h"
#include "image.h"
#include "pager.h"
#include "util.h"

/* Is the run that wrote `owner` ("host:pid:start") certainly dead?  Only
 * answerable on the same host; elsewhere the grace period decides. */
static unsigned long long proc_start(long pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	SBX_AUTOFREE char *buf = NULL;
	size_t len;
	struct sbx_err ignored = {0};
	if (sbx_read_file(path, 4096, &buf, &len, &ignored) < 0)
		return 0;
	char *p = strrchr(buf, ')');     /* comm may contain spaces and ')' */
	if (!p)
		return 0;
	unsigned long long start = 0;
	/* after ") ": field 3 (state) ... field 22 (starttime) = 20th token */
	char *save = NULL, *tok = strtok_r(p + 1, " ", &save);
	for (int f = 3; tok && f < 22; f++)
		tok = strtok_r(NULL, " ", &save);
	if (tok)
		start = strtoull(tok, NULL, 10);
	return start;
}

/* This host's id (host.h), or the bare hostname when SBX_HOST_ID is not
 * a valid id (the owner field is advisory; the error shows elsewhere). */
static char *self_host(void)
{
	struct sbx_err ignored = {0};
	char *id = sbx_host_id(&ignored);
	if (id)
		return id;
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	return sbx_xstrdup(host);
}

char *sbx_ledger_owner_self(void)
{
	SBX_AUTOFREE char *host = self_host();
	return sbx_xasprintf("%s:%ld:%llu", host, (long)getpid(), proc_start(getpid()));
}

/* "host:pid:start": 1 with *c1, *c2 on the two last colons when the host
 * part is not empty, else 0. */
static int owner_split(const char *owner, const char **c1, const char **c2)
{
	*c2 = owner ? strrchr(owner, ':') : NULL;
	if (!*c2 || *c2 == owner)
		return 0;
	*c1 = *c2 - 1;
	while (*c1 > owner && **c1 != ':')
		(*c1)--;
	return **c1 == ':' && *c1 != owner;
}

/* 1 when `owner` names a host and it is not this one. */
static int other_host(const char *owner)
{
	const char *c1, *c2;
	if (!owner_split(owner, &c1, &c2))
		return 0;
	SBX_AUTOFREE char *host = self_host();
	return (size_t)(c1 - owner) != strlen(host) || strncmp(owner, host, (size_t)(c1 - owner));
}

/* 1 when the run that wrote `owner` is certainly alive (same host, same
 * process), -1 when it is certainly dead (same host, process gone or pid
 * reused), 0 when this host cannot tell (another host, or no owner). */
static int owner_status(const char *owner)
{
	const char *c1, *c2;
	if (!owner_split(owner, &c1, &c2) || other_host(owner))
		return 0;
	long pid = strtol(c1 + 1, NULL, 10);
	unsigned long long start = strtoull(c2 + 1, NULL, 10);
	if (pid <= 0)
		return 0;
	unsigned long long now = proc_start(pid);
	if (now == 0 || (start && now != start))
		return -1;
	return 1;
}

/* The value under key, of any type (sbx_json_obj only returns objects). */
static json_object *get_any(json_object *o, const char *key)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static void report_add(json_object *report, const char *tenant, const struct sbx_ledger_row *row,
		       const char *action, const char *detail, int would)
{
	if (!report)
		return;
	json_object *acts = get_any(report, "actions");
	if (!acts || !json_object_is_type(acts, json_type_array)) {
		acts = json_object_new_array();
		json_object_object_add(report, "actions", acts);
	}
	json_object *a = json_object_new_object();
	sbx_json_set_str(a, "tenant", tenant);
	sbx_json_set_str(a, "skill", row->skill);
	sbx_json_set_str(a, "planned_name", row->planned_name);
	sbx_json_set_str(a, "action", action);
	if (row->snapshot_id)
		sbx_json_set_str(a, "snapshot_id", row->snapshot_id);
	if (detail)
		sbx_json_set_str(a, "detail", detail);
	if (would)
		sbx_json_set_bool(a, "would", 1);
	json_object_array_add(acts, a);
}

static void report_count(json_object *report, const char *what)
{
	if (report)
		sbx_json_set_int(report, what, sbx_json_int(report, what, 0) + 1);
}


struct recov {
	struct sbx_backend *b;
	struct sbx_redis *r;
	int64_t grace_ms;
	int dry_run;
	json_object *report;
	int host_local;                   /* the backend's snapshots live on one host */
	struct sbx_snapshot_ref *snaps;   /* listed once per run, lazily */
	size_t nsnaps;
	int listed;
	struct sbx_err first;
	int nerr;
};

static int recov_list(struct recov *c, struct sbx_err *err)
{
	if (c->listed)
		return 0;
	if (sbx_snapshots_all(c->b, &c->snaps, &c->nsnaps, err) < 0)
		return -1;
	c->listed = 1;
	return 0;
}

static void recov_fail(struct recov *c, const char *tenant, const struct sbx_ledger_row *row,
		       struct sbx_err *e)
{
	if (!c->nerr++)
		c->first = *e;
	report_add(c->report, tenant, row, "error", e->msg, 0);
	report_count(c->report, "errors");
}

static void recover_row(struct recov *c, const char *tenant, const struct sbx_ledger_row *row,
			const char *image_snapshot)
{
	struct sbx_err e = {0};
	/* A host-local backend's row written on another host names snapshots
	 * this host cannot list: only its own host may settle it (host.h). */
	if (c->host_local && other_host(row->owner)) {
		report_count(c->report, "other_host");
		return;
	}
	/* A row whose run is alive (or, on another host, younger than the
	 * grace period) is that run's business: settling it here would race
	 * the run itself. */
	int owner = owner_status(row->owner);
	int old = sbx_now_ms() - row->updated_at >= c->grace_ms;
	int busy = owner > 0 || (owner == 0 && !old);
	if (busy && (!strcmp(row->state, "snapshotting") ||
		     (!strcmp(row->state, "ready") && !row->published && row->snapshot_id))) {
		report_count(c->report, "in_progress");
		return;
	}
	if (!strcmp(row->state, "snapshotting")) {
		if (recov_list(c, &e) < 0)
			return recov_fail(c, tenant, row, &e);
		const struct sbx_snapshot_ref *s = sbx_ledger_snapshot_in(c->snaps, c->nsnaps, row->planned_name);
		if (s) {
			if (c->dry_run) {
				report_add(c->report, tenant, row, "complete", s->id, 1);
				report_count(c->report, "recovered");
				return;
			}
			if (sbx_ledger_mark_ready(c->r, tenant, row->skill, row->planned_name, s->id,
						  &e) < 0)
				return recov_fail(c, tenant, row, &e);
			struct sbx_ledger_row now = {0};
			int rc = sbx_ledger_get(c->r, tenant, row->skill, &now, &e);
			if (rc <= 0 || strcmp(now.planned_name, row->planned_name)) {
				sbx_ledger_row_clear(&now);
				return rc < 0 ? recov_fail(c, tenant, row, &e) : (void)0;
			}
			json_object *o = json_object_new_object();
			rc = sbx_ledger_publish(c->b, c->r, tenant, &now, 0, o, &e);
			const char *outcome = sbx_json_str(o, "outcome");
			if (rc > 0) {
				report_add(c->report, tenant, &now, "complete", NULL, 0);
				report_count(c->report, "recovered");
			} else if (outcome && !strcmp(outcome, "lost_race")) {
				report_add(c->report, tenant, &now, "failed", e.msg, 0);
				report_count(c->report, "failed");
			} else {
				recov_fail(c, tenant, &now, &e);
			}
			json_object_put(o);
			sbx_ledger_row_clear(&now);
			return;
		}
		const char *why = owner < 0 ? "the run died before its snapshot existed"
					    : "no snapshot appeared within the grace period";
		if (!c->dry_run &&
		    sbx_ledger_mark_failed(c->r, tenant, row->skill, row->planned_name, why, &e) < 0)
			return recov_fail(c, tenant, row, &e);
		report_add(c->report, tenant, row, "failed", why, c->dry_run);
		report_count(c->report, "failed");
		return;
	}
	if (!strcmp(row->state, "ready")) {
		if (row->published || !row->snapshot_id)
			return;
		if (c->dry_run) {
			report_add(c->report, tenant, row, "publish", NULL, 1);
			report_count(c->report, "published");
			return;
		}
		json_object *o = json_object_new_object();
		int rc = sbx_ledger_publish(c->b, c->r, tenant, row, 1, o, &e);
		const char *outcome = sbx_json_str(o, "outcome");
		if (rc > 0) {
			report_add(c->report, tenant, row, "publish", NULL, 0);
			report_count(c->report, "published");
		} else if (outcome && !strcmp(outcome, "lost_race")) {
			report_add(c->report, tenant, row, "failed", e.msg, 0);
			report_count(c->report, "failed");
		} else {
			recov_fail(c, tenant, row, &e);
		}
		json_object_put(o);
		return;
	}
	if (!strcmp(row->state, "failed")) {
		/* A snapshot a failed row still names (deletion failed before),
		 * or one that appeared under its planned name after its client
		 * died: both are ours and nobody else's, so delete them.  The
		 * image's own snapshot is never touched. */
		const char *victim = row->snapshot_id;
		if (!victim) {
			if (recov_list(c, &e) < 0)
				return recov_fail(c, tenant, row, &e);
			const struct sbx_snapshot_ref *s = sbx_ledger_snapshot_in(c->snaps, c->nsnaps,
									  row->planned_name);
			victim = s ? s->id : NULL;
		}
		if (!victim || (image_snapshot && !strcmp(victim, image_snapshot)))
			return;
		if (!c->dry_run) {
			int gone = 0;
			if (sbx_call(c->b, snapshot_delete, &e, victim, &gone) < 0)
				return recov_fail(c, tenant, row, &e);
			if (row->snapshot_id &&
			    sbx_ledger_mark_failed(c->r, tenant, row->skill, row->planned_name,
						   row->error, &e) < 0)
				return recov_fail(c, tenant, row, &e);
		}
		report_add(c->report, tenant, row, "delete_orphan", victim, c->dry_run);
		report_count(c->report, "deleted");
	}
}

static int recover_tenant(void *ctx, const char *tenant, struct sbx_err *err)
{
	struct recov *c = ctx;
	struct sbx_ledger_row *rows;
	size_t n;
	if (sbx_ledger_list(c->r, tenant, &rows, &n, err) < 0)
		return -1;
	struct sbx_image im = {0};
	if (sbx_image_get(c->r, tenant, &im, err) < 0) {
		sbx_ledger_rows_free(rows, n);
		return -1;
	}
	/* Oldest first: a crashed older row is settled before a newer one. */
	for (size_t i = 0; i < n; i++)
		recover_row(c, tenant, &rows[i], im.snapshot_id);
	sbx_image_clear(&im);
	sbx_ledger_rows_free(rows, n);
	return 0;
}

int sbx_ledger_recover(struct sbx_backend *b, struct sbx_redis *r, const char *tenant,
		       int64_t grace_ms, int dry_run, json_object *report, struct sbx_err *err)
{
	struct recov c = {.b = b, .r = r, .grace_ms = grace_ms, .dry_run = dry_run,
			  .report = report,
			  .host_local = (sbx_backend_caps(b) & SBX_CAP_HOST_LOCAL)};
	static const char *const counts[] = {"recovered", "failed", "published", "deleted",
					     "in_progress", "errors", "other_host"};
	for (size_t i = 0; report && i < SBX_ARRAY_LEN(counts); i++)
		if (!get_any(report, counts[i]))
			sbx_json_set_int(report, counts[i], 0);
	if (report && !get_any(report, "actions"))
		json_object_object_add(report, "actions", json_object_new_array());
	int rc = sbx_ledger_each_tenant(r, tenant, recover_tenant, &c, err);
	sbx_snapshot_refs_free(c.snaps, c.nsnaps);
	if (rc < 0)
		return -1;
	if (c.nerr) {
		*err = c.first;
		return -1;
	}
	return 0;
}

