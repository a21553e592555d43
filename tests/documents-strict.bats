#!/usr/bin/env bats
# Documents are read strictly (RFC 8259, strings valid UTF-8; sbx(7)
# DOCUMENTS) wherever one is read: on a program's stdin, and in the request
# bodies sbx-serve takes.  What json-c would take (single quotes, NaN,
# trailing commas, "1.", raw control characters, bytes that are not UTF-8)
# is invalid_request naming the line and the byte offset, and sbx-serve
# refuses it with a 400 before anything is stored, so its answers stay
# readable by a strict reader (Python's json, as the E2B Python SDK uses).

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	serve_start strict
}
teardown_file() {
	serve_stop strict
	sbx_teardown_file
}

# $output (a body) parses with Python's strict reader.
strict_json() {
	printf '%s' "$1" | python3 -c '
import json, sys
json.loads(sys.stdin.buffer.read().decode("utf-8", "strict"))'
}

@test "a program refuses non-standard JSON on stdin, naming the line and the offset" {
	local good='{"sandbox":{"tenant":"t","session":"s1"}}'
	local -a bad=("{'sandbox':{}}" '{"sandbox":{},}' '{"sandbox":{},"n":NaN}'
		'{"sandbox":{},"n":1.}' '{"sandbox":{},"n":-01}' $'{"sandbox":{},"s":"a\tb"}')
	local -a off=(1 14 18 20 20 20)
	local k
	for k in "${!bad[@]}"; do
		run --separate-stderr bash -c 'printf "%s\n%s\n" "$1" "$2" | sbx-lease status' _ "$good" "${bad[$k]}"
		[ "$status" -eq 65 ]
		[[ "$stderr" == *"sbx-lease: error: invalid_request: line 2: invalid JSON: "*"(at offset $(( ${#good} + 1 + ${off[$k]} )))" ]]
		# The document before it was answered, then the error document.
		[ "$(printf '%s\n' "$output" | head -1 | jq -r '.error.kind // "none"')" = none ]
		[ "$(printf '%s\n' "$output" | tail -1 | jq -r .error.kind)" = invalid_request ]
		[ "$(printf '%s\n' "$output" | wc -l)" -eq 2 ]
	done
}

@test "sbx-serve refuses metadata that is not UTF-8 with a 400 naming the offset, and stores nothing" {
	local before after body
	before=$(api GET /sandboxes | sed '$d' | jq length)
	# 0xff inside a metadata value, then a Latin-1 key.
	for body in $'{"templateID":"base","metadata":{"k":"a\xffb"}}' \
		$'{"templateID":"base","metadata":{"\xe9t\xe9":"v"}}'; do
		run api POST /sandboxes --data-binary "$body"
		assert_equal "$(status)" 400
		[[ "$(body | jq -r .message)" == *"at offset "*": a string is not valid UTF-8"* ]]
		strict_json "$(body)"
	done
	run api GET /sandboxes
	assert_equal "$(status)" 200
	strict_json "$(body)"
	after=$(body | jq length)
	assert_equal "$after" "$before"
}

@test "sbx-serve refuses a body json-c alone would take, naming the offset" {
	local body
	for body in "{'templateID':'base'}" '{"templateID":"base",}' '{"timeout":NaN}' \
		'{"templateID":"base"} {"x":1}'; do
		run api POST /sandboxes --data-binary "$body"
		assert_equal "$(status)" 400
		[[ "$(body | jq -r .message)" == *"at offset "*": invalid JSON: "* ]]
	done
	# A strict body still creates (the reader refuses only what RFC 8259 does).
	run api POST /sandboxes --data-binary $' {"templateID":"base","metadata":{"k":"\xc3\xa9"},"timeout":60}\r\n'
	assert_equal "$(status)" 201
	local id
	id=$(body | jq -r .sandboxID)
	run api GET "/sandboxes/$id"
	assert_equal "$(body | jq -r .metadata.k)" "é"
	run api DELETE "/sandboxes/$id"
	assert_equal "$(status)" 204
}

@test "a Connect call with a non-standard message is invalid_argument naming the offset" {
	local out id tok
	out=$(api POST /sandboxes -d '{"templateID":"base","timeout":60}')
	id=$(printf '%s' "$out" | head -1 | jq -r .sandboxID)
	tok=$(printf '%s' "$out" | head -1 | jq -r .envdAccessToken)
	run envd "$id" "$tok" /filesystem.Filesystem/Stat -X POST -H 'Content-Type: application/json' \
		--data-binary "{'path':'/'}"
	[ "$(status)" -ge 400 ]
	assert_equal "$(body | jq -r .code)" invalid_argument
	[[ "$(body | jq -r .message)" == *"at offset 1: invalid JSON: a single-quoted string"* ]]
	run envd "$id" "$tok" /filesystem.Filesystem/Stat -X POST -H 'Content-Type: application/json' \
		--data-binary '{"path":"/"}'
	assert_equal "$(status)" 200
	api DELETE "/sandboxes/$id" >/dev/null
}

@test "a configuration file is read by the same rules: json-c's extensions are a configuration error naming the offset" {
	local f="$SBX_TEST_DIR/cfg.json" cfg
	for cfg in '{"profiles":{"p":{"backend":"local",}}}' "{'profiles':{}}" \
		'{"profiles":{"p":{"backend":"local"}}} // a comment'; do
		printf '%s\n' "$cfg" >"$f"
		run --separate-stderr env SBX_CONFIG="$f" sbx-lease status --profile p --tenant t --session s
		[ "$status" -eq 78 ]
		[[ "$stderr" == *"$f: not a JSON object (at offset "*"invalid JSON"* ]]
	done
	printf '%s\n' '{"profiles":{"p":{"backend":"local"}}}' >"$f"
	run env SBX_CONFIG="$f" sbx-ctl caps --profile p
	assert_success
}
