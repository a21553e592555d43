#!/usr/bin/env bats
# suite: local
# Hibernate for real (issue 33; docs/local.md, Hibernate): CRIU dumps a
# sandbox's processes and frees its memory, and brings them back.  Runs
# where `sbx-ctl caps` says hibernate: the check-vm guest (Debian 12's
# kernel and criu; tests/vm-run sets SBX_TEST_REQUIRE_HIBERNATE=1, so
# there it fails instead of skipping).  Elsewhere (CRIU 3.17 fails
# `criu check` on newer kernels) it skips with the reason.
#
# One sandbox goes through the file, test after test: a python3 process
# holding ~200 MB of computed data and a counter, serving both over HTTP
# from inside (127.0.0.1:8081).  Hibernated (memory released), resumed
# (same pid, counter on, data intact, the server answers), restored by an
# sbx-exec, and sbx-ctl and its criu killed -9 in the middle of a restore
# and of a dump.
load lib/helpers
load lib/serve
load lib/session
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	local why
	why=$(sbx-ctl caps | jq -r 'if .caps.hibernate then "" else (.unavailable.hibernate // "no reason") end')
	if [ -n "$why" ]; then
		[ "${SBX_TEST_REQUIRE_HIBERNATE:-0}" != 1 ] || { echo "hibernate unavailable: $why" >&2; return 1; }
		echo "$why" >"$SBX_TEST_DIR/skip"
	fi
}
teardown_file() { sbx_teardown_file; }
# A program a test ran in the background (and may have stopped) never
# outlives it, failed or not: a stopped one would hold the file's output.
teardown() { [ -z "${bg:-}" ] || { kill -CONT "$bg"; pkill -9 -P "$bg"; kill -9 "$bg"; } 2>/dev/null || true; }
setup() {
	[ ! -s "$SBX_TEST_DIR/skip" ] || skip "hibernate is unavailable here: $(cat "$SBX_TEST_DIR/skip")"
}

# The workload (tests/lib/hibernate-workload.py, also the bench's): 200
# MB of computed data and a counter, served on 127.0.0.1:8081; GET /
# answers "<pid> <count> <crc at start>", GET /crc recomputes the CRC.
WORKLOAD=$(cat "$BATS_TEST_DIRNAME/lib/hibernate-workload.py")

ID() { cat "$SBX_TEST_DIR/id"; }
# GET $1 from the workload, inside the sandbox (its loopback).
# Bounded: a network that drops packets (CRIU's lock left) is a failure.
ask() { sbx-exec --id "$(ID)" -- timeout 60 busybox wget -q -O - "http://127.0.0.1:8081$1" | jq -r .exec.stdout; }
state() { sbx-ls --id "$(ID)" | jq -r '.sandbox.state_word // .sandbox.state'; }
# The sandbox's memory cgroup (its init's), found while it runs.
CG() { cat "$SBX_TEST_DIR/cg"; }
# sbx-ctl hibernate / resume; a failure shows CRIU's error lines (its
# first one is not always the cause: a probe for iptables-save is one).
DIR() { echo "$SBX_STATE_DIR/local/sandboxes/$(ID)"; }
hib() {
	run --separate-stderr sbx-ctl hibernate --id "$(ID)"
	[ "$status" -eq 0 ] || fail "sbx-ctl hibernate: $stderr
$(grep -E 'Error|Warn|BUG' "$(DIR)/hibernate-dump.log" 2>/dev/null | tail -n 25)"
}
res() {
	run --separate-stderr sbx-ctl resume --id "$(ID)"
	[ "$status" -eq 0 ] || fail "sbx-ctl resume: $stderr
$(cat "$(DIR)/hibernate/restore-sbx.log" 2>/dev/null | tail -n 10)
$(grep -E 'Error|Warn|BUG' "$(DIR)/hibernate/restore.log" 2>/dev/null | tail -n 25)"
}
# Run "$@" in the background, wait until its criu runs, let it work a
# little, then kill -9 both (sbx-ctl and criu).  The caller's fd 9 (a
# file of the test's) must not reach criu: a restore killed midway leaves
# the tasks it forked holding what it held (local-hibernate.c, run()).
kill_midway() {
	local mark=$BATS_TEST_TMPDIR/caller-fd p i c held=0
	"$@" >/dev/null 2>&1 3>&- 9>"$mark" &
	p=$!
	for i in $(seq 1 400); do c=$(pgrep -x criu) && break; sleep 0.05; done
	for i in $c; do ls -l "/proc/$i/fd" 2>/dev/null | grep -qF "$mark" && held=$i; done
	sleep 0.5
	kill -9 "$p" $(pgrep -x criu) 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	[ -n "$c" ] || fail "no criu ran for: $*"
	[ "$held" = 0 ] || fail "criu (pid $held) holds its caller's fd 9"
}

