# tests/lib/serve.bash - start and stop sbx-serve for a test file.
# Load after lib/helpers:  load lib/helpers; load lib/serve
#
#   serve_start NAME [FLAGS...]   starts sbx-serve on 127.0.0.1 (a free
#                                 port) with the key file $SERVE_KEYS;
#                                 exports SERVE_URL_<NAME>, SERVE_PID_<NAME>
#                                 and, for the first one, SERVE_URL
#   serve_stop NAME               SIGTERM, then wait for it to exit
#   SERVE_BIN=PATH serve_start ...  run that sbx-serve (an ASan build)

SERVE_KEY=e2b_00112233445566778899aabbccddeeff
SERVE_KEY2=e2b_ffeeddccbbaa99887766554433221100

serve_keys() {
	export SERVE_KEYS="$SBX_TEST_DIR/keys"
	printf '# test keys\n%s\n%s\n' "$SERVE_KEY" "$SERVE_KEY2" >"$SERVE_KEYS"
	chmod 600 "$SERVE_KEYS"
}

serve_start() {
	local name=$1
	shift
	[ -f "${SERVE_KEYS:-}" ] || serve_keys
	local log="$SBX_TEST_DIR/serve-$name.log"
	"${SERVE_BIN:-sbx-serve}" --listen 127.0.0.1:0 --api-key-file "$SERVE_KEYS" \
		--state-dir "$SBX_TEST_DIR/serve-$name" "$@" 2>"$log" &
	local pid=$! i port=
	for i in $(seq 1 200); do
		port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$log" | head -1)
		[ -n "$port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	[ -n "$port" ] || { cat "$log" >&2; return 1; }
	export "SERVE_URL_$name=http://127.0.0.1:$port" "SERVE_PID_$name=$pid"
	echo "$pid" >"$SBX_TEST_DIR/serve-$name.pid"
	[ -n "${SERVE_URL:-}" ] || export SERVE_URL="http://127.0.0.1:$port"
}

# A server started inside a test is not seen by teardown_file's variables
# (each test runs in a subshell): its pid file is, so a failed test does
# not leave one running (holding bats' output open: the run would hang).
serve_stop() {
	local v="SERVE_PID_$1" i
	local pid=${!v:-}
	[ -n "$pid" ] || pid=$(cat "$SBX_TEST_DIR/serve-$1.pid" 2>/dev/null) || true
	rm -f "$SBX_TEST_DIR/serve-$1.pid"
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 1 400); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
}

# api_as KEY METHOD PATH [CURL ARGS...]: the control plane with KEY;
# prints the body, then a last line "HTTP <status>".  `api` uses the first
# key, `api2` the second.
api_as() {
	local k=$1 m=$2 p=$3
	shift 3
	curl -sS -X "$m" "$SERVE_URL$p" -H "X-API-Key: $k" -H 'Content-Type: application/json' \
		-w '\nHTTP %{http_code}\n' "$@"
}
api() { api_as "$SERVE_KEY" "$@"; }
api2() { api_as "$SERVE_KEY2" "$@"; }
# serve_sandbox [BODY]: create a sandbox on $SERVE_URL with the first key
# (for setup_file); exports SB and TOK, fails if the server made none.
serve_sandbox() {
	local out
	out=$(api POST /v2/sandboxes -d "${1:-{\}}") || return 1
	SB=$(printf '%s' "$out" | head -1 | jq -r .sandboxID)
	TOK=$(printf '%s' "$out" | head -1 | jq -r .envdAccessToken)
	[ -n "$SB" ] && [ "$SB" != null ] || { printf '%s\n' "$out" >&2; return 1; }
	export SB TOK
}
# wait_port ID PORT: wait until something listens on PORT inside sandbox ID.
wait_port() {
	local i
	for i in $(seq 1 100); do
		sbx-exec --id "$1" -- python3 -c "import socket; socket.create_connection(('127.0.0.1', $2))" |
			jq -e '.exec.exit_code == 0' >/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# sdk_conformance CMD...: run one group of an SDK's conformance script; its
# TAP is the test's output, and a "not ok" line fails the test.
sdk_conformance() {
	run "$@"
	printf '%s\n' "$output"
	assert_success
	refute_output --partial 'not ok'
}
# need_proc: skip unless the backend has detached processes (SBX_CAP_PROCESS).
need_proc() {
	sbx-ctl caps 2>/dev/null | jq -e '.caps.process == true' >/dev/null ||
		skip "the backend has no detached processes (SBX_CAP_PROCESS)"
}
# need_proc_tty: detached processes on a terminal, which only the local
# backend has (docker refuses them: unsupported, docs/docker.md).
need_proc_tty() {
	need_proc
	[ "$FIXTURE_BACKEND" = local ] || skip "detached terminals are local only (docs/docker.md)"
}
# envd ID TOKEN PATH [CURL ARGS...]: the data plane, routed by header.
envd() {
	local id=$1 tok=$2 p=$3
	shift 3
	curl -sS "$SERVE_URL$p" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" \
		-w '\nHTTP %{http_code}\n' "$@"
}
# The body of the last `run api/envd` (without the status line), and the status.
body() { printf '%s\n' "$output" | sed '$d'; }
status() { printf '%s\n' "$output" | tail -1 | cut -d' ' -f2; }
# A Connect envelope (flag 0, big-endian length) around JSON $1, to stdout.
envelope() { python3 -c 'import struct,sys; b=sys.argv[1].encode(); sys.stdout.buffer.write(b"\0"+struct.pack(">I",len(b))+b)' "$1"; }
# The JSON messages of a Connect stream on stdin, one a line (the last is
# the end-of-stream message, prefixed "END ").
frames() {
	python3 -c '
import struct,sys
d=sys.stdin.buffer.read(); i=0
while i+5<=len(d):
    f=d[i]; n=struct.unpack(">I",d[i+1:i+5])[0]; m=d[i+5:i+5+n].decode(); i+=5+n
    print(("END " if f&2 else "")+m)'
}
