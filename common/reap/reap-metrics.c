/* reap-metrics.c - the reaper's report as Prometheus text, for the node
 * exporter's textfile collector (see reap-metrics.h).
 *
 * Promises: the file is replaced whole (tmp + fsync + rename), so the
 * exporter never reads half of it; counters (*_total) carry over from the
 * previous file; a run that skipped leaves the file alone. */
#include "reap-metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "util.h"

static double prev_counter(const char *text, const char *name)
{
	if (!text)
		return 0;
	size_t nl = strlen(name);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, nl) == 0 && p[nl] == ' ')
			return strtod(p + nl + 1, NULL);
	}
	return 0;
}

static long arr_len(json_object *o, const char *key)
{
	json_object *a = NULL;
	if (!o || !json_object_object_get_ex(o, key, &a) || !json_object_is_type(a, json_type_array))
		return 0;
	return (long)json_object_array_length(a);
}

/* Counts of an array's entries by their "reason", as labelled samples. */
static void by_reason(FILE *f, const char *metric, json_object *arr)
{
	json_object *counts = json_object_new_object();
	size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *why = sbx_json_str(json_object_array_get_idx(arr, i), "reason");
		if (!why)
			why = "unknown";
		sbx_json_set_int(counts, why, sbx_json_int(counts, why, 0) + 1);
	}
	json_object_object_foreach(counts, k, v)
		fprintf(f, "%s{reason=\"%s\"} %" PRId64 "\n", metric, k, json_object_get_int64(v));
	json_object_put(counts);
}

