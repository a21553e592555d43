#!/usr/bin/env bats
# A stopped init (SIGSTOP from the host) is seen: sbx-ls reports the
# sandbox as `stopped` (a live state), and the next command that uses the
# sandbox continues the init (SIGCONT through its pidfd) and goes on, so
# the idle timer and the reaping of orphans resume.  Local backend only.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

state_of() { sbx-ls --id "$1" 2>/dev/null | jq -r .sandbox.state; }
init_of() { jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$1/sandbox.json"; }
# The process state letter of pid $1 (field 3 of /proc/PID/stat).
pstate() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1; }
# SIGSTOP is asynchronous: wait (bounded) until pid $1 is stopped.
stop_init() {
	local i
	kill -STOP "$1"
	for i in $(seq 1 100); do
		[ "$(pstate "$1")" = T ] && return 0
		sleep 0.05
	done
	return 1
}

@test "a stopped init is listed as stopped; the next exec continues it" {
	local id init
	id=$(sbx_new_id)
	init=$(init_of "$id")
	stop_init "$init"
	[ "$(state_of "$id")" = stopped ]
	# stopped is live: listed by default and by --state.
	run sbx-ls
	[[ "$output" == *"$id"* ]]
	run sbx-ls --state stopped
	[ "$(jqo .sandbox.id)" = "$id" ]
	run sbx-ls --state running
	[[ "$output" != *"$id"* ]]
	run sbx-exec --id "$id" -- echo hello
	assert_success
	[ "$(jqo .exec.stdout)" = hello ]
	[ "$(pstate "$init")" != T ]
	[ "$(state_of "$id")" = running ]
}

@test "pause and file operations continue a stopped init too" {
	local id init
	id=$(sbx_new_id)
	init=$(init_of "$id")
	stop_init "$init"
	run sbx-fs --id "$id" ls /workspace
	assert_success
	[ "$(pstate "$init")" != T ]
	stop_init "$init"
	run sbx-ctl pause --id "$id"
	assert_success
	[ "$(pstate "$init")" != T ]
	[ "$(state_of "$id")" = paused ]
	# A paused sandbox whose init is stopped reports the init: stopped.
	stop_init "$init"
	[ "$(state_of "$id")" = stopped ]
	run sbx-exec --id "$id" -- echo back
	[ "$(jqo .exec.stdout)" = back ]
	[ "$(state_of "$id")" = running ]
}

@test "orphans of a stopped init are reaped once it is continued" {
	local id init
	id=$(sbx_new_id)
	init=$(init_of "$id")
	# A daemon that outlives its exec: reparented to the init.
	sbx-exec --id "$id" -- sh -c 'sleep 1000 >/dev/null 2>&1 &' >/dev/null
	stop_init "$init"
	# It dies while the init is stopped: a zombie nobody reaps.
	pkill -KILL -f '^sleep 1000$' --ns "$init" --nslist pid
	run sbx-exec --id "$id" -- sh -c 'for i in $(seq 1 100); do
		grep -q "^State:.*Z" /proc/[0-9]*/status 2>/dev/null || { echo reaped; exit; }; sleep 0.05; done'
	[ "$(jqo .exec.stdout)" = reaped ]
}
