#!/usr/bin/env bats
# sbx-ctl kill of a session sandbox removes its binding in the same step,
# and keeps the tenant's bound set exact, whether the handle comes from a
# document or from a bare --id.

load lib/helpers

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

bound_count() { rcli SCARD "sbx:{$1}:bound"; }

@test "kill through the pipeline drops the binding and the bound-set member" {
	run sbx-create --tenant kt --session s1
	assert_success
	id=$(jqo .sandbox.id)
	[ "$(bound_count kt)" = 1 ]
	[ "$(rcli EXISTS 'sbx:{kt}:sess:s1:binding')" = 1 ]
	run bash -c "sbx-create --tenant kt --session s1 | sbx-ctl kill"
	assert_success
	[ "$(rcli EXISTS 'sbx:{kt}:sess:s1:binding')" = 0 ]
	[ "$(bound_count kt)" = 0 ]
	run sbx-ls --id "$id"
	[ "$status" -ne 0 ] || [ "$(jqo .sandbox.state)" != running ]
}

@test "kill --id of a session sandbox drops its binding too" {
	run sbx-create --tenant kt --session s2
	assert_success
	id=$(jqo .sandbox.id)
	run sbx-ctl kill --id "$id"
	assert_success
	[ "$(rcli EXISTS 'sbx:{kt}:sess:s2:binding')" = 0 ]
	[ "$(rcli SISMEMBER 'sbx:{kt}:bound' "$id")" = 0 ]
}

@test "kill of another sandbox leaves a session's binding alone" {
	run sbx-create --tenant kt --session s3
	bound=$(jqo .sandbox.id)
	run sbx-create --label purpose=other
	other=$(jqo .sandbox.id)
	run sbx-ctl kill --id "$other"
	assert_success
	[ "$(rcli SISMEMBER 'sbx:{kt}:bound' "$bound")" = 1 ]
	[ "$(rcli EXISTS 'sbx:{kt}:sess:s3:binding')" = 1 ]
	run sbx-create --tenant kt --session s3
	[ "$(jqo .sandbox.id)" = "$bound" ]
	[ "$(jqo .resolved)" = bound ]
}

@test "a killed session sandbox is replaced by the next resolve" {
	run sbx-create --tenant kt --session s4
	first=$(jqo .sandbox.id)
	sbx-ctl kill --id "$first" >/dev/null
	run sbx-create --tenant kt --session s4
	assert_success
	[ "$(jqo .resolved)" = created ]
	[ "$(jqo .sandbox.id)" != "$first" ]
	[ "$(bound_count kt)" -ge 1 ]
}

@test "one policy: kill does not wait for the session's lock; the reaper keeps a locked orphan" {
	run sbx-create --tenant kt --session s5
	assert_success
	id=$(jqo .sandbox.id)
	# A turn holds the lifecycle lock (as sbx-lease lock does).
	rcli SET 'sbx:{kt}:sess:s5:lock' someone-else PX 60000 >/dev/null
	run sbx-ctl kill --id "$id"
	assert_success
	[ "$(rcli EXISTS 'sbx:{kt}:sess:s5:binding')" = 0 ]
	[ "$(rcli SISMEMBER 'sbx:{kt}:bound' "$id")" = 0 ]
	# An orphan of a locked session is the reaper's to keep, not to kill.
	run sbx-create --tenant kt --session s6
	orphan=$(jqo .sandbox.id)
	rcli DEL 'sbx:{kt}:sess:s6:binding' >/dev/null
	rcli SREM 'sbx:{kt}:bound' "$orphan" >/dev/null
	rcli SET 'sbx:{kt}:sess:s6:lock' someone-else PX 60000 >/dev/null
	run sbx-reap --tenant kt --grace 0
	assert_success
	[ "$(jqo --arg id "$orphan" '.reap.kept[] | select(.id == $id) | .reason')" = locked ]
	run sbx-ls --id "$orphan"
	assert_success
	rcli DEL 'sbx:{kt}:sess:s5:lock' 'sbx:{kt}:sess:s6:lock' >/dev/null
}
