#!/usr/bin/env bash
# tests/bench/serve.sh - sbx-serve against the programs, side by side in one
# run on the local backend:
#   1. create + commands.run('true') + kill through the official SDK against
#      sbx-serve, and the same through the programs
#      (sbx-create | sbx-exec -- true | sbx-ctl kill);
#   2. commands.run('true') latency (SDK -> sbx-serve) against sbx-exec
#      running what the SDK sends (/bin/bash -l -c true), through the
#      sandbox's fork server and, as the baseline, through the old path
#      (SBX_LOCAL_FORKD=0: a second sbx-serve on the same state, and
#      sbx-exec with it), alternating in chunks within the run;
#   2b. the same from a warm SDK: one node process kept for the run (as an
#      agent's), alternating with sbx-exec in the same chunks; in 2 each
#      chunk is a new node process, whose first calls spend 10-15 ms of
#      CPU each compiling the SDK (docs/serve.md "Benchmarks");
#   3. GET /sandboxes/{id} requests per second with 64 concurrent clients,
#      against GET /health (answered by the server's thread alone: the HTTP
#      floor) and against 64 parallel `sbx-ls --id` runs.
# Medians of RUNS rounds, ratios serve/programs, written to docs/bench/serve.md
# (OUT).  E2B's fork is measured with issue 32's other costs, in
# tests/bench/checkpoint.sh.  Needs root, node and tests/sdk's node_modules (npm ci).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
RUNS=${RUNS:-20}
REQS=${REQS:-3000}
OUT=${OUT:-$top/docs/bench/serve.md}
export PATH="$BUILD/bin:$PATH"
. "$here/lib.sh"
[ -d "$top/tests/sdk/node_modules" ] || (cd "$top/tests/sdk" && npm ci --no-audit --no-fund >/dev/null)

W=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench-serve.XXXXXX")
bench_local_redis "$W"
key=e2b_$(openssl rand -hex 16)
printf '%s\n' "$key" >"$W/keys"
# One key drives all 64 clients: its in-flight limit is raised to the
# server's (the default, half, would answer 429 to the other 32).
sbx-serve --listen 127.0.0.1:0 --api-key-file "$W/keys" --quiet --state-dir "$W/serve" \
	--max-workers-per-key 64 2>"$W/serve.log" &
spid=$!
# The baseline: the same server forced onto the old start path.
SBX_LOCAL_FORKD=0 sbx-serve --listen 127.0.0.1:0 --api-key-file "$W/keys" --quiet \
	--state-dir "$W/serve" --max-workers-per-key 64 2>"$W/serve-old.log" &
