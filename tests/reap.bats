#!/usr/bin/env bats
# suite: conformance
# sbx-reap: reconcile the backend against Redis and delete only what nobody
# owns.  Real redis-server, real local backend, real sessions; races with
# real concurrent processes.  Each test uses its own tenant(s), so that the
# bound sets and listings of one test never leak into another.

load lib/helpers
bats_require_minimum_version 1.5.0

# The reaper's lease: one per keyspace, and one per host on a backend whose
# sandboxes live on one host (capability host_local: the local backend).
setup_file() {
	sbx_setup_file
	LEASE=sbx:reap:lease
	if sbx-ctl caps | jq -e '.caps.host_local' >/dev/null; then
		LEASE=$LEASE:${SBX_HOST_ID:-$(hostname)}
	fi
	export LEASE
}
teardown_file() { sbx_teardown_file; }

# The session's sandbox id (resolving creates and binds it).
mk_session() { sbx-create --tenant "$1" --session "$2" | jq -er .sandbox.id; }

# Make a session's sandbox an orphan: drop its binding and its bound-set
# entry, exactly what a lost binding looks like (tenant/session ids here are
# plain [a-z0-9], so the keys need no escaping).
unbind() {
	local id
	id=$(rcli GET "sbx:{$1}:sess:$2:binding" | jq -er .sandbox_id)
	rcli DEL "sbx:{$1}:sess:$2:binding" >/dev/null
	rcli SREM "sbx:{$1}:bound" "$id" >/dev/null
}

orphan() { local id; id=$(mk_session "$1" "$2") && unbind "$1" "$2" && echo "$id"; }

exists() { sbx-ls --id "$1" >/dev/null 2>&1; }

# Ids under .reap.<key>, sorted, one per line.
ids() { jqo "[.reap.$1[]?.id] | sort | .[]"; }
reason_of() { jqo --arg id "$2" ".reap.$1[] | select(.id == \$id) | .reason"; }

# Wait (no time limit assertion: a condition) until a Redis key exists / is gone.
wait_key() { while [ "$(rcli EXISTS "$1")" != 1 ]; do sleep 0.05; done; }
wait_no_key() { while [ "$(rcli EXISTS "$1")" != 0 ]; do sleep 0.05; done; }

@test "usage: a scope is required, and only one" {
	run sbx-reap
	[ "$status" -eq 64 ]
	run sbx-reap --tenant a --all-tenants
	[ "$status" -eq 64 ]
	run sbx-reap --tenant a --max-delete -1
	[ "$status" -eq 64 ]
}

@test "unbound running and paused sandboxes are deleted; bound ones are kept" {
	local bound run paused
	bound=$(mk_session t1 bound)
	run=$(orphan t1 run)
	paused=$(orphan t1 paused)
	sbx-ctl pause --id "$paused" >/dev/null
	run sbx-ls --id "$paused"
	[ "$(jqo .sandbox.state)" = paused ]

	run sbx-reap --tenant t1 --grace 0
	assert_success
	[ "$(ids deleted | tr '\n' ' ')" = "$(printf '%s\n' "$run" "$paused" | sort | tr '\n' ' ')" ]
	[ "$(reason_of kept "$bound")" = bound ]
	[ "$(jqo .reap.seen)" = 3 ]
	run ! exists "$run"
	run ! exists "$paused"
	exists "$bound"
	# The survivor is still the session's sandbox.
	[ "$(mk_session t1 bound)" = "$bound" ]
}

@test "an orphan younger than the grace period is kept as young" {
	local young
	young=$(orphan t2 young)
	run sbx-reap --tenant t2 --grace 1h
	assert_success
	[ "$(reason_of kept "$young")" = young ]
	[ -z "$(ids deleted)" ]
	exists "$young"
	# The default grace (10m) keeps it too.
	run sbx-reap --tenant t2
	assert_success
	[ "$(reason_of kept "$young")" = young ]
}

