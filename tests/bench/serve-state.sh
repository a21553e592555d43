#!/usr/bin/env bash
# tests/bench/serve-state.sh - what the file system under the local
# backend's state costs a warm commands.run('true'): three sbx-serve, each
# with its own state, Redis and sandbox, one under TMPDIR's folder (/tmp
# here, the root file system), one on a fresh ext4 with its journal (a
# loop device: what mkfs.ext4 and a stock install make) and one on tmpfs
# (/dev/shm), one warm SDK each (tests/sdk/bench.mjs warm), and sbx-exec
# against each sandbox.
# ROUNDS rounds of CHUNK calls of the four, the order reversed every
# round; a side's ratio is the median of its rounds' ratios (SDK median /
# sbx-exec median).  A start writes its process record (a folder and
# about 7 files, docs/serve.md "Benchmarks"), sbx-exec none: on an ext4
# without a journal each new inode steps over the recently deleted ones.
# Writes docs/bench/serve-state.md (OUT).  Needs root, node and
# tests/sdk's node_modules (npm ci), /dev/shm, mkfs.ext4 and a loop device.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
ROUNDS=${ROUNDS:-60}
CHUNK=${CHUNK:-3}
OUT=${OUT:-$top/docs/bench/serve-state.md}
export PATH="$BUILD/bin:$PATH"
[ -d "$top/tests/sdk/node_modules" ] || (cd "$top/tests/sdk" && npm ci --no-audit --no-fund >/dev/null)
# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
quart() { sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int(p*NR+0.5); if (i<1) i=1; printf "%.2f", a[i]}'; }
ms() { local t0=$EPOCHREALTIME; "$@" >/dev/null; awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f\n", (b-a)*1000}'; }

# side NAME PARENT: a work folder under PARENT with the local backend's
# state, a private Redis, a server and a sandbox; its environment in
# ENV_NAME, its folder in W_NAME, its sandbox in ID_NAME.
declare -A W ENVS SPID ID FS
side() {
	local s=$1 w port key
	w=$(mktemp -d "$2/sbx-bench-state.XXXXXX")
	W[$s]=$w
	FS[$s]="$(findmnt -no FSTYPE -T "$w" | head -1) ($(findmnt -no TARGET -T "$w" | head -1))"
	# Its state, config and Redis (lib.sh); the subshell keeps its
	# exports to itself: each side's environment is ENVS[side].
	(bench_local_redis "$w")
	ENVS[$s]="SBX_STATE_DIR=$w/state SBX_CONFIG=$w/config.json SBX_BACKEND=local SBX_REDIS_URL=unix://$w/redis.sock"
	key=e2b_$(openssl rand -hex 16)
	printf '%s\n' "$key" >"$w/keys"
	# shellcheck disable=SC2086
	env ${ENVS[$s]} sbx-serve --listen 127.0.0.1:0 --api-key-file "$w/keys" --quiet \
		--state-dir "$w/serve" 2>"$w/serve.log" &
	SPID[$s]=$!
	for _ in $(seq 200); do port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$w/serve.log"); [ -n "$port" ] && break; sleep 0.05; done
	echo "E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port E2B_API_KEY=$key" >"$w/sdkenv"
	ID[$s]=$(curl -sf -X POST "http://127.0.0.1:$port/v2/sandboxes" -H "X-API-Key: $key" \
		-d '{"timeout":3600}' | jq -r .sandboxID)
}
SIDES=(disk journal shm)
loopdir=
cleanup() {
	for s in "${SIDES[@]}"; do
		local w=${W[$s]:-}
		[ -n "$w" ] || continue
		kill "${SPID[$s]}" 2>/dev/null || true
		wait "${SPID[$s]}" 2>/dev/null || true
		# shellcheck disable=SC2086
		env ${ENVS[$s]} sbx-ls --all 2>/dev/null | env ${ENVS[$s]} sbx-ctl kill >/dev/null 2>&1 || true
		redis-cli -s "$w/redis.sock" shutdown nosave >/dev/null 2>&1 || true
		rm -rf --one-file-system "$w"
	done
	if [ -n "$loopdir" ]; then
		umount -l "$loopdir/mnt" 2>/dev/null || true
		rm -rf "$loopdir"
	fi
}
trap cleanup EXIT
load0=$(cut -d" " -f1 /proc/loadavg)
loopdir=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench-ext4.XXXXXX")
truncate -s 2G "$loopdir/img"
mkfs.ext4 -q -F "$loopdir/img"
mkdir "$loopdir/mnt"
mount -o loop "$loopdir/img" "$loopdir/mnt"
side disk "${TMPDIR:-/tmp}"
side journal "$loopdir/mnt"
side shm /dev/shm
# One warm SDK a side (30 untimed calls first: docs/serve.md), on a pipe
# pair of its own: SIN/SOUT its ends.
declare -A SIN SOUT
for s in "${SIDES[@]}"; do
	mkfifo "${W[$s]}/to" "${W[$s]}/from"
	# shellcheck disable=SC2046
	env $(cat "${W[$s]}/sdkenv") node "$top/tests/sdk/bench.mjs" warm "${ID[$s]}" 30 \
		<"${W[$s]}/to" >"${W[$s]}/from" &
	exec {fd}>"${W[$s]}/to"
	SIN[$s]=$fd
	exec {fd}<"${W[$s]}/from"
	SOUT[$s]=$fd
	read -r _ <&"${SOUT[$s]}"
done
sdk() {   # side: CHUNK timed calls from its warm SDK
	echo "$CHUNK" >&"${SIN[$1]}"
	while read -r line <&"${SOUT[$1]}" && [ "$line" != . ]; do echo "$line"; done >"${W[$1]}/round.sdk"
}
prog() {  # side: CHUNK sbx-exec runs of what the SDK sends
	for _ in $(seq "$CHUNK"); do
		# shellcheck disable=SC2086
		ms env ${ENVS[$1]} sbx-exec --id "${ID[$1]}" -- /bin/bash -l -c true
	done >"${W[$1]}/round.prog"
}
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then
		for s in "${SIDES[@]}"; do sdk "$s"; prog "$s"; done
	else
		for s in shm journal disk; do prog "$s"; sdk "$s"; done
	fi
	for s in "${SIDES[@]}"; do
		w=${W[$s]}
		cat "$w/round.sdk" >>"$w/all.sdk"
		cat "$w/round.prog" >>"$w/all.prog"
		awk -v a="$(median <"$w/round.sdk")" -v b="$(median <"$w/round.prog")" \
			'BEGIN {printf "%.4f\n", a/b}' >>"$w/ratio"
	done
done
for s in "${SIDES[@]}"; do eval "exec ${SIN[$s]}>&-"; done
row() {
	local w=${W[$1]}
	echo "| state on ${FS[$1]}$([ "$1" = journal ] && echo ", journaled, fresh") | $(median <"$w/all.sdk") ms | $(median <"$w/all.prog") ms | $(median <"$w/ratio" | awk '{printf "%.2f", $1}') ($(quart 0.25 <"$w/ratio")-$(quart 0.75 <"$w/ratio")) |"
}
{
	echo "# sbx-serve: the state's file system"
	echo
	echo "tests/bench/serve-state.sh, $(date -u +%Y-%m-%d), $(nproc) CPUs, kernel $(uname -r), load $load0 at the start and $(cut -d" " -f1 /proc/loadavg) at the end, local backend (host template)."
	echo "Three servers with their own state, one warm SDK each; $ROUNDS rounds of $CHUNK calls of each of the four (the order reversed every round)."
	echo "Regenerate: \`BENCH=serve-state make bench\` (this file)."
	echo
	echo "| | \`commands.run('true')\`, warm SDK | \`sbx-exec -- /bin/bash -l -c true\` | ratio: median of the rounds' (quartiles) |"
	echo "|---|---|---|---|"
	row disk
	row journal
	row shm
	echo
	echo "Each start leaves a process record (a folder and its files) in the state; sbx-exec leaves none"
	echo "(docs/serve.md \"Benchmarks\").  Timings on a shared host swing with its load; the ratios of one run are the result."
} >"$OUT"
cat "$OUT"
