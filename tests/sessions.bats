#!/usr/bin/env bats
# suite: conformance
# Session resolve (sbx-create --tenant T --session S) against a real
# redis-server and the real local backend: one session = one sandbox under
# concurrency, crashes (kill -9 at each step), a stopped lock holder, Redis
# down, stale rebuilds under turn leases, hostile ids.

load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

@test "create, then bound: the same sandbox, bound without TTL, with ownership metadata" {
	run sbx-create --tenant acme --session first
	assert_success
	id=$(jqo .sandbox.id)
	[ "$(jqo .resolved)" = created ]
	[ "$(jqo '.sandbox.metadata."sbx.managed"')" = 1 ]
	[ "$(jqo '.sandbox.metadata."sbx.tenant"')" = acme ]
	[ "$(jqo '.sandbox.metadata."sbx.session"')" = first ]
	[ "$(jqo '.sandbox.metadata."sbx.profile"')" = default ]
	[ "$(jqo '.sandbox.metadata."sbx.binding_version"')" = 1 ]
	[ -n "$(jqo '.sandbox.metadata."sbx.created_by"')" ]
	[ "$(jqo .sandbox.tenant)" = acme ]
	[ "$(jqo .sandbox.session)" = first ]
	[ "$(rcli ttl "$(skey acme first binding)")" = -1 ]
	[ "$(rcli get "$(skey acme first binding)" | jq -r .sandbox_id)" = "$id" ]
	[ "$(rcli sismember "$(bound_key acme)" "$id")" = 1 ]
	[ "$(rcli sismember sbx:tenants acme)" = 1 ]
	run sbx-create --tenant acme --session first
	assert_success
	[ "$(jqo .sandbox.id)" = "$id" ]
	[ "$(jqo .resolved)" = bound ]
	[ "$(rcli exists "$(skey acme first lock)")" = 0 ]
}

@test "32 concurrent resolves of one session: exactly one sandbox, all 32 print it" {
	d=$BATS_TEST_TMPDIR
	for i in $(seq 1 32); do
		sbx-create --tenant acme --session crowd >"$d/out.$i" 2>"$d/err.$i" &
	done
	wait
	cat "$d"/out.* | jq -r .sandbox.id | sort | uniq -c >"$d/ids"
	cat "$d/ids"
	# On a failure, say how each one ended: a failed resolve prints an
	# error document (its id reads as null) and a line on stderr.
	cat "$d"/out.* | jq -r '"\(.resolved // .error.kind) \(.error.message // "")"' | sort | uniq -c
	cat "$d"/err.* | sort | uniq -c
	[ "$(wc -l <"$d/ids")" = 1 ]
	[ "$(awk '{print $1}' "$d/ids")" = 32 ]
	[ "$(cat "$d"/out.* | jq -r .resolved | grep -c created)" = 1 ]
	assert_one_sandbox acme crowd "$(awk '{print $2}' "$d/ids")"
}

# kill -9 at $1 during a resolve of a fresh session, then resolve again.
crash_at() {
	local s=$1-$RANDOM
	SBX_FAULT=$1 SBX_LOCK_TTL_MS=500 run -137 sbx-create --tenant acme --session "$s"
	run sbx-create --tenant acme --session "$s"
	assert_success
	assert_one_sandbox acme "$s" "$(jqo .sandbox.id)"
	assert_none_unbound acme
	echo "$(jqo .resolved)"
}

@test "kill -9 after taking the lock: the next resolve creates" {
	run crash_at resolve:after-lock
	assert_success
	assert_output --partial created
}

@test "kill -9 after the claim found nothing, before creating: the next resolve creates" {
	run crash_at resolve:before-create
	assert_success
	assert_output --partial created
}

@test "kill -9 after the backend created the sandbox: the next resolve claims it" {
	run crash_at resolve:after-backend-create
	assert_success
	assert_output --partial claimed
}

@test "kill -9 just before the bind: the next resolve claims it" {
	run crash_at resolve:before-bind
	assert_success
	assert_output --partial claimed
}

@test "kill -9 right after the bind: the next resolve finds it bound" {
	run crash_at resolve:after-bind
	assert_success
	assert_output --partial bound
}

@test "kill -9 in the middle of a rebuild: the next resolve ends with one fresh sandbox" {
	run resolve acme rb
	old=${output%% *}
	sbx-lease stale --tenant acme >/dev/null
	SBX_FAULT=resolve:during-rebuild SBX_LOCK_TTL_MS=500 run -137 sbx-create --tenant acme --session rb
	run resolve acme rb
	assert_success
	new=${output%% *}
	[ "$new" != "$old" ]
	assert_one_sandbox acme rb "$new"
	assert_none_unbound acme
	[ "$(rcli get "$(skey acme rb binding)" | jq -r .stale_at)" = null ]
}

