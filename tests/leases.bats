#!/usr/bin/env bats
# sbx-lease: turn leases, stale marking and the lifecycle lock, against a
# real redis-server (no sandbox backend needed).

load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

@test "begin/end count nested turns; the last end deletes the lease" {
	run sbx-lease begin --tenant t1 --session s1
	assert_success
	[ "$(jqo .lease.refs)" = 1 ]
	[ "$(jqo .lease.active)" = true ]
	run sbx-lease begin --tenant t1 --session s1
	[ "$(jqo .lease.refs)" = 2 ]
	run sbx-lease status --tenant t1 --session s1
	[ "$(jqo .lease.active)" = true ]
	[ "$(jqo .lease.rebuild)" = true ]
	[ "$(jqo .lease.binding)" = null ]
	[ "$(rcli hget "$(skey t1 s1 turn)" rebuild)" = 1 ]
	[ "$(rcli pttl "$(skey t1 s1 turn)")" -gt 1700000 ]
	run sbx-lease end --tenant t1 --session s1
	[ "$(jqo .lease.refs)" = 1 ]
	run sbx-lease end --tenant t1 --session s1
	[ "$(jqo .lease.refs)" = 0 ]
	[ "$(jqo .lease.active)" = false ]
	[ "$(rcli exists "$(skey t1 s1 turn)")" = 0 ]
	run sbx-lease end --tenant t1 --session s1
	assert_success
	[ "$(rcli exists "$(skey t1 s1 turn)")" = 0 ]
}

@test "a crashed turn's lease expires after SBX_TURN_TTL_MS" {
	SBX_TURN_TTL_MS=300 run sbx-lease begin --tenant t1 --session crash
	assert_success
	wait_key_gone "$(skey t1 crash turn)"
	run sbx-lease status --tenant t1 --session crash
	[ "$(jqo .lease.active)" = false ]
}

@test "leases act on piped documents' sandbox.tenant/session, passing other keys through" {
	run sh -c 'echo "{\"sandbox\":{\"id\":\"x\",\"tenant\":\"t2\",\"session\":\"s9\"},\"keep\":1}" | sbx-lease begin'
	assert_success
	[ "$(jqo .lease.refs)" = 1 ]
	[ "$(jqo .keep)" = 1 ]
	[ "$(jqo .sandbox.id)" = x ]
	run sh -c 'echo "{\"error\":{\"kind\":\"conflict\",\"exit_status\":75,\"message\":\"m\"}}" | sbx-lease begin'
	[ "$status" -eq 75 ]
	[ "$(jqo .error.kind)" = conflict ]
}

@test "usage errors exit 64" {
	run sbx-lease
	[ "$status" -eq 64 ]
	run sbx-lease frobnicate --tenant t
	[ "$status" -eq 64 ]
	run sbx-lease lock --tenant t --session s
	[ "$status" -eq 64 ]
	run sbx-lease stale --tenant t --session s
	[ "$status" -eq 64 ]
}

@test "ids over 1024 bytes are refused with invalid_request (65)" {
	long=$(head -c 1025 /dev/zero | tr '\0' x)
	run sbx-lease begin --tenant t --session "$long"
	[ "$status" -eq 65 ]
	assert_output --partial "at most 1024"
}

@test "lock runs the command, exports the fence, exits with its status" {
	run sbx-lease lock --tenant t1 --session l1 -- sh -c 'echo "fence=$SBX_LOCK_FENCE"; exit 7'
	[ "$status" -eq 7 ]
	assert_output --partial "fence=1"
	run sbx-lease lock --tenant t1 --session l1 -- true
	assert_success
	[ "$(rcli get "$(skey t1 l1 fence)")" = 2 ]
	[ "$(rcli exists "$(skey t1 l1 lock)")" = 0 ]
	run -127 --separate-stderr sbx-lease lock --tenant t1 --session l1 -- /nonexistent/cmd
	[ "$stderr" = "sbx-lease: error: not_found: cannot run /nonexistent/cmd: No such file or directory" ]
	[ "$(rcli exists "$(skey t1 l1 lock)")" = 0 ]
}

@test "a busy lock without --wait exits 75; with --wait it waits for the holder" {
	run sbx-lease lock --tenant t1 --session l2 -- sh -c 'sbx-lease lock --tenant t1 --session l2 -- true'
	[ "$status" -eq 75 ]
	assert_output --partial "held by another process"
	# The holder releases when its command ends; the waiter then runs.
	sbx-lease lock --tenant t1 --session l2 -- sh -c "touch $BATS_TEST_TMPDIR/held; sleep 1" &
	while [ ! -e "$BATS_TEST_TMPDIR/held" ]; do sleep 0.02; done
	run sbx-lease lock --tenant t1 --session l2 --wait 20s -- echo got-it
	assert_success
	assert_output got-it
	wait
}

@test "the lock is exclusive: 12 concurrent read-modify-write critical sections lose no update" {
	f=$BATS_TEST_TMPDIR/counter
	echo 0 >"$f"
	for i in $(seq 1 12); do
		sbx-lease lock --tenant t1 --session mutex --wait 60s -- \
			sh -c "n=\$(cat $f); sleep 0.02; echo \$((n + 1)) >$f" &
	done
	wait
	[ "$(cat "$f")" = 12 ]
}

