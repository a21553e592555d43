#!/usr/bin/env bats
# sbx behind Sentinel (1 master, 2 replicas, 3 sentinels, down-after 1 s;
# tests/lib/cluster.sh sentinel): resolve through the sentinels, a server
# that is not a master refused by ROLE, a master killed with -9 (the
# sentinels promote a replica; sbx finds it and the binding acknowledged
# before the crash is still there), and a name no sentinel knows.
# Run by `make check-scale`.

load ../lib/helpers
load ../lib/session

setup_file() {
	sbx_setup_file
	export SN=$SBX_TEST_DIR/sentinel
	"$SBX_TOP/tests/lib/cluster.sh" sentinel "$SN"
	export SBX_REDIS_URL REDIS_SN_BASE
	SBX_REDIS_URL=$(cat "$SN/url")
	REDIS_SN_BASE=$(head -1 "$SN/ports")
	export SBX_REDIS_FAILOVER_WAIT=30s
}
teardown_file() {
	# The sandboxes go while the sentinels still answer (sbx-ctl kill drops
	# bindings), then the servers, then the rest.
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	"$SBX_TOP/tests/lib/cluster.sh" stop "$SN"
	sbx_teardown_file
}
setup() { [ "$(id -u)" -eq 0 ] || skip "the local backend needs root"; }

master_port() { redis-cli -p "$(head -1 "$SN/sentinels")" sentinel get-master-addr-by-name sbxm | tail -1; }
scli() { redis-cli -p "$(master_port)" "$@"; }

@test "a session resolves through the sentinels, its keys on the master and both replicas" {
	run sbx-create --tenant acme --session s1
	assert_success
	id=$(jqo .sandbox.id)
	[ "$(scli get "$(skey acme s1 binding)" | jq -r .sandbox_id)" = "$id" ]
	# SBX_REDIS_WAIT (1 by default behind sentinels): one replica has the
	# binding when the create returns; the other gets it by replication,
	# which is asynchronous, so it is waited for (bounded).
	local p n=0 i
	for p in $(sed -n '2,3p' "$SN/ports"); do
		[ "$(redis-cli -p "$p" get "$(skey acme s1 binding)" | jq -r .sandbox_id)" = "$id" ] && n=$((n + 1))
	done
	[ "$n" -ge 1 ]
	for p in $(sed -n '2,3p' "$SN/ports"); do
		for i in $(seq 1 100); do
			[ "$(redis-cli -p "$p" get "$(skey acme s1 binding)" | jq -r .sandbox_id)" = "$id" ] && break
			sleep 0.05
		done
		[ "$(redis-cli -p "$p" get "$(skey acme s1 binding)" | jq -r .sandbox_id)" = "$id" ]
	done
	run sbx-create --tenant acme --session s1
	assert_success
	[ "$(jqo .sandbox.id)" = "$id" ]
	[ "$(jqo .resolved)" = bound ]
}

@test "a sentinel that names a replica: refused by ROLE, nothing written" {
	local replica s
	replica=$(sed -n 2p "$SN/ports")
	for s in $(cat "$SN/sentinels"); do
		redis-cli -p "$s" sentinel monitor fake 127.0.0.1 "$replica" 2 >/dev/null
	done
	url=${SBX_REDIS_URL%/sbxm}/fake
	run env SBX_REDIS_URL="$url" SBX_REDIS_FAILOVER_WAIT=1s sbx-create --tenant acme --session r1
	[ "$status" -eq 69 ]
	assert_output --partial "not a master (ROLE)"
	for s in $(cat "$SN/sentinels"); do redis-cli -p "$s" sentinel remove fake >/dev/null; done
	[ "$(scli exists "$(skey acme r1 binding)")" = 0 ]
}

@test "a master name no sentinel knows is a configuration error" {
	run env SBX_REDIS_URL="${SBX_REDIS_URL%/sbxm}/nosuch" sbx-create --tenant acme --session n1
	[ "$status" -eq 78 ]
	assert_output --partial "knows no master named 'nosuch'"
}

@test "the master killed with -9: sbx follows the promotion, the acknowledged binding survives" {
	run sbx-create --tenant acme --session f1
	assert_success
	id=$(jqo .sandbox.id)
	old=$(master_port)
	kill -9 "$(cat "$SN/$old/redis.pid")"
	rm -f "$SN/$old/redis.pid"
	# Resolves keep working once a replica is promoted (the call waits for
	# it: SBX_REDIS_FAILOVER_WAIT).
	run sbx-create --tenant acme --session f1
	assert_success
	[ "$(jqo .sandbox.id)" = "$id" ]
	[ "$(master_port)" != "$old" ]
	run sbx-create --tenant acme --session f2
	assert_success
	run sbx-lease stale --tenant acme
	assert_success
}
