/* cube.c - the cube backend: Tencent Cube Sandbox through its
 * E2B-compatible CubeAPI (cube-wire.md).  It is the e2b backend
 * (e2b-sandbox.h) in Cube's dialect, which e2b_conn.cube switches:
 *   - create: `lifecycle {onTimeout, autoResume}`, timeout -1 for never,
 *     no `secure` (Cube never issues an envd token);
 *   - the inbound traffic token Cube returns only at create is kept in the
 *     handle (extra.traffic_token) and sent on every data-plane call;
 *   - network policy: allow_internet_access (snake_case), allowOut and
 *     denyOut are Cube's to enforce (caps: network_policy, inbound_token);
 *   - the API key goes as X-API-Key and as Authorization: Bearer;
 *   - the data plane is host mode through the proxy node
 *     (CURLOPT_CONNECT_TO) or path mode (e2b-api.h);
 *   - listings: /v2/sandboxes ignores the page token, so a full page is
 *     refused as possibly partial (the reaper never judges from it), and
 *     metadata is filtered here, not by Cube (which filters after its cap);
 *   - snapshots through /sandboxes/{id}/snapshots, /snapshots (offset
 *     token) and DELETE /templates/{id}; `snap-` ids never in template
 *     lists. */
#include "e2b-sandbox.h"

static int cube_open(struct sbx_backend *b, struct sbx_err *err) { return e2b_open_as(b, 1, err); }

static unsigned cube_caps(struct sbx_backend *b)
{
	(void)b;
	return SBX_CAP_EXEC | SBX_CAP_FILES | SBX_CAP_PAUSE | SBX_CAP_SNAPSHOTS |
	       SBX_CAP_METADATA | SBX_CAP_LIST | SBX_CAP_TEMPLATES | SBX_CAP_TIMEOUT |
	       SBX_CAP_INSTALL | SBX_CAP_NETPOLICY | SBX_CAP_INBOUND_TOKEN | SBX_CAP_TTY |
	       SBX_CAP_VOLUMES;
}

const struct sbx_backend_ops sbx_backend_cube = {
	.name = "cube",
	.open = cube_open,
	.caps = cube_caps,
	E2B_OPS_COMMON
};
