/* serve-audit.c - sbx-serve's records of the session record (audit.h):
 * what envd does in a sandbox (a process started, a command run, a file
 * moved) leaves the record the programs leave for the same act, in the
 * stream of the key's tenant ("e2b-<team>", serve_tenant; the team from
 * the sandbox's metadata, as serve-team.c finds a key's sandboxes).
 * Every record is written after its act, so no exec waits for Redis
 * before its command starts; each write also takes the sandbox's spool
 * (the egress broker's connections, sbx-procd's process ends) in the
 * same Redis call (sbx_audit_sandbox_drain: one round trip, the record
 * first), as sbx_cli_audit does for the programs. */
#include "serve-int.h"

#include <string.h>

#include "audit.h"
#include "doc.h"
#include "metadata.h"

void serve_audit(const struct sbx_serve_cfg *cfg, struct sbx_backend *b,
		 const struct sbx_sandbox *sb, const char *kind, json_object *data)
{
	const char *team = sb->metadata ? sbx_json_str(sb->metadata, SERVE_TEAM_KEY) : NULL;
	if (team && *team) {
		char tenant[24];
		serve_tenant(team, tenant);
		struct sbx_err err = {0};
		struct sbx_redis *r = serve_redis(cfg, &err);
		if (!r) {
			sbx_events_lost(&err);
		} else {
			/* The owner is the key's, whatever the handle says. */
			struct sbx_sandbox own = *sb;
			own.tenant = tenant;
			own.session = NULL;
			own.metadata = NULL;
			sbx_audit_sandbox_drain(r, b, &own, kind, data);
		}
	}
	json_object_put(data);
}

json_object *serve_audit_file(const char *op, const char *path, int64_t bytes)
{
	json_object *a = json_object_new_object();
	sbx_json_set_str(a, "op", op);
	sbx_json_set_str(a, "path", path);
	if (bytes >= 0)
		sbx_json_set_int(a, "bytes", bytes);
	return a;
}
