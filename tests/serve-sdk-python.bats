#!/usr/bin/env bats
# suite: local docker
# not-on: podman -- the SDK checks sbx-serve's wire, which the local and docker runs cover
# The official Python e2b SDK (e2b==2.51.0 and its dependencies pinned in
# tests/sdk/python/requirements.txt, in a private venv made by
# tests/sdk/python/install) against sbx-serve on the real backend:
# tests/sdk/python/conformance.py makes the same calls, in the same groups,
# as the JS check (serve-sdk.bats) and asserts on what the SDK returns.
# The install runs once (skipped when the venv is newer than the
# requirements, e.g. after .ci/run's own step).

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

PY_DIR="$BATS_TEST_DIRNAME/sdk/python"

setup_file() {
	command -v python3 >/dev/null || skip "python3 is not installed"
	"$PY_DIR/install" >/dev/null 2>&1 || { echo "tests/sdk/python/install failed" >&2; return 1; }
	sbx_setup_file
	serve_start sdkpy
	export E2B_API_URL=$SERVE_URL E2B_SANDBOX_URL=$SERVE_URL E2B_API_KEY=$SERVE_KEY
}
teardown_file() {
	serve_stop sdkpy
	sbx_teardown_file
}

# One group of the conformance script (lib/serve.bash).
sdk() { sdk_conformance "$PY_DIR/.venv/bin/python" "$PY_DIR/conformance.py" "$1"; }

@test "Python SDK: Sandbox.create with metadata and envs" { sdk create; }
@test "Python SDK: commands.run: stdout, stderr, exit codes, CommandExitException, users, cwd, HOME" { sdk commands; }
@test "Python SDK: background commands are listed and killed" { need_proc; sdk background; }
@test "Python SDK: pty.create, send_stdin, resize, kill: a real terminal" { need_proc_tty; sdk pty; }
@test "Python SDK: files write/read/list/make_dir/rename/remove/get_info, one home with commands, users" { sdk files; }
@test "Python SDK: set_timeout moves end_at; a sandbox past its end is killed or paused" { sdk timeout; }
@test "Python SDK: pause, connect; a background process survives, takes stdin, is killed" {
	need_proc
	sdk pause
}
@test "Python SDK: Sandbox.list with a metadata query pages without repeats" { sdk list; }
@test "Python SDK: create_snapshot, list_snapshots, a sandbox from the snapshot, delete_snapshot" { sdk snapshot; }
@test "Python SDK: fork into two: the source's files, each its own, the source runs on" { sdk fork; }
@test "Python SDK: kill, kill again, is_running" { sdk kill; }
@test "Python SDK: a wrong API key is an AuthenticationException" { sdk auth; }
