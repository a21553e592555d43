#!/usr/bin/env bats
# Fences guard what the backend deletes, not only what Redis stores (issue
# 26, sbx(7) LOCKS AND FENCES).  In each destructive window - between a lock
# holder's decision to delete a session's sandbox and the delete - the
# holder is frozen with SBX_STOP (SIGSTOP: its renewal thread stops with
# it), its lock expires, another process takes the session and uses the
# sandbox; then the first is continued.  The sandbox must survive: the
# delete is preceded by a token-and-fence check in Redis (lock.h,
# sbx_lock_verify), and the frozen holder ends with a conflict.
# Real redis-server, real processes, the local backend.

load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }
# A holder left frozen by a failed test is killed, not left behind.
teardown() {
	local p
	for p in ${a:-} ${c:-}; do kill -KILL "$p" 2>/dev/null || true; done
}

exists() { sbx-ls --id "$1" >/dev/null 2>&1; }
state_of() { sbx-ls --id "$1" | jq -r .sandbox.state; }

# Continue stopped process $1 and wait for it; its exit status in $st.
resume() {
	kill -CONT "$1"
	st=0
	wait "$1" || st=$?
	[ "${a:-}" != "$1" ] || a=
	[ "${c:-}" != "$1" ] || c=
}

# The frozen holder's end: conflict (exit 75), lock ownership lost, and
# nothing deleted ("not deleting sandbox ...").
assert_refused_delete() {
	[ "$st" -eq 75 ]
	[ "$(jq -r .error.kind <"$BATS_TEST_TMPDIR/a.out")" = conflict ]
	grep -q "lock ownership lost" "$BATS_TEST_TMPDIR/a.err"
}

@test "rebuild: a holder frozen before deleting the stale sandbox deletes nothing; the turn keeps it" {
	run resolve fr1 fr1
	old=${output%% *}
	sbx-lease begin --tenant fr1 --session fr1 >/dev/null
	sbx-lease stale --tenant fr1 >/dev/null
	# The turn's first resolve spends the rebuild ticket, decides to
	# rebuild, and is frozen right before the delete.
	freeze_holder resolve:before-rebuild-delete fr1 fr1 sbx-create --tenant fr1 --session fr1
	# The rest of the turn keeps the (stale) sandbox and uses it.
	run resolve fr1 fr1
	[ "$output" = "$old bound" ]
	sbx-exec --id "$old" -- sh -c 'echo mid-turn >/workspace/work'
	resume "$a"
	[ "$(state_of "$old")" = running ]
	[ "$(sbx-exec --id "$old" -- cat /workspace/work | jq -r .exec.stdout)" = mid-turn ]
	assert_refused_delete
	grep -q "not deleting sandbox $old" "$BATS_TEST_TMPDIR/a.err"
	run resolve fr1 fr1
	[ "$output" = "$old bound" ]
	sbx-lease end --tenant fr1 --session fr1 >/dev/null
	assert_one_sandbox fr1 fr1 "$old"
}

@test "claim: a holder frozen before deleting a duplicate deletes nothing; the next holder's claim survives" {
	# Two unbound sandboxes of one session (two crashed creates, as in
	# sessions.bats): X older than Y.
	SBX_STOP=resolve:before-create SBX_FAULT=resolve:after-backend-create SBX_LOCK_TTL_MS=300 \
		sbx-create --tenant fr2 --session fr2 >/dev/null 2>&1 3>&- &
	c=$!
	wait_stopped "$c"
	wait_key_gone "$(skey fr2 fr2 lock)"
	SBX_FAULT=resolve:after-backend-create SBX_LOCK_TTL_MS=300 run -137 sbx-create --tenant fr2 --session fr2
	x=$(ids_with sbx.session fr2)
	sleep 1.1   # created_at has one-second resolution: make X strictly older
	resume "$c"
	[ "$st" -eq 137 ]
	wait_key_gone "$(skey fr2 fr2 lock)"
	y=$(ids_with sbx.session fr2 | grep -vx "$x")
	[ -n "$y" ]
	# A adopts X and is frozen before deleting Y.  Meanwhile X is killed,
	# A's lock expires, and B claims Y.
	freeze_holder resolve:before-duplicate-delete fr2 fr2 sbx-create --tenant fr2 --session fr2
	sbx-ctl kill --id "$x" >/dev/null
	run resolve fr2 fr2
	[ "$output" = "$y claimed" ]
	resume "$a"
	[ "$(state_of "$y")" = running ]
	assert_refused_delete
	grep -q "not deleting sandbox $y" "$BATS_TEST_TMPDIR/a.err"
	assert_one_sandbox fr2 fr2 "$y"
	run resolve fr2 fr2
	[ "$output" = "$y bound" ]
}

