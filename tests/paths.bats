#!/usr/bin/env bats
# suite: conformance
# The one path rule (common/backend/path.h) on any backend: each odd spelling of a
# sandbox path means the same through sbx-fs and through sbx-serve's
# envd routes, whatever the backend.  "//", "/./" and a trailing slash
# are the plain path; "..", relative and over-long paths are refused
# (invalid_request, exit 65) before the backend is called, and nothing
# is written; a newline is a name byte; a NUL in JSON refuses the request.
# Real sandboxes, checked from inside with sbx-exec.

load lib/helpers
load lib/serve
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	SB=$(sbx_new --label suite=paths | jq -r .sandbox.id)
	export SB
	fs mkdir /workspace/pa >/dev/null
	fs put - /workspace/pa/f <<<"content of f" >/dev/null
	# the server is started here, so that teardown_file knows its pid
	serve_start paths
}
teardown_file() {
	serve_stop paths
	sbx_teardown_file
}

fs() { sbx-fs --id "$SB" "$@"; }
in_sb() { sbx-exec --id "$SB" -- sh -c "$1" | jq -r .exec.stdout; }
# refused CMD...: sbx-fs refuses with invalid_request (65) and says why ($WHY).
refused() {
	run --separate-stderr fs "$@"
	[ "$status" -eq 65 ] || { echo "status $status for $*: $output $stderr"; return 1; }
	[ "$(jqo .error.kind)" = invalid_request ]
	[[ "$(jqo .error.message)" == *"$WHY"* ]] || { jqo .error.message; return 1; }
}

@test "/workspace/./a, /workspace//a, /workspace/a/ and //workspace/./a// name /workspace/a" {
	local p
	for p in /workspace/./pa/f /workspace//pa/f /workspace/pa/f/ //workspace/./pa//f// /workspace/pa/./f; do
		run --separate-stderr fs cat "$p"
		assert_success
		[ "$(jqo .files.content)" = "content of f" ]
		run --separate-stderr fs stat "$p"
		assert_success
		[ "$(jqo .files.path)" = /workspace/pa/f ]
		[ "$(jqo .files.type)" = file ]
	done
	run --separate-stderr fs ls /workspace/./pa//
	assert_success
	[ "$(jqo '[.files.entries[].path] | join(" ")')" = /workspace/pa/f ]
}

