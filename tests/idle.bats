#!/usr/bin/env bats
# suite: local docker
# Idle that sees work (issue 30, sbx(7) "Idle"): the idle timer stops a
# sandbox only when no exec, no detached process and no turn lease kept it
# awake for the period.  On local the init's timer pauses it and sbx-ls
# says which signal last kept it awake (`awake_by`); on docker and podman
# (capability idle_kill) the reaper's sweep removes it, so each test runs
# the reaper while it watches (docs/docker.md, "Idle policy: kill").  The
# timer's pauses as events and `paused_by` are local's: tests/local-idle.bats.
# Real sandboxes, real processes, real Redis; no assertion on elapsed time:
# each test watches the state while the work runs, or compares two
# sandboxes with the same timer.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

# The idle action each backend has: pause (local), kill (idle_kill).
kills() { has_cap idle_kill; }
new_sb() {
	if kills; then
		sbx_new_id --timeout 3s --on-timeout kill "$@"
	else
		sbx_new_id --timeout 3s --on-timeout pause --auto-resume "$@"
	fi
}
ls_of() { sbx-ls --id "$1" 2>/dev/null | jq -r ".sandbox.$2"; }
# One look of the idle timer where it is the reaper's (a no-op on local,
# whose timer runs by itself).  What kept a sandbox past its timeout from
# the delete (the report's idle[].awake_by) is added to awake.<id>.
sweep() {
	kills || return 0
	sbx-reap --all-tenants --grace 1h 2>/dev/null |
		jq -r '.reap.idle[]? | select(.awake_by) | "\(.id) \(.awake_by)"' |
		while read -r i by; do echo "$by" >>"$BATS_TEST_TMPDIR/awake.$i"; done || true
}
# 0 when the idle timer has stopped sandbox $1: paused (local) or removed.
stopped() {
	if kills; then
		run sbx-ls --id "$1"
		[ "$status" -eq 66 ]
	else
		[ "$(ls_of "$1" state)" = paused ]
	fi
}
# The signal that kept $1 awake: on local the one sbx-ls names as the
# last; on docker every sweep that found it past its timeout and kept it
# named $2 (and none did for "command": nothing but commands kept it).
awake_by_is() {
	if ! kills; then
		[ "$(ls_of "$1" awake_by)" = "$2" ]
	elif [ "$2" = command ]; then
		[ ! -s "$BATS_TEST_TMPDIR/awake.$1" ]
	else
		[ "$(sort -u "$BATS_TEST_TMPDIR/awake.$1")" = "$2" ]
	fi
}
# Wait (bounded) until the idle timer stopped sandbox $1; the assertion is
# the state, the bound only keeps a broken build from hanging the suite.
wait_stopped_idle() {
	local i
	for i in $(seq 1 600); do
		sweep
		stopped "$1" && return 0
		sleep 0.1
	done
	return 1
}
# Run `cond` (a shell string) until it holds, failing at once if sandbox
# $1 is found stopped meanwhile: the work it waits for kept it awake.
awake_until() {
	local id=$1 cond=$2 i
	for i in $(seq 1 900); do
		eval "$cond" && return 0
		sweep
		if stopped "$id"; then
			echo "sandbox $id stopped while its work ran (awake_by $(ls_of "$id" awake_by))" >&2
			return 1
		fi
		sleep 0.1
	done
	return 1
}
# Kill sandbox $1 unless the timer removed it already (docker).
done_with() { kills && stopped "$1" && return 0; sbx-ctl kill --id "$1" >/dev/null; }
# What the engine says of a path in container $1, without running
# anything inside (an exec would be activity): the archive API's stat.
engine_stat() {
	curl -sf --unix-socket "${DOCKER_HOST#unix://}" -I \
		"http://engine/v1.41/containers/$1/archive?path=$2" |
		sed -n 's/^X-Docker-Container-Path-Stat: *//Ip' | tr -d '\r' | base64 -d
}
# 0 when sandbox $1 has the file $2 (under /workspace), looked at from
# outside: the local host's view of its upper layer, the engine's stat.
has_file() {
	if kills; then
		[ -n "$(engine_stat "$1" "/workspace/$2")" ]
	else
		[ -e "$SBX_STATE_DIR/local/sandboxes/$1/upper/workspace/$2" ]
	fi
}

