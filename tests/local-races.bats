#!/usr/bin/env bats
# Races of the local backend, each forced at the exact step where it used
# to bite (SBX_STOP=point stops the program there with SIGSTOP; the test
# changes the world, then sends SIGCONT), and then run loose many times.
#
#  - create vs image delete: a create must never mount layers that a
#    concurrent `sbx-snap rm` / `sbx-tpl rm` deletes.  Either the create
#    wins (the rm is refused, 75) or the rm wins (the create fails with
#    invalid_request, nothing is left).
#  - a dead init whose pid goes to another process: file operations and
#    exec must say `terminal`, and never act on that other process.
#
# Real sandboxes, needs root.  The pid tests recycle a pid on purpose
# through /proc/sys/kernel/ns_last_pid.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	export ROOTFS_DIR="$SBX_TEST_DIR/rootfs"
	"$SBX_TOP/tests/lib/rootfs.sh" --dir "$ROOTFS_DIR"
	sbx-tpl import bb --dir "$ROOTFS_DIR" >/dev/null
	export BASE="$SBX_TEST_DIR/base.json"
	sbx-create --template bb >"$BASE"
	sbx-exec --raw sh -c 'echo from-snapshot >/workspace/marker' <"$BASE"
}
teardown_file() { sbx_teardown_file; }

teardown() {
	[ -z "${FOREIGN:-}" ] || kill -9 "$FOREIGN" 2>/dev/null || true
	[ -z "${STOPPED:-}" ] || kill -9 "$STOPPED" 2>/dev/null || true
}

