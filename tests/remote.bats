#!/usr/bin/env bats
# suite: local
# The e2b and cube backends against a failing server: sbx-serve (over the
# local backend) with the one fault hook (fault.h, SBX_FAULT in the
# server's environment) answering 503, 500, a broken stream or a page
# token that repeats; and the API key's rules (files or named variables,
# never in a message, 401 = authentication, exit 77).
load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	serve_keys
}
# Servers live for one test: what it made is killed, then the server stops.
teardown() {
	local n
	for n in ${STARTED:-}; do
		on "$n" sbx-ls --all 2>/dev/null | on "$n" sbx-ctl kill >/dev/null 2>&1 || true
		serve_stop "$n"
	done
}
teardown_file() { sbx_teardown_file; }

# remote NAME FAULT [FLAGS...]: an sbx-serve named NAME with SBX_FAULT=FAULT
# ("" for none) and a profile $SBX_TEST_DIR/NAME.json for the e2b backend
# (cube with --flavor cube).
remote() {
	local name=$1 fault=$2 backend=e2b
	shift 2
	[[ " $* " == *" --flavor cube "* ]] && backend=cube
	SBX_FAULT=$fault serve_start "$name" "$@" >/dev/null
	STARTED="${STARTED:-} $name"
	local v="SERVE_URL_$name"
	jq -n --arg b "$backend" --arg e "${!v}" --arg k "$SBX_TEST_DIR/key1" \
		'{profiles: {default: {backend: $b, endpoint: $e, api_key_file: $k, allow_private: true,
		  template: "base"}}}' >"$SBX_TEST_DIR/$name.json"
	[ -f "$SBX_TEST_DIR/key1" ] || { echo "$SERVE_KEY" >"$SBX_TEST_DIR/key1"; chmod 600 "$SBX_TEST_DIR/key1"; }
}
on() { local n=$1; shift; env -u SBX_BACKEND SBX_CONFIG="$SBX_TEST_DIR/$n.json" "$@"; }
log_count() { grep -c "$2" "$SBX_TEST_DIR/serve-$1.log" || true; }

@test "a 503 with Retry-After is retried, and the call succeeds" {
	remote f503 serve:api-503-once
	run on f503 sbx-ls --all
	assert_success
	# the server answered 503 once, then the listing
	[ "$(log_count f503 'GET /v2/sandboxes[^ ]* 503')" -eq 1 ]
	[ "$(log_count f503 'GET /v2/sandboxes[^ ]* 200')" -eq 1 ]
}

@test "a create answered 503 is not sent again (no second sandbox, kind unavailable)" {
	remote f503 serve:api-503-once
	run --separate-stderr on f503 sbx-create
	[ "$status" -eq 69 ]
	[ "$(jqo .error.kind)" = unavailable ]
	# sent once, answered 503, never sent again
	[ "$(log_count f503 'POST /sandboxes ')" -eq 1 ]
	[ "$(log_count f503 'POST /sandboxes 503')" -eq 1 ]
	run on f503 sbx-ls --all
	assert_success
	[ -z "$output" ]
}

@test "a 500 on snapshot create: not retried, the ledger row is failed, no image pointer" {
	remote f500 serve:snapshot-500
	local doc
	doc=$(on f500 sbx-create)
	run --separate-stderr on f500 sbx-snap --tenant acme --skill s1 <<<"$doc"
	[ "$status" -eq 69 ]
	[ "$(jqo .error.kind)" = unavailable ]
	[[ "$(jqo .error.message)" == *"not retried"* ]]
	# sent once, answered 500, never sent again
	[ "$(log_count f500 'POST /sandboxes/[^ ]*/snapshots ')" -eq 1 ]
	[ "$(log_count f500 'POST /sandboxes/[^ ]*/snapshots 500')" -eq 1 ]
	run redis-cli -s "$REDIS_SOCK" --scan --pattern 'sbx:{acme}:skill:*'
	[ -n "$output" ]
	local key=$output
	[ "$(redis-cli -s "$REDIS_SOCK" hget "$key" state)" = failed ]
	[ -z "$(redis-cli -s "$REDIS_SOCK" hget "$key" snapshot_id)" ]
	[ "$(redis-cli -s "$REDIS_SOCK" exists 'sbx:{acme}:image')" = 0 ]
	on f500 sbx-ctl kill <<<"$doc" >/dev/null
}

@test "a connection dropped in the middle of an exec stream is unavailable, and the sandbox is kept" {
	remote fdrop serve:stream-drop
	local doc id
	doc=$(on fdrop sbx-create)
	id=$(jq -r .sandbox.id <<<"$doc")
	run --separate-stderr on fdrop sbx-exec -- sh -c 'echo first; sleep 1; echo second' <<<"$doc"
	[ "$status" -eq 69 ]
	[ "$(jqo .error.kind)" = unavailable ]
	[[ "$(jqo .error.message)" == *"sandbox is kept"* ]]
	run on fdrop sbx-ls --all
	assert_success
	[ "$(jqo .sandbox.id)" = "$id" ]
	run on fdrop sbx-fs stat /workspace <<<"$doc"
	assert_success
	on fdrop sbx-ctl kill <<<"$doc" >/dev/null
}