@test "writes, mkdir, mv and rm through odd spellings land on the plain path" {
	run --separate-stderr fs put - /workspace/./pb//w <<<"written"
	assert_success
	[ "$(in_sb 'cat /workspace/pb/w')" = written ]
	run --separate-stderr fs mkdir /workspace//pb/./d/
	assert_success
	[ "$(in_sb 'test -d /workspace/pb/d && echo dir')" = dir ]
	# sbx-fs mv reads a trailing slash as "into this folder" before the rule
	run --separate-stderr fs mv /workspace/pb/./w /workspace//pb/./d/
	assert_success
	[ "$(jqo .files.to)" = /workspace//pb/./d/w ]
	run --separate-stderr fs mv /workspace//pb/d/w /workspace/./pb/d//w2
	assert_success
	[ "$(in_sb 'cat /workspace/pb/d/w2; test -e /workspace/pb/w || echo moved')" = "written
moved" ]
	run --separate-stderr fs rm -r /workspace/pb//d/
	assert_success
	[ "$(in_sb 'test -e /workspace/pb/d || echo gone')" = gone ]
	# a folder through a spelled destination, and back out
	mkdir -p "$BATS_TEST_TMPDIR/tree/sub"
	echo leaf >"$BATS_TEST_TMPDIR/tree/sub/leaf"
	run --separate-stderr fs put "$BATS_TEST_TMPDIR/tree" /workspace/./pb//tree
	assert_success
	[ "$(in_sb 'cat /workspace/pb/tree/sub/leaf')" = leaf ]
	run --separate-stderr fs get /workspace//pb/./tree/ "$BATS_TEST_TMPDIR/back"
	assert_success
	[ "$(cat "$BATS_TEST_TMPDIR/back/sub/leaf")" = leaf ]
}

@test "'..' is refused in every operation, before anything is written" {
	local before
	before=$(md5sum </etc/passwd)
	WHY="'..'"
	for p in /workspace/../etc/passwd /workspace/pa/../pz /workspace/.. /..; do
		refused put --root - "$p" <<<"pwned"
		refused cat "$p"
		refused stat "$p"
		refused ls "$p"
		refused mkdir --root "$p"
		refused rm -r --root "$p"
		refused mv --root /workspace/pa/f "$p"
		refused mv --root "$p" /workspace/pz
	done
	[ "$(md5sum </etc/passwd)" = "$before" ]
	[ "$(in_sb 'test -e /workspace/pz || echo absent; head -c 5 /etc/passwd')" = "absent
root:" ]
	[ "$(in_sb 'cat /workspace/pa/f')" = "content of f" ]
}

@test "a relative path is refused, not read from some working folder" {
	WHY=absolute
	for p in pa/f ./pa/f workspace/pa/f ""; do
		refused cat "$p"
		refused stat "$p"
		refused put - "$p" <<<"x"
		refused mkdir "$p"
	done
}

@test "4096 bytes of spelling or a 256-byte name is too long; 4095 that spell a short path work" {
	local p4096 p4095
	p4096="/workspace$(printf '/%.0s' $(seq 1 4081))/pa/f"
	p4095=${p4096/\/\//\/}
	[ "${#p4096}" -eq 4096 ] && [ "${#p4095}" -eq 4095 ]
	WHY="too long"
	refused cat "$p4096"
	run --separate-stderr fs cat "$p4095"
	assert_success
	[ "$(jqo .files.content)" = "content of f" ]
	WHY="longer than 255"
	refused put - "/workspace/$(printf 'n%.0s' $(seq 1 256))" <<<"x"
	run --separate-stderr fs put - "/workspace/$(printf 'n%.0s' $(seq 1 255))" <<<"x"
	assert_success
}

@test "a newline is a name byte: spelled oddly, it still names the one file" {
	run --separate-stderr fs put - $'/workspace/./pa//new\nline' <<<"nl"
	assert_success
	run --separate-stderr fs stat $'/workspace/pa/new\nline/'
	assert_success
	[ "$(jqo .files.name)" = $'new\nline' ]
	[ "$(in_sb "cat '/workspace/pa/new
line'")" = nl ]
}

@test "sbx-serve's /files and filesystem calls spell paths by the same rule, NUL in JSON refused" {
	serve_sandbox '{"metadata":{"suite":"paths"}}'
	run envd "$SB" "$TOK" "/files?path=/workspace/./ps//f" -H 'Content-Type: application/octet-stream' --data-binary served
	assert_equal "$(status)" 200
	assert_equal "$(body | jq -r '.[0].path')" /workspace/ps/f
	run envd "$SB" "$TOK" "/files?path=//workspace/ps/f/"
	assert_equal "$(status)" 200
	assert_equal "$(body)" served
	run envd "$SB" "$TOK" /filesystem.Filesystem/Stat -H 'Content-Type: application/json' -d '{"path":"/workspace/./ps//f/"}'
	assert_equal "$(status)" 200
	assert_equal "$(body | jq -r .entry.path)" /workspace/ps/f
	local p
	for p in /workspace/../etc/passwd /workspace/ps/../pz; do
		run envd "$SB" "$TOK" "/files?path=$(printf %s "$p" | jq -sRr @uri)" -H 'Content-Type: application/octet-stream' --data-binary x
		assert_equal "$(status)" 400
		run envd "$SB" "$TOK" /filesystem.Filesystem/MakeDir -H 'Content-Type: application/json' -d "{\"path\":\"$p\"}"
		assert_equal "$(body | jq -r .code)" invalid_argument
	done
	# a JSON "\u0000" would cut the path short: the request is refused whole
	run envd "$SB" "$TOK" /filesystem.Filesystem/MakeDir -H 'Content-Type: application/json' -d '{"path":"/workspace/pz\u0000/x"}'
	assert_equal "$(body | jq -r .code)" invalid_argument
	# a JSON "\n" is a newline in the name
	run envd "$SB" "$TOK" /filesystem.Filesystem/MakeDir -H 'Content-Type: application/json' -d '{"path":"/workspace/./ps/new\nline/"}'
	assert_equal "$(status)" 200
	run sbx-exec --id "$SB" -- sh -c 'test -d "/workspace/ps/new
line" && echo dir; test -e /workspace/pz || echo absent'
	assert_equal "$(jqo .exec.stdout)" "dir
absent"
}