@test "a detached process keeps the sandbox awake until it ends; then the timer stops it" {
	local id
	id=$(new_sb)
	run sbx-proc start --id "$id" -- sh -c 'sleep 8; touch /workspace/done'
	[ "$status" -eq 0 ]
	# Stopped at the timer, the process could never write the file.
	awake_until "$id" 'has_file "$id" done'
	awake_by_is "$id" process
	wait_stopped_idle "$id"
	awake_by_is "$id" process
	if ! kills; then
		[ "$(ls_of "$id" paused_by)" = idle ]
		run sbx-exec --id "$id" -- cat /workspace/done
		[ "$status" -eq 0 ]
		[ "$(ls_of "$id" state)" = running ]
		[ "$(ls_of "$id" paused_by)" = null ]
	fi
	done_with "$id"
}

@test "a running sbx-exec keeps the sandbox awake; the silent sandbox then stops" {
	local id pid
	id=$(new_sb)
	sbx-exec --id "$id" --timeout 60s -- sh -c 'touch /workspace/started; sleep 8; echo finished' \
		>"$BATS_TEST_TMPDIR/exec.json" &
	pid=$!
	# Watched from its start: before it, a slow engine's create alone
	# may have used up the timer.
	local i
	for i in $(seq 1 300); do
		has_file "$id" started && break
		sleep 0.1
	done
	awake_until "$id" '! kill -0 $pid 2>/dev/null'
	wait "$pid"
	[ "$(jq -r .exec.stdout "$BATS_TEST_TMPDIR/exec.json")" = finished ]
	wait_stopped_idle "$id"
	awake_by_is "$id" exec
	done_with "$id"
}

@test "a held turn lease keeps the sandbox awake; its end lets the timer stop it" {
	local held silent t0
	held=$(new_sb --tenant idle --session lease1)
	sbx-lease begin --tenant idle --session lease1 >/dev/null
	kills || [ "$(ls_of "$held" awake)" = true ]
	kills || [ "$(ls_of "$held" awake_by)" = lease ]
	# A lease TTL no begin or status sets (they set $SBX_TURN_TTL_MS).
	local key
	key=$(rcli --scan --pattern '*{idle}:sess:lease1:turn' | head -1)
	[ "$(rcli pexpire "$key" 600000)" = 1 ]
	# Made after the lease began, with the same timer: idle for less time.
	silent=$(new_sb)
	wait_stopped_idle "$silent"
	awake_by_is "$silent" command
	[ "$(ls_of "$held" state)" = running ]
	awake_by_is "$held" lease
	# The sweeps looked at the lease without renewing it: a lease a crash
	# leaked still ends with its TTL.
	[ "$(rcli pttl "$key")" -le 600000 ]
	t0=$(date +%s)
	sbx-lease end --tenant idle --session lease1 >/dev/null
	# The timer counts from the lease's end: on docker the end puts the
	# activity marker (from outside), which the sweep reads.
	if kills; then
		[ "$(engine_stat "$held" /var/lib/sbx-activity | jq -r .mtime | date -f - +%s)" -ge "$t0" ]
	fi
	wait_stopped_idle "$held"
	awake_by_is "$held" lease
	kills || [ "$(ls_of "$held" paused_by)" = idle ]
	done_with "$held"
	done_with "$silent"
}

@test "a silent sandbox still stops; a background job of an exec does not keep it awake" {
	local id
	id=$(new_sb)
	sbx-exec --id "$id" -- sh -c 'sleep 1000 >/dev/null 2>&1 &' >/dev/null
	wait_stopped_idle "$id"
	kills || [ "$(ls_of "$id" paused_by)" = idle ]
	kills || [ "$(ls_of "$id" awake)" = null ]
	# The sleep the exec left is no supervisor: nothing kept it.
	if kills; then awake_by_is "$id" command; fi
	done_with "$id"
}