@test "the lock is renewed while the command runs longer than its TTL" {
	SBX_LOCK_TTL_MS=900 run sbx-lease lock --tenant t1 --session renew -- \
		sh -c 'sleep 3; sbx-lease lock --tenant t1 --session renew -- true; echo inner=$?'
	assert_success
	assert_output --partial "inner=75"
}

@test "a holder killed with -9 leaves the lock to expire" {
	SBX_LOCK_TTL_MS=400 sbx-lease lock --tenant t1 --session k9 -- \
		sh -c "echo \$\$ >$BATS_TEST_TMPDIR/child; exec sleep 30" &
	holder=$!
	while [ ! -s "$BATS_TEST_TMPDIR/child" ]; do sleep 0.02; done
	kill -9 "$holder"
	run sbx-lease lock --tenant t1 --session k9 --wait 20s -- echo after
	assert_success
	assert_output after
	kill "$(cat "$BATS_TEST_TMPDIR/child")"
}

@test "a holder stopped past its TTL learns it lost the lock (exit 70) and the new holder is untouched" {
	SBX_LOCK_TTL_MS=300 sbx-lease lock --tenant t1 --session stop -- \
		sh -c "touch $BATS_TEST_TMPDIR/in; while [ ! -e $BATS_TEST_TMPDIR/go ]; do sleep 0.02; done" \
		2>"$BATS_TEST_TMPDIR/err" &
	holder=$!
	while [ ! -e "$BATS_TEST_TMPDIR/in" ]; do sleep 0.02; done
	kill -STOP "$holder"
	wait_key_gone "$(skey t1 stop lock)"
	SBX_LOCK_TTL_MS=60000 sbx-lease lock --tenant t1 --session stop -- sh -c "sleep 0.5" &
	second=$!
	while [ "$(rcli exists "$(skey t1 stop lock)")" = 0 ]; do sleep 0.02; done
	token=$(rcli get "$(skey t1 stop lock)")
	kill -CONT "$holder"
	touch "$BATS_TEST_TMPDIR/go"
	st=0
	wait "$holder" || st=$?
	[ "$st" -eq 70 ]
	grep -q "lock ownership lost" "$BATS_TEST_TMPDIR/err"
	# The stale holder's release did not delete the new holder's lock.
	[ "$(rcli get "$(skey t1 stop lock)")" = "$token" ] || [ "$(rcli exists "$(skey t1 stop lock)")" = 0 ]
	wait "$second"
}

@test "stale marks every binding of the tenant (hostile ids), and no other tenant's" {
	# Bindings are written as sbx would write them (no backend needed here).
	put() {   # tenant-escaped session-escaped sandbox tenant session
		rcli set "sbx:{$1}:sess:$2:binding" \
			"{\"version\":1,\"backend\":\"local\",\"tenant\":\"$4\",\"session\":\"$5\",\"sandbox_id\":\"$3\",\"template\":\"host\",\"created_at\":\"2026-01-01T00:00:00Z\",\"fence\":1,\"profile\":\"default\"}" >/dev/null
	}
	put 'ten%2A' a sb1 'ten*' a
	put 'ten%2A' 'b%3Ac' sb2 'ten*' 'b:c'
	put 'ten%2A' '%2A' sb3 'ten*' '*'
	put 'tenX' a sb4 'tenX' a
	run sbx-lease stale --tenant 'ten*'
	assert_success
	[ "$(jqo .lease.marked)" = 3 ]
	[ "$(jqo .lease.failed)" = 0 ]
	[ "$(rcli get 'sbx:{ten%2A}:sess:b%3Ac:binding' | jq -r .stale_at)" != null ]
	[ "$(rcli get 'sbx:{tenX}:sess:a:binding' | jq -r .stale_at)" = null ]
	run sbx-lease status --tenant 'ten*' --session '*'
	[ "$(jqo .lease.binding.sandbox_id)" = sb3 ]
	[ "$(jqo .lease.binding.stale_at)" != null ]
	run sbx-lease stale --tenant 'ten*'
	[ "$(jqo .lease.marked)" = 0 ]
}

@test "a malformed binding is reported, never treated as absent" {
	rcli set "$(skey bad s binding)" 'not json' >/dev/null
	run sbx-lease status --tenant bad --session s
	[ "$status" -eq 70 ]
	assert_output --partial "not a JSON object"
	run sbx-lease stale --tenant bad
	[ "$status" -ne 0 ]
	[ "$(jqo .lease.failed)" = null ] || true
}

@test "Redis down: exit 69, one line naming the URL without the password" {
	run env SBX_REDIS_URL='redis://:hunter2@127.0.0.1:1/0' sbx-lease begin --tenant t --session s
	[ "$status" -eq 69 ]
	[ "${#lines[@]}" -ge 1 ]
	refute_output --partial hunter2
	assert_output --partial "redis://127.0.0.1:1/0"
	d=$BATS_TEST_TMPDIR/r2
	redis_start "$d"
	sock=$REDIS_SOCK
	export REDIS_SOCK=$SBX_TEST_DIR/redis/redis.sock SBX_REDIS_URL=unix://$SBX_TEST_DIR/redis/redis.sock
	redis_stop "$d"
	run env SBX_REDIS_URL="unix://$sock" sbx-lease begin --tenant t --session s
	[ "$status" -eq 69 ]
	assert_output --partial "unix://$sock"
	[ "$(printf '%s\n' "$output" | grep -c 'error:')" = 1 ]
}
