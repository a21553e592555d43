#!/usr/bin/env bats
# suite: local docker
# not-on: podman -- the SDK checks sbx-serve's wire, which the local and docker runs cover
# The official e2b SDK (e2b@2.51.0, pinned in tests/sdk/package-lock.json)
# against sbx-serve on the real local backend: tests/sdk/conformance.mjs
# makes the SDK's own calls and asserts on what the SDK returns, one group
# per test here.  `npm ci` runs once per run (skipped when tests/sdk's
# node_modules is as new as its lockfile, e.g. after .ci/run's own step).

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

SDK_DIR="$BATS_TEST_DIRNAME/sdk"

setup_file() {
	command -v node >/dev/null || skip "node is not installed (tools/deps)"
	if [ ! -f "$SDK_DIR/node_modules/.package-lock.json" ] ||
	   [ "$SDK_DIR/package-lock.json" -nt "$SDK_DIR/node_modules/.package-lock.json" ]; then
		(cd "$SDK_DIR" && npm ci --no-audit --no-fund >/dev/null 2>&1) ||
			{ echo "npm ci failed in tests/sdk" >&2; return 1; }
	fi
	sbx_setup_file
	serve_start sdk
	export E2B_API_URL=$SERVE_URL E2B_SANDBOX_URL=$SERVE_URL E2B_API_KEY=$SERVE_KEY
}
teardown_file() {
	serve_stop sdk
	sbx_teardown_file
}

# One group of the conformance script (lib/serve.bash).
sdk() { sdk_conformance node "$SDK_DIR/conformance.mjs" "$1"; }

@test "SDK: Sandbox.create with metadata and envs" { sdk create; }
@test "SDK: commands.run: stdout, stderr, exit codes, CommandExitError, users, cwd" { sdk commands; }
@test "SDK: background commands are listed and killed" { need_proc; sdk background; }
@test "SDK: pty.create, sendInput, resize, kill: a real terminal" { need_proc_tty; sdk pty; }
@test "SDK: files write/read/list/makeDir/rename/remove/getInfo, users" { sdk files; }
@test "SDK: setTimeout moves endAt; a sandbox past its end is killed" { sdk timeout; }
@test "SDK: pause, connect; a background process survives, takes stdin, is killed" {
	need_proc
	sdk pause
}
@test "SDK: Sandbox.list with a metadata query pages without repeats" { sdk list; }
@test "SDK: createSnapshot, listSnapshots, a sandbox from the snapshot, deleteSnapshot" { sdk snapshot; }
@test "SDK: Sandbox.fork into two: the source's files, each its own, the source runs on" { sdk fork; }
@test "SDK: kill, kill again, isRunning" { sdk kill; }
@test "SDK: a wrong API key is an AuthenticationError" { sdk auth; }
