/* reap-int.h - the state of one reaper run (reap.c), its failures, lease
 * and keyspace verdict (reap-run.c), shared with the snapshot reaping
 * (reap-snap.c) and the checkpoint retention (reap-ckpt.c).  Private to
 * those four. */
#ifndef SBX_REAP_INT_H
#define SBX_REAP_INT_H

#include "reap.h"
#include "keyspace.h"
#include "sset.h"
#include "tokenkey.h"

/* Names the skill pipeline gives its snapshots (ledger.h planned_name). */
#define SKILL_SNAPSHOT_PREFIX "sbx-sk-"

/* The run's state. */

struct tenant {
	char *name;
	size_t len;
	long listed;          /* managed sandboxes of this tenant */
	long sessions;        /* ... of which session sandboxes */
	long bound;           /* listed and in the bound set */
	long members;         /* size of the bound set */
	long candidates;      /* session sandboxes that would be deleted */
	char *refused;        /* reason, or NULL */
};

struct item {
	struct sbx_sandbox sb;
	const char *tenant, *session;  /* borrowed from sb.metadata */
	size_t tlen, slen;
	int installer;
	int t;                /* index into run.tenants, -1 when none */
	const char *reason;   /* why it is kept; NULL = orphan (to delete) */
	int ours;             /* of this run's keyspace (keyspace_verdict) */
};

struct run {
	struct sbx_backend *b;
	struct sbx_redis *r;
	const struct sbx_reap_opts *o;
	int64_t now_ms;
	json_object *rep;     /* the "reap" object */
	json_object *kept, *deleted, *failed, *skipped, *would;
	json_object *retired;  /* --retire-idle: ended (or, dry, would end) */
	json_object *expired;  /* retain_paused: ended (or, dry, would end) */
	json_object *ledger, *snapshots, *idle;   /* sections, added at the end */
	json_object *images;
	json_object *checkpoints;  /* retention of the sessions' histories */
	json_object *hibernated;   /* hibernation: done (or, dry, would be) */
	char *hibernate_off;       /* why this host cannot hibernate, when a
				    * sandbox was due (reap.hibernate_unavailable) */
	struct sbx_err first;  /* first failure */
	int nfailed;
	long long deletions;  /* done (or planned, in a dry run) */
	/* the lease (a token key, renewed by its thread); taken = held */
	struct sbx_tokenkey lease;
	int lease_taken, lease_noted;
	/* tenants */
	struct tenant *tenants;
	size_t ntenants;
	struct sbx_sset tenant_idx;  /* names, for lookups */
	struct item *items;
	size_t nitems;
	struct sbx_sset templates_in_use;  /* template ids of listed sandboxes */
	char keyspace[SBX_KEYSPACE_LEN + 1];   /* ours (keyspace.h); "" = none */
	long unknown_keyspace;  /* objects kept because ours has no id */
	json_object *keyspaces;  /* id (or "none") -> {sandboxes, snapshots} seen */
};

/* Each is described where it is defined: do_snapshots in reap-snap.c,
 * do_checkpoints in reap-ckpt.c, do_hibernate in reap-hib.c, the others
 * in reap-run.c. */
json_object *entry(const struct item *it, const char *reason);
void note_failure(struct run *run, const char *id, const char *what,
		  const struct sbx_err *e);
int lease_keep(struct run *run);
int lease_take(struct run *run, struct sbx_err *err);
void lease_release(struct run *run);
const char *keyspace_verdict(struct run *run, const char *ks, const char *what);
void do_snapshots(struct run *run);
void do_checkpoints(struct run *run);
void do_hibernate(struct run *run);

#endif
