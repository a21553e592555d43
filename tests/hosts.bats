#!/usr/bin/env bats
# Many hosts, one keyspace (issue 17): two "hosts" are two local-backend
# state dirs with two SBX_HOST_IDs over one Redis.  A binding records the
# host of its sandbox; resolving from the other host is a clear error that
# names the host and keeps the binding (never a silent rebuild that orphans
# the first sandbox); each host's reaper has its own lease, so reapers on
# both hosts run at the same time, and each deletes only its own orphans.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	export HA=$SBX_TEST_DIR/host-a HB=$SBX_TEST_DIR/host-b
	mkdir -p "$HA" "$HB"
}
teardown_file() {
	on a sbx-ls --all 2>/dev/null | on a sbx-ctl kill >/dev/null 2>&1 || true
	on b sbx-ls --all 2>/dev/null | on b sbx-ctl kill >/dev/null 2>&1 || true
	sbx_teardown_file
}
setup() { local_only "the local backend is the host-local one"; [ "$(id -u)" -eq 0 ] || skip "needs root"; }

# on a|b CMD...: run CMD as host A or B.
on() {
	local h=$1
	shift
	if [ "$h" = a ]; then SBX_STATE_DIR=$HA SBX_HOST_ID=host-a "$@"
	else SBX_STATE_DIR=$HB SBX_HOST_ID=host-b "$@"; fi
}
binding() { rcli GET "sbx:{$1}:sess:$2:binding"; }
exists_on() { on "$1" sbx-ls --id "$2" >/dev/null 2>&1; }
orphan_on() { # HOST TENANT SESSION: a session sandbox whose binding is gone
	local id
	id=$(on "$1" sbx-create --tenant "$2" --session "$3" | jq -er .sandbox.id) || return 1
	rcli DEL "sbx:{$2}:sess:$3:binding" >/dev/null
	rcli SREM "sbx:{$2}:bound" "$id" >/dev/null
	echo "$id"
}

@test "the local backend says its sandboxes are host-local" {
	run on a sbx-ctl caps
	assert_success
	[ "$(jqo .caps.host_local)" = true ]
}

@test "a binding records its host; resolving from another host names it and keeps the binding" {
	run on a sbx-create --tenant acme --session s1
	assert_success
	id=$(jqo .sandbox.id)
	[ "$(binding acme s1 | jq -r .host)" = host-a ]
	before=$(binding acme s1)
	run on b sbx-create --tenant acme --session s1
	[ "$status" -eq 75 ]
	[ "$(printf '%s\n' "$output" | grep '^{' | jq -r .error.kind)" = conflict ]
	assert_output --partial "on host 'host-a'; this is host 'host-b'"
	[ "$(binding acme s1)" = "$before" ]
	exists_on a "$id"
	# Host B made nothing.
	[ -z "$(on b sbx-ls | jq -r .sandbox.id)" ]
	# And host A still resolves it, unchanged.
	run on a sbx-create --tenant acme --session s1
	assert_success
	[ "$(jqo .sandbox.id)" = "$id" ]
	[ "$(jqo .resolved)" = bound ]
}

@test "a bad host id is a configuration error" {
	run env SBX_HOST_ID='a b' SBX_STATE_DIR=$HA sbx-create --tenant acme --session s9
	[ "$status" -eq 78 ]
	assert_output --partial "SBX_HOST_ID"
}

@test "reapers on both hosts at once, sessions on both: each reaps only its own orphans" {
	local a1 a2 b1 b2 oa ob
	a1=$(on a sbx-create --tenant multi --session a1 | jq -r .sandbox.id)
	a2=$(on a sbx-create --tenant multi --session a2 | jq -r .sandbox.id)
	b1=$(on b sbx-create --tenant multi --session b1 | jq -r .sandbox.id)
	b2=$(on b sbx-create --tenant multi --session b2 | jq -r .sandbox.id)
	oa=$(orphan_on a multi oa)
	ob=$(orphan_on b multi ob)
	local d=$BATS_TEST_TMPDIR round
	for round in 1 2 3; do
		on a sbx-reap --all-tenants --grace 0 >"$d/a.$round" &
		on b sbx-reap --all-tenants --grace 0 >"$d/b.$round" &
		wait
	done
	# Neither reaper was kept out by the other's lease: each deleted its own
	# orphan (in one of the rounds), and nothing else.
	[ "$(cat "$d"/a.* | jq -r '.reap.deleted[]?.id' | sort -u)" = "$oa" ]
	[ "$(cat "$d"/b.* | jq -r '.reap.deleted[]?.id' | sort -u)" = "$ob" ]
	[ -z "$(cat "$d"/a.* "$d"/b.* | jq -c 'select(.reap.skipped | length > 0)')" ]
	for id in "$a1" "$a2"; do exists_on a "$id"; done
	for id in "$b1" "$b2"; do exists_on b "$id"; done
	run ! exists_on a "$oa"
	run ! exists_on b "$ob"
	# Every binding is still there and names its host.
	for s in a1 a2; do [ "$(binding multi $s | jq -r .host)" = host-a ]; done
	for s in b1 b2; do [ "$(binding multi $s | jq -r .host)" = host-b ]; done
	[ "$(rcli SCARD "sbx:{multi}:bound")" = 4 ]
}

@test "a skill install that died on host A is left to host A: host B's reaper and recovery do not fail it" {
	skill_doc=$BATS_TEST_TMPDIR/inst
	on a sbx-create --tenant skl --skill-image >"$skill_doc"
	SBX_FAULT=snap:after-ledger on a sbx-snap --tenant skl --skill k <"$skill_doc" >/dev/null 2>&1 || true
	row() { on "$1" sbx-snap ls --tenant skl | jq -r 'select(.skill.skill == "k") | .skill.state'; }
	[ "$(row a)" = snapshotting ]
	# Host B sees a row of host A older than any grace: it leaves it.
	run on b sbx-reap --all-tenants --grace 0
	[ "$(printf '%s\n' "$output" | grep '^{' | jq -r .reap.ledger.other_host)" = 1 ]
	run on b sbx-snap --recover --tenant skl
	assert_success
	[ "$(row b)" = snapshotting ]
	# Host A settles it (the run died before its snapshot existed).
	run on a sbx-snap --recover --tenant skl
	assert_success
	[ "$(row a)" = failed ]
	on a sbx-ctl kill <"$skill_doc" >/dev/null
}
