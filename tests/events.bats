#!/usr/bin/env bats
# suite: conformance
# The tenant's event stream (common/events/events.c, sbx-events(1)) against a real
# redis-server and the real backend: a session's whole life gives exactly
# its events in order; a consumer group reader killed with -9 gets again
# what it had not acknowledged and nothing it had; a failing --exec leaves
# its event pending.

load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }
# The AOF test's own Redis goes even when the test failed half-way.
teardown() {
	local p=$BATS_TEST_TMPDIR/aof/r.pid
	[ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null || true
}

ekey() { printf 'sbx:{%s}:events' "$1"; }

# The events of tenant $1 as "type how why" lines (absent fields: -).
life() { sbx-events --tenant "$1" "${@:2}" | jq -r '"\(.type) \(.how // "-") \(.why // "-")"'; }

unbind() {
	local id
	id=$(rcli GET "sbx:{$1}:sess:$2:binding" | jq -er .sandbox_id)
	rcli DEL "sbx:{$1}:sess:$2:binding" >/dev/null
	rcli SREM "sbx:{$1}:bound" "$id" >/dev/null
}

@test "a session's whole life produces exactly its events, in order" {
	run sbx-create --tenant life --session s1
	assert_success
	first=$(jqo .sandbox.id)
	sbx-lease begin --tenant life --session s1 >/dev/null
	sbx-exec --id "$first" -- true >/dev/null
	sbx-lease end --tenant life --session s1 >/dev/null
	sbx-ctl pause --id "$first" >/dev/null
	sbx-ctl resume --id "$first" >/dev/null
	# Paused again, the next resolve resumes it.
	sbx-ctl pause --id "$first" >/dev/null
	run sbx-create --tenant life --session s1
	[ "$(jqo .resolved)" = bound ]
	# A backend without an idle timer of its own (docker) has no timeout.
	local timeout=
	if has_cap set_timeout; then
		sbx-ctl timeout --id "$first" --seconds 600 >/dev/null
		timeout=$'\ntimeout - command'
	fi
	sbx-lease stale --tenant life >/dev/null
	run sbx-create --tenant life --session s1
	assert_success
	[ "$(jqo .resolved)" = rebuilt ]
	second=$(jqo .sandbox.id)
	sbx-ctl kill --id "$second" >/dev/null
	# A bound sandbox deleted behind sbx's back is found gone by the next
	# resolve: said as seen, not as done by anyone.
	# (Here: sbx-ctl kill, its event and its unbinding undone.)
	run sbx-create --tenant life --session s3
	third=$(jqo .sandbox.id)
	binding=$(rcli GET "$(skey life s3 binding)")
	sbx-ctl kill --id "$third" >/dev/null
	rcli XDEL "$(ekey life)" "$(rcli XREVRANGE "$(ekey life)" + - COUNT 1 | head -1)" >/dev/null
	rcli SET "$(skey life s3 binding)" "$binding" >/dev/null
	rcli SADD "$(bound_key life)" "$third" >/dev/null
	run sbx-create --tenant life --session s3
	[ "$(jqo .resolved)" = created ]
	orphan=$(sbx-create --tenant life --session s2 | jq -er .sandbox.id)
	unbind life s2
	sbx-reap --tenant life --grace 0 >/dev/null

	run life life
	assert_success
	assert_output "created - -
resolved created -
lease begin -
lease end -
paused - command
resumed - command
paused - command
resumed - resolve
resolved bound -$timeout
stale - -
killed - rebuild
created - -
resolved rebuilt -
killed - command
created - -
resolved created -
killed - found-gone
created - -
resolved created -
created - -
resolved created -
killed - orphan"
	# Who and what: each names its tenant and program; the sandboxes.
	run sbx-events --tenant life --session s1
	[ "$(jqo -s '[.[] | .sandbox // empty] | unique | length')" = 2 ]
	[ "$(jqo -s '[.[] | select(.type == "killed" and .why == "command")][0].by')" = sbx-ctl ]
	[ "$(jqo -s '[.[] | select(.why == "orphan")] | length')" = 0 ]
	[ -z "$timeout" ] || [ "$(jqo -s '[.[] | select(.type == "timeout")][0].detail.seconds')" = 600 ]
	[ "$(jqo -s '[.[] | select(.tenant != "life")] | length')" = 0 ]
	run sbx-events --tenant life --session s2
	[ "$(jqo -s '[.[] | select(.type == "killed")][0].sandbox')" = "$orphan" ]
	[ "$(jqo -s '[.[] | select(.type == "killed")][0].by')" = sbx-reap ]
	[ "$(rcli type "$(ekey life)")" = stream ]
}

@test "--since prints only what came after the id" {
	sbx-create --tenant since --session s1 >/dev/null
	mid=$(sbx-events --tenant since | jq -r .id | head -1)
	run life since --since "$mid"
	assert_output "resolved created -"
	run -64 sbx-events --tenant since --since yesterday
	assert_output --partial "--since wants a stream entry id"
}

@test "a group reader killed with -9 gets every unacknowledged event again, none twice after" {
	local d=$BATS_TEST_TMPDIR
	for i in 1 2 3 4 5; do
		rcli XADD "$(ekey grp)" '*' v 1 type created tenant grp session "s$i" >/dev/null
	done
	# The command takes its event and then waits for a file before it
	# exits 0: the reader is killed while event 3 is in hand.
	cat >"$d/take" <<-SH
	#!/bin/sh
	ev=\$(cat)
	s=\$(printf '%s' "\$ev" | jq -r .session)
	echo "\$s" >>"$d/seen"
	[ "\$s" = s3 ] && [ ! -e "$d/go" ] && { echo \$\$ >"$d/held"; while [ ! -e "$d/go" ]; do sleep 0.05; done; }
	exit 0
	SH
	chmod +x "$d/take"
	sbx-events --tenant grp --group g --consumer c1 --exec "$d/take" &
	reader=$!
	for i in $(seq 1 400); do [ -s "$d/held" ] && break; sleep 0.05; done
	[ -s "$d/held" ]
	kill -9 "$reader"
	wait "$reader" || true
	kill "$(cat "$d/held")" 2>/dev/null || true
	[ "$(tr '\n' ' ' <"$d/seen")" = "s1 s2 s3 " ]
	# One batch was read: s1 and s2 were acknowledged, s3..s5 are pending.
	[ "$(rcli XPENDING "$(ekey grp)" g | head -1)" = 3 ]
	touch "$d/go"
	: >"$d/seen"
	run sbx-events --tenant grp --group g --consumer c1 --exec "$d/take"
	assert_success
	[ "$(tr '\n' ' ' <"$d/seen")" = "s3 s4 s5 " ]
	[ "$(rcli XPENDING "$(ekey grp)" g | head -1)" = 0 ]
	: >"$d/seen"
	run sbx-events --tenant grp --group g --consumer c1 --exec "$d/take"
	assert_success
	[ ! -s "$d/seen" ]
	# Without --exec the event is acknowledged once it is on stdout.
	rcli XADD "$(ekey grp)" '*' v 1 type created tenant grp session s6 >/dev/null
	run sbx-events --tenant grp --group g --consumer c1
	[ "$(jqo .session)" = s6 ]
	run sbx-events --tenant grp --group g --consumer c1
	assert_output ""
}

@test "a failing --exec leaves its event pending; another consumer claims it" {
	rcli XADD "$(ekey fail)" '*' v 1 type paused tenant fail why command >/dev/null
	run sbx-events --tenant fail --group g --consumer c1 --exec 'cat >/dev/null; exit 3'
	assert_success
	assert_output --partial "sbx-events: warning: failed: event "
	assert_output --partial "left pending: --exec exited 3"
	[ "$(rcli XPENDING "$(ekey fail)" g | head -1)" = 1 ]
	# c1 again: its own pending event comes back.
	run sbx-events --tenant fail --group g --consumer c1 --exec 'cat >/dev/null; exit 3'
	assert_output --partial "left pending"
	# Another consumer takes it over once it was pending long enough.
	run sbx-events --tenant fail --group g --consumer c2 --claim-idle 1ms
	[ "$(jqo .type)" = paused ]
	[ "$(rcli XPENDING "$(ekey fail)" g | head -1)" = 0 ]
}

@test "an event that cannot be written fails nothing: a warning on stderr" {
	sbx-create --tenant warn --session s1 >/dev/null
	# A key of another type where the stream goes: XADD is refused.
	rcli DEL "$(ekey warn)" >/dev/null
	rcli SET "$(ekey warn)" x >/dev/null
	# The resolve's event rides on its lock release: the release still counts.
	run --separate-stderr sbx-create --tenant warn --session s1
	assert_success
	[ "$(jqo .resolved)" = bound ]
	[[ $stderr == *"sbx-create: warning: internal: event 'resolved' of tenant warn not written: redis XADD: WRONGTYPE"* ]]
	[ "$(rcli exists "$(skey warn s1 lock)")" = 0 ]
	run --separate-stderr sbx-ctl pause --id "$(jqo .sandbox.id)"
	assert_success
	[ "$(jqo .ctl.op)" = pause ]
	[[ $stderr == *"sbx-ctl: warning: internal: event 'paused' of tenant warn not written"* ]]
}

@test "usage errors exit 64" {
	run -64 sbx-events
	assert_output --partial "--tenant is required"
	run -64 sbx-events --tenant t --session s --group g
	run -64 sbx-events --tenant t --exec true
}

@test "a profile's events_maxlen 0 turns events off; a negative one is a configuration error" {
	local f="$SBX_TEST_DIR/off.json"
	jq '.profiles.off = ((.profiles.default // {}) + {"events_maxlen": 0})' "$SBX_CONFIG" >"$f"
	SBX_CONFIG=$f sbx-lease begin --profile off --tenant off --session s1 >/dev/null
	[ "$(rcli exists "$(ekey off)")" = 0 ]
	sbx-lease begin --tenant off --session s1 >/dev/null
	[ "$(rcli xlen "$(ekey off)")" = 1 ]
	jq '.profiles.neg = {"events_maxlen": -1}' "$SBX_CONFIG" >"$f"
	run -78 env SBX_CONFIG="$f" sbx-events --profile neg --tenant off
	assert_output --partial "events_maxlen must be >= 0"
}

@test "--claim-idle wants a duration" {
	run -64 sbx-events --tenant t --group g --claim-idle soon
	assert_output --partial "--claim-idle:"
}

# Wait until file $1 has at least $2 lines (a reader's output).
wait_lines() {
	local i
	for i in $(seq 1 400); do
		[ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

@test "--follow prints what is kept, then each new event as it is appended" {
	local d=$BATS_TEST_TMPDIR
	sbx-lease begin --tenant fol --session s1 >/dev/null
	sbx-events --tenant fol --follow >"$d/plain" &
	plain=$!
	sbx-events --tenant fol --group watch --consumer w1 --follow >"$d/group" &
	group=$!
	wait_lines "$d/plain" 1
	wait_lines "$d/group" 1
	sbx-lease end --tenant fol --session s1 >/dev/null
	wait_lines "$d/plain" 2
	wait_lines "$d/group" 2
	kill "$plain" "$group"
	wait "$plain" "$group" || true
	[ "$(jq -r .how "$d/plain" | tr '\n' ' ')" = "begin end " ]
	[ "$(jq -r .how "$d/group" | tr '\n' ' ')" = "begin end " ]
	[ "$(rcli XPENDING "$(ekey fol)" watch | head -1)" = 0 ]
}

# A redis-server of this test's own with AOF (every write fsynced), on $1.
aof_start() {
	redis-server --port 0 --unixsocket "$1/r.sock" --unixsocketperm 700 --save '' \
		--appendonly yes --appendfsync always --daemonize yes --pidfile "$1/r.pid" \
		--logfile "$1/r.log" --dir "$1" >/dev/null
	local i
	for i in $(seq 1 100); do
		redis-cli -s "$1/r.sock" ping >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

@test "Redis killed with -9 and restarted from its AOF: no event and no acknowledgement lost" {
	local d=$BATS_TEST_TMPDIR/aof
	mkdir -p "$d"
	aof_start "$d"
	export SBX_REDIS_URL="unix://$d/r.sock"
	for s in s1 s2 s3; do sbx-lease begin --tenant aof --session $s >/dev/null; done
	run sbx-events --tenant aof --group g --consumer c1
	[ "${#lines[@]}" = 3 ]
	sbx-lease end --tenant aof --session s1 >/dev/null
	sbx-lease end --tenant aof --session s2 >/dev/null
	run sbx-events --tenant aof --group g --consumer c1 --exec 'cat >/dev/null; exit 1'
	[ "$(redis-cli -s "$d/r.sock" XPENDING "$(ekey aof)" g | head -1)" = 2 ]
	kill -9 "$(cat "$d/r.pid")"
	while kill -0 "$(cat "$d/r.pid")" 2>/dev/null; do sleep 0.05; done
	rm -f "$d/r.sock"
	aof_start "$d"
	[ "$(redis-cli -s "$d/r.sock" XLEN "$(ekey aof)")" = 5 ]
	run sbx-events --tenant aof --group g --consumer c1
	assert_success
	[ "$(printf '%s\n' "$output" | jq -r '"\(.session) \(.how)"' | tr '\n' ' ')" = "s1 end s2 end " ]
	run sbx-events --tenant aof --group g --consumer c1
	assert_output ""
}