@test "an orphan whose session lock is held is kept as locked, then reaped" {
	command -v sbx-lease >/dev/null || skip "sbx-lease is not built yet"
	local locked
	locked=$(orphan t3 locked)
	sbx-lease lock --tenant t3 --session locked -- sleep 5 3>&- &
	local holder=$!
	wait_key "sbx:{t3}:sess:locked:lock"
	run sbx-reap --tenant t3 --grace 0
	assert_success
	[ "$(reason_of kept "$locked")" = locked ]
	exists "$locked"
	wait "$holder"
	wait_no_key "sbx:{t3}:sess:locked:lock"
	run sbx-reap --tenant t3 --grace 0
	assert_success
	[ "$(ids deleted)" = "$locked" ]
}

@test "installer sandboxes are orphans once older than the grace period" {
	local inst
	inst=$(sbx-create --tenant t4 --skill-image | jq -er .sandbox.id)
	run sbx-reap --tenant t4 --grace 1h
	assert_success
	[ "$(reason_of kept "$inst")" = young ]
	run sbx-reap --tenant t4 --grace 0
	assert_success
	[ "$(ids deleted)" = "$inst" ]
	[ "$(jqo '.reap.deleted[0].purpose')" = skill-install ]
	! exists "$inst"
}

@test "--dry-run deletes nothing and reports the plan the real run then executes" {
	local a b c keep
	keep=$(mk_session t5 keep)
	a=$(orphan t5 a); b=$(orphan t5 b); c=$(orphan t5 c)
	run sbx-reap --tenant t5 --grace 0 --dry-run --max-delete 2
	assert_success
	local plan skipped
	plan=$(ids would_delete)
	skipped=$(ids skipped)
	[ "$(echo "$plan" | wc -l)" = 2 ]
	[ "$(jqo .reap.dry_run)" = true ]
	[ "$(jqo '.reap | has("deleted")')" = false ]
	for id in "$a" "$b" "$c" "$keep"; do exists "$id"; done

	run sbx-reap --tenant t5 --grace 0 --max-delete 2
	assert_success
	[ "$(ids deleted)" = "$plan" ]
	[ "$(ids skipped)" = "$skipped" ]
	[ "$(jqo '[.reap.skipped[].reason] | unique | .[]')" = max-delete ]
	exists "$keep"
	exists "$skipped"

	# And without a cap the plan is everything unbound.
	run sbx-reap --tenant t5 --grace 0 --dry-run
	[ "$(ids would_delete)" = "$skipped" ]
}

@test "two reapers started at the same moment: every orphan deleted exactly once, no error" {
	local round
	for round in 1 2 3 4 5; do
		local o1 o2 o3
		o1=$(orphan t6 "a$round"); o2=$(orphan t6 "b$round"); o3=$(orphan t6 "c$round")
		local go="$BATS_TEST_TMPDIR/go$round"
		local pids=() k
		for k in 1 2; do
			( while [ ! -e "$go" ]; do :; done
			  exec sbx-reap --tenant t6 --grace 0 >"$BATS_TEST_TMPDIR/r$round.$k" ) &
			pids+=($!)
		done
		touch "$go"
		wait "${pids[0]}"
		wait "${pids[1]}"
		# Deleted (not "already gone") across both reports: each orphan once.
		local got
		got=$(cat "$BATS_TEST_TMPDIR/r$round".{1,2} |
			jq -r '.reap.deleted[]? | select(.already_gone != true) | .id' | sort)
		[ "$got" = "$(printf '%s\n' "$o1" "$o2" "$o3" | sort)" ]
		# Each run either held the lease or said it skipped.
		for k in 1 2; do
			jq -e '.reap | has("skipped") and (.skipped | type) == "string" or has("deleted")' \
				"$BATS_TEST_TMPDIR/r$round.$k" >/dev/null
		done
		for id in "$o1" "$o2" "$o3"; do ! exists "$id"; done
	done
}

@test "a second reaper skips while the lease is held, and says so" {
	local o
	o=$(orphan t7 a)
	rcli SET "$LEASE" someone-else PX 60000 >/dev/null
	run sbx-reap --tenant t7 --grace 0
	assert_success
	[ "$(jqo .reap.skipped)" = "another reaper holds the lease" ]
	exists "$o"
	# A dry run takes no lease: it plans even while a real reaper runs.
	run sbx-reap --tenant t7 --grace 0 --dry-run
	assert_success
	[ "$(ids would_delete)" = "$o" ]
	rcli DEL "$LEASE" >/dev/null
	run sbx-reap --tenant t7 --grace 0
	assert_success
	[ "$(ids deleted)" = "$o" ]
	# The lease is released at the end of a run.
	[ "$(rcli EXISTS "$LEASE")" = 0 ]
}

