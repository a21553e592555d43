#!/usr/bin/env bash
# tests/bench/checkpoint.sh - issue 32's costs on the local backend:
#
#  - a checkpoint with 1 MB changed since the previous one, in a session
#    whose earlier turns wrote BIG MB (default 1024), against the same
#    checkpoint in a session that wrote nothing else (aim: <= 1.5x), and
#    the disk each added (aim: about 1 MB);
#  - a rewind against a create from the same snapshot (aim: <= 1.2x);
#  - the freeze window of that checkpoint against a snapshot's of the same
#    sandbox (freeze.sh's probe: the longest stop a process inside sees);
#  - a fork into FORKS (default 10) against FORKS creates from the same
#    snapshot (aim: <= 1.1x), twice: ten `sbx-create --fork S --at N` of
#    one checkpoint against ten session creates with --template of its
#    snapshot; and E2B's fork (POST /sandboxes/{id}/fork {count}) through
#    sbx-serve, its snapshot of the source included, against FORKS creates
#    through sbx-serve from one snapshot of the same sandbox.
#
# Rounds alternate between the two sides; medians of RUNS (default 5).
# Writes the table to stdout and OUT (default docs/bench/checkpoint.md).
# Needs root, redis-server, python3 at /usr/bin, curl, openssl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
export PATH="$BUILD/bin:$PATH"
RUNS=${RUNS:-5}
BIG=${BIG:-1024}
OUT=${OUT:-$top/docs/bench/checkpoint.md}
# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"

[ "$(id -u)" = 0 ] || { echo "checkpoint.sh: needs root" >&2; exit 1; }
W=$(mktemp -d /tmp/sbx-bench-ckpt.XXXXXX)
chmod 755 "$W"
spid=
cleanup() {
	set +e
	[ -z "$spid" ] || { kill "$spid"; wait "$spid"; } 2>/dev/null
	sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1
	rcli shutdown nosave >/dev/null 2>&1
	rm -rf --one-file-system "$W"
}
trap cleanup EXIT
bench_local_redis "$W"

median() { sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f", m }'; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'; }
in_s() { sbx-create --tenant bench --session "$1" | sbx-exec --raw --root -- sh -c "$2" >/dev/null; }

# The big session's earlier turns, then a first checkpoint of each side.
in_s big "mkdir -p /workspace/data && i=0 && while [ \$i -lt $BIG ]; do
	head -c 1048576 /dev/urandom >/workspace/data/f\$i; i=\$((i+1)); done"
in_s small 'mkdir -p /workspace/data'
sync
sbx-snap checkpoint --tenant bench --session big >/dev/null
sbx-snap checkpoint --tenant bench --session small >/dev/null

for ((i = 0; i < RUNS; i++)); do
	for s in small big; do
		in_s "$s" "head -c 1048576 /dev/urandom >/workspace/turn$i"
		t0=$EPOCHREALTIME
		out=$(sbx-snap checkpoint --tenant bench --session "$s")
		t1=$EPOCHREALTIME
		ms "$t0" "$t1" >>"$W/ck.$s"
		jq -r .checkpoint.size_bytes <<<"$out" >>"$W/size.$s"
	done
done

# The freeze window: a probe in the big session's sandbox sleeps 1 ms at a
# time and reports its longest stop; once alone (the noise), once across a
# checkpoint (1 MB changed), once across a snapshot.
PROBE='import time, sys
end = time.monotonic() + float(sys.argv[1]); last = time.monotonic(); gap = 0.0
while last < end:
    time.sleep(0.001); now = time.monotonic(); gap = max(gap, now - last); last = now
print("%.1f" % (gap * 1000))'
bid=$(sbx-create --tenant bench --session big | jq -r .sandbox.id)
probe() { sbx-exec --raw --id "$bid" -- /usr/bin/python3 -c "$PROBE" "$1"; }
for ((i = 0; i < RUNS; i++)); do
	probe 1.5 >>"$W/noise"
	in_s big "head -c 1048576 /dev/urandom >/workspace/probe$i"
	probe 4 >"$W/gap" &
	sleep 1
	sbx-snap checkpoint --tenant bench --session big >/dev/null
	wait
	cat "$W/gap" >>"$W/stop.ckpt"
	probe 4 >"$W/gap" &
	sleep 1
	snap1=$(sbx-snap --id "$bid" | jq -r .snapshot.id)
	wait
	cat "$W/gap" >>"$W/stop.snap"
	sbx-snap rm "$snap1" >/dev/null
done

# Rewind against a create from the same snapshot (each round: one of each).
snap=$(sbx-snap ls --tenant bench --session big | jq -rs '.[1].checkpoint.snapshot')
for ((i = 0; i < RUNS; i++)); do
	t0=$EPOCHREALTIME
	sbx-ctl rewind --tenant bench --session big --to 2 >/dev/null
	t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$W/rewind"
	t0=$EPOCHREALTIME
	id=$(sbx-create --template "$snap" | jq -r .sandbox.id)
	t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$W/create"
	sbx-ctl kill --id "$id" >/dev/null
done

# Fork into FORKS from one checkpoint (sbx-create --fork --at) against
# FORKS session creates from its snapshot (--template): each side binds
# FORKS new sessions; each round's sandboxes are killed after it, untimed.
FORKS=${FORKS:-10}
kill_listed() { while read -r id; do sbx-ctl kill --id "$id" >/dev/null; done <"$1"; }
for ((i = 0; i < RUNS; i++)); do
	t0=$EPOCHREALTIME
	for ((k = 0; k < FORKS; k++)); do
		sbx-create --tenant bench --session "fork$i-$k" --fork big --at 2 | jq -r .sandbox.id
	done >"$W/ids"
	t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$W/fork.cli"
	kill_listed "$W/ids"
	t0=$EPOCHREALTIME
	for ((k = 0; k < FORKS; k++)); do
		sbx-create --tenant bench --session "made$i-$k" --template "$snap" | jq -r .sandbox.id
	done >"$W/ids"
	t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$W/fork.cli.creates"
	kill_listed "$W/ids"
done

# E2B's fork through sbx-serve (over this same local backend): fork into
# FORKS (its snapshot of a source holding 10 MB included) against FORKS
# creates (POST /v2/sandboxes {templateID}) from one snapshot of it.
key=e2b_$(openssl rand -hex 16)
printf '%s\n' "$key" >"$W/keys"
sbx-serve --listen 127.0.0.1:0 --api-key-file "$W/keys" --quiet --state-dir "$W/serve" \
	2>"$W/serve.log" &
spid=$!
for _ in $(seq 200); do
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$W/serve.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { cat "$W/serve.log" >&2; exit 1; }
url=http://127.0.0.1:$port
api() { curl -sf -H "X-API-Key: $key" -H 'Content-Type: application/json' "$@"; }
kill_ids() { while read -r s; do api -X DELETE "$url/sandboxes/$s" >/dev/null || true; done; }
fsrc=$(api -X POST "$url/v2/sandboxes" -d '{"timeout":3600}' | jq -r .sandboxID)
sbx-exec --id "$fsrc" -- sh -c 'head -c 10000000 /dev/urandom >/workspace/ten-mb' >/dev/null
fsnap=$(api -X POST "$url/sandboxes/$fsrc/snapshots" -d '{}' | jq -r .snapshotID)
for ((i = 0; i < RUNS; i++)); do
	t0=$EPOCHREALTIME
	api -X POST "$url/sandboxes/$fsrc/fork" -d "{\"count\":$FORKS,\"timeout\":600}" >"$W/fork.json"
	t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$W/fork.serve"
	[ "$(jq '[.[] | select(.sandbox)] | length' "$W/fork.json")" = "$FORKS" ] ||
		{ echo "checkpoint.sh: a fork failed: $(cat "$W/fork.json")" >&2; exit 1; }
	jq -r '.[].sandbox.sandboxID' "$W/fork.json" | kill_ids
	t0=$EPOCHREALTIME
	for ((k = 0; k < FORKS; k++)); do
		api -X POST "$url/v2/sandboxes" -d "{\"templateID\":\"$fsnap\",\"timeout\":600}" | jq -r .sandboxID
	done >"$W/creates.ids"
	t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$W/fork.serve.creates"
	kill_ids <"$W/creates.ids"
done
api -X DELETE "$url/sandboxes/$fsrc" >/dev/null
kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
spid=

cs=$(median <"$W/ck.small") cb=$(median <"$W/ck.big")
ss=$(median <"$W/size.small") sb=$(median <"$W/size.big")
rw=$(median <"$W/rewind") cr=$(median <"$W/create")
fc=$(median <"$W/fork.cli") fcc=$(median <"$W/fork.cli.creates")
fsv=$(median <"$W/fork.serve") fsc=$(median <"$W/fork.serve.creates")
nz=$(median <"$W/noise") fk=$(median <"$W/stop.ckpt") fs=$(median <"$W/stop.snap")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
table="| what | this | baseline | ratio | aim |
| --- | ---: | ---: | ---: | ---: |
| checkpoint, 1 MB changed, after $BIG MB of earlier turns (ms) | $cb | $cs (same, no earlier turns) | $(ratio "$cb" "$cs") | <= 1.5 |
| disk the checkpoint added (bytes) | $sb | $ss (same, no earlier turns) | $(ratio "$sb" "$ss") | about 1 MB |
| rewind (ms) | $rw | $cr (create from the same snapshot) | $(ratio "$rw" "$cr") | <= 1.2 |
| fork into $FORKS, \`sbx-create --fork S --at N\` $FORKS times (ms) | $fc | $fcc ($FORKS session creates from the checkpoint's snapshot) | $(ratio "$fc" "$fcc") | <= 1.1 |
| fork into $FORKS, E2B's fork through sbx-serve, its snapshot of the source included (ms) | $fsv | $fsc ($FORKS creates through sbx-serve from one snapshot of it) | $(ratio "$fsv" "$fsc") | <= 1.1 |
| longest stop inside during a checkpoint (ms; noise alone $nz) | $fk | $fs (during a snapshot of the same sandbox) | $(ratio "$fk" "$fs") | about 1 |"
load=$(cut -d' ' -f1-3 /proc/loadavg)
df=$(df -T "$SBX_STATE_DIR" | awk 'NR == 2 { print $2 }')
mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
Generated by \`tests/bench/checkpoint.sh\` (\`BENCH=checkpoint make bench\`) on
$(date -u +%Y-%m-%dT%H:%MZ), kernel $(uname -r), $(nproc) CPUs, load average $load,
state dir on $df.  Medians of $RUNS rounds, the two sides alternating.  Each
checkpoint follows a turn that wrote one new 1 MB file; a checkpoint's disk
is the layer it added (\`size_bytes\`).  A rewind creates the sandbox, moves
the binding and deletes the old sandbox; its baseline is the create alone.
The stops are the longest a probe inside the sandbox saw across the call
(freeze.sh's); when the noise is as large, read them as below the noise.
A fork into $FORKS is timed from the first call to the last answer; the
CLI's forks are $FORKS \`sbx-create --fork\` runs of one checkpoint, each
binding a new session, against $FORKS session creates from its snapshot;
E2B's fork (sbx-serve over the same local backend) takes its own snapshot
of a source holding 10 MB, then makes $FORKS sandboxes of it, against
$FORKS creates through sbx-serve from one snapshot of that source: the
fork's sandboxes are made inside one request, while its baseline pays
sbx-serve's cost per request (a worker, the key's checks, the answer;
serve.md's create row) $FORKS times, so it is well below 1.

$table
EOF
printf '%s\n' "$table"
echo "# written to $OUT" >&2
