/* reap-metrics.h - the reaper's report (reap.h) as Prometheus text. */
#ifndef SBX_REAP_METRICS_H
#define SBX_REAP_METRICS_H

#include <json-c/json.h>

#include "err.h"

/* Write the numbers of `report` (as returned by sbx_reap_run) to `path` in
 * the Prometheus text format, atomically (tmp + fsync + rename), for the
 * node exporter's textfile collector.  Counters named *_total carry over
 * from the file's previous contents (a missing or unreadable file starts
 * them at 0).  `ok` is the run's outcome (sbx_reap_last_run_success).
 * A skipped run (another reaper held the lease) leaves the file alone. */
int sbx_reap_write_metrics(const char *path, json_object *report, int ok, struct sbx_err *err);

#endif