# The sweep deletes on the reaper's run; the reaper writes the kill, so a
# platform reading the tenant's events learns it then, not at the next
# resolve (found-gone).
@test "docker: the sweep's idle kill of a session sandbox is a killed event, why idle" {
	kills || skip "the local timer pauses (its events: local-idle.bats)"
	local id
	id=$(sbx-create --tenant idk --session s1 --timeout 3s --on-timeout kill | jq -r .sandbox.id)
	[ -n "$id" ] && [ "$id" != null ]
	wait_stopped_idle "$id"
	run sbx-events --tenant idk
	assert_success
	[ "$(jqo -s --arg id "$id" '[.[] | select(.type == "killed" and .sandbox == $id)] | length')" = 1 ]
	[ "$(jqo -s --arg id "$id" '[.[] | select(.type == "killed" and .sandbox == $id)][0].why')" = idle ]
	[ "$(jqo -s --arg id "$id" '[.[] | select(.type == "killed" and .sandbox == $id)][0].by')" = sbx-reap ]
}

# A container stopped outside sbx (the engine's stop) has no process table
# for the sweep to read (the engine refuses top): it runs nothing, so it is
# idle, not kept for a failed look.
@test "docker: a container stopped by the engine is removed by the sweep past its timeout" {
	kills || skip "local pauses (local-idle.bats)"
	local id
	id=$(new_sb)
	curl -sf --unix-socket "${DOCKER_HOST#unix://}" -X POST "http://engine/v1.41/containers/$id/stop?t=0" >/dev/null
	wait_stopped_idle "$id"
}

# Not seen is not idle: an exec the sweep cannot look at (the engine
# refused or timed out) keeps its container, reported with the error;
# before, a failed look counted as "that exec is gone" and a loaded
# engine let the sweep remove a container under a running sbx-exec.
@test "docker: an exec whose look fails keeps its container, reported; looked at again, it is kept as exec" {
	kills || skip "local's init sees its execs itself"
	local id pid i
	id=$(new_sb)
	sbx-exec --id "$id" --timeout 60s -- sh -c 'touch /workspace/started; sleep 8' >/dev/null &
	pid=$!
	for i in $(seq 1 300); do
		has_file "$id" started && break
		sleep 0.1
	done
	# Past the 3 s timer by the marker, which the exec touched as it began.
	sleep 4
	run env SBX_FAULT=docker:exec-look sbx-reap --all-tenants --grace 1h
	[ "$(jq -r --arg id "$id" '.reap.idle[] | select(.id == $id) | .error.kind' <<<"$output")" = unavailable ]
	[ "$(jq -r --arg id "$id" '.reap.idle[] | select(.id == $id) | .deleted' <<<"$output")" = false ]
	run sbx-ls --id "$id"
	assert_success
	run sbx-reap --all-tenants --grace 1h
	[ "$(jq -r --arg id "$id" '.reap.idle[] | select(.id == $id) | .awake_by' <<<"$output")" = exec ]
	kill -0 "$pid"
	wait "$pid"
	done_with "$id"
}

# The end of an exec is activity, as on local: the exec marks it inside
# the container before it ends, so a sweep that finds the exec gone reads
# the new mtime.  Marked only at the start, a command longer than the
# timer left a moment between its end and sbx-exec's return in which the
# sweep removed the container (test 2 above, red under load).
@test "docker: an exec's end restarts the idle clock, with and without --timeout" {
	kills || skip "local's init sees its execs itself"
	local id t0 m
	id=$(new_sb)
	for opt in "" "--timeout 60s"; do
		t0=$(date +%s)
		# shellcheck disable=SC2086 # the option is two words or none
		run sbx-exec --id "$id" $opt -- sleep 4
		assert_success
		m=$(engine_stat "$id" /var/lib/sbx-activity | jq -r .mtime | date -f - +%s)
		[ "$m" -ge $((t0 + 3)) ]
	done
	run sbx-exec --id "$id" -- sh -c 'exit 7'
	[ "$status" -eq 0 ]
	[ "$(jqo .exec.exit_code)" = 7 ]
	done_with "$id"
}
