#!/usr/bin/env bats
# sbx on a real Redis Cluster (3 masters, 2 replicas each, node timeout 1 s;
# tests/lib/cluster.sh): every program, a slot migration in the middle of a
# resolve storm (MOVED/ASK followed, one sandbox per session), a master
# killed with -9 in the middle of a resolve storm and of a skill install
# (the failover is waited for, nothing acknowledged is lost), marking a
# tenant stale while another master is down, a lock given back while its
# master dies, and --all-tenants work over tenants on every master.  Run by
# `make check-scale`.

load ../lib/helpers
load ../lib/session
load ../lib/skills

setup_file() {
	export SBX_TEST_REDIS=cluster SBX_CLUSTER_REPLICAS=2
	skills_setup_file sbx-scale-state
	export SBX_REDIS_FAILOVER_WAIT=20s
}
teardown_file() { skills_teardown_file; }
setup() { [ "$(id -u)" -eq 0 ] || skip "the local backend needs root"; }

C() { "$SBX_TOP/tests/lib/cluster.sh" "$@"; }
slot_of() { redis-cli -p "$(head -1 "$REDIS_CLUSTER_DIR/ports")" cluster keyslot "$1"; }

# Keys of tenant $1 found on each live master: "port count" lines with count > 0.
tenant_keys_per_master() {
	local p n
	for p in $(cat "$REDIS_CLUSTER_DIR/ports"); do
		[ -f "$REDIS_CLUSTER_DIR/$p/killed" ] && continue
		[ "$(redis-cli -p "$p" role | head -1)" = master ] || continue
		n=$(redis-cli -p "$p" --scan --pattern "sbx:{$1}:*" | wc -l)
		[ "$n" -gt 0 ] && echo "$p $n"
	done
	return 0
}

# resolve_retry T S OUT: resolve until it succeeds (a failover makes
# in-flight writes fail `unavailable`, exit 69, or the lock busy, 75);
# the document goes to OUT.  At most 80 tries.
resolve_retry() {
	local i rc
	for i in $(seq 1 80); do
		sbx-create --tenant "$1" --session "$2" >"$3" 2>>"$3.err" && return 0
		rc=$?
		case $rc in 69 | 75) sleep 0.25 ;; *) return "$rc" ;; esac
	done
	return 1
}

@test "every program runs against the cluster; a tenant's keys stay on one master" {
	run sbx-create --tenant acme --session s1
	assert_success
	id=$(jqo .sandbox.id)
	run sbx-exec -- echo hi < <(sbx-create --tenant acme --session s1)
	assert_success
	[ "$(jqo .exec.stdout)" = "hi"$'\n' ] || [ "$(jqo .exec.stdout)" = hi ]
	sbx-create --tenant acme --session s1 | sbx-fs put /dev/stdin /workspace/x <<<"data" >/dev/null || true
	run sbx-lease begin --tenant acme --session s1
	assert_success
	run sbx-lease status --tenant acme --session s1
	assert_success
	[ "$(jqo .lease.active)" = true ]
	run sbx-lease lock --tenant acme --session s1 -- true
	assert_success
	run sbx-lease end --tenant acme --session s1
	assert_success
	run sbx-lease stale --tenant acme
	assert_success
	[ "$(jqo .lease.marked)" = 1 ]
	run sbx-create --tenant globex --session g1
	assert_success
	run sbx-reap --all-tenants --grace 0 --dry-run
	assert_success
	run sbx-ls --label sbx.tenant=acme
	assert_success
	[ "$(jqo .sandbox.id)" = "$id" ]
	# One slot per tenant: all of acme's keys on one master.
	[ "$(tenant_keys_per_master acme | wc -l)" = 1 ]
	[ "$(tenant_keys_per_master globex | wc -l)" = 1 ]
}

@test "tenants on every master: sbx-reap --all-tenants judges them all" {
	# Pick tenants until all three masters hold one.
	local t masters=() i
	for i in $(seq 1 40); do
		t=spread$i
		sbx-create --tenant "$t" --session s >/dev/null
		masters+=("$(C master-of "$REDIS_CLUSTER_DIR" "sbx:{$t}:bound")")
		[ "$i" -ge 4 ] && [ "$(printf '%s\n' "${masters[@]}" | sort -u | wc -l)" = 3 ] && break
	done
	[ "$(printf '%s\n' "${masters[@]}" | sort -u | wc -l)" = 3 ]
	local n=$i
	[ "$n" -ge 4 ]    # tenants beyond the three orphaned ones stay bound
	# An orphan on each of the first tenants: unbound by hand (the binding
	# and bound-set member dropped), so the reaper must find them all.
	for i in 1 2 3; do
		sb=$(rcli get "$(skey "spread$i" s binding)" | jq -r .sandbox_id)
		rcli del "$(skey "spread$i" s binding)" >/dev/null
		rcli srem "$(bound_key "spread$i")" "$sb" >/dev/null
	done
	run sbx-reap --all-tenants --grace 0
	assert_success
	[ "$(jqo '.reap.deleted | length')" = 3 ]
	# sbx-lease stale --all-tenants reaches the tenants on every master.
	run sbx-lease stale --all-tenants
	assert_success
	[ "$(jqo .lease.failed)" = 0 ]
	for t in $(seq 4 "$n"); do
		[ "$(rcli get "$(skey "spread$t" s binding)" | jq -r '.stale_at != null')" = true ]
	done
}

