#!/usr/bin/env bats
# suite: local docker
# Retention tiers (the profile's retain_paused; session-end.c
# sbx_session_expire, the reaper's retention phase) against a real
# redis-server and the real backend: a paused session sandbox is kept
# until its retain_until, which sbx-ls shows; then sbx-reap ends it under
# the session's lock as sbx-ctl kill ends it, with a killed event
# why=retention; --dry-run only lists it.

load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	local p
	p=$(jq -r '.default_profile // "default"' "$SBX_CONFIG")
	jq --arg p "$p" '.profiles[$p].retain_paused = "2s"' "$SBX_CONFIG" >"$SBX_CONFIG.new"
	mv "$SBX_CONFIG.new" "$SBX_CONFIG"
}
teardown_file() { sbx_teardown_file; }
# A holder a test froze goes even when the test failed half-way.
teardown() { [ -z "${a:-}" ] || kill -9 "$a" 2>/dev/null || true; }

# Wait until the clock is past the ISO time $1 (a retention running out;
# the assertions after it do not depend on how long that took).
wait_past() {
	local until now
	until=$(date -u -d "$1" +%s)
	for _ in $(seq 1 100); do
		now=$(date -u +%s)
		[ "$now" -gt "$until" ] && return 0
		sleep 0.2
	done
	return 1
}

@test "sbx-ls shows retain_until of a paused session sandbox, and of no running one" {
	run resolve show a
	id=${output%% *}
	[ "$(sbx-ls --id "$id" | jq -r '.retain_until // "none"')" = none ]
	sbx-ctl pause --id "$id" >/dev/null
	run sbx-ls --id "$id"
	until=$(jqo .retain_until)
	at=$(rcli hget 'sbx:{show}:paused' a)
	[ "$(date -u -d "$until" +%s)" = $((at + 2)) ]
	# The listing says it too.
	[ "$(sbx-ls --tenant show | jq -r 'select(.sandbox.id == "'"$id"'") | .retain_until')" = "$until" ]
	# A resume drops the pause time: retention starts again at the next pause.
	sbx-ctl resume --id "$id" >/dev/null
	[ "$(rcli hexists 'sbx:{show}:paused' a)" = 0 ]
}

@test "sbx-reap ends a paused sandbox past its retention, as sbx-ctl kill does; --dry-run only lists it" {
	run resolve ret a
	a_id=${output%% *}
	run resolve ret b
	b_id=${output%% *}
	sbx-ctl pause --id "$a_id" >/dev/null
	until=$(sbx-ls --id "$a_id" | jq -r .retain_until)
	# Before its time nothing goes.
	run sbx-reap --tenant ret --dry-run
	assert_success
	[ "$(jqo '.reap.would_expire | length')" = 0 ]
	wait_past "$until"
	run sbx-reap --tenant ret --dry-run
	assert_success
	[ "$(jqo -c '[.reap.would_expire[].id]')" = "[\"$a_id\"]" ]
	[ "$(jqo '.reap.would_expire[0].retain_until')" = "$until" ]
	[ "$(sbx-ls --id "$a_id" | jq -r .sandbox.state)" = paused ]
	run sbx-reap --tenant ret
	assert_success
	[ "$(jqo -c '[.reap.expired[].id]')" = "[\"$a_id\"]" ]
	# Gone with its binding, its bound-set member, its slot and its fence,
	# as a kill leaves it; the running one is untouched.
	run -66 sbx-ls --id "$a_id"
	[ "$(rcli exists "$(skey ret a binding)")" = 0 ]
	[ "$(rcli exists "$(skey ret a fence)")" = 0 ]
	[ "$(rcli sismember "$(bound_key ret)" "$a_id")" = 0 ]
	[ "$(rcli hexists 'sbx:{ret}:usage' a)" = 0 ]
	[ "$(rcli hexists 'sbx:{ret}:paused' a)" = 0 ]
	[ "$(sbx-ls --id "$b_id" | jq -r .sandbox.state)" = running ]
	run sbx-events --tenant ret --session a
	[ "$(jqo -c 'select(.type == "killed") | [.sandbox, .why]')" = "[\"$a_id\",\"retention\"]" ]
	# The session starts again with a new sandbox.
	run resolve ret a
	[ "${output#* }" = created ]
}

