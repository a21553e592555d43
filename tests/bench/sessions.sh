#!/usr/bin/env bash
# tests/bench/sessions.sh - the cost of resolving an already-bound session.
#
#   tests/bench/sessions.sh [RUNS]          default RUNS=50
#
# 1. Redis round trips of one `sbx-create --tenant bench --session s1` on a
#    bound session: counted by the server, as client commands (MONITOR lines
#    not issued by Lua) and cross-checked with INFO commandstats deltas
#    (evalsha/eval calls = scripts; the commands scripts run inside are
#    listed too, but they are not round trips).  Aim: <= 3.
# 2. Resolve latency as a ratio to a bare `redis-cli GET` in the same run
#    (both are whole processes: exec + connect + work), with hyperfine when
#    installed, else a shell loop.
# Prints a small table; BENCH_OUT=FILE also appends it there.  Needs root
# (local backend), redis-server, jq.  Nothing here is a pass/fail test.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
export PATH="$BUILD/bin:$PATH"
runs=${1:-50}

work=$(mktemp -d /tmp/sbx-bench-sessions.XXXXXX)
. "$top/tests/bench/lib.sh"
bench_local_redis "$work"
mon_pid=
cleanup() {
	[ -n "$mon_pid" ] && kill "$mon_pid" 2>/dev/null || true
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	rcli shutdown nosave >/dev/null 2>&1 || true
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT

resolve() { sbx-create --tenant bench --session s1 >/dev/null; }

# Create and warm up (the first run of each script loads it: EVAL after
# NOSCRIPT; later processes find it cached and use EVALSHA only).
first=$(sbx-create --tenant bench --session s1 | jq -r .resolved)
resolve; resolve
[ "$(sbx-create --tenant bench --session s1 | jq -r .resolved)" = bound ]

# --- round trips -----------------------------------------------------------
stats() { rcli INFO commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ { sub("cmdstat_", "", $1); print $1, $3 }' | sort; }
stats >"$work/before"
rcli MONITOR >"$work/monitor" 2>/dev/null &
mon_pid=$!
sleep 0.2
resolve
sleep 0.2
kill "$mon_pid"; wait "$mon_pid" 2>/dev/null || true; mon_pid=
stats >"$work/after"
# The bench's own INFO may land in the window: not the resolve's.
grep -v -e 'lua\]' -e '"INFO"' -e '"info"' "$work/monitor" | grep '"' >"$work/client" || true
client_cmds=$(wc -l <"$work/client")
delta=$(join -a2 -e0 -o 0,1.2,2.2 "$work/before" "$work/after" |
	awk '$1 != "info" && $1 != "monitor" && $3 - $2 > 0 { printf "%s=%d ", $1, $3 - $2 }')
scripts=$(join -a2 -e0 -o 0,1.2,2.2 "$work/before" "$work/after" |
	awk '$1 == "evalsha" || $1 == "eval" { s += $3 - $2 } END { print s + 0 }')
cmds=$(sed -nE 's/.*\] "([A-Za-z]+)".*/\1/p' "$work/client" | tr 'a-z' 'A-Z' | tr '\n' ' ')

# --- latency ratio ---------------------------------------------------------
rcli SET bench:key v >/dev/null
if command -v hyperfine >/dev/null; then
	hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/h.json" \
		"sbx-create --tenant bench --session s1" \
		"redis-cli -s $work/redis.sock GET bench:key" >/dev/null 2>&1
	t_resolve=$(jq '.results[0].mean * 1000' "$work/h.json")
	t_get=$(jq '.results[1].mean * 1000' "$work/h.json")
	how=hyperfine
else
	t0=$(date +%s%N); for _ in $(seq "$runs"); do resolve; done; t1=$(date +%s%N)
	for _ in $(seq "$runs"); do rcli GET bench:key >/dev/null; done; t2=$(date +%s%N)
	t_resolve=$(echo "($t1 - $t0) / $runs / 1000000" | bc -l)
	t_get=$(echo "($t2 - $t1) / $runs / 1000000" | bc -l)
	how="shell loop"
fi
ratio=$(echo "$t_resolve / $t_get" | bc -l)

report=$(cat <<EOT
# sessions: resolve of an already-bound session (local backend, unix socket)
first resolve:                 $first
round trips (client commands): $client_cmds   [$cmds]  (aim <= 3)
scripts run (commandstats):    $scripts
commandstats deltas:           $delta(script-internal calls included)
resolve latency:               $(printf '%.2f' "$t_resolve") ms   ($how, $runs runs, whole process)
redis-cli GET latency:         $(printf '%.2f' "$t_get") ms
ratio resolve / GET:           $(printf '%.2f' "$ratio")
EOT
)
echo "$report"
[ -z "${BENCH_OUT:-}" ] || echo "$report" >>"$BENCH_OUT"