@test "a slot migration during a resolve storm: ASK and MOVED followed, one sandbox per session" {
	local d=$BATS_TEST_TMPDIR s i slot before after
	slot=$(slot_of "sbx:{mig}:bound")
	before=$(C master-of "$REDIS_CLUSTER_DIR" "sbx:{mig}:bound")
	for s in 1 2 3 4 5 6 7 8; do
		for i in 1 2 3 4; do
			( for k in 1 2 3; do resolve_retry mig "m$s" "$d/out.$s.$i.$k"; done ) &
		done
	done
	sleep 0.3
	C migrate "$REDIS_CLUSTER_DIR" "$slot" begin
	sleep 0.5
	C migrate "$REDIS_CLUSTER_DIR" "$slot" keys
	sleep 0.3
	C migrate "$REDIS_CLUSTER_DIR" "$slot" end
	wait
	after=$(C master-of "$REDIS_CLUSTER_DIR" "sbx:{mig}:bound")
	[ "$before" != "$after" ]
	[ "$(ls "$d"/out.* | grep -vc err)" = 96 ]
	for s in 1 2 3 4 5 6 7 8; do
		[ "$(cat "$d"/out."$s".*[0-9] | jq -r .sandbox.id | sort -u | wc -l)" = 1 ]
		assert_one_sandbox mig "m$s" "$(jq -r .sandbox.id "$d/out.$s.1.1")"
	done
	assert_none_unbound mig
}

# kill -9 the master of tenant $1's slot; prints its port.
kill_master_of() {
	local p
	p=$(C master-of "$REDIS_CLUSTER_DIR" "sbx:{$1}:bound")
	C kill "$REDIS_CLUSTER_DIR" "$p"
	echo "$p"
}

# After a failover: bring the killed node back (as the new master's
# replica, so durable writes are acknowledged again) and wait for the
# cluster to be whole.
revive() {
	local p=$1 i
	for i in $(seq 1 100); do
		redis-cli -p "$(C_live_port)" cluster info | grep -q cluster_state:ok && break
		sleep 0.1
	done
	C restart "$REDIS_CLUSTER_DIR" "$p"
	rm -f "$REDIS_CLUSTER_DIR/$p/killed"
	C wait-ok "$REDIS_CLUSTER_DIR"
	for i in $(seq 1 100); do
		redis-cli -p "$p" info replication | grep -q master_link_status:up && break
		sleep 0.1
	done
}
# Wait (up to 20 s) until the killed node on PORT serves no slot: a
# replica took its place.
failed_over() { # PORT
	local i n
	for i in $(seq 1 200); do
		n=$(redis-cli -p "$(C_live_port)" cluster nodes | awk -v a="127.0.0.1:$1@" 'index($2, a) == 1 { print NF }')
		[ -n "$n" ] && [ "$n" -le 8 ] && return 0
		sleep 0.1
	done
	return 1
}
C_live_port() {
	local p
	for p in $(cat "$REDIS_CLUSTER_DIR/ports"); do
		[ -f "$REDIS_CLUSTER_DIR/$p/killed" ] || { echo "$p"; return; }
	done
}

@test "a master killed during a resolve storm: failover, nothing acknowledged lost" {
	local d=$BATS_TEST_TMPDIR s i p
	for s in 1 2 3 4 5 6; do sbx-create --tenant crash --session "c$s" >"$d/first.$s"; done
	for s in 1 2 3 4 5 6; do
		for i in 1 2 3; do
			( for k in 1 2 3 4; do resolve_retry crash "c$s" "$d/out.$s.$i.$k"; done ) &
		done
	done
	sleep 0.2
	p=$(kill_master_of crash)
	sleep 3
	revive "$p"
	wait
	[ "$(C master-of "$REDIS_CLUSTER_DIR" "sbx:{crash}:bound")" != "$p" ]
	for s in 1 2 3 4 5 6; do
		# Every resolve that answered named the first sandbox: the binding
		# acknowledged before the crash survived it.
		[ "$(cat "$d/first.$s" "$d"/out."$s".*[0-9] | jq -r .sandbox.id | sort -u | wc -l)" = 1 ]
		assert_one_sandbox crash "c$s" "$(jq -r .sandbox.id "$d/first.$s")"
	done
	assert_none_unbound crash
}

