/* The reasons the remote backends read from their servers' answers
 * (docker_status_err, e2b_status_err): the one place each engine's or
 * server's text is looked at, so that the callers that act on a reason
 * (pause twice, a lost resume race, a removal in progress, a start the
 * engine's setup refuses, a folder where a file was read, a template in
 * use or unknown) test the reason and never the message.  The answers are
 * the texts dockerd, podman, E2B, Cube and sbx-serve send. */
#include <string.h>

#include "docker-api.h"
#include "e2b-wire.h"
#include "tap.h"

static struct sbx_err err;

static const char *docker(int status, const char *body)
{
	struct sbx_http_resp r = {.status = status, .body = (char *)body, .len = strlen(body)};
	docker_status_err("op", &r, &err);
	return sbx_reason_name(err.reason);
}

static const char *e2b(int status, const char *body)
{
	struct sbx_http_resp r = {.status = status, .body = (char *)body, .len = strlen(body)};
	e2b_status_err("op", &r, &err);
	return sbx_reason_name(err.reason);
}

int main(void)
{
	is_str(docker(409, "{\"message\":\"Container 3f2a is already paused\"}"), "already_paused",
	       "docker: pausing a paused container");
	is_int(err.kind, SBX_CONFLICT, "... conflict");
	is_str(docker(500, "{\"message\":\"Container 3f2a is not paused\"}"), "not_paused",
	       "docker: unpausing a running container");
	is_str(docker(500, "{\"message\":\"cannot resume a running process\"}"), "not_paused",
	       "runc: unpausing a running container");
	is_str(docker(409, "{\"message\":\"removal of container 3f2a is already in progress\"}"),
	       "in_progress", "docker: a removal already under way");
	is_str(docker(500, "{\"message\":\"OCI runtime error: crun: error setting rlimit type 7\"}"),
	       "engine_setup", "podman: rlimits the host cannot grant");
	is_str(docker(500, "{\"message\":\"container-init: no such file: catatonit not found\"}"),
	       "engine_setup", "podman: no init binary");
	is_str(docker(404, "{\"message\":\"No such container: 3f2a\"}"), "none",
	       "docker: a missing container has no reason");
	is_int(err.kind, SBX_NOT_FOUND, "... not_found");
	is_str(docker(500, "plain text, not JSON: already paused"), "already_paused",
	       "docker: a body that is not JSON is read as the message");

	is_str(e2b(409, "{\"code\":409,\"message\":\"Error pausing sandbox - sandbox 'i1' is already paused\"}"),
	       "already_paused", "e2b/sbx-serve: pausing a paused sandbox");
	is_int(err.http_status, 409, "... HTTP 409 kept");
	is_str(e2b(400, "{\"code\":400,\"message\":\"path '/workspace/d' is a directory\"}"), "is_dir",
	       "envd/sbx-serve: a read of a folder");
	is_int(err.kind, SBX_INVALID_REQUEST, "... invalid_request");
	is_str(e2b(400, "{\"code\":400,\"message\":\"template t1 is in use by 2 sandboxes\"}"), "in_use",
	       "e2b: deleting a template in use");
	is_str(e2b(500, "{\"code\":500,\"message\":\"CubeMaster error 130404: template not found\"}"),
	       "no_template", "cube: create from an unknown template");
	is_str(e2b(500, "{\"code\":500,\"message\":\"internal error\"}"), "none",
	       "e2b: any other failure has no reason");
	is_str(e2b(400, "path '/w/d' is a directory"), "is_dir", "e2b: a short plain-text body is read too");
	return tap_done();
}
