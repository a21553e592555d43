#!/usr/bin/env bash
# tests/bench/reap.sh - how sbx-reap scales: reconcile time and Redis round
# trips against the number of sandboxes and of bindings.
#
#   tests/bench/reap.sh [N...]        default: 100 1000 (real local sandboxes)
#
# For each N it creates N real session sandboxes (sbx-create --tenant bench
# --session sK: real resolves, real bindings), turns 10% of them into
# orphans (binding and bound-set entry dropped), and measures
#   - a dry run (list + bound-set diff + lock checks: the reconcile itself),
#   - the real run that deletes the orphans (lock, re-check, delete each).
# Then, with 100 real sandboxes, it adds synthetic bound-set members that
# name no sandbox (10,000 and 100,000: what a fleet of bindings costs the
# reconcile) and measures a dry run again.
#
# Round trips are counted twice: by the client (the report's
# redis_round_trips: one per command or per pipeline) and by the server
# (INFO commandstats: calls of every command, before/after delta).
# Prints a table; BENCH_OUT=FILE also appends it there.  Needs root (the
# local backend), redis-server, jq.  Nothing here is a pass/fail test.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
export PATH="$BUILD/bin:$PATH"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100 1000)

work=$(mktemp -d /tmp/sbx-bench-reap.XXXXXX)
. "$top/tests/bench/lib.sh"
bench_local_redis "$work"

cleanup() {
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	rcli shutdown nosave >/dev/null 2>&1 || true
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# Total command calls the server has seen (INFO commandstats), minus the
# INFO calls themselves.
calls() {
	rcli INFO commandstats | tr -d '\r' |
		awk -F'[=,:]' '/^cmdstat_/ && $1 != "cmdstat_info" { s += $3 } END { print s + 0 }'
}

# Bring the number of bench sessions up to $1 (2 resolves at a time).
grow() {
	local have want=$1
	have=$(rcli SCARD "sbx:{bench}:bound")
	[ "$have" -lt "$want" ] || return 0
	seq "$((have + 1))" "$want" |
		xargs -P 2 -I{} sh -c 'sbx-create --tenant bench --session s{} >/dev/null'
}

# Drop the binding of `n` sessions (orphans); prints nothing.
orphan() {
	local n=$1 i id
	for i in $(seq 1 "$n"); do
		id=$(rcli GET "sbx:{bench}:sess:s$i:binding" | jq -r .sandbox_id)
		rcli DEL "sbx:{bench}:sess:s$i:binding" >/dev/null
		rcli SREM "sbx:{bench}:bound" "$id" >/dev/null
	done
}

# One measured run: prints "ms list_ms redis_ms client_rt server_calls deleted".
measure() {
	local before after out
	before=$(calls)
	out=$(sbx-reap --tenant bench --grace 0 "$@")
	after=$(calls)
	printf '%s %s %s %s %s %s\n' "$(jq .reap.duration_ms <<<"$out")" \
		"$(jq '.reap.timing_ms.list // "-"' <<<"$out")" \
		"$(jq '.reap.timing_ms.redis // "-"' <<<"$out")" \
		"$(jq .reap.redis_round_trips <<<"$out")" "$((after - before))" \
		"$(jq '(.reap.deleted // .reap.would_delete) | length' <<<"$out")"
}

row() { printf '| %-28s | %9s | %9s | %7s | %7s | %8s | %9s | %12s | %10s |\n' "$@"; }

table=$(mktemp)
{
	echo "sbx-reap scaling ($(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), local backend)"
	echo
	row "case" "sandboxes" "bound set" "total ms" "list ms" "redis ms" "client RT" "server calls" "deleted"
	row "---" "---:" "---:" "---:" "---:" "---:" "---:" "---:" "---:"
} >"$table"

for n in "${sizes[@]}"; do
	t0=$(date +%s%N)
	grow "$n"
	t1=$(date +%s%N)
	echo "# $n sandboxes created in $(( (t1 - t0) / 1000000 )) ms" >&2
	orphans=$((n / 10))
	orphan "$orphans"
	members=$(rcli SCARD "sbx:{bench}:bound")
	read -r ms lm rm rt sc del < <(measure --dry-run)
	row "dry run (reconcile)" "$n" "$members" "$ms" "$lm" "$rm" "$rt" "$sc" "$del (plan)" >>"$table"
	read -r ms lm rm rt sc del < <(measure)
	row "real run (delete orphans)" "$n" "$members" "$ms" "$lm" "$rm" "$rt" "$sc" "$del" >>"$table"
	# Re-create the deleted sessions' sandboxes for the next size.
	for i in $(seq 1 "$orphans"); do sbx-create --tenant bench --session "s$i" >/dev/null; done
done

# Synthetic bindings: bound-set members naming no sandbox, beside 100 real ones.
# Keep the first 100 sessions' sandboxes; kill the rest in one sbx-ctl run
# (full handles on stdin, so their bindings are dropped with them).
sbx-ls -l sbx.tenant=bench |
	jq -c 'select((.sandbox.metadata["sbx.session"] | ltrimstr("s") | tonumber) > 100)' |
	sbx-ctl kill >/dev/null
grow 100
real=$(sbx-ls -l sbx.tenant=bench | jq -s length)
for syn in 10000 100000; do
	have=$(rcli SCARD "sbx:{bench}:bound")
	python3 - "$have" "$syn" <<'EOF' | rcli --pipe >/dev/null
import sys
have, want = int(sys.argv[1]), int(sys.argv[2])
def cmd(*a):
    out = "*%d\r\n" % len(a)
    for x in a:
        out += "$%d\r\n%s\r\n" % (len(x.encode()), x)
    return out
key = "sbx:{bench}:bound"
batch = []
for i in range(want):
    batch.append("sb-synthetic-%07d" % i)
    if len(batch) == 1000:
        sys.stdout.write(cmd("SADD", key, *batch)); batch = []
if batch:
    sys.stdout.write(cmd("SADD", key, *batch))
EOF
	members=$(rcli SCARD "sbx:{bench}:bound")
	read -r ms lm rm rt sc del < <(measure --dry-run)
	row "dry run, synthetic bindings" "$real" "$members" "$ms" "$lm" "$rm" "$rt" "$sc" "$del (plan)" >>"$table"
done

cat "$table"
[ -z "${BENCH_OUT:-}" ] || cat "$table" >>"$BENCH_OUT"
rm -f "$table"
