#!/usr/bin/env bats
# suite: local
# The local backend's idle timer beyond the signals tests/idle.bats holds
# on every backend: sbx-init pauses (never kills), sbx-ls says why
# (`paused_by`), and the reaper turns the timer's pauses and resumes into
# events (docs/design.md, "Idle that sees work").  Docker kills from the
# reaper's sweep instead: no idle pause, no `paused_by`, no idle events
# (docs/docker.md, "Idle policy: kill").

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

@test "a command pause is not an idle pause" {
	local id
	id=$(sbx_new_id)
	sbx-ctl pause --id "$id" >/dev/null
	[ "$(ls_of "$id" state)" = paused ]
	[ "$(ls_of "$id" paused_by)" = null ]
	[ "$(ls_of "$id" awake_by)" = command ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "the idle timer's pause and a resume on use are events, written by the next reaper run" {
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

# A resume's document is the record's view after it: the idle fields the
# backend owns (paused_by, awake, awake_by) are replaced, not merged with
# those the caller's document carried (it said paused_by idle, running).
@test "sbx-ctl resume of an idle-paused sandbox says nothing of the idle pause any more" {
	local id
	id=$(new_sb)
	wait_state "$id" paused
	[ "$(ls_of "$id" paused_by)" = idle ]
	sbx-ctl timeout --id "$id" --seconds 0 >/dev/null
	run sbx-ctl resume --id "$id"
	assert_success
	[ "$(jqo .sandbox.state)" = running ]
	[ "$(jqo .sandbox.paused_by)" = null ]
	# and a document carrying the old view, piped in, gets the same
	run bash -c "sbx-ctl pause --id '$id' >/dev/null; sbx-ls --id '$id' | jq -c '.sandbox.paused_by = \"idle\"' | sbx-ctl resume"
	assert_success
	[ "$(jqo .sandbox.paused_by)" = null ]
	sbx-ctl kill --id "$id" >/dev/null
}
