#!/usr/bin/env bats
# suite: conformance
# A sandbox's lifecycle through the programs, on every backend: create
# with labels, list and filter, pause with the processes' memory kept and
# resume, the idle timeout with on-timeout kill, kill (idempotent), and
# `sbx-ls --all | sbx-ctl kill`.  The local backend's own mechanics (its
# init, layers, cgroups, crashes inside create) are in local-lifecycle.bats.
load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

state_of() { sbx-ls --id "$1" 2>/dev/null | jq -r .sandbox.state; }
wait_state() {   # bounded: the assertion is the state
	local i
	for i in $(seq 1 200); do
		[ "$(state_of "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

@test "create: a running sandbox with its labels, listed and filterable" {
	run sbx_new --label team=blue --label purpose=t1
	assert_success
	local id
	id=$(jqo .sandbox.id)
	[[ "$id" =~ $FIXTURE_ID_RE ]]
	[ "$(jqo .sandbox.state)" = running ]
	[ "$(jqo .sandbox.backend)" = "$FIXTURE_BACKEND" ]
	[ "$(jqo .sandbox.template)" = "$SBX_TEST_TEMPLATE" ]
	[ "$(jqo .sandbox.metadata.team)" = blue ]
	run sbx-ls --label team=blue --label purpose=t1
	[ "$(jqo .sandbox.id)" = "$id" ]
	[ "$(jqo .sandbox.metadata.purpose)" = t1 ]
	run sbx-ls --label team=red
	[ -z "$output" ]
	run sbx-ls --state paused
	[[ "$output" != *"$id"* ]]
	run sbx-ls --state running
	[[ "$output" == *"$id"* ]]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "pause freezes the processes and keeps their memory; resume continues" {
	need_cap pause
	local id c1 c2 c3
	id=$(sbx_new_id)
	# The counter lives in the shell's memory; the file only shows it.
	sbx-exec --id "$id" -- sh -c 'setsid sh -c "i=0; while :; do i=\$((i+1)); echo \$i >/workspace/c.t; mv /workspace/c.t /workspace/c; sleep 0.05; done" >/dev/null 2>&1 </dev/null &' >/dev/null
	for _ in $(seq 1 100); do
		c1=$(sbx-exec --id "$id" -- cat /workspace/c 2>/dev/null | jq -r .exec.stdout)
		[ "${c1:-0}" -gt 2 ] 2>/dev/null && break
		sleep 0.1
	done
	run sbx-ctl pause --id "$id"
	assert_success
	[ "$(state_of "$id")" = paused ]
	sleep 0.5
	[ "$(state_of "$id")" = paused ]
	run sbx-ctl resume --id "$id"
	assert_success
	[ "$(jqo .sandbox.state)" = running ]
	c2=$(sbx-exec --id "$id" -- cat /workspace/c | jq -r .exec.stdout)
	sleep 0.5
	c3=$(sbx-exec --id "$id" -- cat /workspace/c | jq -r .exec.stdout)
	# it went on from where it was (memory kept), and it runs again
	[ "$c2" -ge "$c1" ]
	[ "$c3" -gt "$c2" ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "idle timeout with on-timeout kill: the sandbox is gone once idle (after a reap pass)" {
	local id
	id=$(sbx_new_id --timeout 1s --on-timeout kill)
	sleep 2.5
	# The reaper's pass is where backends that kill idle sandboxes from
	# outside (idle_kill) do it; the others have done it already.
	sbx-reap --all-tenants --grace 1h >/dev/null 2>&1 || true
	run --separate-stderr sbx-exec --id "$id" -- true
	[ "$status" -eq 66 ]
	[[ "$(jqo .error.kind)" =~ ^(terminal|not_found)$ ]]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "kill is idempotent; a killed sandbox is gone for every program" {
	local id
	id=$(sbx_new_id)
	run sbx-ctl kill --id "$id"
	assert_success
	run sbx-ctl kill --id "$id"
	assert_success
	run sbx-ls --all
	[[ "$output" != *"$id"* ]]
	run --separate-stderr sbx-exec --id "$id" -- true
	[ "$status" -eq 66 ]
	run --separate-stderr sbx-fs --id "$id" ls /
	[ "$status" -eq 66 ]
}

@test "a missing sandbox is not_found (66) for exec, fs and ctl" {
	run --separate-stderr sbx-exec --id "$(missing_id)" -- true
	[ "$status" -eq 66 ]
	[ "$(jqo .error.kind)" = not_found ]
	run --separate-stderr sbx-ctl pause --id "$(missing_id)"
	[ "$status" -eq 66 ]
}

@test "sbx-ls --all | sbx-ctl kill removes everything" {
	sbx_new_id >/dev/null
	sbx_new_id >/dev/null
	run bash -c 'sbx-ls --all | sbx-ctl kill'
	assert_success
	run sbx-ls --all
	[ -z "$output" ]
}