@test "a listing that fails on its second page deletes nothing" {
	local a b c
	a=$(orphan t8 a); b=$(orphan t8 b); c=$(orphan t8 c)
	SBX_FAULT=list:fail-page-2 run sbx-reap --tenant t8 --grace 0
	[ "$status" -ne 0 ]
	[ "$(jqo .error.kind)" = unavailable ]
	[[ "$(jqo .error.message)" == *"page 2"* ]]
	for id in "$a" "$b" "$c"; do exists "$id"; done
	[ "$(jqo '.reap.deleted | length')" = 0 ]
}

@test "a repeated page token ends the run with an error and deletes nothing" {
	local a b c
	a=$(orphan t9 a); b=$(orphan t9 b); c=$(orphan t9 c)
	SBX_FAULT=list:repeat-token run sbx-reap --tenant t9 --grace 0
	[ "$status" -eq 70 ]
	[[ "$(jqo .error.message)" == *"repeated page token"* ]]
	for id in "$a" "$b" "$c"; do exists "$id"; done
	# The same listing served in correct pages of one is reaped in full:
	# the paging loop itself follows every page.
	SBX_FAULT=list:pages-of-one run sbx-reap --tenant t9 --grace 0
	assert_success
	[ "$(jqo .reap.pages)" = 3 ]
	[ "$(ids deleted)" = "$(printf '%s\n' "$a" "$b" "$c" | sort)" ]
}

@test "sbx-ls reads every page through the same pager: a repeated token or a failed page is an error, not a short listing" {
	local a b c
	a=$(orphan t9l a); b=$(orphan t9l b); c=$(orphan t9l c)
	SBX_FAULT=list:pages-of-one run sbx-ls --label sbx.tenant=t9l
	assert_success
	[ "$(jq -r .sandbox.id <<<"$output" | sort)" = "$(printf '%s\n' "$a" "$b" "$c" | sort)" ]
	# Failed before: sbx-ls stopped at a repeated token and exited 0 with
	# the first page only.
	SBX_FAULT=list:repeat-token run sbx-ls --label sbx.tenant=t9l
	[ "$status" -eq 70 ]
	[[ "$output" == *"repeated page token"* ]]
	SBX_FAULT=list:fail-page-2 run sbx-ls --label sbx.tenant=t9l
	[ "$status" -eq 69 ]
	[[ "$output" == *"listing page 2"* ]]
}

@test "Redis flushed while sandboxes run: the reaper refuses and says why; --adopt-keyspace --force deletes" {
	local s=() i
	for i in 1 2 3 4 5; do s+=("$(mk_session t10 "s$i")"); done
	rcli FLUSHALL >/dev/null
	run sbx-reap --tenant t10 --grace 0
	[ "$status" -eq 75 ]
	[ "$(jqo .error.kind)" = conflict ]
	# The keyspace id went with the data: nothing that carries one is judged.
	[[ "$(jqo .error.message)" == *"keyspace has no id"* ]]
	[ "$(jqo '[.reap.kept[].reason] | unique | .[]')" = keyspace-unknown ]
	for i in "${s[@]}"; do exists "$i"; done
	# A dry run shows the same refusal.
	run sbx-reap --tenant t10 --grace 0 --dry-run
	[ "$status" -eq 75 ]
	[ "$(jqo '.reap.would_delete | length')" = 0 ]

	# --force alone never judges another keyspace's; the admin names the id.
	run --separate-stderr sbx-reap --tenant t10 --grace 0 --force
	[ "$status" -eq 75 ]
	for i in "${s[@]}"; do exists "$i"; done
	ks=$(jqo '.reap.keyspaces | keys[] | select(. != "none")')
	[ "$(jqo --arg k "$ks" '.reap.keyspaces[$k].sandboxes')" = 5 ]
	run sbx-reap --tenant t10 --grace 0 --force --adopt-keyspace "$ks"
	assert_success
	[ "$(jqo '.reap.deleted | length')" = 5 ]
	for i in "${s[@]}"; do run ! exists "$i"; done
}

