#!/usr/bin/env bats
# sbx-reap judges only what its own Redis keyspace owns (sbx-reap(1),
# common/redis/keyspace.h): two profiles on one backend, with different key
# prefixes or different Redis servers, never reap each other's sandboxes.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	redis_start "$SBX_TEST_DIR/redis2"          # exports the second one ...
	export REDIS2_URL=$SBX_REDIS_URL
	export SBX_REDIS_URL="unix://$SBX_TEST_DIR/redis/redis.sock"   # ... keeps the first
	export REDIS_SOCK="$SBX_TEST_DIR/redis/redis.sock"
}
teardown_file() {
	redis_stop "$SBX_TEST_DIR/redis2"
	sbx_teardown_file
}

# Profiles on the file's backend: pa and pb on the first Redis with the
# prefixes a and b; pc on the second Redis with pa's prefix.  The profiles
# name their Redis, so SBX_REDIS_URL must not override it.
profiles() {
	local base
	base=$(jq -c '.profiles.default // {}' "$SBX_CONFIG")
	jq -n --argjson b "$base" --arg r1 "$SBX_REDIS_URL" --arg r2 "$REDIS2_URL" \
		'{profiles: {pa: ($b + {prefix: "a", redis_url: $r1}),
			     pb: ($b + {prefix: "b", redis_url: $r1}),
			     pc: ($b + {prefix: "a", redis_url: $r2})}}' >"$BATS_TEST_TMPDIR/p.json"
	export SBX_CONFIG="$BATS_TEST_TMPDIR/p.json"
	unset SBX_REDIS_URL
}

exists() { sbx-ls --id "$1" >/dev/null 2>&1; }
reason_of() { jqo --arg id "$2" ".reap.$1[] | select(.id == \$id) | .reason"; }

@test "two prefixes on one backend: B's reaper keeps A's bound session, and A resolves to it" {
	profiles
	local a b
	a=$(sbx-create -p pa --tenant t1 --session s1 | jq -er .sandbox.id)
	b=$(sbx-create -p pb --tenant t1 --session s2 | jq -er .sandbox.id)
	# b becomes an orphan of B's keyspace (its binding lost).
	rcli DEL 'b:{t1}:sess:s2:binding' >/dev/null
	rcli SREM 'b:{t1}:bound' "$b" >/dev/null
	for scope in "--all-tenants" "--tenant t1"; do
		run sbx-reap -p pb $scope --grace 0
		exists "$a"
		[ "$(reason_of kept "$a")" = other-keyspace ]
	done
	run ! exists "$b"                    # B's own orphan went
	run sbx-create -p pa --tenant t1 --session s1
	[ "$(jqo .sandbox.id)" = "$a" ]
	[ "$(jqo .sandbox.metadata.\"sbx.keyspace\")" = "$(rcli GET a:keyspace)" ]
	sbx-ctl -p pa kill --id "$a" >/dev/null
}

@test "two Redis servers, one prefix: C's reaper keeps A's bound session" {
	profiles
	local a c
	a=$(sbx-create -p pa --tenant t2 --session s1 | jq -er .sandbox.id)
	c=$(sbx-create -p pc --tenant t2 --session other | jq -er .sandbox.id)  # C's keyspace gets an id
	run sbx-reap -p pc --all-tenants --grace 0
	exists "$a"
	[ "$(reason_of kept "$a")" = other-keyspace ]
	run sbx-create -p pa --tenant t2 --session s1
	[ "$(jqo .sandbox.id)" = "$a" ]
	sbx-ctl -p pa kill --id "$a" >/dev/null
	sbx-ctl -p pc kill --id "$c" >/dev/null
}

@test "a reaper whose keyspace has no id judges nothing that carries one, --force or not" {
	profiles
	local a
	a=$(sbx-create -p pa --tenant t3 --session s1 | jq -er .sandbox.id)
	# A Redis that has never been used by this profile (prefix z): no id.
	jq '.profiles.pz = (.profiles.pa + {prefix: "z"})' "$SBX_CONFIG" >"$BATS_TEST_TMPDIR/z.json"
	export SBX_CONFIG="$BATS_TEST_TMPDIR/z.json"
	for force in "" --force; do
		run sbx-reap -p pz --tenant t3 --grace 0 $force
		[ "$status" -eq 75 ]
		[[ "$(jqo .error.message)" == *"keyspace has no id"* ]]
		[[ "$(jqo .error.message)" == *"--adopt-keyspace"* ]]
		[ "$(reason_of kept "$a")" = keyspace-unknown ]
		exists "$a"
	done
	[ "$(rcli EXISTS z:keyspace)" = 0 ]    # the reaper never mints one
	sbx-ctl -p pa kill --id "$a" >/dev/null
}