@test "cleanup: a holder whose bind was refused, frozen before deleting its sandbox, deletes nothing once another claimed it" {
	# A creates X, is frozen before the bind past its TTL; continued, its
	# bind is refused (fenced) and it goes to delete X - and is frozen
	# again right before that delete, until its lock is gone once more.
	freeze_holder resolve:before-bind,resolve:before-cleanup-delete fr3 fr3 sbx-create --tenant fr3 --session fr3
	x=$(ids_with sbx.session fr3)
	kill -CONT "$a"
	wait_stopped "$a"
	wait_key_gone "$(skey fr3 fr3 lock)"
	# B claims X by its metadata and binds it.
	run resolve fr3 fr3
	[ "$output" = "$x claimed" ]
	resume "$a"
	[ "$(state_of "$x")" = running ]
	assert_refused_delete
	assert_one_sandbox fr3 fr3 "$x"
}

@test "reaper: frozen before deleting an orphan, it keeps it once a resolve claimed it (lock-lost)" {
	o=$(sbx-create --tenant fr4 --session fr4 | jq -er .sandbox.id)
	rcli DEL "$(skey fr4 fr4 binding)" >/dev/null
	rcli SREM "$(bound_key fr4)" "$o" >/dev/null
	freeze_holder reap:before-delete fr4 fr4 sbx-reap --tenant fr4 --grace 0
	run resolve fr4 fr4
	[ "$output" = "$o claimed" ]
	resume "$a"
	[ "$(state_of "$o")" = running ]
	[ "$st" -eq 0 ]
	[ "$(jq -r --arg id "$o" '.reap.kept[] | select(.id == $id) | .reason' <"$BATS_TEST_TMPDIR/a.out")" = lock-lost ]
	[ "$(jq '.reap.deleted | length' <"$BATS_TEST_TMPDIR/a.out")" = 0 ]
	assert_one_sandbox fr4 fr4 "$o"
}

@test "reaper --retire-idle: frozen before the delete, it keeps a session a resolve took meanwhile (lock-lost)" {
	local_only "idle time is the local backend's activity record"
	id=$(sbx-create --tenant fr5 --session fr5 | jq -er .sandbox.id)
	touch -d "3 hours ago" "$SBX_STATE_DIR/local/sandboxes/$id/activity"
	freeze_holder reap:before-retire-delete fr5 fr5 sbx-reap --tenant fr5 --retire-idle 1h
	# A turn starts and uses the sandbox.
	run resolve fr5 fr5
	[ "$output" = "$id bound" ]
	resume "$a"
	[ "$(state_of "$id")" = running ]
	[ "$st" -eq 0 ]
	[ "$(jq -r --arg id "$id" '.reap.skipped[] | select(.id == $id) | .reason' <"$BATS_TEST_TMPDIR/a.out")" = lock-lost ]
	[ "$(jq '.reap.retired | length' <"$BATS_TEST_TMPDIR/a.out")" = 0 ]
	assert_one_sandbox fr5 fr5 "$id"
}

@test "a holder that keeps its lock still deletes: the rebuild goes through" {
	stale_rebuild fr6 fr6
	run ! exists "$old"
	assert_one_sandbox fr6 fr6 "$new"
}