@test "two crashed creates leave duplicates: the oldest is claimed, the other deleted" {
	# A lists nothing and stops before creating; its lock expires; B creates
	# X and dies; A resumes, creates Y and dies.  Both are unbound.
	SBX_STOP=resolve:before-create SBX_FAULT=resolve:after-backend-create SBX_LOCK_TTL_MS=300 \
		sbx-create --tenant acme --session dup >/dev/null 2>&1 &
	a=$!
	wait_stopped "$a"
	wait_key_gone "$(skey acme dup lock)"
	SBX_FAULT=resolve:after-backend-create SBX_LOCK_TTL_MS=300 run -137 sbx-create --tenant acme --session dup
	first=$(ids_with sbx.session dup)
	sleep 1.1   # created_at has one-second resolution: make X strictly older
	kill -CONT "$a"
	st=0
	wait "$a" || st=$?
	[ "$st" -eq 137 ]
	[ "$(ids_with sbx.session dup | wc -l)" = 2 ]
	run resolve acme dup
	assert_success
	[ "$output" = "$first claimed" ]
	assert_one_sandbox acme dup "$first"
}

@test "a holder SIGSTOP'd past its lock TTL cannot write its binding" {
	freeze_holder resolve:before-bind acme fenced sbx-create --tenant acme --session fenced
	# A second resolve takes the expired lock (fence 2) and binds; it finds
	# the stopped holder's unbound sandbox by metadata and claims it.
	run resolve acme fenced
	assert_success
	winner=${output%% *}
	[ "$(rcli get "$(skey acme fenced binding)" | jq -r .fence)" = 2 ]
	kill -CONT "$a"
	st=0
	wait "$a" || st=$?
	[ "$st" -eq 75 ]
	grep -q "lock ownership lost" "$BATS_TEST_TMPDIR/a.err"
	[ "$(jq -r .error.kind <"$BATS_TEST_TMPDIR/a.out")" = conflict ]
	# Its write was refused; it did not delete the sandbox now bound to the winner.
	[ "$(rcli get "$(skey acme fenced binding)" | jq -r .fence)" = 2 ]
	assert_one_sandbox acme fenced "$winner"
	run resolve acme fenced
	[ "$output" = "$winner bound" ]
}

@test "the sandbox is gone (killed): the binding is dropped and a new one created" {
	run resolve acme gone
	old=${output%% *}
	sbx-ls --label sbx.session=gone | sbx-ctl kill >/dev/null
	run resolve acme gone
	assert_success
	new=${output%% *}
	[ "$new" != "$old" ]
	[ "${output#* }" = created ]
	assert_one_sandbox acme gone "$new"
	[ "$(rcli sismember "$(bound_key acme)" "$old")" = 0 ]
}

@test "a paused sandbox is resumed and kept" {
	run resolve acme paused
	id=${output%% *}
	sbx-ls --id "$id" | sbx-ctl pause >/dev/null
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.state)" = paused ]
	run resolve acme paused
	[ "$output" = "$id bound" ]
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.state)" = running ]
}

@test "stale without a turn: rebuilt at once" {
	stale_rebuild acme st1
	[ "$new" != "$old" ]
	assert_one_sandbox acme st1 "$new"
	run resolve acme st1
	[ "$output" = "$new bound" ]
}

@test "install mid-turn: the rest of the turn keeps the sandbox, the next turn's first resolve rebuilds" {
	sbx-lease begin --tenant acme --session turn >/dev/null
	run resolve acme turn
	id=${output%% *}
	sbx-lease stale --tenant acme >/dev/null          # the admin installs a skill now
	run resolve acme turn
	[ "$output" = "$id bound" ]
	run resolve acme turn
	[ "$output" = "$id bound" ]
	sbx-lease end --tenant acme --session turn >/dev/null
	sbx-lease begin --tenant acme --session turn >/dev/null
	run resolve acme turn
	new=${output%% *}
	[ "${output#* }" = rebuilt ]
	[ "$new" != "$id" ]
	run resolve acme turn
	[ "$output" = "$new bound" ]
	sbx-lease end --tenant acme --session turn >/dev/null
	assert_one_sandbox acme turn "$new"
}

@test "stale before the turn began: its first resolve rebuilds" {
	run resolve acme turn2
	id=${output%% *}
	sbx-lease stale --tenant acme >/dev/null
	sbx-lease begin --tenant acme --session turn2 >/dev/null
	run resolve acme turn2
	[ "${output#* }" = rebuilt ]
	sbx-lease end --tenant acme --session turn2 >/dev/null
}

@test "a crashed turn's lease expires, then the stale sandbox is rebuilt" {
	SBX_TURN_TTL_MS=5000 sbx-lease begin --tenant acme --session crashed >/dev/null
	SBX_TURN_TTL_MS=5000 run resolve acme crashed
	id=${output%% *}
	sbx-lease stale --tenant acme >/dev/null
	SBX_TURN_TTL_MS=5000 run resolve acme crashed
	[ "$output" = "$id bound" ]
	wait_key_gone "$(skey acme crashed turn)"     # nobody calls end: it expires
	run resolve acme crashed
	[ "${output#* }" = rebuilt ]
}