int sbx_reap_write_metrics(const char *path, json_object *report, int ok, struct sbx_err *err)
{
	json_object *rep = sbx_json_obj(report, "reap");
	if (!rep || sbx_json_str(rep, "skipped"))
		return 0;
	SBX_AUTOFREE char *prev = NULL;
	size_t plen;
	struct sbx_err ignored = {0};
	if (sbx_read_file(path, 1 << 20, &prev, &plen, &ignored) < 0)
		prev = NULL;

	json_object *snaps = sbx_json_obj(rep, "snapshots");
	int dry = sbx_json_bool(rep, "dry_run", 0);
	long deleted = arr_len(rep, "deleted");
	long snap_deleted = dry ? 0 : arr_len(snaps, "deleted");
	long ck_deleted = dry ? 0 : arr_len(sbx_json_obj(rep, "checkpoints"), "deleted");
	long failed = arr_len(rep, "failed");
	json_object *refused = sbx_json_obj(rep, "refused");
	json_object *kept = NULL, *skipped = NULL;
	json_object_object_get_ex(rep, "kept", &kept);
	json_object_object_get_ex(rep, "skipped", &skipped);

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return sbx_fail_errno(err, SBX_INTERNAL, "metrics", "open_memstream");
	fprintf(f, "# HELP sbx_reap_seen Managed sandboxes listed by the last run.\n"
		   "# TYPE sbx_reap_seen gauge\nsbx_reap_seen %" PRId64 "\n",
		sbx_json_int(rep, "seen", 0));
	fprintf(f, "# HELP sbx_reap_kept Sandboxes kept by the last run, by reason.\n"
		   "# TYPE sbx_reap_kept gauge\n");
	by_reason(f, "sbx_reap_kept", kept);
	fprintf(f, "# HELP sbx_reap_skipped Orphans not deleted by the last run, by reason.\n"
		   "# TYPE sbx_reap_skipped gauge\n");
	by_reason(f, "sbx_reap_skipped", skipped);
	fprintf(f, "# HELP sbx_reap_deleted Sandboxes deleted by the last run.\n"
		   "# TYPE sbx_reap_deleted gauge\nsbx_reap_deleted %ld\n", deleted);
	fprintf(f, "# HELP sbx_reap_would_delete Sandboxes a dry run would delete.\n"
		   "# TYPE sbx_reap_would_delete gauge\nsbx_reap_would_delete %ld\n",
		arr_len(rep, "would_delete"));
	fprintf(f, "# HELP sbx_reap_failed Operations that failed in the last run.\n"
		   "# TYPE sbx_reap_failed gauge\nsbx_reap_failed %ld\n", failed);
	fprintf(f, "# HELP sbx_reap_refused_tenants Tenants refused as mostly unbound.\n"
		   "# TYPE sbx_reap_refused_tenants gauge\nsbx_reap_refused_tenants %d\n",
		refused ? json_object_object_length(refused) : 0);
	long retired = arr_len(rep, "retired");
	fprintf(f, "# HELP sbx_reap_retired Idle sessions ended by the last run (--retire-idle).\n"
		   "# TYPE sbx_reap_retired gauge\nsbx_reap_retired %ld\n", retired);
	fprintf(f, "# HELP sbx_reap_retired_total Idle sessions ended, all runs.\n"
		   "# TYPE sbx_reap_retired_total counter\nsbx_reap_retired_total %.0f\n",
		prev_counter(prev, "sbx_reap_retired_total") + (double)retired);
	fprintf(f, "# HELP sbx_reap_snapshots_deleted Snapshots deleted by the last run.\n"
		   "# TYPE sbx_reap_snapshots_deleted gauge\nsbx_reap_snapshots_deleted %ld\n",
		snap_deleted);
	fprintf(f, "# HELP sbx_reap_deleted_total Sandboxes deleted, all runs.\n"
		   "# TYPE sbx_reap_deleted_total counter\nsbx_reap_deleted_total %.0f\n",
		prev_counter(prev, "sbx_reap_deleted_total") + (double)deleted);
	fprintf(f, "# HELP sbx_reap_snapshots_deleted_total Snapshots deleted, all runs.\n"
		   "# TYPE sbx_reap_snapshots_deleted_total counter\n"
		   "sbx_reap_snapshots_deleted_total %.0f\n",
		prev_counter(prev, "sbx_reap_snapshots_deleted_total") + (double)snap_deleted);
	fprintf(f, "# HELP sbx_reap_checkpoints_deleted Checkpoint snapshots deleted by the last run.\n"
		   "# TYPE sbx_reap_checkpoints_deleted gauge\nsbx_reap_checkpoints_deleted %ld\n",
		ck_deleted);
	fprintf(f, "# HELP sbx_reap_checkpoints_deleted_total Checkpoint snapshots deleted, all runs.\n"
		   "# TYPE sbx_reap_checkpoints_deleted_total counter\n"
		   "sbx_reap_checkpoints_deleted_total %.0f\n",
		prev_counter(prev, "sbx_reap_checkpoints_deleted_total") + (double)ck_deleted);
	fprintf(f, "# HELP sbx_reap_failed_total Failed operations, all runs.\n"
		   "# TYPE sbx_reap_failed_total counter\nsbx_reap_failed_total %.0f\n",
		prev_counter(prev, "sbx_reap_failed_total") + (double)failed);
	fprintf(f, "# HELP sbx_reap_runs_total Reaper runs that held the lease.\n"
		   "# TYPE sbx_reap_runs_total counter\nsbx_reap_runs_total %.0f\n",
		prev_counter(prev, "sbx_reap_runs_total") + 1);
	fprintf(f, "# HELP sbx_reap_duration_seconds Duration of the last run.\n"
		   "# TYPE sbx_reap_duration_seconds gauge\nsbx_reap_duration_seconds %.3f\n",
		(double)sbx_json_int(rep, "duration_ms", 0) / 1000.0);
	fprintf(f, "# HELP sbx_reap_redis_round_trips Redis round trips of the last run.\n"
		   "# TYPE sbx_reap_redis_round_trips gauge\nsbx_reap_redis_round_trips %" PRId64 "\n",
		sbx_json_int(rep, "redis_round_trips", 0));
	fprintf(f, "# HELP sbx_reap_dry_run 1 when the last run was a dry run.\n"
		   "# TYPE sbx_reap_dry_run gauge\nsbx_reap_dry_run %d\n", dry);
	fprintf(f, "# HELP sbx_reap_last_run_success 1 when the last run found the world consistent.\n"
		   "# TYPE sbx_reap_last_run_success gauge\nsbx_reap_last_run_success %d\n", ok ? 1 : 0);
	const char *started = sbx_json_str(rep, "started_at");
	int64_t ts = started ? sbx_time_parse_iso(started) : -1;
	fprintf(f, "# HELP sbx_reap_last_run_timestamp_seconds When the last run started.\n"
		   "# TYPE sbx_reap_last_run_timestamp_seconds gauge\n"
		   "sbx_reap_last_run_timestamp_seconds %" PRId64 "\n", ts > 0 ? ts : sbx_now_ms() / 1000);
	if (fclose(f) != 0) {
		free(buf);
		return sbx_fail_errno(err, SBX_INTERNAL, "metrics", "open_memstream");
	}
	int rc = sbx_write_file_atomic(path, buf, len, 0644, 0, err);
	free(buf);
	return rc;
}
