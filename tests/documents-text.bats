#!/usr/bin/env bats
# suite: conformance
# Strings in documents are NUL-free UTF-8 (sbx(7)): an id that JSON and C
# would read differently is refused before it reaches Redis or a sandbox,
# and nothing sbx writes is unreadable to a strict JSON reader.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

# Every line of $output parses with a strict reader (Python's json).
strict_json_lines() {
	printf '%s\n' "$output" | python3 -c '
import json, sys
for line in sys.stdin.buffer:
    if line.strip():
        json.loads(line.decode("utf-8", "strict"))'
}

@test "a NUL inside a tenant id is invalid_request; no lease counts for the cut id" {
	local doc='{"sandbox":{"id":"sb-1","tenant":"a\u0000b","session":"s1"}}'
	run --separate-stderr bash -c "printf '%s\n' '$doc' | sbx-lease begin"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"invalid_request: line 1: a string holds a NUL"* ]]
	[ "$(jqo .error.kind)" = invalid_request ]
	run rcli --scan --pattern '*turn*'
	[ -z "$output" ]
}

@test "a NUL inside a key is refused too (json-c would cut the key)" {
	local doc='{"sandbox":{"id":"sb-1","tenant":"t","tenant\u0000x":"victim","session":"s1"}}'
	run --separate-stderr bash -c "printf '%s\n' '$doc' | sbx-lease begin"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"NUL"* ]]
	run rcli --scan --pattern '*turn*'
	[ -z "$output" ]
}

@test "a NUL inside a sandbox id never runs the command in the sandbox it cuts to" {
	local sb
	sb=$(sbx_new_id)
	run --separate-stderr bash -c "printf '{\"sandbox\":{\"id\":\"%s\\\\u0000zz\"}}\n' '$sb' | sbx-exec -- sh -c 'echo ran >/tmp/nul-ran'"
	[ "$status" -eq 65 ]
	[ "$(jqo .error.kind)" = invalid_request ]
	run sbx-exec --id "$sb" -- test -e /tmp/nul-ran
	[ "$(jqo .exec.exit_code)" = 1 ]
	sbx-ctl --id "$sb" kill >/dev/null
}

@test "invalid UTF-8 is invalid_request naming the line, and the output stays strict JSON" {
	local good='{"sandbox":{"tenant":"t","session":"s2"}}'
	run --separate-stderr bash -c "printf '%s\n{\"sandbox\":{\"tenant\":\"t\",\"session\":\"\xff\"}}\n' '$good' | sbx-lease status"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"invalid_request: line 2: a string is not valid UTF-8"* ]]
	strict_json_lines
	# An overlong '/' and an encoded surrogate, which json-c alone accepts.
	for bad in '\xc0\xaf' '\xed\xa0\x80'; do
		run --separate-stderr bash -c "printf '{\"sandbox\":{\"tenant\":\"t\",\"session\":\"$bad\"}}\n' | sbx-lease status"
		[ "$status" -eq 65 ]
		[[ "$stderr" == *"line 1: a string is not valid UTF-8"* ]]
		strict_json_lines
	done
}

@test "an id flag that is not UTF-8 is refused before it reaches Redis" {
	run --separate-stderr sbx-lease begin --tenant $'t\xff' --session s3
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"not valid UTF-8"* ]]
	strict_json_lines
	run rcli --scan --pattern '*turn*'
	[ -z "$output" ]
}

@test "a configuration file with a NUL in a string is a configuration error" {
	printf '{"profiles":{"p":{"backend":"local","prefix":"a\\u0000b"}}}\n' >"$SBX_TEST_DIR/nul.json"
	run --separate-stderr env SBX_CONFIG="$SBX_TEST_DIR/nul.json" sbx-lease status --profile p --tenant t --session s
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"NUL"* ]]
}

@test "sbx-exec gives a stream with a NUL byte in base64, and the next stage reads it" {
	sbx_new >"$BATS_TEST_TMPDIR/sb.json"
	run --separate-stderr bash -c "sbx-exec -- printf 'a\\000b' <'$BATS_TEST_TMPDIR/sb.json'"
	[ "$status" -eq 0 ]
	[ "$(jqo .exec.stdout_base64)" = YQBi ]
	[ "$(jqo '.exec.stdout // "absent"')" = absent ]
	run bash -c "printf '%s\n' '$output' | sbx-exec -- true | sbx-ctl kill"
	[ "$status" -eq 0 ]
}

@test "sbx-fs cat gives a file with a NUL byte in base64, and the next stage reads it" {
	local id
	id=$(sbx_new_id)
	printf 'a\000b' | sbx-fs --id "$id" put - /workspace/nul.bin >/dev/null
	run --separate-stderr sbx-fs --id "$id" cat /workspace/nul.bin
	[ "$status" -eq 0 ]
	[ "$(jqo .files.content_base64)" = YQBi ]
	[ "$(jqo .files.content)" = null ]
	run bash -c "printf '%s\n' '$output' | sbx-exec -- true"
	[ "$status" -eq 0 ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "file names from inside the sandbox that are not UTF-8 come as base64; the output stays strict JSON" {
	local id
	id=$(sbx_new_id)
	sbx-exec --id "$id" -- sh -c 'mkdir /workspace/d && touch "/workspace/d/$(printf "a\377b")" && ln -s "$(printf "t\377")" /workspace/d/link' >/dev/null
	run --separate-stderr sbx-fs --id "$id" ls /workspace/d
	[ "$status" -eq 0 ]
	strict_json_lines
	[ "$(jqo '[.files.entries[] | .name_base64 // empty] | join(",")')" = "Yf9i" ]
	run bash -c "printf '%s\n' '$output' | sbx-exec -- true"
	[ "$status" -eq 0 ]
	run --separate-stderr sbx-fs --id "$id" stat /workspace/d/link
	strict_json_lines
	[ "$(jqo .files.link_target_base64)" = "dP8=" ]
	sbx-ctl kill --id "$id" >/dev/null
}
