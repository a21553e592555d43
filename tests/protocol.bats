#!/usr/bin/env bats
# The document protocol (sbx(7)), through a real program.  sbx-create --in
# reads documents; error documents pass through it untouched.

load lib/helpers

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

errdoc='{"error":{"kind":"timeout","message":"upstream","program":"sbx-x","op":"x","retryable":true,"exit_status":75},"sandbox":{"id":"sb-1"},"keep":{"me":[1,2,3]}}'

@test "an error document passes through unchanged and sets the exit status" {
	run --separate-stderr bash -c "printf '%s\n' '$errdoc' | sbx-create --in"
	[ "$status" -eq 75 ]
	[ "$(printf '%s' "$output" | jq -cS .)" = "$(printf '%s' "$errdoc" | jq -cS .)" ]
	[ -z "$stderr" ]
}

@test "the first failure's status wins over later ones" {
	local e2='{"error":{"kind":"not_found","message":"m","exit_status":66}}'
	run bash -c "printf '%s\n%s\n' '$errdoc' '$e2' | sbx-create --in"
	[ "$status" -eq 75 ]
	[ "${#lines[@]}" -eq 2 ]
}

@test "bad JSON is invalid_request naming the line, as a document and on stderr" {
	run --separate-stderr bash -c "printf '%s\n\n{\"a\": [1,\n' '$errdoc' | sbx-create --in"
	[ "$status" -eq 75 ]    # the earlier error document's status comes first
	run --separate-stderr bash -c "printf '{\"a\":1}\n{\"b\": tru }\n' | SBX_BACKEND=none sbx-create --in"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"sbx-create: error: invalid_request: line 2: invalid JSON"* ]]
	run bash -c "printf '[1,2]\n' | sbx-create --in"
	[ "$status" -eq 65 ]
	[[ "$output" == *'"line 1: a document must be a JSON object"'* ]]
}

@test "a truncated document at the end of input is an error, not silence" {
	run --separate-stderr bash -c "printf '{\"a\": {\"b\": 1}' | sbx-create --in"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"line 1: document truncated"* ]]
}

@test "a document over the size limit is refused" {
	run --separate-stderr bash -c "python3 -c 'print(\"{\\\"a\\\":\\\"\" + \"x\"*5000 + \"\\\"}\")' | SBX_DOC_MAX=1000 sbx-create --in"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"larger than 1000 bytes"* ]]
}

@test "a closed pipe ends the program quietly, without a crash" {
	# 200k error documents into a reader that leaves after the first line:
	# no signal death (141), no message; the inherited failure's status stays.
	run --separate-stderr bash -c "yes '$errdoc' | head -n 200000 | sbx-create --in | head -n 1 >/dev/null; echo \"\${PIPESTATUS[2]}\""
	[ "${lines[-1]}" = 75 ]
	[ -z "$stderr" ]
	# Successful documents into a closed pipe: status 74, quietly (each
	# document is answered, so the write after the reader left fails).
	local ok='{"sandbox":{"tenant":"t","session":"s"}}'
	run --separate-stderr bash -c "yes '$ok' | head -n 100000 | sbx-lease status | head -n 1 >/dev/null; echo \"\${PIPESTATUS[2]}\""
	[ "${lines[-1]}" = 74 ]
	[ -z "$stderr" ]
}

@test "an empty input produces no documents and succeeds" {
	run bash -c "sbx-create --in </dev/null"
	assert_success
	assert_output ""
}

@test "a configuration error exits 78 and names the profile" {
	run --separate-stderr sbx-create --profile nosuch
	[ "$status" -eq 78 ]
	[[ "$stderr" == "sbx-create: error: invalid_request: no profile named 'nosuch'"* ]]
	[ "$(printf '%s' "$output" | jq -r .error.exit_status)" = 78 ]
}