@test "a master killed during a skill install: the install completes or recovers, consistently" {
	T=skco
	doc=$BATS_TEST_TMPDIR/inst
	sbx-create --tenant $T --skill-image \
		| sbx-exec --root --check -- sh -c 'mkdir -p /opt/sbx/skills/k/bin && echo k >/opt/sbx/skills/k/bin/run' >"$doc"
	sbx-create --tenant $T --session user >/dev/null
	SBX_STOP=snap:after-snapshot sbx-snap --tenant $T --skill k <"$doc" >"$doc.out" 2>"$doc.err" &
	pid=$!
	wait_stopped "$pid"
	p=$(kill_master_of $T)
	sleep 3
	revive "$p"
	kill -CONT "$pid"
	wait "$pid" || true
	# Either the run finished after the failover, or recovery finishes it.
	run sbx-snap --recover --tenant $T
	assert_success
	row=$(sbx-snap ls --tenant $T | jq -r 'select(.skill.skill == "k") | .skill')
	[ "$(jq -r .state <<<"$row")" = ready ]
	snap=$(jq -r .snapshot_id <<<"$row")
	[ "$(image_of)" = "$snap" ]
	sbx-snap ls | jq -r .snapshot.id | grep -qx "$snap"
	# The session sees the new image (marked stale, rebuilt on its next turn).
	run sbx-create --tenant $T --session user
	assert_success
	sbx-ctl kill <"$doc" >/dev/null
}

@test "stale marking with a master down: one that holds none of the tenant's keys stops neither stale --tenant nor an install's publish; the tenant's own is waited for" {
	T=stl
	local s mine other doc=$BATS_TEST_TMPDIR/inst
	for s in 1 2 3; do sbx-create --tenant $T --session "s$s" >/dev/null; done
	mine=$(C master-of "$REDIS_CLUSTER_DIR" "sbx:{$T}:bound")
	other=$(C other-master "$REDIS_CLUSTER_DIR" "$mine")
	C kill "$REDIS_CLUSTER_DIR" "$other"
	# The failover of the other master takes seconds (node timeout 1 s);
	# this runs at once, while its slots still name the dead node.
	run sbx-lease stale --tenant $T
	assert_success
	[ "$(jqo .lease.marked)" = 3 ]
	[ "$(jqo .lease.failed)" = 0 ]
	failed_over "$other"
	revive "$other"

	# An install whose publish step runs while an unrelated master is down.
	T=stl2
	for s in 1 2; do sbx-create --tenant $T --session "s$s" >/dev/null; done
	sbx-create --tenant $T --skill-image \
		| sbx-exec --root --check -- sh -c 'mkdir -p /opt/sbx/skills/u/bin && echo u >/opt/sbx/skills/u/bin/run' >"$doc"
	mine=$(C master-of "$REDIS_CLUSTER_DIR" "sbx:{$T}:bound")
	other=$(C other-master "$REDIS_CLUSTER_DIR" "$mine")
	SBX_STOP=snap:after-pointer sbx-snap --tenant $T --skill u <"$doc" >"$doc.out" 2>"$doc.err" &
	local pid=$!
	wait_stopped "$pid"
	C kill "$REDIS_CLUSTER_DIR" "$other"
	kill -CONT "$pid"
	wait "$pid"
	failed_over "$other"
	[ "$(jq -r '.snapshot.stale | "\(.marked) \(.failed)"' "$doc.out")" = "2 0" ]
	[ "$(jq -r '.snapshot.warning // "none"' "$doc.out")" = none ]
	[ "$(sbx-snap ls --tenant $T | jq -r 'select(.skill.skill == "u") | .skill | "\(.state) \(.published)"')" = "ready true" ]
	revive "$other"
	sbx-ctl kill <"$doc" >/dev/null

	# The tenant's own master killed: the scan waits for the failover
	# (SBX_REDIS_FAILOVER_WAIT) instead of failing at the refused node.
	T=stl3
	for s in 1 2; do sbx-create --tenant $T --session "s$s" >/dev/null; done
	mine=$(C master-of "$REDIS_CLUSTER_DIR" "sbx:{$T}:bound")
	C kill "$REDIS_CLUSTER_DIR" "$mine"
	run sbx-lease stale --tenant $T
	assert_success
	[ "$(jqo .lease.marked)" = 2 ]
	failed_over "$mine"
	revive "$mine"
}

@test "a lock given back while its master dies is released on the new master, not left for its TTL" {
	T=lkf
	local p
	sbx-create --tenant $T --session s >/dev/null
	p=$(C master-of "$REDIS_CLUSTER_DIR" "sbx:{$T}:bound")
	# The held command kills the lock's master; the release that follows
	# meets the connection the dead master closed.
	run sbx-lease lock --tenant $T --session s -- "$SBX_TOP/tests/lib/cluster.sh" kill "$REDIS_CLUSTER_DIR" "$p"
	assert_success
	[[ $output != *error* ]]
	failed_over "$p"
	revive "$p"
	[ "$(rcli exists "$(skey $T s lock)")" = 0 ]
	# The next resolve of the session takes the lock at once: it was given back.
	run env SBX_LOCK_WAIT=1s sbx-create --tenant $T --session s
	assert_success
}