# Issue 26: staging's Redis was flushed (or staging never ran); prod shares
# the backend.  `sbx-reap -p staging --force` deleted prod's bound sandbox.
@test "--force stays in its keyspace: staging (no id) never deletes prod's bound sandbox; --adopt-keyspace takes staging's own" {
	profiles
	jq '.profiles.prod = .profiles.pa | .profiles.staging = (.profiles.pa + {prefix: "stg"})' \
		"$SBX_CONFIG" >"$BATS_TEST_TMPDIR/ps.json"
	export SBX_CONFIG="$BATS_TEST_TMPDIR/ps.json"
	local p s1 s2 ks pks
	p=$(sbx-create -p prod --tenant t5 --session live | jq -er .sandbox.id)
	pks=$(rcli GET a:keyspace)
	s1=$(sbx-create -p staging --tenant t5 --session old1 | jq -er .sandbox.id)
	s2=$(sbx-create -p staging --tenant t5 --session old2 | jq -er .sandbox.id)
	ks=$(rcli GET stg:keyspace)
	[ -n "$ks" ] && [ "$ks" != "$pks" ]
	# Staging's Redis data is lost (its keys flushed; prod's are kept).
	rcli --scan --pattern 'stg:*' | while read -r k; do rcli DEL "$k" >/dev/null; done
	[ "$(rcli EXISTS stg:keyspace)" = 0 ]

	for scope in "--all-tenants" "--tenant t5"; do
		run sbx-reap -p staging $scope --grace 0 --force
		exists "$p"                                  # prod's session survives
		[ "$status" -eq 75 ]
		[ "$(reason_of kept "$p")" = keyspace-unknown ]
		exists "$s1"
	done
	# A dry run lists the ids with their counts; it adopts nothing.
	run sbx-reap -p staging --all-tenants --grace 0 --dry-run
	[ "$status" -eq 75 ]
	[ "$(jqo --arg k "$ks" '.reap.keyspaces[$k].sandboxes')" = 2 ]
	[ "$(jqo --arg k "$pks" '.reap.keyspaces[$k].sandboxes')" = 1 ]
	run sbx-reap -p staging --all-tenants --grace 0 --dry-run --adopt-keyspace "$ks"
	assert_success
	[ "$(jqo '[.reap.would_delete[].id] | sort | join(" ")')" = "$(printf '%s\n' "$s1" "$s2" | sort | paste -sd' ')" ]
	[ "$(reason_of kept "$p")" = other-keyspace ]
	[ "$(rcli EXISTS stg:keyspace)" = 0 ]
	# For real: staging's own go, prod's is kept, and staging has its id back.
	run sbx-reap -p staging --all-tenants --grace 0 --adopt-keyspace "$ks"
	assert_success
	[ "$(jqo .reap.adopted_keyspace)" = "$ks" ]
	[ "$(reason_of kept "$p")" = other-keyspace ]
	run ! exists "$s1"
	run ! exists "$s2"
	exists "$p"
	[ "$(rcli GET stg:keyspace)" = "$ks" ]
	run sbx-create -p prod --tenant t5 --session live
	[ "$(jqo .sandbox.id)" = "$p" ]
	[ "$(jqo .resolved)" = bound ]
	# An id the keyspace does not have is refused; so is a malformed one.
	run sbx-reap -p staging --all-tenants --grace 0 --adopt-keyspace "$pks"
	[ "$status" -eq 75 ]
	[[ "$(jqo .error.message)" == *"already has the id $ks"* ]]
	exists "$p"
	run sbx-reap -p staging --all-tenants --adopt-keyspace nothex
	[ "$status" -eq 64 ]
	sbx-reap --help | grep -q -- '--adopt-keyspace ID'
	sbx-ctl -p prod kill --id "$p" >/dev/null
}

@test "a sandbox from before keyspace ids is kept unless --adopt-legacy" {
	profiles
	local a rec
	a=$(sbx-create -p pa --tenant t4 --session s1 | jq -er .sandbox.id)
	rcli DEL 'a:{t4}:sess:s1:binding' >/dev/null
	rcli SREM 'a:{t4}:bound' "$a" >/dev/null
	rec="$SBX_STATE_DIR/local/sandboxes/$a/sandbox.json"
	jq 'del(.metadata."sbx.keyspace")' "$rec" >"$rec.new" && mv "$rec.new" "$rec"
	run sbx-reap -p pa --tenant t4 --grace 0
	assert_success
	[ "$(reason_of kept "$a")" = no-keyspace ]
	exists "$a"
	run sbx-reap -p pa --tenant t4 --grace 0 --adopt-legacy
	assert_success
	! exists "$a"
}
