#!/usr/bin/env bash
# tests/bench/remote.sh - the e2b backend against the official SDK, side
# by side in one run against one sbx-serve (over the local backend):
# create, exec `true`, write and read of 1 MB, a listing of LIST sandboxes
# (all pages).  sbx runs as users run it: a program per operation; the SDK
# both warm (N operations in one node process) and fresh (a node process
# per operation, as a script that shells out would run it).  Medians of
# RUNS, ratios sbx/warm and sbx/fresh, written to OUT (docs/bench/remote.md).
# Needs root, node and tests/sdk's node_modules (npm ci).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
RUNS=${RUNS:-10}
LIST=${LIST:-200}
OUT=${OUT:-$top/docs/bench/remote.md}
export PATH="$BUILD/bin:$PATH"
[ -d "$top/tests/sdk/node_modules" ] || (cd "$top/tests/sdk" && npm ci --no-audit --no-fund >/dev/null)
FIXTURE_SERVE_FLAGS="--max-sandboxes $((LIST + 50))"
# shellcheck source=tests/lib/fixture-e2b.bash
. "$top/tests/lib/fixture-e2b.bash"
W=$(mktemp -d /tmp/sbx-bench-remote.XXXXXX)
mkdir -p "$W/serve"
eval "$(fixture_engine_start "$W/serve")"
cleanup() { fixture_engine_stop "$W/serve" >/dev/null 2>&1 || true; rm -rf "$W"; }
trap cleanup EXIT
export SBX_CONFIG="$W/config.json" SBX_STATE_DIR="$W/state"
unset SBX_BACKEND
fixture_profile "$SBX_CONFIG"
export E2B_API_URL=$SBX_TEST_SERVE_URL E2B_SANDBOX_URL=$SBX_TEST_SERVE_URL E2B_API_KEY=$FIXTURE_KEY
sdk() { node "$top/tests/sdk/remote-bench.mjs" "$@"; }
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); echo $(((t1 - t0) / 1000)); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
head -c 1048576 /dev/zero | tr '\0' x >"$W/1m"

doc=$(sbx-create)
id=$(jq -r .sandbox.id <<<"$doc")
declare -A S W F
# sbx: a program per operation (microseconds -> ms)
for i in $(seq "$RUNS"); do ms sbx-create; done | median >"$W/c"   # sandboxes reaped below
S[create]=$(cat "$W/c")
S[exec]=$(for i in $(seq "$RUNS"); do ms sbx-exec --id "$id" -- true; done | median)
S[write]=$(for i in $(seq "$RUNS"); do ms sbx-fs --id "$id" put "$W/1m" /workspace/bench.bin; done | median)
S[read]=$(for i in $(seq "$RUNS"); do ms sbx-fs --id "$id" get /workspace/bench.bin "$W/back$i"; done | median)
for i in $(seq $((LIST - RUNS - 1))); do sbx-create >/dev/null; done
S[list]=$(for i in $(seq "$RUNS"); do ms sbx-ls --all; done | median)
n=$(sbx-ls --all | wc -l)
# the SDK, warm
for op in exec write read; do W[$op]=$(sdk "$op" "$id" "$RUNS" | median); done
W[list]=$(sdk list "$RUNS" | median)
W[create]=$(sdk create "$RUNS" | median)
# the SDK, a fresh node process per operation
for op in exec write read; do F[$op]=$(for i in $(seq "$RUNS"); do ms sdk "$op" "$id" 1; done | median); done
F[list]=$(for i in $(seq "$RUNS"); do ms sdk list 1; done | median)
F[create]=$(for i in $(seq "$RUNS"); do ms sdk create 1; done | median)
{
	echo "# e2b backend vs the official SDK (tests/bench/remote.sh)"
	echo
	echo "One run, $(date -u +%Y-%m-%d), $(nproc) cores, sbx-serve over the local backend on loopback;"
	echo "medians of $RUNS. sbx: a program per operation; SDK warm: one node process;"
	echo "SDK fresh: a node process per operation. The listing is of $n sandboxes."
	echo "Regenerate: \`BENCH=remote make bench\` (this file)."
	echo
	echo "| operation | sbx ms | SDK warm ms | SDK fresh ms | sbx / warm | sbx / fresh |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: |"
	for op in create exec write read list; do
		s=$(awk -v v="${S[$op]}" 'BEGIN {printf "%.1f", v / 1000}')
		f=$(awk -v v="${F[$op]}" 'BEGIN {printf "%.1f", v / 1000}')
		w=${W[$op]}
		printf '| %s | %s | %.1f | %s | %.2f | %.2f |\n' "$op" "$s" "$w" "$f" \
			"$(awk -v a="$s" -v b="$w" 'BEGIN {print a / b}')" "$(awk -v a="$s" -v b="$f" 'BEGIN {print a / b}')"
	done
} >"$OUT"
cat "$OUT"
