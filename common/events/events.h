/* events.h - the record of what happened to a tenant's sandboxes and
 * sessions: one Redis Stream per tenant, one schema, written and read here
 * only (issue 30; the audit record of issue 29 is a sibling stream of the
 * same tenant written by the same code, SBX_STREAM_AUDIT).
 *
 *   <prefix>:{<tenant>}:events    XADD MAXLEN ~ <profile events_maxlen>
 *   <prefix>:{<tenant>}:audit     (the same, for the audit record)
 *
 * The key carries the tenant's hash tag, so a tenant's stream lives in the
 * slot of its bindings and every command here is single-slot on a cluster.
 *
 * Schema (every field a string; man sbx(7), EVENTS):
 *   v        "1", the schema version
 *   type     created, resolved, paused, hibernated, resumed, stopped,
 *            killed, snapshot, published, stale, lease, timeout
 *   time     ISO-8601 UTC with milliseconds, when it was appended
 *   tenant   always; session and sandbox when there is one
 *   how      resolved: bound, claimed, created, rebuilt; lease: begin, end
 *   why      paused: command, idle; hibernated: command, idle, retention;
 *            killed: command, orphan, retired ...
 *   by       the program that did it (program_invocation_short_name)
 *   detail   a JSON object, when the event has more to say
 * A reader sees each entry as one JSON object: the fields above plus "id"
 * (the stream entry id) and "detail" parsed.
 *
 * Failure policy.  An event describes something that already happened; a
 * failed write must not undo or fail it.  So sbx_event_emit returns
 * nothing: a write that fails (Redis away, a timeout, a refused command)
 * is counted, and the last failure kept, for the program's main to say on
 * stderr as a warning (cli.c: `PROGRAM: warning: KIND: ...`) and exit as
 * it would have.  The write is not fenced and waits for no replica: an
 * event may be lost with a failover or a killed process between the act
 * and the append, never invented.  Order in the stream is append order;
 * the steps of one session under its lifecycle lock are appended before
 * the lock is released, so they are in order.
 *
 * events_maxlen 0 in the profile turns events off (nothing is written,
 * nothing counted).  A handle of no tenant has no stream: no event. */
#ifndef SBX_EVENTS_H
#define SBX_EVENTS_H

#include <stdint.h>
#include <json-c/json.h>

#include "backend.h"
#include "err.h"
#include "redis.h"


enum sbx_stream { SBX_STREAM_EVENTS, SBX_STREAM_AUDIT };

/* The audit record (issue 29; audit.h has what writes it and the chain's
 * contract).  One record of the tenant's audit stream:
 *   v, kind, time, tenant, session?, sandbox?, by   as an event's
 *   type, how, why                                  kind "lifecycle" only
 *   data      a JSON object: the kind's fields (a reader sees them at the
 *             top level of the record)
 *   prev      the hash of the stream's record before it ("" for the first)
 *   hash      SHA-1 (hex) of every field before it, each as
 *             NAME ":" LENGTH ":" VALUE "\n", in the stored order
 * Appended by one script with its predecessor's hash read from the
 * tenant's audit-head key (the last record's "ID HASH"), so two writers
 * never chain to the same record; the stream is trimmed to audit_maxlen
 * (exact) and, with audit_max_age, to records younger than that. */
struct sbx_audit_rec {
	const char *kind;             /* egress, exec, process, file, lifecycle, dropped */
	const char *tenant;           /* required: no tenant, no record */
	const char *session, *sandbox; /* NULL: absent */
	const char *type, *how, *why; /* lifecycle: the event's */
	const char *by;               /* NULL: this program */
	json_object *data;            /* borrowed; NULL: absent */
};
/* Append n records of one tenant in one round trip (one script run).
 * 0 written (or audit off: r NULL, audit_maxlen 0), -1 with err. */
int sbx_audit_append(struct sbx_redis *r, const char *tenant, const struct sbx_audit_rec *recs,
		     size_t n, struct sbx_err *err);
/* One record, under the events' failure policy: never fails the caller,
 * a failed write is counted with the events' (sbx_events_failed). */
void sbx_audit_emit(struct sbx_redis *r, const struct sbx_audit_rec *rec);

struct sbx_event {
	enum sbx_stream stream;
	const char *type;
	const char *tenant;           /* required: no tenant, no event */
	const char *session, *sandbox; /* NULL: absent */
	const char *how, *why;
	json_object *detail;          /* borrowed; NULL: absent */
};

/* A lifecycle event's audit record (kind "lifecycle"), for an event that
 * went out through sbx_event_xadd (a lock's rider). */
