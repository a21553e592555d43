/* local-audit.h - the egress broker's audit records (issue 29; the record
 * is audit.h's, the spool spool.h's).
 *
 * The broker has no Redis: each connection's record goes to an in-memory
 * queue (at most LOCAL_AUDIT_QUEUE bytes) when the connection ends, and one
 * writer thread appends the queue to <dir>/audit.spool every 200 ms (or
 * sooner when the queue is half full), in one write.  A program with Redis
 * takes the spool (sbx-exec after a command, the reaper each pass, a
 * delete before it deletes) and appends the records to the tenant's
 * stream.  So nothing on a connection's path waits for a disk or a
 * network: its cost is a lock, a JSON line and a memcpy.
 *
 * The spool is bounded (<dir>/audit.json's spool_max bytes, written at
 * create by sbx_spool_conf_write from the profile): while
 * Redis is away it fills, and then
 *   best-effort (the default): connections go on; their records are
 *     dropped and counted, and a record {kind: "dropped", count} is
 *     spooled once there is room again;
 *   required: a connection whose record could not be kept is refused
 *     before it is dialled (the spool's size, the queue and the
 *     connections still open each hold LOCAL_AUDIT_RECORD_MAX bytes of
 *     room), as a policy refusal that says so; the refusals are counted
 *     and a record {kind: "refused", count} is spooled in the bound's
 *     slack (one LOCAL_AUDIT_RECORD_MAX, shared with "dropped"), so the
 *     stream says how many were refused once it is taken.
 * Without <dir>/audit.json (audit_maxlen 0, or a sandbox made before
 * the record existed) the broker records nothing. */
#ifndef SBX_LOCAL_AUDIT_H
#define SBX_LOCAL_AUDIT_H

#include <json-c/json.h>

#include "err.h"

#define LOCAL_AUDIT_QUEUE (256 * 1024)
#define LOCAL_AUDIT_RECORD_MAX 1024

/* The broker's side.  Start the writer for <dir> (no audit.json: off). */
void local_audit_start(const char *dir);
/* A connection begins: 0 it may go on, -1 required and no room (refuse
 * it).  Every local_audit_begin that returned 0 is followed by one
 * local_audit_end. */
int local_audit_begin(void);
/* The connection's record (taken: put by this call); NULL: none, the
 * room is released. */
void local_audit_end(json_object *rec);

#endif
