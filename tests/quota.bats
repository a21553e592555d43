#!/usr/bin/env bats
# suite: local docker
# Tenant quotas (common/redis/quota.c, sbx-ctl(1) quota, sbx-ls(1) --usage)
# against a real redis-server and the real backend: the check and the take
# are one script, so 32 real processes racing for 5 slots get exactly 5;
# a kill or a pause frees its slot; a resolve killed with -9 holds its
# slot only until its lock expires.

load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

usage() { sbx-ls --tenant "$1" --usage | jq -r "$2"; }

# The profile's "quota" object, written into the default profile.
profile_quota() {
	local p
	p=$(jq -r '.default_profile // "default"' "$SBX_CONFIG")
	jq --arg p "$p" --argjson q "$1" '.profiles[$p].quota = $q' "$SBX_CONFIG" >"$SBX_CONFIG.new"
	mv "$SBX_CONFIG.new" "$SBX_CONFIG"
}

@test "32 concurrent resolves against running=5: exactly 5 get a sandbox, the rest capacity (75)" {
	sbx-ctl quota --tenant race --running 5 >/dev/null
	local i pids=()
	for i in $(seq 1 32); do
		sbx-create --tenant race --session "s$i" >"$BATS_TEST_TMPDIR/$i.out" \
			2>"$BATS_TEST_TMPDIR/$i.err" &
		pids+=($!)
	done
	local ok=0 full=0 st
	for i in $(seq 1 32); do
		st=0
		wait "${pids[$((i - 1))]}" || st=$?
		if [ "$st" = 0 ]; then
			ok=$((ok + 1))
		elif [ "$st" = 75 ] && grep -q "error: capacity: .*quota running=5" "$BATS_TEST_TMPDIR/$i.err"; then
			full=$((full + 1))
		else
			echo "process $i: exit $st: $(cat "$BATS_TEST_TMPDIR/$i.err")" >&2
		fi
	done
	[ "$ok" = 5 ]
	[ "$full" = 27 ]
	# Nothing half-made: five live sandboxes, five bindings, no pending slot.
	[ "$(ids_with sbx.tenant race | grep -c .)" = 5 ]
	[ "$(rcli scard "$(bound_key race)")" = 5 ]
	[ "$(usage race .usage.running.used)" = 5 ]
	[ "$(usage race .usage.pending)" = 0 ]
	[ "$(usage race .usage.running.from)" = tenant ]
	assert_none_unbound race
}

@test "a bound session resolves again at the limit; a kill frees its slot" {
	sbx-ctl quota --tenant k --running 2 >/dev/null
	run resolve k a
	a_id=${output%% *}
	resolve k b >/dev/null
	run -75 sbx-create --tenant k --session c
	assert_output --partial "quota running=2"
	# The sessions that have their sandbox are not refused.
	run resolve k a
	[ "$output" = "$a_id bound" ]
	sbx-ctl kill --id "$a_id" >/dev/null
	[ "$(usage k .usage.running.used)" = 1 ]
	run resolve k c
	[ "${output#* }" = created ]
}

@test "a paused sandbox frees its running slot, keeps its sandboxes slot; resume past the quota is refused" {
	sbx-ctl quota --tenant p --running 1 --sandboxes 2 >/dev/null
	run resolve p a
	a_id=${output%% *}
	sbx-ctl pause --id "$a_id" >/dev/null
	[ "$(usage p .usage.running.used)" = 0 ]
	[ "$(usage p .usage.sandboxes.used)" = 1 ]
	run resolve p b
	b_id=${output%% *}
	[ "${output#* }" = created ]
	# Two sandboxes: a third session is over the sandboxes quota.
	run -75 sbx-create --tenant p --session c
	assert_output --partial "quota sandboxes=2"
	# b runs: a may not be resumed, by sbx-ctl or by a resolve.
	run -75 sbx-ctl resume --id "$a_id"
	assert_output --partial "quota running=1"
	run -75 sbx-create --tenant p --session a
	[ "$(sbx-ls --id "$a_id" | jq -r .sandbox.state)" = paused ]
	sbx-ctl pause --id "$b_id" >/dev/null
	run resolve p a
	[ "$output" = "$a_id bound" ]
	[ "$(usage p .usage.running.used)" = 1 ]
}

@test "the profile's quota object applies; the tenant's own wins; none and profile" {
	cp "$SBX_CONFIG" "$BATS_TEST_TMPDIR/config.json"
	profile_quota '{"running": 1}'
	[ "$(usage q .usage.running.limit)" = 1 ]
	[ "$(usage q .usage.running.from)" = profile ]
	[ "$(usage q .usage.sandboxes.limit)" = null ]
	resolve q a >/dev/null
	run -75 sbx-create --tenant q --session b
	run sbx-ctl quota --tenant q --running none
	assert_success
	[ "$(jqo .usage.running.limit)" = null ]
	[ "$(jqo .usage.running.from)" = tenant ]
	run resolve q b
	[ "${output#* }" = created ]
	run sbx-ctl quota --tenant q --running profile
	[ "$(jqo .usage.running.from)" = profile ]
	[ "$(jqo .usage.running.used)" = 2 ]
	profile_quota '{"paused_bytes": 1}'
	run -78 sbx-ls --tenant q --usage
	assert_output --partial "quota.paused_bytes"
	cp "$BATS_TEST_TMPDIR/config.json" "$SBX_CONFIG"
}

@test "a resolve killed with -9 after taking its slot holds it only until its lock expires" {
	sbx-ctl quota --tenant crash --running 1 >/dev/null
	SBX_STOP=resolve:before-create SBX_LOCK_TTL_MS=1000 \
		sbx-create --tenant crash --session s1 >/dev/null 2>&1 3>&- &
	local a=$!
	wait_stopped "$a"
	[ "$(usage crash .usage.pending)" = 1 ]
	run -75 sbx-create --tenant crash --session s2
	kill -9 "$a"
	wait "$a" || true
	wait_key_gone "$(skey crash s1 lock)"
	# The next script that counts drops the dead resolve's slot.
	run resolve crash s2
	[ "${output#* }" = created ]
	[ "$(usage crash .usage.pending)" = 0 ]
	[ "$(usage crash .usage.running.used)" = 1 ]
}