# The cgroup.events of sandbox $1's work cgroup (its processes but the
# init's: what a pause freezes).
work_events() {
	local init
	init=$(jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$1/sandbox.json")
	echo "/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$init/cgroup")/work/cgroup.events"
}
@test "a python3 process with 200 MB of computed data and an HTTP server runs in a sandbox" {
	local id
	id=$(sbx_new_id)
	echo "$id" >"$SBX_TEST_DIR/id"
	run sbx-exec --id "$id" -- sh -c 'setsid python3 -c "$1" </dev/null >/tmp/w.err 2>&1 &' sh "$WORKLOAD"
	assert_success
	local i
	for i in $(seq 1 300); do
		[ "$(sbx-exec --id "$id" -- sh -c 'test -e /tmp/w.ready && echo y' | jq -r .exec.stdout)" = y ] && break
		sleep 1
	done
	run ask /
	assert_success
	read -r pid n crc <<<"$output"
	[ "$pid" -gt 1 ] && [ "$crc" -ge 0 ] || fail "workload: '$output' ($(sbx-exec --id "$id" -- cat /tmp/w.err | jq -r .exec.stdout))"
	local rec=$SBX_STATE_DIR/local/sandboxes/$id/sandbox.json
	echo "/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$(jq -r .init_pid "$rec")/cgroup")" >"$SBX_TEST_DIR/cg"
	local m
	m=$(cat "$(CG)/memory.current")
	[ "$m" -gt $((200 << 20)) ] || fail "memory.current $m: the data is not resident"
	echo "$output" >"$SBX_TEST_DIR/before"
}

# The figures (docs/bench/hibernate.md) are printed, never asserted: a
# plain pause beside a hibernation of the same sandbox.
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

@test "for comparison, a plain pause keeps the memory (the freezer reclaims nothing)" {
	local m0 m1 t0 r e
	m0=$(cat "$(CG)/memory.current")
	run sbx-ctl pause --id "$(ID)"
	assert_success
	m1=$(cat "$(CG)/memory.current")
	t0=$(date +%s%N)
	run sbx-ctl resume --id "$(ID)"
	r=$(ms_since "$t0")
	assert_success
	t0=$(date +%s%N)
	run ask /
	e=$(ms_since "$t0")
	assert_success
	echo "# pause: memory.current $m0 -> $m1; resume from pause ${r} ms, first exec ${e} ms" >&3
	[ "$m1" -gt $((m0 / 2)) ]
}

@test "hibernate: state hibernated, the sandbox's memory is released" {
	local m0 m1 a0 a1 t0 ms
	m0=$(cat "$(CG)/memory.current")
	a0=$(awk '/^MemAvailable:/ {print $2 * 1024}' /proc/meminfo)
	t0=$(date +%s%N)
	hib
	ms=$(ms_since "$t0")
	[ "$(state)" = hibernated ]
	m1=$(cat "$(CG)/memory.current")
	a1=$(awk '/^MemAvailable:/ {print $2 * 1024}' /proc/meminfo)
	local img
	img=$(du -sb "$SBX_STATE_DIR/local/sandboxes/$(ID)/hibernate" | cut -f1)
	echo "# hibernate: ${ms} ms; memory.current $m0 -> $m1 ($((m1 * 1000 / m0))/1000); MemAvailable $a0 -> $a1; images $img bytes" >&3
	echo "$m0 $m1 $ms $img" >"$SBX_TEST_DIR/hibernated"
	# Released: what stays is the overlay's page cache and the cgroup's own.
	[ "$m1" -lt $((m0 / 10)) ] || fail "memory.current $m0 -> $m1"
	# The images hold the data (200 MB), on disk, not in the cgroup.
	[ "$img" -gt $((200 << 20)) ]
}