spid_old=$!
cleanup() {
	kill "$spid" "$spid_old" 2>/dev/null || true
	wait "$spid" "$spid_old" 2>/dev/null || true
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
	rcli shutdown nosave >/dev/null 2>&1 || true
	rm -rf --one-file-system "$W"
}
trap cleanup EXIT
load0=$(cut -d" " -f1 /proc/loadavg)
for _ in $(seq 200); do port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$W/serve.log"); [ -n "$port" ] && break; sleep 0.05; done
for _ in $(seq 200); do port_old=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$W/serve-old.log"); [ -n "$port_old" ] && break; sleep 0.05; done
export E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port E2B_API_KEY=$key
sdk() { node "$top/tests/sdk/bench.mjs" "$@"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ms() { local t0=$EPOCHREALTIME; "$@" >/dev/null; awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f\n", (b-a)*1000}'; }
# The programs run what the SDK sends: /bin/bash -l -c CMD.
prog_life() { sbx-create | sbx-exec -- /bin/bash -l -c true | sbx-ctl kill; }

sdk lifecycle 2 >/dev/null; prog_life >/dev/null      # warm caches
: >"$W/life.sdk"; : >"$W/life.prog"
for _ in $(seq "$RUNS"); do
	sdk lifecycle 1 >>"$W/life.sdk"
	ms prog_life >>"$W/life.prog"
done
id=$(curl -sf -X POST "$E2B_API_URL/v2/sandboxes" -H "X-API-Key: $key" -d '{"timeout":3600}' | jq -r .sandboxID)
# Fork server and old path alternate, in chunks of CHUNK starts.
CHUNK=${CHUNK:-5}
: >"$W/run.sdk"; : >"$W/run.prog"; : >"$W/run.sdk.old"; : >"$W/run.prog.old"
for _ in $(seq $(((RUNS + CHUNK - 1) / CHUNK))); do
	sdk run "$id" "$CHUNK" >>"$W/run.sdk"
	E2B_API_URL=http://127.0.0.1:$port_old E2B_SANDBOX_URL=http://127.0.0.1:$port_old \
		sdk run "$id" "$CHUNK" >>"$W/run.sdk.old"
	for _ in $(seq "$CHUNK"); do
		ms sbx-exec --id "$id" -- /bin/bash -l -c true >>"$W/run.prog"
		ms env SBX_LOCAL_FORKD=0 sbx-exec --id "$id" -- /bin/bash -l -c true >>"$W/run.prog.old"
	done
done
# The same from one warm node process: WARM untimed calls first, then
# WARM_ROUNDS rounds of WARM_CHUNK timed calls asked for on its stdin and
# WARM_CHUNK sbx-exec runs, the order of the two swapped every round (a
# drift of the machine's load falls on both sides).  Each round gives a
# ratio of its two medians; the row is the median of those ratios, with
# its quartiles, beside the pooled medians (a 2-CPU host shared with
# other jobs moves single rounds by 2x: docs/serve.md "Benchmarks").
WARM=${WARM:-30} WARM_ROUNDS=${WARM_ROUNDS:-60} WARM_CHUNK=${WARM_CHUNK:-3}
: >"$W/warm.sdk"; : >"$W/warm.prog"; : >"$W/warm.ratio"
coproc WARMSDK { sdk warm "$id" "$WARM"; }
warm_pid=$WARMSDK_PID warm_out=${WARMSDK[0]} warm_in=${WARMSDK[1]}
read -r _ <&"$warm_out"
warm_sdk() {
	echo "$WARM_CHUNK" >&"$warm_in"
	while read -r line <&"$warm_out" && [ "$line" != . ]; do echo "$line"; done >"$W/round.sdk"
}
warm_prog() {
	for _ in $(seq "$WARM_CHUNK"); do
		ms sbx-exec --id "$id" -- /bin/bash -l -c true
	done >"$W/round.prog"
}
warm_load0=$(cut -d" " -f1 /proc/loadavg)
for r in $(seq "$WARM_ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then warm_sdk; warm_prog; else warm_prog; warm_sdk; fi
	cat "$W/round.sdk" >>"$W/warm.sdk"
	cat "$W/round.prog" >>"$W/warm.prog"
	awk -v a="$(median <"$W/round.sdk")" -v b="$(median <"$W/round.prog")" \
		'BEGIN {printf "%.4f\n", a/b}' >>"$W/warm.ratio"
done
warm_load1=$(cut -d" " -f1 /proc/loadavg)
exec {warm_in}>&-
wait "$warm_pid" || true
# The same with GAP ms of quiet before each start, as calls come from an
# agent: a cgroup move after a quiet spell is the one that waits for an
# RCU grace period (back to back, the previous move's grace period may
# still cover it).
GAP=${GAP:-100}
: >"$W/gap.sdk"; : >"$W/gap.sdk.old"
for _ in $(seq $(((RUNS + CHUNK - 1) / CHUNK))); do
	sdk run "$id" "$CHUNK" "$GAP" >>"$W/gap.sdk"
	E2B_API_URL=http://127.0.0.1:$port_old E2B_SANDBOX_URL=http://127.0.0.1:$port_old \
		sdk run "$id" "$CHUNK" "$GAP" >>"$W/gap.sdk.old"
done
rps_get=$(sdk rps "/sandboxes/$id" 64 "$REQS")
rps_health=$(sdk rps /health 64 "$REQS")
t0=$EPOCHREALTIME
seq 640 | xargs -P 64 -I{} sbx-ls --id "$id" >/dev/null
rps_ls=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.0f", 640/(b-a)}')

L1=$(median <"$W/life.sdk"); L2=$(median <"$W/life.prog")
R1=$(median <"$W/run.sdk"); R2=$(median <"$W/run.prog")
O1=$(median <"$W/run.sdk.old"); O2=$(median <"$W/run.prog.old")
G1=$(median <"$W/gap.sdk"); G0=$(median <"$W/gap.sdk.old")
K1=$(median <"$W/warm.sdk"); K2=$(median <"$W/warm.prog")
# quartile P of stdin's numbers (nearest rank)
quart() { sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int(p*NR+0.5); if (i<1) i=1; printf "%.2f", a[i]}'; }
KR=$(median <"$W/warm.ratio"); KQ1=$(quart 0.25 <"$W/warm.ratio"); KQ3=$(quart 0.75 <"$W/warm.ratio")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
{
	echo "# sbx-serve benchmarks"
	echo
	echo "tests/bench/serve.sh, $(date -u +%Y-%m-%d), $(nproc) CPUs, load $load0 at the start and $(cut -d" " -f1 /proc/loadavg) at the end, local backend (host template),"
	echo "medians of $RUNS rounds; the two sides alternate within a round."
	echo "Regenerate: \`BENCH=serve make bench\` (this file)."
	echo
	echo "| measure | through sbx-serve | through the programs | ratio |"
	echo "|---|---|---|---|"
	echo "| create + run \`true\` + kill (SDK / sbx-create \\| sbx-exec -- bash -l -c true \\| sbx-ctl kill) | $L1 ms | $L2 ms | $(ratio "$L1" "$L2") |"
	echo "| \`commands.run('true')\` / \`sbx-exec -- /bin/bash -l -c true\` | $R1 ms | $R2 ms | $(ratio "$R1" "$R2") |"
	echo "| \`commands.run('true')\` from a warm SDK (one node process for the run, $WARM calls before) / \`sbx-exec -- /bin/bash -l -c true\`: median of $WARM_ROUNDS rounds' ratios (quartiles $KQ1-$KQ3), load $warm_load0 to $warm_load1 | $K1 ms | $K2 ms | $(awk -v r="$KR" 'BEGIN {printf "%.2f", r}') |"
	echo "| the same, old start path (\`SBX_LOCAL_FORKD=0\`: no fork server, a cgroup move per start) | $O1 ms | $O2 ms | $(ratio "$O1" "$O2") |"
	echo "| \`commands.run('true')\`, fork server / old path | $R1 ms | $O1 ms | $(ratio "$R1" "$O1") |"
	echo "| \`sbx-exec -- /bin/bash -l -c true\`, fork server / old path | $R2 ms | $O2 ms | $(ratio "$R2" "$O2") |"
	echo "| \`commands.run('true')\` after $GAP ms of quiet, fork server / old path | $G1 ms | $G0 ms | $(ratio "$G1" "$G0") |"
	echo "| GET /sandboxes/{id}, 64 clients, $REQS requests / 64 parallel \`sbx-ls --id\` | $rps_get req/s | $rps_ls runs/s | $(ratio "$rps_get" "$rps_ls") |"
	echo "| GET /sandboxes/{id} / GET /health (no worker: the HTTP floor) | $rps_get req/s | $rps_health req/s | $(ratio "$rps_get" "$rps_health") |"
	echo
	echo "In the three \"fork server / old path\" rows the columns are the fork server (the"
	echo "default, docs/local.md \"The fork server\") and the old start path (\`SBX_LOCAL_FORKD=0\`)."
	echo "Timings on a shared host swing with its load; the ratios of one run are the result."
} >"$OUT"
cat "$OUT"