@test "a paused sandbox whose session's lock is held is kept (locked) until the holder is gone" {
	run resolve lk a
	id=${output%% *}
	sbx-ctl pause --id "$id" >/dev/null
	wait_past "$(sbx-ls --id "$id" | jq -r .retain_until)"
	SBX_STOP=resolve:after-lock sbx-create --tenant lk --session a >/dev/null 2>&1 3>&- &
	local a=$!
	wait_stopped "$a"
	run sbx-reap --tenant lk
	[ "$(jqo '.reap.expired | length')" = 0 ]
	[ "$(jqo -r '.reap.skipped[] | select(.id == "'"$id"'") | .reason')" = locked ]
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.state)" = paused ]
	kill -9 "$a"
	wait "$a" || true
	rcli del "$(skey lk a lock)" >/dev/null
	run sbx-reap --tenant lk
	assert_success
	[ "$(jqo -c '[.reap.expired[].id]')" = "[\"$id\"]" ]
}

@test "a sandbox resumed after its retain_until, before the run, is kept" {
	run resolve rs a
	id=${output%% *}
	sbx-ctl pause --id "$id" >/dev/null
	wait_past "$(sbx-ls --id "$id" | jq -r .retain_until)"
	sbx-ctl resume --id "$id" >/dev/null
	run sbx-reap --tenant rs
	assert_success
	[ "$(jqo '.reap.expired | length')" = 0 ]
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.state)" = running ]
}

@test "a tenant's own retention (sbx-ctl quota --retain-paused) wins over the profile's" {
	run sbx-ctl quota --tenant tier
	[ "$(jqo .usage.retain_paused.seconds)" = 2 ]
	[ "$(jqo .usage.retain_paused.from)" = profile ]
	run sbx-ctl quota --tenant tier --retain-paused 1h
	[ "$(jqo .usage.retain_paused.seconds)" = 3600 ]
	[ "$(jqo .usage.retain_paused.from)" = tenant ]
	run resolve tier a
	id=${output%% *}
	sbx-ctl pause --id "$id" >/dev/null
	at=$(rcli hget 'sbx:{tier}:paused' a)
	[ "$(date -u -d "$(sbx-ls --id "$id" | jq -r .retain_until)" +%s)" = $((at + 3600)) ]
	# Kept for good: no retain_until, and the reaper keeps it past the profile's 2 s.
	sbx-ctl quota --tenant tier --retain-paused none >/dev/null
	[ "$(sbx-ls --id "$id" | jq -r '.retain_until // "none"')" = none ]
	wait_past "$(date -u -d "@$((at + 2))" +%Y-%m-%dT%H:%M:%SZ)"
	run sbx-reap --tenant tier
	assert_success
	[ "$(jqo '.reap.expired | length')" = 0 ]
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.state)" = paused ]
	# Back to the profile's: it goes.
	sbx-ctl quota --tenant tier --retain-paused profile >/dev/null
	run sbx-reap --tenant tier
	[ "$(jqo -c '[.reap.expired[].id]')" = "[\"$id\"]" ]
	run -64 sbx-ctl quota --tenant tier --retain-paused 0
}

@test "a reaper frozen past its lock's TTL right before the delete deletes nothing (lock-lost)" {
	run resolve fz a
	id=${output%% *}
	sbx-ctl pause --id "$id" >/dev/null
	wait_past "$(sbx-ls --id "$id" | jq -r .retain_until)"
	freeze_holder reap:before-expire-delete fz a sbx-reap --tenant fz
	# Meanwhile a turn resolves the session: the sandbox is thawed, bound.
	run resolve fz a
	[ "$output" = "$id bound" ]
	kill -CONT "$a"
	local st=0
	wait "$a" || st=$?
	a=
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.state)" = running ]
	[ "$(jq -r --arg id "$id" '.reap.skipped[] | select(.id == $id) | .reason' <"$BATS_TEST_TMPDIR/a.out")" = lock-lost ]
	[ "$(jq '.reap.expired | length' <"$BATS_TEST_TMPDIR/a.out")" = 0 ]
	[ "$(rcli get "$(skey fz a binding)" | jq -r .sandbox_id)" = "$id" ]
	[ "$st" -eq 0 ]
}
