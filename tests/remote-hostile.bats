#!/usr/bin/env bats
# suite: local
# The e2b and cube backends facing a hostile or broken server: a real
# HTTP server (tests/lib/hostile-e2b.py) plays E2B's control plane and
# envd and lies in one way per test: ids and tokens with a CRLF, an answer
# for another sandbox, a data-plane domain of its choosing, repeated start
# events, a stalled stream, page tokens that cycle, a tar bomb of empty
# folders.  Each value is refused before it is used (kind internal, exit
# 70), and the server's log shows that nothing was injected and that no
# token went anywhere it should not.
load lib/helpers
bats_require_minimum_version 1.5.0

SID=sbhostile0123456789

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }
teardown() {
	[ -z "${HOSTILE_PID:-}" ] || { kill "$HOSTILE_PID" 2>/dev/null; wait "$HOSTILE_PID" 2>/dev/null || true; }
}

# hostile MODES [PROFILE KEYS (jq, PROXY is the server's URL)]: a hostile
# server and a profile for it at $BATS_TEST_TMPDIR/h.json.
hostile() {
	local modes=$1 extra=${2:-{\}} i
	: >"$BATS_TEST_TMPDIR/log"
	rm -f "$BATS_TEST_TMPDIR/port"
	"$SBX_TOP/tests/lib/hostile-e2b.py" "$BATS_TEST_TMPDIR/log" "$BATS_TEST_TMPDIR/port" "$modes" \
		>/dev/null 2>&1 &
	HOSTILE_PID=$!
	for i in $(seq 1 100); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.05; done
	local url="http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")"
	echo e2b_hostile_key >"$BATS_TEST_TMPDIR/key"
	chmod 600 "$BATS_TEST_TMPDIR/key"
	jq -n --arg e "$url" --arg k "$BATS_TEST_TMPDIR/key" --argjson x "$extra" \
		'{profiles: {default: ({backend: "e2b", endpoint: $e, api_key_file: $k, allow_private: true,
		  template: "base"} + $x | walk(if . == "PROXY" then $e else . end))}}' >"$BATS_TEST_TMPDIR/h.json"
}
on() { env -u SBX_BACKEND SBX_CONFIG="$BATS_TEST_TMPDIR/h.json" "$@"; }
# requests whose path matches $1
sent() { jq -r .path "$BATS_TEST_TMPDIR/log" | grep -c -- "$1" || true; }
# no request carried an injected header, nor an access token
no_injection() { [ "$(jq -r '.headers | keys[]' "$BATS_TEST_TMPDIR/log" | grep -c x-injected)" -eq 0 ]; }
no_token_sent() { [ "$(jq -r '.headers | keys[]' "$BATS_TEST_TMPDIR/log" | grep -c x-access-token)" -eq 0 ]; }

@test "a sandboxID with a CRLF is refused at create and at lookup: no header is injected" {
	hostile id-crlf
	run --separate-stderr on sbx-create
	[ "$status" -eq 70 ]
	[ "$(jqo .error.kind)" = internal ]
	[[ "$stderr" == *"invalid sandboxID"* ]]
	# the message shows the value without its line break
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	run --separate-stderr on sbx-exec --id "$SID" -- true
	[ "$status" -eq 70 ]
	[ "$(sent process.Process)" -eq 0 ]
	no_injection
}

@test "a detail that answers for another sandbox is refused" {
	hostile id-other
	run --separate-stderr on sbx-exec --id "$SID" -- true
	[ "$status" -eq 70 ]
	[[ "$stderr" == *"answered for"* ]]
	[ "$(sent process.Process)" -eq 0 ]
	no_token_sent
}

@test "an envd access token with a CRLF is refused before any envd request" {
	hostile token-crlf
	run --separate-stderr on sbx-exec --id "$SID" -- true
	[ "$status" -eq 70 ]
	[[ "$stderr" == *"invalid envdAccessToken"* ]]
	[ "$(sent process.Process)" -eq 0 ]
	no_injection
}

@test "the data plane goes only to the profile's domain or below it: no token is sent elsewhere" {
	hostile domain=evil.test '{"domain": "good.test", "proxy": "PROXY"}'
	run --separate-stderr on sbx-exec --id "$SID" -- true
	[ "$status" -eq 70 ]
	[[ "$stderr" == *"outside the profile's domain good.test"* ]]
	[ "$(sent process.Process)" -eq 0 ]
	[ "$(jq -r .headers.host "$BATS_TEST_TMPDIR/log" | grep -c evil)" -eq 0 ]
	no_token_sent
	teardown
	# a suffix that is not a subdomain
	hostile domain=evilgood.test '{"domain": "good.test", "proxy": "PROXY"}'
	run --separate-stderr on sbx-exec --id "$SID" -- true
	[ "$status" -eq 70 ]
	no_token_sent
	teardown
	# no domain in the profile: the server cannot switch to host mode
	hostile domain=good.test
	run --separate-stderr on sbx-exec --id "$SID" -- true
	[ "$status" -eq 70 ]
	[[ "$stderr" == *"profile names no domain"* ]]
	no_token_sent
	teardown
	# below the profile's domain: accepted, and the token goes there
	hostile domain=x.good.test '{"domain": "good.test", "proxy": "PROXY"}'
	run --separate-stderr on sbx-exec --id "$SID" -- true
	assert_success
	[ "$(jq -r 'select(.path == "/process.Process/Start") | .headers.host' "$BATS_TEST_TMPDIR/log")" = \
		"49983-$SID.x.good.test:$(cat "$BATS_TEST_TMPDIR/port")" ]
}

@test "repeated start events in an exec stream start one stdin feeder: stdin is delivered once" {
	hostile start-repeat
	run --separate-stderr on sbx-exec --id "$SID" --stdin-text hello -- cat
	assert_success
	[ "$(jqo -j .exec.stdout)" = hello ]
	[ "$(sent process.Process/SendInput)" -eq 1 ]
	[ "$(sent process.Process/CloseStdin)" -eq 1 ]
}

@test "sbx-exec --timeout ends a stalled exec stream: timed_out, exit_code -1, the process killed; --raw exits 124" {
	hostile stall
	run --separate-stderr on sbx-exec --id "$SID" --timeout 1s -- sleep 100
	assert_success
	[ "$(jqo .exec.timed_out)" = true ]
	[ "$(jqo .exec.exit_code)" = -1 ]
	# the pid of the start event is sent SIGKILL, as envd's own timeout does
	[ "$(sent process.Process/SendSignal)" -eq 1 ]
	[ "$(jq -c 'select(.body) | .body' "$BATS_TEST_TMPDIR/log")" = '{"process":{"pid":7},"signal":"SIGNAL_SIGKILL"}' ]
	run on sbx-exec --raw --id "$SID" --timeout 1s -- sleep 100
	[ "$status" -eq 124 ]
}

@test "a snapshot listing whose page tokens cycle (A, B, A) is refused at the repeat" {
	hostile snap-cycle
	run --separate-stderr on sbx-tpl ls
	[ "$status" -eq 70 ]
	[[ "$stderr" == *"repeated page token"* ]]
	[ "$(sent '^/snapshots')" -eq 3 ]
}

@test "a tar of 100,000 nested empty folders is refused by get --max 1024 and leaves nothing" {
	hostile deep-tar
	run --separate-stderr on sbx-fs --id "$SID" get --max 1024 /workspace/d "$BATS_TEST_TMPDIR/out"
	[ "$status" -eq 75 ]
	[ "$(jqo .error.kind)" = capacity ]
	[ ! -e "$BATS_TEST_TMPDIR/out" ]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR" | grep sbx-fs-get)" ]
}
