#!/usr/bin/env bats
# suite: local docker e2b cube
# not-on: podman -- docker's code (a checkpoint and a create), covered by the docker run
# Session fork (issue 32): `sbx-create --tenant T --session S2 --fork S1
# [--at N|LABEL]`.  The new session starts from a checkpoint of the
# source (taken now, in the source's history, or one named with --at), is
# bound as its own, and shares nothing writable with the source; a fork
# into a session that has a sandbox is refused; a fork killed with -9
# before its bind leaves at most an unbound sandbox the reaper removes,
# and repeating the fork then works.

load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

T=forks

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

in_s() {
	local s=$1
	shift
	sbx-create --tenant $T --session "$s" | sbx-exec --raw -- sh -c "$*"
}
bound() { rcli get "$(skey $T "$1" binding)" | jq -r .sandbox_id; }

@test "a fork starts from the source's files now, bound as its own session; nothing writable is shared" {
	in_s a1 'echo from-a > /workspace/x && mkdir -p /workspace/d && echo deep > /workspace/d/f'
	run sbx-create --tenant $T --session b1 --fork a1
	assert_success
	assert_equal "$(jqo .resolved)" forked
	assert_equal "$(jqo .fork.session)" a1
	assert_equal "$(jqo .fork.label)" fork:b1
	local id
	id=$(jqo .sandbox.id)
	[ "$id" = "$(bound b1)" ]
	[ "$id" != "$(bound a1)" ]
	# the source's history has the checkpoint the fork started from
	run sbx-snap ls --tenant $T --session a1
	assert_equal "$(jqo -s 'map(.checkpoint.label) | join(",")')" fork:b1
	# the fork has the files; a resolve of it is bound to the same sandbox
	run in_s b1 'cat /workspace/x /workspace/d/f'
	assert_output $'from-a\ndeep'
	run resolve $T b1
	assert_output "$id bound"
	# writes on either side stay on that side
	in_s b1 'echo from-b > /workspace/x && rm /workspace/d/f && echo new > /workspace/only-b'
	in_s a1 'echo a-again > /workspace/only-a'
	run in_s a1 'cat /workspace/x /workspace/d/f; ls /workspace'
	assert_output $'from-a\ndeep\nd\ninput\nonly-a\noutput\nx'
	run in_s b1 'cat /workspace/x; ls /workspace; ls /workspace/d | wc -l'
	assert_output $'from-b\nd\ninput\nonly-b\noutput\nx\n0'
	assert_one_sandbox $T a1
	assert_one_sandbox $T b1
}

@test "a fork --at N (or LABEL) starts from that checkpoint of the source's history" {
	in_s a2 'echo one > /workspace/turn'
	sbx-snap checkpoint --tenant $T --session a2 --label t1 >/dev/null
	in_s a2 'echo two > /workspace/turn'
	sbx-snap checkpoint --tenant $T --session a2 --label t2 >/dev/null
	in_s a2 'echo three > /workspace/turn'
	run sbx-create --tenant $T --session b2 --fork a2 --at 1
	assert_success
	assert_equal "$(jqo .fork.n)" 1
	run in_s b2 'cat /workspace/turn'
	assert_output one
	run sbx-create --tenant $T --session c2 --fork a2 --at t2
	assert_success
	run in_s c2 'cat /workspace/turn'
	assert_output two
	# --at takes nothing from the source's present, and adds no checkpoint
	run in_s a2 'cat /workspace/turn'
	assert_output three
	run sbx-snap ls --tenant $T --session a2
	assert_equal "$(jqo -s 'length')" 2
}

@test "a fork is refused into a session with a sandbox, from one without, at a checkpoint that is not there" {
	in_s a3 'true'
	in_s b3 'echo mine > /workspace/keep'
	local before
	before=$(bound b3)
	run --separate-stderr sbx-create --tenant $T --session b3 --fork a3
	assert_failure 75
	[[ "$stderr" == *"already has a sandbox"* ]]
	[ "$(bound b3)" = "$before" ]
	run in_s b3 'cat /workspace/keep'
	assert_output mine
	run --separate-stderr sbx-create --tenant $T --session b3x --fork nosuch
	assert_failure 66
	run --separate-stderr sbx-create --tenant $T --session b3y --fork a3 --at 9
	assert_failure 66
	[ -z "$(rcli get "$(skey $T b3y binding)")" ]
	run --separate-stderr sbx-create --tenant $T --session a3 --fork a3
	assert_failure 65
	run --separate-stderr sbx-create --tenant $T --session b3z --at 1
	assert_failure 64
	run --separate-stderr sbx-create --tenant $T --fork a3
	assert_failure 64
	run --separate-stderr sbx-create --tenant $T --session b3z --fork a3 --template base
	assert_failure 64
}

@test "a fork killed -9 before its bind leaves no binding; the reaper removes its sandbox, and the fork repeats" {
	in_s a4 'echo four > /workspace/f'
	run env SBX_FAULT=resolve:before-bind sbx-create --tenant $T --session b4 --fork a4
	[ "$status" -eq 137 ] || [ "$status" -gt 128 ]
	[ -z "$(rcli get "$(skey $T b4 binding)")" ]
	local left
	left=$(ids_with sbx.session b4)
	[ -n "$left" ]
	run sbx-create --tenant $T --session b4 --fork a4
	assert_success
	local id
	id=$(jqo .sandbox.id)
	[ "$id" != "$left" ]
	run sbx-reap --tenant $T --grace 0
	assert_success
	assert_one_sandbox $T b4 "$id"
	run in_s b4 'cat /workspace/f'
	assert_output four
}