@test "the turn lease cannot be read (WRONGTYPE): the stale sandbox is kept" {
	run resolve acme unread
	id=${output%% *}
	sbx-lease stale --tenant acme >/dev/null
	rcli set "$(skey acme unread turn)" not-a-hash >/dev/null
	run resolve acme unread
	assert_success
	[ "$output" = "$id bound" ]
	rcli del "$(skey acme unread turn)" >/dev/null
	run resolve acme unread
	[ "${output#* }" = rebuilt ]
}

@test "a malformed binding fails closed: error, nothing created" {
	rcli set "$(skey acme malformed binding)" '{"version":1}' >/dev/null
	run sbx-create --tenant acme --session malformed
	[ "$status" -eq 70 ]
	assert_output --partial malformed
	[ -z "$(ids_with sbx.session malformed)" ]
	rcli del "$(skey acme malformed binding)" >/dev/null
}

@test "hostile ids never collide: (a:b, c) vs (a, b:c), braces, globs, spaces" {
	declare -A seen
	pairs=("a:b|c" "a|b:c" "x}|s" "x|}s" "{x}|s" "t*|s" "t?|s" "t[1]|s" "t\\|s" "t%7D|s" "t}|s" "t t|s" "t|s s" "é|s")
	for p in "${pairs[@]}"; do
		t=${p%%|*} s=${p#*|}
		run sbx-create --tenant "$t" --session "$s"
		assert_success
		id=$(jqo .sandbox.id)
		[ -z "${seen[$id]:-}" ] || { echo "$p shares $id with ${seen[$id]}"; false; }
		seen[$id]=$p
		[ "$(jqo .resolved)" = created ]
	done
	for p in "${pairs[@]}"; do
		t=${p%%|*} s=${p#*|}
		run sbx-create --tenant "$t" --session "$s"
		[ "$(jqo .resolved)" = bound ]
		[ "${seen[$(jqo .sandbox.id)]}" = "$p" ]
	done
	# Every key has a brace-free hash tag; the tag is the tenant's.
	rcli --scan --pattern 'sbx:{*' | while read -r k; do
		tag=${k#*\{}; tag=${tag%%\}*}
		[[ "$tag" != *"{"* ]]
	done
	# Marking tenant 't*' stale touches only its own session.
	run sbx-lease stale --tenant 't*'
	[ "$(jqo .lease.marked)" = 1 ]
}

@test "installer sandbox (--skill-image): tagged, unbound, refused on a foreign image" {
	run sbx-create --tenant inst --skill-image
	assert_success
	id=$(jqo .sandbox.id)
	[ "$(jqo '.sandbox.metadata."sbx.purpose"')" = skill-install ]
	[ "$(jqo '.sandbox.metadata."sbx.image_generation"')" = 0 ]
	[ "$(jqo '.sandbox.metadata."sbx.session"')" = null ]
	[ "$(rcli scard "$(bound_key inst)")" = 0 ]
	# An image built under another backend identity: sessions fall back to
	# the base template, an installer refuses.
	rcli hset 'sbx:{inst}:image' snapshot_id snap-foreign fingerprint 00ff generation 1 >/dev/null
	run sbx-create --tenant inst --session s
	assert_success
	[ "$(jqo .sandbox.template)" = "$SBX_TEST_TEMPLATE" ]
	run sbx-create --tenant inst --skill-image
	[ "$status" -eq 65 ]
	assert_output --partial "fingerprint mismatch"
}

@test "Redis down: sbx-create exits 69 with one line naming the URL, and creates nothing" {
	before=$(sbx-ls | jq -r .sandbox.id | sort)
	d=$BATS_TEST_TMPDIR/r2
	main_sock=$REDIS_SOCK main_url=$SBX_REDIS_URL
	redis_start "$d"
	run sbx-create --tenant down --session s
	assert_success
	redis_stop "$d"
	run sbx-create --tenant down --session s2
	[ "$status" -eq 69 ]
	[ "${#lines[@]}" = 2 ]     # the error document on stdout, one line on stderr
	assert_line --partial "sbx-create: error: unavailable: redis unavailable at unix://$d/redis.sock"
	export REDIS_SOCK=$main_sock SBX_REDIS_URL=$main_url
	after=$(sbx-ls | jq -r .sandbox.id | sort)
	[ "$(comm -13 <(echo "$before") <(echo "$after") | wc -l)" = 1 ]   # only the one made while up
	run env SBX_REDIS_URL='redis://:hunter2@127.0.0.1:1/0' sbx-create --tenant down --session s3
	[ "$status" -eq 69 ]
	refute_output --partial hunter2
}
