#!/usr/bin/env bash
# tests/bench/volumes.sh - what two volumes cost a create (issue 34: a
# create with two volumes <= 1.1x one without): sbx-create --tenant T
# --volume a:/mnt/a:ro --volume b:/mnt/b against a plain sbx-create, in
# alternating rounds on the local backend, each followed by its kill
# (not timed).  The ratio of the medians is the result.  The same again
# through sbx-serve: POST /sandboxes with two volumeMounts against one
# without, each followed by its DELETE (not timed).
#
# Writes the table to stdout and OUT (default docs/bench/volumes.md).
# Needs root (the local backend).  RUNS (default 15) creates per side.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
export PATH="$BUILD/bin:$PATH"
RUNS=${RUNS:-15}
OUT=${OUT:-$top/docs/bench/volumes.md}
. "$here/lib.sh"

[ "$(id -u)" = 0 ] || { echo "volumes.sh: needs root" >&2; exit 1; }
W=$(mktemp -d /tmp/sbx-bench-vol.XXXXXX)
cleanup() {
	set +e
	[ -z "${SERVE_PID:-}" ] || { kill "$SERVE_PID"; wait "$SERVE_PID"; }
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1
	rcli shutdown nosave >/dev/null 2>&1
	rm -rf --one-file-system "$W"
}
trap cleanup EXIT
bench_local_redis "$W"
sbx-vol --tenant bench create a >/dev/null
sbx-vol --tenant bench create b >/dev/null
head -c 1M /dev/urandom | sbx-vol --tenant bench put a - /data >/dev/null

ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f", m }'; }
one() {   # ARGS...: the create's wall time in ms; the sandbox is killed after
	local t0 t1 id
	t0=$(ms)
	id=$(sbx-create "$@" | jq -r .sandbox.id)
	t1=$(ms)
	sbx-ctl kill --id "$id" >/dev/null
	echo $((t1 - t0))
}
one >/dev/null   # warm the template and the page cache
: >"$W/plain"; : >"$W/vols"
for _ in $(seq "$RUNS"); do
	one >>"$W/plain"
	one --tenant bench --volume a:/mnt/a:ro --volume b:/mnt/b >>"$W/vols"
done
p=$(median <"$W/plain"); v=$(median <"$W/vols")
ratio=$(awk -v a="$v" -v b="$p" 'BEGIN { printf "%.2f", a / b }')

key=e2b_00112233445566778899aabbccddeeff
echo "$key" >"$W/keys"
chmod 600 "$W/keys"
sbx-serve --listen 127.0.0.1:0 --api-key-file "$W/keys" --quiet --state-dir "$W/serve" 2>"$W/serve.log" &
SERVE_PID=$!
for _ in $(seq 200); do port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$W/serve.log"); [ -n "$port" ] && break; sleep 0.05; done
api() { curl -sS -X "$1" "http://127.0.0.1:$port$2" -H "X-API-Key: $key" -H 'Content-Type: application/json' "${@:3}"; }
api POST /volumes -d '{"name":"sa"}' >/dev/null
api POST /volumes -d '{"name":"sb"}' >/dev/null
sone() {   # BODY: the create's wall time in ms; the sandbox is deleted after
	local t0 t1 id
	t0=$(ms)
	id=$(api POST /sandboxes -d "$1" | jq -r .sandboxID)
	t1=$(ms)
	api DELETE "/sandboxes/$id" >/dev/null
	echo $((t1 - t0))
}
mounts='{"volumeMounts":[{"name":"sa","path":"/mnt/a","readOnly":true},{"name":"sb","path":"/mnt/b"}]}'
sone '{}' >/dev/null
: >"$W/splain"; : >"$W/svols"
for _ in $(seq "$RUNS"); do
	sone '{}' >>"$W/splain"
	sone "$mounts" >>"$W/svols"
done
sp=$(median <"$W/splain"); sv=$(median <"$W/svols")
sratio=$(awk -v a="$sv" -v b="$sp" 'BEGIN { printf "%.2f", a / b }')
{
	echo "# A create with two volumes against one without"
	echo
	echo "\`tests/bench/volumes.sh\` ($(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs," \
		"load $(cut -d' ' -f1 /proc/loadavg), $RUNS alternating rounds, medians)."
	echo
	echo "| create | ms (median) | ratio |"
	echo "| --- | --- | --- |"
	echo "| plain | $p | 1.00 |"
	echo "| \`--volume a:/mnt/a:ro --volume b:/mnt/b\` | $v | $ratio |"
	echo "| sbx-serve \`POST /sandboxes\` {} | $sp | 1.00 |"
	echo "| sbx-serve \`POST /sandboxes\` with two \`volumeMounts\` | $sv | $sratio |"
} | tee "$OUT"
