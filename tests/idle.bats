#!/usr/bin/env bats
# suite: local docker
# Idle that sees work (issue 30, sbx(7) "Idle"): the idle timer pauses a
# sandbox only when no exec, no detached process and no turn lease kept it
# awake for the period; sbx-ls says which signal last did (`awake_by`).
# Docker kills from the reaper's sweep instead and sees only commands and
# running execs (docs/docker.md): its test is the last one.
# Real sandboxes, real processes, real Redis; no assertion on elapsed time:
# each test watches the state while the work runs, or compares two
# sandboxes with the same timer.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

TIMER=(--timeout 3s --on-timeout pause --auto-resume)
new_sb() { sbx_new_id "${TIMER[@]}" "$@"; }
ls_of() { sbx-ls --id "$1" 2>/dev/null | jq -r ".sandbox.$2"; }
# Wait (bounded) until sandbox $1 is in state $2; the assertion is the
# state, the bound only keeps a broken build from hanging the suite.
wait_state() {
	local i
	for i in $(seq 1 600); do
		[ "$(ls_of "$1" state)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# Run `cond` (a shell string) until it holds, failing at once if sandbox
# $1 is found paused meanwhile: the work it waits for kept it awake.
awake_until() {
	local id=$1 cond=$2 i
	for i in $(seq 1 900); do
		eval "$cond" && return 0
		if [ "$(ls_of "$id" state)" = paused ]; then
			echo "sandbox $id paused while its work ran (awake_by $(ls_of "$id" awake_by))" >&2
			return 1
		fi
		sleep 0.1
	done
	return 1
}

@test "a detached process keeps the sandbox awake until it ends; then it pauses" {
	local_only "the init's idle timer"
	local id done
	id=$(new_sb)
	done="$SBX_STATE_DIR/local/sandboxes/$id/upper/workspace/done"
	run sbx-proc start --id "$id" -- sh -c 'sleep 8; touch /workspace/done'
	[ "$status" -eq 0 ]
	# Frozen at the timer, the process could never write the file.
	awake_until "$id" '[ -e "$done" ]'
	[ "$(ls_of "$id" awake_by)" = process ]
	wait_state "$id" paused
	[ "$(ls_of "$id" awake_by)" = process ]
	[ "$(ls_of "$id" paused_by)" = idle ]
	run sbx-exec --id "$id" -- cat /workspace/done
	[ "$status" -eq 0 ]
	[ "$(ls_of "$id" state)" = running ]
	[ "$(ls_of "$id" paused_by)" = null ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a running sbx-exec keeps the sandbox awake; the silent sandbox then pauses" {
	local_only "the init's idle timer"
	local id pid
	id=$(new_sb)
	sbx-exec --id "$id" --timeout 60s -- sh -c 'sleep 8; echo finished' >"$BATS_TEST_TMPDIR/exec.json" &
	pid=$!
	awake_until "$id" '! kill -0 $pid 2>/dev/null'
	wait "$pid"
	[ "$(jq -r .exec.stdout "$BATS_TEST_TMPDIR/exec.json")" = finished ]
	wait_state "$id" paused
	[ "$(ls_of "$id" awake_by)" = exec ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a held turn lease keeps the sandbox awake; its end lets the timer pause it" {
	local_only "the init's idle timer"
	local held silent
	held=$(new_sb --tenant idle --session lease1)
	sbx-lease begin --tenant idle --session lease1 >/dev/null
	[ "$(ls_of "$held" awake)" = true ]
	[ "$(ls_of "$held" awake_by)" = lease ]
	# Made after the lease began, with the same timer: idle for less time.
	silent=$(new_sb)
	wait_state "$silent" paused
	[ "$(ls_of "$silent" awake_by)" = command ]
	[ "$(ls_of "$held" state)" = running ]
	[ "$(ls_of "$held" awake_by)" = lease ]
	sbx-lease end --tenant idle --session lease1 >/dev/null
	wait_state "$held" paused
	[ "$(ls_of "$held" awake_by)" = lease ]
	[ "$(ls_of "$held" paused_by)" = idle ]
	sbx-ctl kill --id "$held" >/dev/null
	sbx-ctl kill --id "$silent" >/dev/null
}

@test "a silent sandbox still pauses; a background job of an exec does not keep it awake" {
	local_only "the init's idle timer"
	local id
	id=$(new_sb)
	sbx-exec --id "$id" -- sh -c 'sleep 1000 >/dev/null 2>&1 &' >/dev/null
	wait_state "$id" paused
	[ "$(ls_of "$id" paused_by)" = idle ]
	[ "$(ls_of "$id" awake)" = null ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a command pause is not an idle pause" {
	local_only "the init's idle timer"
	local id
	id=$(sbx_new_id)
	sbx-ctl pause --id "$id" >/dev/null
	[ "$(ls_of "$id" state)" = paused ]
	[ "$(ls_of "$id" paused_by)" = null ]
	[ "$(ls_of "$id" awake_by)" = command ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "the idle timer's pause and a resume on use are events, written by the next reaper run" {
	local_only "the init's idle timer"
	local id
	id=$(new_sb --tenant idlev --session s1)
	sbx-proc start --id "$id" -- sleep 1 >/dev/null
	wait_state "$id" paused
	sbx-reap --tenant idlev >/dev/null
	run sbx-events --tenant idlev
	[ "$status" -eq 0 ]
	[ "$(jqo -s '[.[] | select(.type == "paused")] | length')" = 1 ]
	[ "$(jqo -s '[.[] | select(.type == "paused")][0].why')" = idle ]
	[ "$(jqo -s '[.[] | select(.type == "paused")][0].sandbox')" = "$id" ]
	[ "$(jqo -s '[.[] | select(.type == "paused")][0].detail.awake_by')" = process ]
	[ "$(jqo -s '[.[] | select(.type == "paused")][0].by')" = sbx-reap ]
	# A command on the paused sandbox resumes it on use (auto_resume);
	# the timer is off from here, so no later pause joins the count.
	sbx-ctl timeout --id "$id" --seconds 0 >/dev/null
	[ "$(ls_of "$id" state)" = paused ]
	run sbx-exec --id "$id" -- true
	[ "$status" -eq 0 ]
	sbx-reap --tenant idlev >/dev/null
	run sbx-events --tenant idlev
	[ "$(jqo -s '[.[] | select(.type == "resumed")] | length')" = 1 ]
	[ "$(jqo -s '[.[] | select(.type == "resumed")][0].why')" = use ]
	# Each is written once: another run finds nothing new.
	sbx-reap --tenant idlev >/dev/null
	run sbx-events --tenant idlev
	[ "$(jqo -s '[.[] | select(.type == "paused" or .type == "resumed")] | length')" = 2 ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "docker: a running sbx-exec keeps the container from the idle sweep; then the sweep removes it" {
	[ "$FIXTURE_BACKEND" = docker ] || skip "docker only: the idle sweep"
	local id pid
	id=$(sbx_new_id --timeout 2s --on-timeout kill)
	sbx-exec --id "$id" --timeout 60s -- sh -c 'sleep 8; echo finished' >"$BATS_TEST_TMPDIR/exec.json" &
	pid=$!
	# Sweep again and again while the exec runs: the container must stay.
	while kill -0 "$pid" 2>/dev/null; do
		sbx-reap --all-tenants --grace 1h >/dev/null 2>&1 || true
		[ "$(sbx-ls --id "$id" 2>/dev/null | jq -r .sandbox.state)" = running ]
		sleep 0.5
	done
	wait "$pid"
	[ "$(jq -r .exec.stdout "$BATS_TEST_TMPDIR/exec.json")" = finished ]
	# Silent now: a sweep past the TTL removes it.
	local i
	for i in $(seq 1 100); do
		sbx-reap --all-tenants --grace 1h >/dev/null 2>&1 || true
		run sbx-ls --id "$id"
		[ "$status" -ne 0 ] && break
		sleep 0.2
	done
	[ "$status" -eq 66 ]
}