@test "resume: the same pid goes on counting, its data intact, its server answering" {
	local t0 ms
	t0=$(date +%s%N)
	res
	ms=$(ms_since "$t0")
	[ "$(state)" = running ]
	local e
	t0=$(date +%s%N)
	run ask /
	e=$(ms_since "$t0")
	assert_success
	echo "# resume from hibernation: ${ms} ms, first exec ${e} ms" >&3
	read -r p0 n0 c0 <"$SBX_TEST_DIR/before"
	run ask /crc
	assert_success
	read -r p1 n1 c1 <<<"$output"
	[ "$p1" = "$p0" ] || fail "pid $p0 -> $p1"
	[ "$c1" = "$c0" ] || fail "the data changed: crc $c0 -> $c1"
	[ "$n1" -gt "$n0" ] || fail "counter $n0 -> $n1"
	sleep 1
	run ask /
	read -r _ n2 _ <<<"$output"
	[ "$n2" -gt "$n1" ] || fail "the counter stopped at $n1 ($n2)"
	echo "$p1 $n2 $c1" >"$SBX_TEST_DIR/before"
}

@test "a restore killed -9 midway: still hibernated or running, and the next resume brings the same process back" {
	hib
	kill_midway sbx-ctl resume --id "$(ID)"
	local st
	st=$(state)
	[ "$st" = hibernated ] || [ "$st" = running ] || fail "state after the killed restore: $st"
	res
	read -r p0 n0 c0 <"$SBX_TEST_DIR/before"
	run ask /crc
	read -r p1 n1 c1 <<<"$output"
	[ "$p1" = "$p0" ] && [ "$c1" = "$c0" ] && [ "$n1" -gt "$n0" ] || fail "'$p0 $n0 $c0' -> '$output' (state was $st)"
	echo "$output" >"$SBX_TEST_DIR/before"
}

@test "an sbx-exec restores a hibernated sandbox" {
	hib
	[ "$(state)" = hibernated ]
	run ask /
	assert_success
	read -r p0 n0 _ <"$SBX_TEST_DIR/before"
	read -r p1 n1 _ <<<"$output"
	[ "$p1" = "$p0" ] && [ "$n1" -gt "$n0" ] || fail "'$p0 $n0' -> '$output'"
	[ "$(state)" = running ]
}

@test "a dump killed -9 midway: the sandbox runs on, and the next hibernate and resume work" {
	kill_midway sbx-ctl hibernate --id "$(ID)"
	[ "$(state)" = running ]
	read -r p0 _ <"$SBX_TEST_DIR/before"
	# The counter goes on, read from the process's own /proc.
	run sbx-exec --id "$(ID)" -- sh -c 'cat /proc/$1/stat | cut -d" " -f3' sh "$p0"
	[ "$(jqo .exec.stdout)" != "" ] && [ "$(jqo .exec.stdout)" != T ] || fail "pid $p0: $output"
	hib
	res
	run ask /crc
	read -r p1 _ c1 <<<"$output"
	read -r _ _ c0 <"$SBX_TEST_DIR/before"
	[ "$p1" = "$p0" ] && [ "$c1" = "$c0" ] || fail "after the killed dump: '$output'"
}

# CRIU's network lock (an nftables table "CRIU-<init pid>" in the
# sandbox's netns that drops every packet) outlives a dump killed after it
# took it; the next command deletes it with the dump's leftovers
# (local_hibernate_tidy), so the sandbox's own loopback answers again.
@test "a dump killed -9 once it locked the network: the next command unlocks it, the server answers" {
	local init i
	init=$(jq -r .init_pid "$(DIR)/sandbox.json")
	sbx-ctl hibernate --id "$(ID)" >/dev/null 2>&1 3>&- &
	bg=$!
	for i in $(seq 1 2400); do
		nsenter -t "$init" -n nft list table inet "CRIU-$init" >/dev/null 2>&1 && break
		sleep 0.05
	done
	kill -9 "$bg" $(pgrep -x criu) 2>/dev/null || true
	wait "$bg" 2>/dev/null || true
	bg=
	nsenter -t "$init" -n nft list table inet "CRIU-$init" >/dev/null 2>&1 ||
		fail "the dump never locked the network (or was not killed in time)"
	[ -d "$(DIR)/hibernate.tmp" ]
	[ "$(state)" = running ]
	run ask /
	assert_success
	read -r p0 _ <"$SBX_TEST_DIR/before"
	read -r p1 _ <<<"$output"
	[ "$p1" = "$p0" ] || fail "after the killed dump: '$output'"
	run ! nsenter -t "$init" -n nft list table inet "CRIU-$init"
	[ ! -e "$(DIR)/hibernate.tmp" ]
}