@test "a few unbound sandboxes among many bound ones are not refused" {
	local i o=()
	for i in 1 2 3 4 5; do mk_session t11 "b$i" >/dev/null; done
	for i in 1 2 3 4; do o+=("$(orphan t11 "o$i")"); done
	run sbx-reap --tenant t11 --grace 0
	assert_success
	[ "$(jqo '.reap.deleted | length')" = 4 ]
	[ "$(jqo '.reap.refused | length')" = 0 ]
}

# A resolve killed after creating its sandbox but before binding it leaves
# an unbound sandbox that carries the session's metadata, and (until its
# TTL passes) a held lock.  A short lock TTL (1.5 s) so that the test need not wait 60 s.
crashed_resolve() {
	SBX_LOCK_TTL_MS=1500 SBX_FAULT=resolve:before-bind sbx-create --tenant "$1" --session "$2" \
		>/dev/null 2>&1 && return 1
	wait_no_key "sbx:{$1}:sess:$2:lock"
	sbx-reap --tenant "$1" --grace 1h --dry-run | jq -er \
		--arg s "$2" '.reap.kept[] | select(.session == $s and .reason == "young") | .id'
}

@test "killed before bind, then resolved: the next resolve claims it, the reaper keeps it" {
	local x
	x=$(crashed_resolve t12 s)
	[ -n "$x" ]
	run sbx-create --tenant t12 --session s
	assert_success
	[ "$(jqo .resolved)" = claimed ]
	[ "$(jqo .sandbox.id)" = "$x" ]
	run sbx-reap --tenant t12 --grace 0
	assert_success
	[ "$(reason_of kept "$x")" = bound ]
	exists "$x"
}

@test "killed before bind, then reaped: the reaper deletes it, the next resolve makes another" {
	local x
	x=$(crashed_resolve t13 s)
	[ -n "$x" ]
	run sbx-reap --tenant t13 --grace 0
	assert_success
	[ "$(ids deleted)" = "$x" ]
	run ! exists "$x"
	run sbx-create --tenant t13 --session s
	assert_success
	[ "$(jqo .resolved)" = created ]
	[ "$(jqo .sandbox.id)" != "$x" ]
	# Never neither: nothing of the session is left unbound.
	run sbx-reap --tenant t13 --grace 0 --dry-run
	[ "$(jqo '.reap.would_delete | length')" = 0 ]
}

@test "killed before bind, then resolve and reaper at the same moment: claimed or reaped, never both, never neither" {
	local round
	for round in 1 2 3 4 5 6; do
		local t="t14r$round" x
		x=$(crashed_resolve "$t" s)
		[ -n "$x" ]
		local go="$BATS_TEST_TMPDIR/go$round"
		( while [ ! -e "$go" ]; do :; done
		  sbx-create --tenant "$t" --session s >"$BATS_TEST_TMPDIR/c$round" ) &
		local cpid=$!
		( while [ ! -e "$go" ]; do :; done
		  sbx-reap --tenant "$t" --grace 0 >"$BATS_TEST_TMPDIR/r$round" ) &
		local rpid=$!
		touch "$go"
		wait "$cpid"
		wait "$rpid"
		local got deleted
		got=$(jq -r .sandbox.id "$BATS_TEST_TMPDIR/c$round")
		deleted=$(jq -r '.reap.deleted[]?.id' "$BATS_TEST_TMPDIR/r$round")
		# (which way each round went, for the curious: both happen)
		echo "# round $round: $([ "$got" = "$x" ] && echo claimed || echo reaped)" >&3
		if [ "$got" = "$x" ]; then
			# claimed: never also deleted
			[ -z "$deleted" ]
			exists "$x"
		else
			# reaped: deleted exactly once, and the resolve made another
			[ "$deleted" = "$x" ]
			run ! exists "$x"
		fi
		exists "$got"
		[ "$(rcli GET "sbx:{$t}:sess:s:binding" | jq -r .sandbox_id)" = "$got" ]
		# never neither: nothing of the session is left unbound
		run sbx-reap --tenant "$t" --grace 0 --dry-run
		[ "$(jqo '.reap.would_delete | length')" = 0 ]
	done
}

