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
