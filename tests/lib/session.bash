# tests/lib/session.bash - helpers for the session and lease tests.
# Load after lib/helpers:  load lib/helpers; load lib/session

# The Redis key of a session (plain ids only: [A-Za-z0-9._-]).
skey() { printf 'sbx:{%s}:sess:%s:%s' "$1" "$2" "$3"; }
bound_key() { printf 'sbx:{%s}:bound' "$1"; }

# Wait (up to ~30 s) until a Redis key no longer exists (a lock or lease
# expiring).  Returns 1 on timeout: the caller's assertion then fails.
wait_key_gone() {
	local i
	for i in $(seq 1 600); do
		[ "$(rcli exists "$1")" = 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# Ids of the live sandboxes carrying label $1=$2 (one per line, sorted).
ids_with() { sbx-ls --label "$1=$2" | jq -r .sandbox.id | sort; }

# Resolve and print "ID HOW".
resolve() {
	sbx-create --tenant "$1" --session "$2" | jq -r '"\(.sandbox.id) \(.resolved)"'
}

# Every live managed sandbox of tenant $1 is in the tenant's bound set.
assert_none_unbound() {
	local id
	for id in $(ids_with sbx.tenant "$1"); do
		[ "$(rcli sismember "$(bound_key "$1")" "$id")" = 1 ] || {
			echo "sandbox $id of tenant $1 is not bound" >&2
			return 1
		}
	done
}

# Exactly one live sandbox for the session, bound, and it is $3 if given.
assert_one_sandbox() {
	local t=$1 s=$2 want=${3:-} ids n
	ids=$(ids_with sbx.session "$s")
	n=$(printf '%s\n' "$ids" | grep -c . || true)
	[ "$n" = 1 ] || { echo "expected 1 sandbox for $s, found $n: $ids" >&2; return 1; }
	if [ -n "$want" ] && [ "$ids" != "$want" ]; then
		echo "expected $want, found $ids" >&2
		return 1
	fi
	local bid
	bid=$(rcli get "$(skey "$t" "$s" binding)" | jq -r .sandbox_id)
	[ "$bid" = "$ids" ] || { echo "binding names $bid, sandbox is $ids" >&2; return 1; }
}

# freeze_holder POINT TENANT SESSION CMD...: run CMD in the background with
# SBX_STOP=POINT and a 400 ms lock TTL, its stdout and stderr in
# $BATS_TEST_TMPDIR/a.out and a.err, its pid in $a; return once it is
# stopped at POINT and the session's lock it held has expired (the next
# holder may take the session).  Returns 1 when either wait times out.
freeze_holder() {
	local point=$1 t=$2 s=$3
	shift 3
	SBX_STOP=$point SBX_LOCK_TTL_MS=400 \
		"$@" >"$BATS_TEST_TMPDIR/a.out" 2>"$BATS_TEST_TMPDIR/a.err" 3>&- &
	a=$!
	wait_stopped "$a" && wait_key_gone "$(skey "$t" "$s" lock)"
}

# stale_rebuild TENANT SESSION: resolve the session, mark the tenant stale,
# resolve again with no turn open: it rebuilds.  $old and $new are the
# sandboxes before and after; fails unless the second resolve said rebuilt.
stale_rebuild() {
	run resolve "$1" "$2"
	old=${output%% *}
	sbx-lease stale --tenant "$1" >/dev/null
	run resolve "$1" "$2"
	new=${output%% *}
	[ "${output#* }" = rebuilt ]
}