@test "--metrics-file writes Prometheus text atomically; counters carry over" {
	local m="$BATS_TEST_TMPDIR/reap.prom"
	orphan t15 a >/dev/null
	run sbx-reap --tenant t15 --grace 0 --metrics-file "$m"
	assert_success
	grep -qx 'sbx_reap_seen 1' "$m"
	grep -qx 'sbx_reap_deleted 1' "$m"
	grep -qx 'sbx_reap_deleted_total 1' "$m"
	grep -qx 'sbx_reap_last_run_success 1' "$m"
	grep -q '^sbx_reap_last_run_timestamp_seconds [0-9]\+$' "$m"
	orphan t15 b >/dev/null
	mk_session t15 c >/dev/null
	run sbx-reap --tenant t15 --grace 0 --metrics-file "$m"
	assert_success
	grep -qx 'sbx_reap_deleted_total 2' "$m"
	grep -qx 'sbx_reap_runs_total 2' "$m"
	grep -qx 'sbx_reap_kept{reason="bound"} 1' "$m"
	# Only the file itself: no temporary left beside it.
	[ "$(ls "$BATS_TEST_TMPDIR" | grep -c reap.prom)" = 1 ]
	# A refused run is recorded as unsuccessful.
	local i
	for i in 1 2 3 4; do orphan t15 "r$i" >/dev/null; done
	rcli DEL "sbx:{t15}:bound" >/dev/null
	run sbx-reap --tenant t15 --grace 0 --metrics-file "$m"
	[ "$status" -eq 75 ]
	grep -qx 'sbx_reap_last_run_success 0' "$m"
	grep -qx 'sbx_reap_refused_tenants 1' "$m"
}

@test "a reaper killed inside the lock, right before the delete: the sandbox stays, the next run reaps it" {
	local o
	o=$(orphan t17 a)
	SBX_REAP_LEASE_TTL=2s SBX_LOCK_TTL_MS=2000 SBX_FAULT=reap:before-delete \
		run sbx-reap --tenant t17 --grace 0
	[ "$status" -eq 137 ]
	exists "$o"
	# Its lock and lease expire by themselves (short TTLs above).
	wait_no_key "sbx:{t17}:sess:a:lock"
	wait_no_key "$LEASE"
	run sbx-reap --tenant t17 --grace 0
	assert_success
	[ "$(ids deleted)" = "$o" ]
	! exists "$o"
}

@test "a bound set Redis cannot read as a set fails closed, and the lease is still released" {
	local o
	o=$(orphan t19 a)
	rcli SET "sbx:{t19}:bound" not-a-set >/dev/null
	run sbx-reap --tenant t19 --grace 0
	[ "$status" -eq 70 ]
	[[ "$(jqo .error.message)" == *"nothing was deleted"* ]]
	exists "$o"
	[ "$(rcli EXISTS "$LEASE")" = 0 ]
	rcli DEL "sbx:{t19}:bound" >/dev/null
}

@test "Redis unavailable: nothing is deleted and the run fails" {
	local o
	o=$(orphan t16 a)
	SBX_REDIS_URL="unix://$BATS_TEST_TMPDIR/nope.sock" run sbx-reap --tenant t16 --grace 0
	[ "$status" -eq 69 ]
	[ "$(jqo .error.kind)" = unavailable ]
	exists "$o"
}

