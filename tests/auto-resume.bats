#!/usr/bin/env bats
# suite: conformance
# auto_resume (sbx(7), sbx-ctl(1)): on by default, a paused sandbox resumes
# on the next command; off, a command on it is a conflict naming
# sbx-ctl resume, and only sbx-ctl resume or a session resolve thaws it.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

state_of() { sbx-ls --id "$1" | jq -r .sandbox.state; }

@test "by default a command resumes a paused sandbox" {
	local id
	id=$(sbx_new_id)
	sbx-ctl pause --id "$id" >/dev/null
	[ "$(state_of "$id")" = paused ]
	run sbx-exec --id "$id" -- echo hi
	[ "$status" -eq 0 ]
	[ "$(jqo .exec.stdout)" = hi ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "--no-auto-resume: exec and sbx-fs on a paused sandbox are a conflict naming sbx-ctl resume" {
	local id
	id=$(sbx_new_id --no-auto-resume)
	sbx-ctl pause --id "$id" >/dev/null
	run --separate-stderr sbx-exec --id "$id" -- echo hi
	[ "$status" -eq 75 ]
	[ "$(jqo .error.kind)" = conflict ]
	[[ "$stderr" == *"sbx-ctl resume"* ]]
	run --separate-stderr sbx-fs --id "$id" ls /workspace
	[ "$status" -eq 75 ]
	[[ "$stderr" == *"sbx-ctl resume"* ]]
	[ "$(state_of "$id")" = paused ]
	sbx-ctl resume --id "$id" >/dev/null
	run sbx-exec --id "$id" -- echo hi
	[ "$(jqo .exec.stdout)" = hi ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a profile with auto_resume false is honoured; a session resolve still resumes" {
	local id id2
	jq '.profiles.default += {"auto_resume": false}' "$SBX_CONFIG" >"$BATS_TEST_TMPDIR/c.json" 2>/dev/null ||
		echo '{"profiles":{"default":{"auto_resume":false}}}' >"$BATS_TEST_TMPDIR/c.json"
	export SBX_CONFIG="$BATS_TEST_TMPDIR/c.json"
	id=$(sbx_new_id --tenant ar --session s1)
	sbx-ctl pause --id "$id" >/dev/null
	run sbx-exec --id "$id" -- true
	[ "$status" -eq 75 ]
	[ "$(state_of "$id")" = paused ]
	id2=$(sbx_new_id --tenant ar --session s1)
	[ "$id2" = "$id" ]
	[ "$(state_of "$id")" = running ]
	run sbx-exec --id "$id" -- echo hi
	[ "$(jqo .exec.stdout)" = hi ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "sbx-ctl timeout keeps the sandbox's auto_resume unless told" {
	need_cap set_timeout
	need_cap timeout_policy
	local id
	id=$(sbx_new_id --no-auto-resume)
	run sbx-ctl timeout --id "$id" --seconds 600
	[ "$status" -eq 0 ]
	[ "$(jqo '.ctl.auto_resume // "kept"')" = kept ]
	sbx-ctl pause --id "$id" >/dev/null
	run sbx-exec --id "$id" -- true
	[ "$status" -eq 75 ]
	sbx-ctl timeout --id "$id" --seconds 600 --auto-resume >/dev/null
	run sbx-exec --id "$id" -- true
	[ "$status" -eq 0 ]
	sbx-ctl kill --id "$id" >/dev/null
}
