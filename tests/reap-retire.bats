#!/usr/bin/env bats
# sbx-reap --retire-idle DURATION (issue 17): a retention policy for
# sessions nobody ends.  A bound session whose sandbox has been unused
# longer is ended - sandbox, binding, bound-set member and fence counter
# together - under the session's lock; a recently used one, and one whose
# lock is held, are kept.  Idleness is the local backend's activity record,
# aged here with touch(1) instead of waiting.

load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }
setup() { local_only "idle time is the local backend's activity record"; }

# Age sandbox $1's last use by $2 (a touch -d offset, e.g. "3 hours ago").
age() { touch -d "$2" "$SBX_STATE_DIR/local/sandboxes/$1/activity"; }

@test "--retire-idle: usage" {
	run sbx-reap --tenant t --retire-idle 0
	[ "$status" -eq 64 ]
	run sbx-reap --tenant t --retire-idle soon
	[ "$status" -eq 64 ]
	sbx-reap --help | grep -q -- '--retire-idle DURATION'
}

@test "an idle session is ended whole; a used one and a locked one are kept" {
	idle=$(sbx-create --tenant ret --session idle | jq -r .sandbox.id)
	used=$(sbx-create --tenant ret --session used | jq -r .sandbox.id)
	held=$(sbx-create --tenant ret --session held | jq -r .sandbox.id)
	age "$idle" "3 hours ago"
	age "$held" "3 hours ago"
	[ "$(rcli exists "$(skey ret idle fence)")" = 1 ]

	run sbx-reap --tenant ret --retire-idle 1h --dry-run
	assert_success
	[ "$(jqo '[.reap.would_retire[].id] | sort | join(" ")')" = "$(printf '%s\n' "$idle" "$held" | sort | paste -sd' ')" ]
	sbx-ls --id "$idle" >/dev/null

	# The held session's lock is taken while the reaper runs.
	sbx-lease lock --tenant ret --session held -- sh -c 'sbx-reap --tenant ret --retire-idle 1h --metrics-file "$0"' \
		"$BATS_TEST_TMPDIR/m.prom" >"$BATS_TEST_TMPDIR/out"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	[ "$(jqo '[.reap.retired[].id] | join(" ")')" = "$idle" ]
	[ "$(jqo '.reap.retired[0].idle_s >= 10800')" = true ]
	[ "$(jqo --arg id "$held" '.reap.skipped[] | select(.id == $id) | .reason')" = locked ]
	grep -qx 'sbx_reap_retired 1' "$BATS_TEST_TMPDIR/m.prom"
	# Ended whole: no sandbox, no binding, no member, no fence counter.
	run ! sbx-ls --id "$idle"
	[ "$(rcli exists "$(skey ret idle binding)")" = 0 ]
	[ "$(rcli exists "$(skey ret idle fence)")" = 0 ]
	[ "$(rcli sismember "$(bound_key ret)" "$idle")" = 0 ]
	# Its one event of the end (sbx-events(1)): killed, retired, by the reaper.
	[ "$(sbx-events --tenant ret | jq -r 'select(.type == "killed") | "\(.session) \(.why) \(.by)"')" = "idle retired sbx-reap" ]
	# Kept: the used one and the held one, bound as before.
	assert_one_sandbox ret used "$used"
	assert_one_sandbox ret held "$held"
	# The next resolve of the retired session starts a new sandbox.
	run sbx-create --tenant ret --session idle
	assert_success
	[ "$(jqo .resolved)" = created ]
}