# Snapshots need a rootfs template (the local backend cannot stack images on
# the host's root), so this test runs in a backend state of its own, and
# with the earlier tests' sandboxes gone (an engine's state is the file's,
# not the test's): an --all-tenants run then sees only what this test made.
@test "snapshots: unreferenced skill snapshots past the grace period are deleted; referenced, foreign and young ones are kept" {
	need_cap template_import
	sbx-ls --all | sbx-ctl kill >/dev/null
	export SBX_STATE_DIR="$BATS_TEST_TMPDIR/state"
	mkdir -p "$SBX_STATE_DIR"
	"$SBX_TOP/tests/lib/rootfs.sh" --dir "$BATS_TEST_TMPDIR/rootfs"
	sbx-tpl import bb --dir "$BATS_TEST_TMPDIR/rootfs" >/dev/null
	local sb ref orphan mine
	sb=$(sbx-create --template bb | jq -er .sandbox.id)
	snap() { sbx-snap --id "$sb" --name "$1" | jq -er .snapshot.id; }
	# Skill snapshot names end with this keyspace's id (sbx-reap(1)).
	rcli SET sbx:keyspace 0123456789abcdef NX >/dev/null
	local ks
	ks=$(rcli GET sbx:keyspace)
	ref=$(snap "sbx-sk-ts-g1-00000001-k$ks")
	orphan=$(snap "sbx-sk-ts-g2-00000002-k$ks")
	mine=$(snap mine)
	# What sbx-snap's skill pipeline leaves once it published `ref`: the
	# tenant's image pointer names it, and the tenant is registered.
	rcli HSET "sbx:{ts}:image" snapshot_id "$ref" generation 1 base_template bb updated_at 1 \
		fingerprint "$(printf x | sha256sum | cut -c1-64)" >/dev/null
	rcli SADD sbx:tenants ts >/dev/null

	# While a sandbox runs on the template chain, and within the grace period: all kept.
	run sbx-reap --all-tenants --grace 1h
	assert_success
	[ "$(jqo '.reap.snapshots.deleted | length')" = 0 ]
	[ "$(jqo --arg i "$orphan" '.reap.snapshots.kept[] | select(.id == $i) | .reason')" = young ]
	sbx-ctl kill --id "$sb" >/dev/null

	run sbx-reap --all-tenants --grace 0
	assert_success
	[ "$(jqo '[.reap.snapshots.deleted[].id] | .[]')" = "$orphan" ]
	[ "$(jqo --arg i "$ref" '.reap.snapshots.kept[] | select(.id == $i) | .reason')" = referenced ]
	[ "$(jqo --arg i "$mine" '.reap.snapshots.kept[] | select(.id == $i) | .reason')" = not-a-skill-snapshot ]
	run sbx-snap ls
	[[ "$output" == *"$ref"* && "$output" == *"$mine"* && "$output" != *"$orphan"* ]]

	# Per-tenant runs never judge snapshots (they are shared).
	run sbx-reap --tenant ts --grace 0
	assert_success
	[[ "$(jqo .reap.snapshots.skipped)" == *"--all-tenants"* ]]

	# Mostly unreferenced (4 of 6): refused, unless forced.
	sb=$(sbx-create --template bb | jq -er .sandbox.id)
	local i more=()
	for i in 3 4 5 6; do more+=("$(snap "sbx-sk-ts-g$i-0000000$i-k$ks")"); done
	sbx-ctl kill --id "$sb" >/dev/null
	rcli DEL "sbx:{ts}:image" >/dev/null
	run sbx-reap --all-tenants --grace 0
	[ "$status" -eq 75 ]
	[[ "$(jqo .reap.snapshots.refused)" == *"referenced by no ledger row"* ]]
	[ "$(jqo '.reap.snapshots.deleted | length')" = 0 ]
	run sbx-reap --all-tenants --grace 0 --force
	assert_success
	[ "$(jqo '.reap.snapshots.deleted | length')" = 5 ]
}

@test "the man page examples run" {
	# A backend state of its own, so that what earlier tests left behind
	# (some of it refused on purpose) does not leak into --all-tenants.
	export SBX_STATE_DIR="$BATS_TEST_TMPDIR/state"
	mkdir -p "$SBX_STATE_DIR"
	local b o
	b=$(mk_session t18 b)
	o=$(orphan t18 o)
	run sbx-reap --all-tenants --dry-run
	assert_success
	[ "$(jqo .reap.dry_run)" = true ]
	run sbx-reap --all-tenants --grace 10m --max-delete 200
	assert_success
	[ "$(jqo '.reap.deleted | length')" = 0 ]
	run sbx-reap --all-tenants --metrics-file "$BATS_TEST_TMPDIR/sbx-reap.prom"
	assert_success
	grep -q '^sbx_reap_last_run_success 1$' "$BATS_TEST_TMPDIR/sbx-reap.prom"
	exists "$o"    # young: 10 minutes have not passed
	sbx-ctl kill --id "$b" >/dev/null
	sbx-ctl kill --id "$o" >/dev/null
}