@test "a sandbox running a detached process of sbx-proc: hibernate refused (69), it runs on" {
	local id
	id=$(sbx_new_id)
	sbx-proc start --id "$id" -- sleep 600 >/dev/null
	run --separate-stderr sbx-ctl hibernate --id "$id"
	[ "$status" -eq 69 ]
	[ "$(jqo .error.kind)" = unsupported ]
	[[ "$(jqo .error.message)" == *"detached process"* ]]
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.state)" = running ]
	sbx-ctl kill --id "$id" >/dev/null
}

# A refusal is known before the thaw: a paused sandbox the hibernate
# refuses (here a command runs in it: not in the init's tree) is never
# thawed, not even for a moment.  The watcher polls the frozen cgroup's
# cgroup.events (the kernel wakes a poller on every change of it).
@test "a paused sandbox whose hibernate is refused (a command runs in it) is never thawed" {
	local id ev i
	id=$(sbx_new_id)
	sbx-exec --id "$id" -- sleep 607 >/dev/null 2>&1 3>&- &
	bg=$!
	for i in $(seq 1 600); do pgrep -f '^sleep 607$' >/dev/null && break; sleep 0.1; done
	sbx-ctl pause --id "$id" >/dev/null
	ev=$(work_events "$id")
	grep -qx 'frozen 1' "$ev"
	python3 -c '
import select, sys
f = open(sys.argv[1]); f.read()
p = select.poll(); p.register(f, select.POLLPRI | select.POLLERR)
open(sys.argv[2], "w").close()
if p.poll(300000): open(sys.argv[3], "w").write(open(sys.argv[1]).read())
' "$ev" "$BATS_TEST_TMPDIR/armed" "$BATS_TEST_TMPDIR/changed" 3>&- &
	local w=$!
	for i in $(seq 1 600); do [ -e "$BATS_TEST_TMPDIR/armed" ] && break; sleep 0.1; done
	run --separate-stderr sbx-ctl hibernate --id "$id"
	sleep 1
	kill "$w" 2>/dev/null || true
	[ "$status" -eq 69 ] || fail "sbx-ctl hibernate: $status $output $stderr"
	[[ "$(jqo .error.message)" == *"or a command"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/changed" ] || fail "thawed during the refused hibernate: $(cat "$BATS_TEST_TMPDIR/changed")"
	[ "$(state_of "$id")" = paused ]
	sbx-ctl kill --id "$id" >/dev/null
}

# E2B's pause through sbx-serve keeps memory (serve_pause, docs/serve.md):
# where the backend can hibernate, as here, the sandbox is hibernated, not
# frozen; E2B's API still calls it paused, and a connect brings the same
# process back.
@test "sbx-serve: E2B's pause hibernates where the backend can, else freezes; connect brings the processes back" {
	serve_start hib
	run api POST /v2/sandboxes -d '{}'
	assert_equal "$(status)" 201
	local id p0
	id=$(body | jq -r .sandboxID)
	run sbx-exec --id "$id" -- sh -c 'setsid sleep 3600 </dev/null >/dev/null 2>&1 & echo $!'
	assert_success
	p0=$(jqo .exec.stdout)
	[ "$p0" -gt 1 ]
	run api POST "/sandboxes/$id/pause" -d '{}'
	assert_equal "$(status)" 204
	[ "$(sbx-ls --id "$id" | jq -r '.sandbox.state_word // .sandbox.state')" = hibernated ]
	run api GET "/sandboxes/$id"
	assert_equal "$(body | jq -r .state)" paused
	run api POST "/v2/sandboxes/$id/connect" -d '{"timeout":60}'
	assert_equal "$(status)" 201
	run sbx-exec --id "$id" -- sh -c 'kill -0 "$1" && echo alive' sh "$p0"
	assert_success
	[ "$(jqo .exec.stdout)" = alive ]
	# A sandbox the hibernate refuses (it runs a detached process, here
	# one of sbx-proc) is frozen instead: paused, its process kept.
	local dp
	dp=$(sbx-proc start --id "$id" -- sleep 600 | jq -r .proc.pid)
	run api POST "/sandboxes/$id/pause" -d '{}'
	assert_equal "$(status)" 204
	[ "$(sbx-ls --id "$id" | jq -r '.sandbox.state_word // .sandbox.state')" = paused ]
	run api POST "/v2/sandboxes/$id/connect" -d '{"timeout":60}'
	assert_equal "$(status)" 201
	[ "$(sbx-proc ls --id "$id" | jq -r --argjson p "$dp" '.procs[] | select(.pid == $p) | .running')" = true ]
	api DELETE "/sandboxes/$id" >/dev/null
	serve_stop hib
}

# The idle timer's hibernate (--on-timeout hibernate) and the paused tier
# (hibernate_paused): the timer inside the sandbox pauses it, and the
# reaper's next run hibernates it (sbx-reap(1), HIBERNATION).
# A bound session sandbox with a detached sleep (setsid: in the init's
# tree) whose pid is the proof that the same process comes back.
idle_session() { # TENANT TIMEOUT-FLAGS...: prints "ID PID"
	local t=$1 id p
	shift
	id=$(sbx-create --tenant "$t" --session s1 "$@" | jq -r .sandbox.id)
	p=$(sbx-exec --id "$id" -- sh -c 'setsid sleep 3600 </dev/null >/dev/null 2>&1 & echo $!' |
		jq -r .exec.stdout)
	echo "$id $p"
}
state_of() { sbx-ls --id "$1" | jq -r '.sandbox.state_word // .sandbox.state'; }
wait_state() { # ID STATE
	local i
	for i in $(seq 1 150); do [ "$(state_of "$1")" = "$2" ] && return 0; sleep 0.2; done
	fail "sandbox $1 is $(state_of "$1"), not $2"
}
alive_in() { sbx-exec --id "$1" -- sh -c 'kill -0 "$1" && echo alive' sh "$2" | jq -r .exec.stdout; }

# A dump of a sandbox whose idle time is up: the idle timer (sbx-init)
# would freeze the tree again a second after the thaw, and CRIU would
# wait forever for a task it cannot stop (stop 44's landing check-vm hung
# so in the next test, under load).  The dump holds it awake (local.c).
@test "the idle timer never freezes a tree that a hibernate thawed to dump; the dump ends" {
	local id p st=0
	read -r id p < <(idle_session hhold --timeout 1s --on-timeout pause)
	wait_state "$id" paused
	local ev
	ev=$(work_events "$id")
	grep -qx 'frozen 1' "$ev"
	SBX_STOP=local:hibernate-thawed sbx-ctl hibernate --id "$id" >"$BATS_TEST_TMPDIR/h.out" 2>&1 3>&- &
	bg=$!
	# 2 minutes: a loaded guest is slow to get there.
	wait_stopped "$bg" 2400 ||
		fail "sbx-ctl hibernate did not stop at local:hibernate-thawed: $(cat "$BATS_TEST_TMPDIR/h.out")"
	grep -qx 'frozen 0' "$ev"
	# The timer looks at least once a second; its time is long up.
	sleep 3
	grep -qx 'frozen 0' "$ev" || fail "the idle timer froze the sandbox again during the dump"
	kill -CONT "$bg"
	wait "$bg" || st=$?
	bg=
	[ "$st" -eq 0 ] || fail "sbx-ctl hibernate: $(cat "$BATS_TEST_TMPDIR/h.out")"
	[ "$(state_of "$id")" = hibernated ]
	[ "$(alive_in "$id" "$p")" = alive ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "--on-timeout hibernate: the idle timer pauses, the next sbx-reap hibernates (why idle), an sbx-exec restores the same process" {
	local id p
	read -r id p < <(idle_session hidle --timeout 2s --on-timeout hibernate)
	[ "$p" -gt 1 ]
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.on_timeout)" = hibernate ]
	wait_state "$id" paused
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.paused_by)" = idle ]
	run --separate-stderr sbx-reap --tenant hidle --dry-run
	assert_success
	[ "$(jqo -c '[.reap.would_hibernate[] | [.id, .why]]')" = "[[\"$id\",\"idle\"]]" ]
	[ "$(state_of "$id")" = paused ]
	run --separate-stderr sbx-reap --tenant hidle
	assert_success
	[ "$(jqo -c '[.reap.hibernated[] | [.id, .why, .state]]')" = "[[\"$id\",\"idle\",\"hibernated\"]]" ]
	[ "$(state_of "$id")" = hibernated ]
	[ "$(sbx-events --tenant hidle | jq -r 'select(.type == "hibernated") | .why')" = idle ]
	# The next run has nothing left to do.
	run sbx-reap --tenant hidle
	[ "$(jqo '.reap.hibernated // [] | length')" = 0 ]
	[ "$(alive_in "$id" "$p")" = alive ]
	[ "$(state_of "$id")" = running ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "hibernate_paused: a paused session sandbox past the tier is hibernated by sbx-reap (why retention); before it, kept frozen" {
	local c=$BATS_TEST_TMPDIR/config.json pr id p
	pr=$(jq -r '.default_profile // "default"' "$SBX_CONFIG")
	# A tier long enough for the first reap to come before it in a
	# loaded guest; then the clock is waited past.
	jq --arg p "$pr" '.profiles[$p] += {"hibernate_paused": "15s"}' "$SBX_CONFIG" >"$c"
	export SBX_CONFIG=$c
	read -r id p < <(idle_session htier)
	sbx-ctl pause --id "$id" >/dev/null
	run sbx-reap --tenant htier
	assert_success
	[ "$(jqo '.reap.hibernated // [] | length')" = 0 ]
	[ "$(state_of "$id")" = paused ]
	# The tier's clock: sbx-ctl pause's time in Redis (docs/design.md).
	local at
	at=$(rcli hget 'sbx:{htier}:paused' s1)
	[ "$at" -gt 0 ]
	while [ "$(date +%s)" -le $((at + 15)) ]; do sleep 0.5; done
	run sbx-reap --tenant htier
	assert_success
	[ "$(jqo -c '[.reap.hibernated[] | [.id, .why]]')" = "[[\"$id\",\"retention\"]]" ]
	[ "$(jqo -r '.reap.hibernated[0].hibernate_at')" != null ]
	[ "$(state_of "$id")" = hibernated ]
	run sbx-ctl resume --id "$id"
	assert_success
	[ "$(alive_in "$id" "$p")" = alive ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a command that wakes the sandbox between the reaper's look and its hibernate: skipped (not-paused), nothing dumped" {
	local id p st=0
	read -r id p < <(idle_session hrace --timeout 2s --on-timeout hibernate)
	wait_state "$id" paused
	SBX_STOP=reap:before-hibernate sbx-reap --tenant hrace >"$BATS_TEST_TMPDIR/a.out" 2>&1 3>&- &
	bg=$!
	wait_stopped "$bg" 2400 ||
		fail "sbx-reap did not stop at reap:before-hibernate: $(cat "$BATS_TEST_TMPDIR/a.out")"
	# The command resumes it on use while the reaper is stopped; its
	# timer is long first, so that it is not paused again before the
	# reaper goes on, however slow this guest is.
	sbx-ctl timeout --id "$id" --seconds 3600 --on-timeout hibernate >/dev/null
	[ "$(alive_in "$id" "$p")" = alive ]
	kill -CONT "$bg"
	wait "$bg" || st=$?
	bg=
	[ "$st" -eq 0 ] || fail "sbx-reap: $(cat "$BATS_TEST_TMPDIR/a.out")"
	[ "$(jq -r --arg id "$id" '.reap.skipped[] | select(.id == $id) | .reason' <"$BATS_TEST_TMPDIR/a.out")" = not-paused ]
	[ "$(jq '.reap.hibernated | length' <"$BATS_TEST_TMPDIR/a.out")" = 0 ]
	[ ! -e "$SBX_STATE_DIR/local/sandboxes/$id/hibernate" ]
	[ "$(state_of "$id")" = running ]
	[ "$(alive_in "$id" "$p")" = alive ]
	sbx-ctl kill --id "$id" >/dev/null
}