# A fresh snapshot of the base sandbox (its /workspace/marker inside).
new_snap() { sbx-snap <"$BASE" | jq -r .snapshot.id; }
init_of() { jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$1/sandbox.json"; }
proc_state() { awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
# Wait (bounded) until process $1 is stopped by SBX_STOP.
wait_stopped() {
	local i
	for i in $(seq 1 400); do
		[ "$(proc_state "$1")" = T ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.025
	done
	return 1
}
# Kill sandbox $1's init and wait until its pid is free (reaped).
kill_init() {
	local pid i
	pid=$(init_of "$1")
	kill -9 "$pid"
	for i in $(seq 1 600); do
		[ -e "/proc/$pid" ] || return 0
		sleep 0.025
	done
	return 1
}
# start_at PID DIR: start a process chrooted into DIR under pid PID (the
# kernel gives out ns_last_pid + 1 next; another process may take it
# first, then try again).  Sets FOREIGN.
start_at() {
	local want=$1 dir=$2 i got
	for i in $(seq 1 500); do
		echo $((want - 1)) >/proc/sys/kernel/ns_last_pid
		perl -e 'chroot($ARGV[0]) or die; chdir "/"; sleep 1000' "$dir" \
			</dev/null >/dev/null 2>&1 3>&- &
		got=$!
		if [ "$got" -eq "$want" ]; then
			FOREIGN=$got
			# Until perl has chrooted, the pid's root is the host's.
			for i in $(seq 1 400); do
				[ "$(readlink "/proc/$got/root")" = "$dir" ] && return 0
				sleep 0.01
			done
			return 1
		fi
		kill -9 "$got" 2>/dev/null || true
		wait "$got" 2>/dev/null || true
	done
	return 1
}
# A root that is neither the host's nor a sandbox's, with a file a
# sandbox never has.
foreign_root() {
	FAKE="$BATS_TEST_TMPDIR/fake"
	mkdir -p "$FAKE/workspace" "$FAKE/proc" "$FAKE/sys" "$FAKE/dev"
	echo foreign >"$FAKE/workspace/marker"
}

@test "create stopped before its record: the rm wins and the create fails cleanly" {
	local s out rc
	s=$(new_snap)
	out="$BATS_TEST_TMPDIR/create"
	SBX_STOP=local:before-record sbx-create --template "$s" --label race=before \
		>"$out" 2>/dev/null 3>&- &
	STOPPED=$!
	wait_stopped "$STOPPED"
	run sbx-snap rm "$s"
	assert_success
	[ "$(jqo .snapshot.deleted)" = true ]
	kill -CONT "$STOPPED"
	rc=0
	wait "$STOPPED" || rc=$?
	STOPPED=
	echo "create rc=$rc: $(cat "$out")"
	[ "$rc" -eq 65 ]
	[ "$(jq -r .error.kind "$out")" = invalid_request ]
	run sbx-ls --all --label race=before
	[ -z "$output" ]
}

@test "create stopped after its record: the rm is refused (75) and the sandbox has its layers" {
	local s out rc id
	s=$(new_snap)
	out="$BATS_TEST_TMPDIR/create"
	SBX_STOP=local:recorded sbx-create --template "$s" >"$out" 2>/dev/null 3>&- &
	STOPPED=$!
	wait_stopped "$STOPPED"
	run --separate-stderr sbx-snap rm "$s"
	[ "$status" -eq 75 ]
	[ "$(jqo .error.kind)" = conflict ]
	kill -CONT "$STOPPED"
	rc=0
	wait "$STOPPED" || rc=$?
	STOPPED=
	[ "$rc" -eq 0 ]
	run sbx-exec --raw cat /workspace/marker <"$out"
	assert_success
	assert_output from-snapshot
	sbx-ctl kill <"$out" >/dev/null
	run sbx-snap rm "$s"
	assert_success
}

@test "create from a snapshot vs rm of it, 30 loose rounds: one wins, cleanly, every time" {
	local i s d dir rc_c rc_r id kind
	for i in $(seq 1 30); do
		s=$(new_snap)
		dir="$BATS_TEST_TMPDIR/r$i"
		mkdir "$dir"
		( rc=0; sbx-create --template "$s" --label round="$i" >"$dir/create" 2>/dev/null || rc=$?
		  echo $rc >"$dir/create.rc" ) 3>&- &
		# The rm starts 0..9 ms later, so the rounds sweep the create's
		# first steps.
		( sleep "0.00$((i % 10))"; rc=0; sbx-snap rm "$s" >"$dir/rm" 2>/dev/null || rc=$?
		  echo $rc >"$dir/rm.rc" ) 3>&- &
		wait
		rc_c=$(cat "$dir/create.rc") rc_r=$(cat "$dir/rm.rc")
		echo "round $i: create $rc_c, rm $rc_r"
		if [ "$rc_c" -eq 0 ]; then
			[ "$rc_r" -eq 75 ]
			run sbx-exec --raw cat /workspace/marker <"$dir/create"
			assert_success
			assert_output from-snapshot
			sbx-ctl kill <"$dir/create" >/dev/null
			run sbx-snap rm "$s"
			assert_success
		else
			kind=$(jq -r .error.kind "$dir/create")
			[ "$kind" = invalid_request ] || [ "$kind" = not_found ]
			[ "$rc_r" -eq 0 ]
			run sbx-ls --all --label round="$i"
			[ -z "$output" ]
		fi
	done
}

@test "a sandbox whose init was killed is terminal for every file operation and exec" {
	local id src
	id=$(sbx-create | jq -r .sandbox.id)
	kill_init "$id"
	src="$BATS_TEST_TMPDIR/f"
	echo x >"$src"
	for op in "cat /etc/hostname" "ls /" "stat /" "mkdir /workspace/d" "rm /workspace/x" \
		  "mv /workspace/a /workspace/b" "put $src /workspace/f" \
		  "get /etc/hostname $BATS_TEST_TMPDIR/got"; do
		# shellcheck disable=SC2086
		run --separate-stderr sbx-fs --id "$id" $op
		[ "$(jqo .error.kind)" = terminal ] || { echo "sbx-fs $op: $output"; false; }
	done
	run --separate-stderr sbx-exec --id "$id" -- true
	[ "$(jqo .error.kind)" = terminal ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "init dies and its pid is reused during sbx-fs: terminal, the new process's root untouched" {
	local id pid out rc
	foreign_root
	for op in cat put; do
		id=$(sbx-create | jq -r .sandbox.id)
		pid=$(init_of "$id")
		out="$BATS_TEST_TMPDIR/fs-$op"
		echo mine >"$BATS_TEST_TMPDIR/mine"
		case $op in
		cat) SBX_STOP=local:init-pidfd sbx-fs --id "$id" cat /workspace/marker \
			>"$out" 2>/dev/null 3>&- & ;;
		put) SBX_STOP=local:init-pidfd sbx-fs --id "$id" --root put \
			"$BATS_TEST_TMPDIR/mine" /workspace/planted >"$out" 2>/dev/null 3>&- & ;;
		esac
		STOPPED=$!
		wait_stopped "$STOPPED"
		kill_init "$id"
		start_at "$pid" "$FAKE"
		kill -CONT "$STOPPED"
		rc=0
		wait "$STOPPED" || rc=$?
		STOPPED=
		cat "$out"
		[ "$rc" -ne 0 ]
		[ "$(jq -r .error.kind "$out")" = terminal ]
		run ! grep -q foreign "$out"
		[ ! -e "$FAKE/workspace/planted" ]
		kill -9 "$FOREIGN"
		FOREIGN=
		sbx-ctl kill --id "$id" >/dev/null
	done
}

@test "init dies and its pid is reused during sbx-exec: terminal, nothing runs beside the new process" {
	local id pid out rc
	foreign_root
	id=$(sbx-create | jq -r .sandbox.id)
	pid=$(init_of "$id")
	out="$BATS_TEST_TMPDIR/exec"
	SBX_STOP=local:init-pidfd sbx-exec --id "$id" --root -- sh -c 'echo ran >/workspace/ran' \
		>"$out" 2>/dev/null 3>&- &
	STOPPED=$!
	wait_stopped "$STOPPED"
	kill_init "$id"
	start_at "$pid" "$FAKE"
	kill -CONT "$STOPPED"
	rc=0
	wait "$STOPPED" || rc=$?
	STOPPED=
	cat "$out"
	[ "$(jq -r .error.kind "$out")" = terminal ]
	[ ! -e "$FAKE/workspace/ran" ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "the init killed at random moments between calls: every call works or says terminal" {
	local round id pid i kind
	for round in $(seq 1 5); do
		id=$(sbx-create | jq -r .sandbox.id)
		pid=$(init_of "$id")
		dir="$BATS_TEST_TMPDIR/k$round"
		mkdir "$dir"
		( for i in $(seq 1 25); do
			sbx-fs --id "$id" cat /etc/passwd >"$dir/fs$i" 2>/dev/null
			sbx-exec --id "$id" -- cat /etc/passwd >"$dir/ex$i" 2>/dev/null
		  done ) 3>&- &
		sleep "0.$((round * 15))"
		kill -9 "$pid"
		wait
		for f in "$dir"/*; do
			kind=$(jq -r '.error.kind // "ok"' "$f")
			case $kind in
			# Read in the sandbox, or (exec) killed with it mid-run.
			ok) grep -q 'user:x:1000' "$f" || [ "$(jq -r .exec.signal "$f")" = 9 ] ||
				{ echo "$f: $(cat "$f")"; false; } ;;
			terminal) ;;
			*) echo "$f: $(cat "$f")"; false ;;
			esac
		done
		sbx-ctl kill --id "$id" >/dev/null
	done
}

@test "init dies and its pid is reused during sbx-ctl timeout: the new process gets no SIGHUP" {
	local id pid out
	foreign_root
	id=$(sbx-create | jq -r .sandbox.id)
	pid=$(init_of "$id")
	out="$BATS_TEST_TMPDIR/timeout"
	SBX_STOP=local:timeout-signal sbx-ctl timeout --id "$id" --seconds 300 \
		>"$out" 2>/dev/null 3>&- &
	STOPPED=$!
	wait_stopped "$STOPPED"
	kill_init "$id"
	start_at "$pid" "$FAKE"
	kill -CONT "$STOPPED"
	wait "$STOPPED" || true
	STOPPED=
	# perl dies of a SIGHUP it does not handle: it must still be there.
	kill -0 "$FOREIGN"
	[ "$(proc_state "$FOREIGN")" = S ]
	kill -9 "$FOREIGN"
	FOREIGN=
	sbx-ctl kill --id "$id" >/dev/null
}

@test "an exec's cleanup never takes a concurrent timed exec's fresh cgroup" {
	local id out rc
	id=$(sbx-create | jq -r .sandbox.id)
	out="$BATS_TEST_TMPDIR/timed"
	# Stopped right after it made its own cgroup, before its command joins.
	SBX_STOP=local:exec-cgroup sbx-exec --id "$id" --timeout 30s -- echo timed \
		>"$out" 2>/dev/null 3>&- &
	STOPPED=$!
	wait_stopped "$STOPPED"
	# Another exec ends meanwhile and sweeps the empty exec cgroups.
	run sbx-exec --id "$id" -- true
	assert_success
	kill -CONT "$STOPPED"
	rc=0
	wait "$STOPPED" || rc=$?
	STOPPED=
	cat "$out"
	[ "$rc" -eq 0 ]
	[ "$(jq -r .exec.stdout "$out")" = timed ]
	sbx-ctl kill --id "$id" >/dev/null
}
