#!/usr/bin/env bash
# tests/bench/scale.sh - sbx on a Redis Cluster (3 masters + 3 replicas on
# loopback, tests/lib/cluster.sh) against one redis-server on loopback TCP,
# in the same run:
#   1. Redis round trips of one resolve of a bound session (counted by the
#      servers: MONITOR on every master; script-internal calls, and the
#      WAIT and ASKING that share the script's round trip, excluded);
#   2. resolve throughput with 32 concurrent clients (32 bound sessions,
#      each resolved RUNS times), cluster / single as a ratio;
#   3. the reaper's Redis phase over 10,000 bindings spread over 100
#      tenants (tests/bench/scale-census.c: sbx_bound_census, the pipelined
#      SCARD/SISMEMBER/EXISTS of sbx-reap), time per binding, cluster /
#      single.
# Prints a table; BENCH_OUT=FILE also appends it.  Needs root (the local
# backend), redis-server.  Nothing here is a pass/fail test.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
export PATH="$BUILD/bin:$PATH"
runs=${1:-10}
nbind=${2:-10000}
work=$(mktemp -d /tmp/sbx-bench-scale.XXXXXX)
# shellcheck source=../lib/cluster.sh
. "$top/tests/lib/cluster.sh"
set +u
export SBX_STATE_DIR="$work/state" SBX_CONFIG="$work/config.json" SBX_BACKEND=local
mkdir -p "$SBX_STATE_DIR"
echo '{}' >"$SBX_CONFIG"
cleanup() {
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	scale_stop "$work/c" 2>/dev/null || true
	scale_stop "$work/s" 2>/dev/null || true
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT

scale_cluster_start "$work/c"
mkdir -p "$work/s"
sport=$(($(head -1 "$work/c/ports") + 20))
_scale_server "$work/s" "$sport"
echo "$sport" >"$work/s/ports"
url_single="redis://127.0.0.1:$sport/0"
url_cluster=$(cat "$work/c/url")

masters() { # DIR: live master ports
	local p
	for p in $(cat "$1/ports"); do
		[ "$(redis-cli -p "$p" role 2>/dev/null | head -1)" = master ] && echo "$p"
	done
}

# round_trips DIR URL: client round trips of one bound resolve.
round_trips() {
	local dir=$1 url=$2 p pids=()
	SBX_REDIS_URL=$url sbx-create --tenant rt --session s1 >/dev/null
	SBX_REDIS_URL=$url sbx-create --tenant rt --session s1 >/dev/null
	for p in $(masters "$dir"); do
		redis-cli -p "$p" MONITOR >"$work/mon.$p" 2>/dev/null &
		pids+=($!)
	done
	sleep 0.3
	SBX_REDIS_URL=$url sbx-create --tenant rt --session s1 >/dev/null
	sleep 0.3
	kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true
	cat "$work"/mon.* | grep '"' | grep -v -e 'lua\]' -ie '"info"' -ie '"wait"' -ie '"asking"' |
		sed -nE 's/.*\] "([A-Za-z]+)".*/\1/p' | tr 'a-z' 'A-Z' >"$work/cmds"
	rm -f "$work"/mon.*
	echo "$(wc -l <"$work/cmds") [$(tr '\n' ' ' <"$work/cmds")]"
}

# throughput URL: resolves per second, 32 clients x runs resolves.
throughput() {
	local url=$1 i t0 t1
	for i in $(seq 1 32); do SBX_REDIS_URL=$url sbx-create --tenant tp --session "c$i" >/dev/null; done
	t0=$(date +%s%N)
	for i in $(seq 1 32); do
		( for _ in $(seq 1 "$runs"); do SBX_REDIS_URL=$url sbx-create --tenant tp --session "c$i" >/dev/null; done ) &
	done
	wait
	t1=$(date +%s%N)
	echo "scale=1; 32 * $runs * 1000000000 / ($t1 - $t0)" | bc
}

rt_single=$(round_trips "$work/s" "$url_single")
rt_cluster=$(round_trips "$work/c" "$url_cluster")
tp_single=$(throughput "$url_single")
tp_cluster=$(throughput "$url_cluster")
cen_single=$(SBX_REDIS_URL=$url_single "$BUILD/bench/scale-census" "$nbind" 5)
cen_cluster=$(SBX_REDIS_URL=$url_cluster "$BUILD/bench/scale-census" "$nbind" 5)
us() { awk '{for (i = 1; i < NF; i++) if ($i == "us_per_binding") print $(i + 1)}' <<<"$1"; }
rtc() { awk '{for (i = 1; i < NF; i++) if ($i == "round_trips") print $(i + 1)}' <<<"$1"; }

report=$(cat <<EOT
# scale: Redis Cluster (3 masters + 3 replicas, loopback) vs one redis-server (loopback TCP)
bound resolve round trips, single:   $rt_single
bound resolve round trips, cluster:  $rt_cluster  (+1 CLUSTER SLOTS at open; WAIT shares the lock script's round trip)
resolve throughput, 32 clients:      single $tp_single/s, cluster $tp_cluster/s, ratio cluster/single $(echo "scale=2; $tp_cluster / $tp_single" | bc)
reaper census of $nbind bindings:   single $(us "$cen_single") us/binding ($(rtc "$cen_single") round trips), cluster $(us "$cen_cluster") us/binding ($(rtc "$cen_cluster") round trips), ratio $(echo "scale=2; $(us "$cen_cluster") / $(us "$cen_single")" | bc)
EOT
)
echo "$report"
[ -z "${BENCH_OUT:-}" ] || echo "$report" >>"$BENCH_OUT"