void sbx_event_audit(struct sbx_redis *r, const struct sbx_event *ev);
/* Append one event (r NULL: nothing).  Never fails the caller; see the
 * failure policy above.  An SBX_STREAM_EVENTS event is a lifecycle change:
 * it is also appended to the tenant's audit record (kind "lifecycle"),
 * right after it (a second round trip; audit off: none). */
void sbx_event_emit(struct sbx_redis *r, const struct sbx_event *ev);
/* The append as a command for a script to run in its own round trip (a
 * resolve's release, lock.h): XADD's key and its arguments after the key.
 * 1 built (free with sbx_event_xadd_clear), 0 nothing to write (events
 * off, no tenant, r NULL), -1 not written (counted, as sbx_event_emit). */
struct sbx_event_xadd {
	char *key;
	int argc;
	const char *argv[30];
	char maxlen[24], when[40];
	const char *type, *tenant;
};
int sbx_event_xadd(struct sbx_redis *r, const struct sbx_event *ev, struct sbx_event_xadd *x);
/* After the script ran: redis_err is its XADD's error text ("" when it
 * was written), counted as a failed write when not empty. */
void sbx_event_xadd_done(struct sbx_event_xadd *x, const char *redis_err);
void sbx_event_xadd_clear(struct sbx_event_xadd *x);

/* The same for a sandbox: tenant and session from the handle or its
 * sbx.tenant / sbx.session metadata; no tenant, no event. */
void sbx_event_sandbox(struct sbx_redis *r, const struct sbx_sandbox *sb, const char *type,
		       const char *how, const char *why, json_object *detail);
/* Event writes that failed in this process, and the last failure (NULL
 * when none). */
unsigned long sbx_events_failed(void);
/* Count an event that could not even be tried (its Redis could not be
 * opened): the same warning as a failed write. */
void sbx_events_lost(const struct sbx_err *err);
const struct sbx_err *sbx_events_last_error(void);

/* Reading.  fn gets each event as a JSON object (borrowed) and returns 0
 * when it is done with it (a group reader acknowledges it), 1 to leave it
 * unacknowledged (it stays pending for this consumer: a later run, or
 * another consumer claiming it, gets it again), -1 with err to stop. */
typedef int (*sbx_event_fn)(json_object *ev, void *ctx, struct sbx_err *err);

struct sbx_event_query {
	enum sbx_stream stream;
	const char *tenant;
	const char *session;    /* only this session's (not with group) */
	const char *kind;       /* audit: only records of this kind */
	const char *since;      /* an entry id; events after it.  NULL: all
				 * kept.  With group: where a new group starts */
	int follow;             /* then wait for new ones until fn stops it */
	const char *group;      /* consumer group: at least once, acknowledged */
	const char *consumer;   /* this reader's name in the group */
	int64_t claim_idle_ms;  /* group: take over other consumers' events
				 * pending longer than this (0: never) */
};

/* Without a group: XRANGE from `since` (exclusive) to the end, then with
 * follow XREAD BLOCK for new ones.  With a group: the group is created
 * when missing (at `since`, else at the stream's start; MKSTREAM), then
 *   1. this consumer's own pending events (a restarted reader gets again
 *      what it had not acknowledged), entries trimmed since acknowledged;
 *   2. other consumers' events pending longer than claim_idle_ms, claimed
 *      (XAUTOCLAIM) and delivered;
 *   3. new events (XREADGROUP >), with follow blocking for more.
 * An event fn accepted is acknowledged (XACK) before the next is read; an
 * event fn left is not delivered again in this run.  Returns 0 at the end
 * (without follow), -1 with err (Redis, or fn's). */
int sbx_events_read(struct sbx_redis *r, const struct sbx_event_query *q, sbx_event_fn fn,
		    void *ctx, struct sbx_err *err);

/* Destroy a consumer group of the tenant's stream, with its pending
 * entries; a group or stream that is not there is not an error. */
int sbx_events_group_destroy(struct sbx_redis *r, enum sbx_stream s, const char *tenant,
			     const char *group, struct sbx_err *err);

/* Run `sh -c cmd` with the event (one NDJSON line) on its stdin, its
 * stdout and stderr ours; *status: its exit status (128+N for signal N).
 * -1 with err only when it could not be run. */
int sbx_event_run(const char *cmd, json_object *ev, int *status, struct sbx_err *err);

/* 1 when s is a stream entry id (MS or MS-SEQ, decimal), else 0. */
int sbx_event_id_ok(const char *s);

#endif
