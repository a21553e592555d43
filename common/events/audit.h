/* audit.h - the session record of issue 29 (`sbx-audit`): what writes it
 * besides the lifecycle events, how a helper's spool reaches it, and its
 * check.  The stream, its schema and its chained append are events.h's
 * (SBX_STREAM_AUDIT, struct sbx_audit_rec, sbx_audit_append): one writer.
 *
 * Kinds and their fields (the record's data):
 *   exec      argv (every --env value redacted: the command's environment
 *             is named, never valued: env [KEY...]), user, cwd, start,
 *             exit_code, signal, timed_out, duration_ms
 *   process   event start|signal, pid, argv, user (sbx-proc)
 *   file      op (put, get, rm, mkdir...), path, bytes
 *   egress    name, sni, address, port, verdict allow|deny, rule (allow)
 *             or reason (deny), bytes_out, bytes_in, duration_ms, start,
 *             http [{method, host, path (no query values), status,
 *             secret}] (plain HTTP: method, host, path, and the status of
 *             the first answer; the intercepting broker adds the
 *             secret's name)
 *   process   (sbx-procd, spooled) event end, pid, exit_code, signal,
 *             timed_out, duration_ms
 *   dropped   count: records a helper could not keep
 *   refused   count: connections refused by `audit: required` while
 *             their record could not be kept
 *   lifecycle type, how, why and the event's detail (events.h)
 * Every call here follows the events' failure policy (never fails the act,
 * counted and warned by main). */
#ifndef SBX_AUDIT_H
#define SBX_AUDIT_H

#include <json-c/json.h>

#include "backend.h"
#include "events.h"

/* Take the sandbox's spooled records (the backend's audit_dir, spool.h)
 * and append them to its tenant's stream, 100 a round trip; taken files
 * are removed once written.  Redis away: they stay for the next taker.
 * Nothing to take, no tenant, a backend without audit_dir: 0.  Returns
 * the records written, or -1 (counted as an event failure too). */
long sbx_audit_drain(struct sbx_redis *r, struct sbx_backend *b, const struct sbx_sandbox *sb);

/* One record about sandbox sb (tenant and session from its handle or
 * metadata; no tenant: no record; kind NULL: none) and then sbx_audit_drain's
 * take, in one round trip: the record goes first in the first batch of
 * the taken lines, so a process's start precedes its end in the chain;
 * with an empty spool (a stat), the record alone.  A failed batch keeps
 * the taken file for the next taker and loses the record (counted as an
 * event failure).  data borrowed. */
void sbx_audit_sandbox_drain(struct sbx_redis *r, struct sbx_backend *b,
			     const struct sbx_sandbox *sb, const char *kind, json_object *data);

/* Check the tenant's chain: each record's hash over its fields, each
 * prev equal to the hash before it, the last equal to the head key.
 * *report: {ok, records, first, last, broken: [{id, why}]}.  The oldest
 * record kept may name a trimmed predecessor (retention): not a break.
 * 0 with the report (ok false when broken), -1 with err (Redis). */
int sbx_audit_verify(struct sbx_redis *r, const char *tenant, json_object **report,
		     struct sbx_err *err);

/* An entry id for --since TIME: ISO-8601 UTC, or a duration ago ("10m");
 * records at or after it.  -1 when s is neither (or an id: the caller
 * checks sbx_event_id_ok first). */
int sbx_audit_since(const char *s, char *id, size_t len);

#endif