@test "a page token that repeats is an error, never a loop" {
	remote frepeat serve:list-repeat-token
	run --separate-stderr on frepeat sbx-ls --all
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"repeat"* ]]
	run --separate-stderr on frepeat sbx-reap --all-tenants --dry-run
	[ "$status" -ne 0 ]
}

@test "a wrong key is authentication (exit 77); the key is in no message, argv or document" {
	remote ok ""
	printf 'e2b_%032d\n' 7 >"$SBX_TEST_DIR/bad-key"
	jq --arg k "$SBX_TEST_DIR/bad-key" '.profiles.default.api_key_file = $k' "$SBX_TEST_DIR/ok.json" \
		>"$SBX_TEST_DIR/bad.json"
	run --separate-stderr env -u SBX_BACKEND SBX_CONFIG="$SBX_TEST_DIR/bad.json" sbx-create
	[ "$status" -eq 77 ]
	[ "$(jqo .error.kind)" = authentication ]
	[[ "$output$stderr" != *"e2b_0000"* ]]
	# the right key, from a named variable: works, and is nowhere to be seen
	jq '.profiles.default |= (del(.api_key_file) + {api_key_env: "SBX_TEST_KEY"})' "$SBX_TEST_DIR/ok.json" \
		>"$SBX_TEST_DIR/env.json"
	run --separate-stderr env -u SBX_BACKEND SBX_TEST_KEY="$SERVE_KEY" SBX_CONFIG="$SBX_TEST_DIR/env.json" sbx-create
	assert_success
	[[ "$output$stderr" != *"$SERVE_KEY"* ]]
	on ok sbx-ctl kill <<<"$output" >/dev/null
	# the variable unset: a configuration error
	run --separate-stderr env -u SBX_BACKEND -u SBX_TEST_KEY SBX_CONFIG="$SBX_TEST_DIR/env.json" sbx-ls --all
	[ "$status" -eq 78 ]
	# a key in the profile itself is refused
	jq --arg k "$SERVE_KEY" '.profiles.default.api_key = $k' "$SBX_TEST_DIR/ok.json" >"$SBX_TEST_DIR/inline.json"
	run --separate-stderr env -u SBX_BACKEND SBX_CONFIG="$SBX_TEST_DIR/inline.json" sbx-ls --all
	[ "$status" -eq 78 ]
	[[ "$output$stderr" != *"$SERVE_KEY"* ]]
}

@test "the SSRF guard: a link-local endpoint is refused, loopback only with allow_private" {
	jq -n '{profiles: {default: {backend: "e2b", endpoint: "http://169.254.169.254", api_key_env: "K",
		allow_private: true}}}' >"$SBX_TEST_DIR/meta.json"
	run --separate-stderr env -u SBX_BACKEND K=e2b_1 SBX_CONFIG="$SBX_TEST_DIR/meta.json" sbx-ls --all
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"169.254"* ]]
	[ -n "${SERVE_URL_ok:-}" ] || remote ok ""
	# a proxy node is checked too: CONNECT_TO never reaches a metadata address
	jq '.profiles.default += {backend: "cube", domain: "cube.test", proxy: "http://169.254.169.254:80"}' \
		"$SBX_TEST_DIR/ok.json" >"$SBX_TEST_DIR/badproxy.json"
	run --separate-stderr env -u SBX_BACKEND SBX_CONFIG="$SBX_TEST_DIR/badproxy.json" sbx-ls --all
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"169.254"* ]]
	jq '.profiles.default.allow_private = false' "$SBX_TEST_DIR/ok.json" >"$SBX_TEST_DIR/noprivate.json"
	run --separate-stderr env -u SBX_BACKEND SBX_CONFIG="$SBX_TEST_DIR/noprivate.json" sbx-ls --all
	[ "$status" -ne 0 ]
}

@test "cube: a listing of a full page is refused as possibly partial; the reaper judges nothing from it" {
	remote cube "" --flavor cube --domain cube.test
	jq --arg p "$SERVE_URL_cube" '.profiles.default += {domain: "cube.test", proxy: $p}' \
		"$SBX_TEST_DIR/cube.json" >"$SBX_TEST_DIR/cube.json.new"
	mv "$SBX_TEST_DIR/cube.json.new" "$SBX_TEST_DIR/cube.json"
	run on cube sbx-create --label keep=1
	assert_success
	local doc=$output
	run on cube sbx-exec -- echo via-proxy <<<"$doc"
	[ "$(jqo .exec.stdout)" = via-proxy ]
	# 100 is Cube's page; a page that full cannot be told from a partial view
	local i
	for i in $(seq 1 99); do
		curl -sf -X POST "$SERVE_URL_cube/sandboxes" -H "X-API-Key: $SERVE_KEY" \
			-d '{"templateID":"base","timeout":600}' >/dev/null
	done
	run --separate-stderr on cube sbx-ls --all
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"partial"* ]]
	run --separate-stderr on cube sbx-reap --all-tenants --grace 0s
	[ "$status" -ne 0 ]
	# nothing was deleted: all 100 are there (v1 lists up to 200)
	[ "$(curl -sf "$SERVE_URL_cube/sandboxes" -H "X-API-Key: $SERVE_KEY" | jq length)" -eq 100 ]
}
