#!/usr/bin/env bats
# suite: local docker
# sbx-proc: detached processes.  A process started before a pause still
# runs after the resume, is listed, takes stdin and is killed (E2B's
# semantics); its output is kept and followed; bad handles are not_found;
# uid 1000 cannot act on root's processes.  Real sandboxes, real
# processes, a real kill -9 of the supervisor.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	SB=$(sbx_new --label suite=proc | jq -r .sandbox.id)
	export SB
}
teardown_file() { sbx_teardown_file; }

# Start a process in $SB and print its pid.
start() { sbx-proc start --id "$SB" "$@" | jq -r .proc.pid; }
# The listing's entry of pid $1 as compact JSON.
entry() { sbx-proc ls --id "$SB" | jq -c --argjson p "$1" '.procs[] | select(.pid == $p)'; }
# Follow pid $1's stdout until it holds $2 (the process answers; no clock).
wait_out() {
	local pid=$1 want=$2 i
	for i in $(seq 1 200); do
		sbx-proc output --id "$SB" --pid "$pid" | jq -r .output.stdout | grep -qF -- "$want" && return 0
		sleep 0.05
	done
	echo "pid $pid never printed '$want'" >&2
	return 1
}

@test "the backend says it has detached processes" {
	run sbx-ctl caps
	assert_success
	[ "$(jqo .caps.process)" = "true" ]
}

@test "a process runs detached, is listed, and its output is followed to its exit status" {
	run sbx-proc start --id "$SB" --tag count -- sh -c 'echo one; echo err >&2; sleep 1; echo two; exit 7'
	assert_success
	[ "$(jqo .proc.running)" = "true" ]
	[ "$(jqo .proc.tag)" = "count" ]
	local pid
	pid=$(jqo .proc.pid)
	[ "$pid" -gt 1 ]
	run entry "$pid"
	[[ "$output" == *'"argv":["sh","-c",'* ]]
	run sbx-proc output --id "$SB" --tag count --follow
	assert_success
	[ "$(jqo .output.stdout)" = "$(printf 'one\ntwo')" ]
	[ "$(jqo .output.stderr)" = "err" ]
	[ "$(jqo .output.running)" = "false" ]
	[ "$(jqo .output.exit_code)" = "7" ]
	# --raw: the bytes, and the process's status as ours.
	run --separate-stderr sbx-proc output --id "$SB" --pid "$pid" --raw
	[ "$status" -eq 7 ]
	[ "$output" = "$(printf 'one\ntwo')" ]
	[ "$stderr" = "err" ]
}

@test "a background process survives pause and resume: listed, takes stdin, is killed" {
	local pid
	pid=$(start --stdin -- sh -c 'while read l; do echo "got $l"; done; echo eof')
	run sbx-ctl pause --id "$SB"
	assert_success
	[ "$(sbx-ls --id "$SB" | jq -r .sandbox.state)" = paused ]
	run entry "$pid"
	[ "$(jqo .running)" = "true" ]
	run sbx-ctl resume --id "$SB"
	assert_success
	run sbx-proc input --id "$SB" --pid "$pid" --text $'after\n'
	assert_success
	wait_out "$pid" "got after"
	# Input to a paused sandbox resumes it (as exec does) and is read.
	sbx-ctl pause --id "$SB" >/dev/null
	run sbx-proc input --id "$SB" --pid "$pid" --text $'paused\n'
	assert_success
	wait_out "$pid" "got paused"
	run sbx-proc kill --id "$SB" --pid "$pid"
	assert_success
	run sbx-proc output --id "$SB" --pid "$pid" --follow
	[ "$(jqo .output.running)" = "false" ]
	[ "$(jqo .output.signal)" = "9" ]
	[ "$(jqo .output.exit_code)" = "-1" ]
	[ "$(jqo .output.stdout)" = "$(printf 'got after\ngot paused')" ]
}

# Three followers of one ticking process while the sandbox is paused and
# resumed five times.  A follower polls every 200 ms, so each pause (1 s)
# is met by every follower's execs: on docker they used to die with
# conflict or "(exit 126)", and an exec starting as the freezer froze the
# container wedged it (pause, resume and inspect hung: docs/docker.md).
@test "pause and resume while followers stream a process's output: both return, every stream goes on" {
	local pid d=$BATS_TEST_TMPDIR c f n i
	pid=$(start -- sh -c 'i=0; while :; do echo $i; i=$((i+1)); sleep 0.05; done')
	for f in 1 2 3; do
		timeout 300 sbx-proc output --id "$SB" --pid "$pid" --follow --raw >"$d/f.$f" 2>"$d/e.$f" &
	done
	wait_out "$pid" 5
	for c in 1 2 3 4 5; do
		run timeout 120 sbx-ctl pause --id "$SB"
		assert_success
		[ "$(jqo .sandbox.state)" = paused ]
		sleep 1
		run timeout 120 sbx-ctl resume --id "$SB"
		assert_success
	done
	# Past the last resume every follower sees new lines (no clock: it
	# waits for a line that only comes after).
	n=$(sbx-proc output --id "$SB" --pid "$pid" | jq -r .output.stdout | grep . | tail -1)
	for f in 1 2 3; do
		for i in $(seq 1 400); do
			[ "$(tail -1 "$d/f.$f")" -gt "$n" ] 2>/dev/null && break
			sleep 0.05
		done
		[ "$(tail -1 "$d/f.$f")" -gt "$n" ] || { echo "follower $f stopped at $(tail -1 "$d/f.$f"): $(cat "$d/e.$f")"; false; }
	done
	run sbx-proc kill --id "$SB" --pid "$pid"
	assert_success
	wait
	for f in 1 2 3; do
		[ ! -s "$d/e.$f" ] || { echo "follower $f: $(cat "$d/e.$f")"; false; }
		# Every line, in order, none lost across the pauses.
		awk 'NR == 1 { p = $1; next } $1 != p + 1 { print "gap after " p ": " $1; bad = 1 } { p = $1 }
		     END { exit bad }' "$d/f.$f"
	done
}

@test "closing stdin gives the process EOF; a process without --stdin takes no input" {
	local pid
	pid=$(start --stdin -- sh -c 'cat; echo done')
	run sbx-proc input --id "$SB" --pid "$pid" --text abc --close
	assert_success
	run sbx-proc output --id "$SB" --pid "$pid" --follow
	[ "$(jqo .output.stdout)" = "abcdone" ]
	[ "$(jqo .output.exit_code)" = "0" ]
	run --separate-stderr sbx-proc input --id "$SB" --pid "$pid" --text more
	[ "$status" -eq 75 ]
	[ "$(jqo .error.kind)" = conflict ]
	pid=$(start -- sleep 100)
	run --separate-stderr sbx-proc input --id "$SB" --pid "$pid" --text x
	[ "$status" -eq 75 ]
	[[ "$(jqo .error.message)" == *"without stdin"* ]]
	sbx-proc kill --id "$SB" --pid "$pid" >/dev/null
}

@test "closing stdin as the process ends loses no exit status (stop 42's CI race)" {
	# The close and the process's end land together, round after round.  On
	# docker the supervisor's wait, interrupted by the close's signal, once
	# read 138 for a cat that ended 0 (a rare race this does not force: the
	# fix takes the signal away).  Each round's status must be the
	# process's own.
	local pid r
	for r in $(seq 1 6); do
		pid=$(start --stdin -- sh -c 'cat >/dev/null; exit 3')
		run sbx-proc input --id "$SB" --pid "$pid" --close
		assert_success
		run sbx-proc output --id "$SB" --pid "$pid" --follow
		assert_success
		[ "$(jqo .output.exit_code)" = 3 ] || { echo "round $r: $output"; false; }
		[ "$(jqo .output.signal)" = 0 ] || [ "$(jqo .output.signal)" = null ]
	done
	# On docker a holder process keeps the stdin FIFO open between inputs:
	# the close kills it, and so does the process's end without a close.
	# None outlives its process.
	if [ "$SBX_TEST_BACKEND" != local ]; then
		pid=$(start --stdin -- true)
		run sbx-proc output --id "$SB" --pid "$pid" --follow
		assert_success
		# Every ended record's holder (its pid in "hold") is gone.
		run sbx-exec --root --id "$SB" -- sh -c 'for d in /run/sbx-procs/p-*; do
			[ -s "$d/hold" ] && [ -e "$d/exit" ] && kill -0 "$(cat "$d/hold")" 2>/dev/null &&
				echo "$d: holder $(cat "$d/hold") alive"; done; true'
		assert_success
		[ -z "$(jqo .exec.stdout)" ] || { echo "a holder outlived its process: $(jqo .exec.stdout)"; false; }
	fi
}

@test "unknown pids and tags are not_found; an exited process can be signalled harmlessly" {
	run --separate-stderr sbx-proc kill --id "$SB" --pid 99999
	[ "$status" -eq 66 ]
	[ "$(jqo .error.kind)" = not_found ]
	run --separate-stderr sbx-proc output --id "$SB" --tag no-such-tag
	[ "$status" -eq 66 ]
	run --separate-stderr sbx-proc input --id "$SB" --pid 99998 --close
	[ "$status" -eq 66 ]
	run --separate-stderr sbx-proc ls --id "$(missing_id)"
	[ "$status" -eq 66 ]
	local pid
	pid=$(start -- true)
	sbx-proc output --id "$SB" --pid "$pid" --follow >/dev/null
	run sbx-proc kill --id "$SB" --pid "$pid"
	assert_success
	run --separate-stderr sbx-proc kill --id "$SB"
	[ "$status" -eq 64 ]
}

@test "uid 1000 cannot signal root's process or write to its stdin; root can act on uid 1000's" {
	local rpid upid
	rpid=$(start --root --stdin -- sh -c 'id -u; sleep 100')
	[ "$(entry "$rpid" | jq -r .as_root)" = "true" ]
	run --separate-stderr sbx-proc kill --id "$SB" --pid "$rpid"
	[ "$status" -eq 65 ]
	[[ "$(jqo .error.message)" == *"not permitted"* ]]
	run --separate-stderr sbx-proc input --id "$SB" --pid "$rpid" --text x
	[ "$status" -eq 65 ]
	[ "$(entry "$rpid" | jq -r .running)" = "true" ]
	run sbx-proc kill --id "$SB" --pid "$rpid" --root --signal TERM
	assert_success
	run sbx-proc output --id "$SB" --pid "$rpid" --follow
	[ "$(jqo .output.stdout)" = "0" ]
	[ "$(jqo .output.signal)" = "15" ]
	upid=$(start -- sleep 100)
	run sbx-proc kill --id "$SB" --pid "$upid" --root
	assert_success
}

@test "a missing cwd starts nothing; a missing command exits 127 with the reason" {
	local before
	before=$(sbx-proc ls --id "$SB" | jq '.procs | length')
	run --separate-stderr sbx-proc start --id "$SB" --cwd /no/such/dir -- true
	[ "$status" -eq 65 ]
	[ "$(jqo .error.kind)" = invalid_request ]
	[ "$(sbx-proc ls --id "$SB" | jq '.procs | length')" = "$before" ]
	local pid
	pid=$(start -- no-such-command-here)
	run sbx-proc output --id "$SB" --pid "$pid" --follow
	[ "$(jqo .output.exit_code)" = "127" ]
	[[ "$(jqo .output.stderr)" == *"no-such-command-here"* ]]
}

@test "a tag names one running process at a time" {
	local pid
	pid=$(start --tag web -- sleep 100)
	run --separate-stderr sbx-proc start --id "$SB" --tag web -- sleep 100
	[ "$status" -eq 75 ]
	run sbx-proc kill --id "$SB" --tag web
	assert_success
	sbx-proc output --id "$SB" --pid "$pid" --follow >/dev/null
	run sbx-proc start --id "$SB" --tag web -- true
	assert_success
}

@test "--timeout kills the process and everything it started" {
	local pid
	pid=$(start --timeout 1s -- sh -c 'sleep 300 & echo $! >/tmp/bg.pid; sleep 300')
	run sbx-proc output --id "$SB" --pid "$pid" --follow
	[ "$(jqo .output.timed_out)" = "true" ]
	[ "$(jqo .output.signal)" = "9" ]
	run sbx-exec --id "$SB" -- sh -c 'kill -0 $(cat /tmp/bg.pid) 2>/dev/null && echo alive || echo gone'
	[ "$(jqo .exec.stdout)" = "gone" ]
}

@test "output from an offset, and --new sees only what comes after" {
	local pid
	pid=$(start --stdin -- sh -c 'echo 0123456789; while read l; do echo "$l"; done')
	wait_out "$pid" 0123456789
	run sbx-proc output --id "$SB" --pid "$pid" --stdout-offset 4
	[ "$(jqo .output.stdout)" = "456789" ]
	[ "$(jqo .output.stdout_offset)" = "4" ]
	run sbx-proc output --id "$SB" --pid "$pid" --new
	[ "$(jqo .output.stdout)" = "" ]
	[ "$(jqo .output.stdout_offset)" = "11" ]
	sbx-proc input --id "$SB" --pid "$pid" --text $'later\n' --close >/dev/null
	run sbx-proc output --id "$SB" --pid "$pid" --follow --stdout-offset 11
	[ "$(jqo .output.stdout)" = "later" ]
}

@test "output is bounded: the oldest is dropped, offsets stay true" {
	local_only "the bound of the record files"
	local pid
	# 20 MiB through an 8 MiB bound.
	pid=$(start -- sh -c 'head -c 20971520 /dev/zero | tr "\0" a; echo; echo tail-end')
	run sbx-proc output --id "$SB" --pid "$pid" --follow --new --output-cap 64
	[ "$(jqo .output.exit_code)" = "0" ]
	run sbx-proc ls --id "$SB"
	local e
	e=$(jqo --argjson p "$pid" '.procs[] | select(.pid == $p)')
	[ "$(jq .stdout_end <<<"$e")" = "20971530" ]
	[ "$(jq .stdout_start <<<"$e")" -gt 0 ]
	# What is kept is at most the bound, on disk too.
	local kept
	kept=$(du -k "$SBX_STATE_DIR/local/sandboxes/$SB/procs/$pid/out" | cut -f1)
	[ "$kept" -le 8300 ]
	run sbx-proc output --id "$SB" --pid "$pid" --stdout-offset 0 --output-cap 4
	[ "$(jqo .output.stdout_offset)" = "$(jq .stdout_start <<<"$e")" ]
	[ "$(jqo .output.stdout)" = "aaaa" ]
	run sbx-proc output --id "$SB" --pid "$pid" --stdout-offset 20971521
	[ "$(jqo .output.stdout)" = "tail-end" ]
}

@test "env values stay secret: names only in listings, nothing in the supervisor's /proc" {
	local pid sup
	PROC_SECRET=s3cr3t-proc-value pid=$(PROC_SECRET=s3cr3t-proc-value start --env PROC_SECRET --env MODE=fast -- sh -c 'echo "$PROC_SECRET"; sleep 100')
	wait_out "$pid" s3cr3t-proc-value
	run entry "$pid"
	[[ "$output" == *'"env":["PROC_SECRET","MODE"]'* ]]
	[[ "$output" != *s3cr3t* ]]
	# (A bare "! cmd" never fails a bats test: each check is an if.)
	if ! is_docker; then
		if grep -q s3cr3t "$SBX_STATE_DIR/local/sandboxes/$SB/procs/$pid/proc.json"; then
			echo "the secret is in proc.json" >&2
			return 1
		fi
		for sup in $(pgrep -x sbx-procd); do
			[ -z "$(tr -d '\0' <"/proc/$sup/environ")" ] || { echo "sbx-procd $sup has an environment" >&2; return 1; }
			if grep -q s3cr3t "/proc/$sup/cmdline"; then
				echo "the secret is in the cmdline of $sup" >&2
				return 1
			fi
		done
	fi
	sbx-proc kill --id "$SB" --pid "$pid" >/dev/null
}

@test "a supervisor killed -9: its process is still listed, and reads as exited once gone" {
	local_only "sbx-procd"
	local pid sup
	pid=$(start -- sleep 300)
	sup=$(awk '$1 == "sup_pid" {print $2}' "$SBX_STATE_DIR/local/sandboxes/$SB/procs/$pid/state")
	kill -9 "$sup"
	run entry "$pid"
	[ "$(jqo .running)" = "true" ]
	run sbx-proc kill --id "$SB" --pid "$pid"
	assert_success
	local i
	for i in $(seq 1 100); do
		[ "$(entry "$pid" | jq -r .running)" = "false" ] && break
		sleep 0.05
	done
	run entry "$pid"
	[ "$(jqo .running)" = "false" ]
	[ "$(jqo .exit_code)" = "-1" ]
}

@test "removing the sandbox ends its processes and their supervisors" {
	local_only "sbx-procd"
	local sb pid
	sb=$(sbx_new_id)
	pid=$(sbx-proc start --id "$sb" -- sleep 300 | jq -r .proc.pid)
	local sup
	sup=$(awk '$1 == "sup_pid" {print $2}' "$SBX_STATE_DIR/local/sandboxes/$sb/procs/$pid/state")
	kill -0 "$sup"
	run sbx-ctl kill --id "$sb"
	assert_success
	! kill -0 "$sup" 2>/dev/null || grep -q zombie "/proc/$sup/status"
}

@test "a start killed -9 leaves no process, or a supervised one that is listed" {
	local_only "the record dir on the host"
	local before d pid
	before=$(sbx-proc ls --id "$SB" | jq '[.procs[] | select(.running)] | length')
	run env SBX_FAULT=local:proc-recorded sbx-proc start --id "$SB" --tag never -- sleep 300
	[ "$status" -eq 137 ]
	[ "$(sbx-proc ls --id "$SB" | jq '[.procs[] | select(.running)] | length')" = "$before" ]
	run --separate-stderr sbx-proc kill --id "$SB" --tag never
	[ "$status" -eq 66 ]
	# What it left (its record dir, no process) goes at a later start once old.
	d=$(ls -d "$SBX_STATE_DIR/local/sandboxes/$SB/procs/.new-"*)
	[ -d "$d" ]
	touch -d '2 minutes ago' "$d"
	start -- true >/dev/null
	[ ! -e "$d" ]
	# Killed after the fork: the supervisor finishes the start on its own.
	run env SBX_FAULT=local:proc-forked sbx-proc start --id "$SB" --tag crashed -- sh -c 'echo survived; sleep 300'
	[ "$status" -eq 137 ]
	local i
	for i in $(seq 1 100); do
		pid=$(sbx-proc ls --id "$SB" | jq -r '.procs[] | select(.tag == "crashed") | .pid')
		[ -n "$pid" ] && break
		sleep 0.05
	done
	[ -n "$pid" ]
	[ "$(entry "$pid" | jq -r .running)" = "true" ]
	wait_out "$pid" survived
	run sbx-proc kill --id "$SB" --tag crashed
	assert_success
}

# Bounded both ways: never more than 129 records of exited processes
# (past 128 a start prunes), and a tagged start (which reads every record
# for the tag anyway) prunes down to the 64 latest.
@test "a sandbox keeps the records of at least its 64 latest exited processes, at most 129" {
	local_only "the bound on kept records"
	local sb i first
	sb=$(sbx_new_id)
	first=$(sbx-proc start --id "$sb" -- true | jq -r .proc.pid)
	for i in $(seq 1 66); do
		sbx-proc start --id "$sb" -- true >/dev/null
	done
	# 67 records, under the pruning bound: all kept
	run sbx-proc ls --id "$sb"
	[ "$(jqo '[.procs[] | select(.running | not)] | length')" -ge 66 ]
	for i in $(seq 1 80); do
		sbx-proc start --id "$sb" -- true >/dev/null
	done
	run sbx-proc ls --id "$sb"
	[ "$(jqo '[.procs[] | select(.running | not)] | length')" -le 129 ]
	[ "$(jqo '[.procs[] | select(.running | not)] | length')" -ge 64 ]
	sbx-proc start --id "$sb" --tag last -- sleep 300 >/dev/null
	run sbx-proc ls --id "$sb"
	[ "$(jqo '[.procs[] | select(.running | not)] | length')" -le 65 ]
	[ "$(jqo '[.procs[] | select(.running | not)] | length')" -ge 60 ]
	[ "$(jqo '[.procs[] | select(.tag == "last")] | length')" = 1 ]
	run --separate-stderr sbx-proc output --id "$sb" --pid "$first"
	[ "$status" -eq 66 ]
	sbx-ctl kill --id "$sb" >/dev/null
}

# Pruned records are recycled, not deleted (a new inode on a journal-less
# ext4 steps over every recently deleted one): the next start takes a
# spare folder, emptied of the old output, and a start killed after
# taking one leaves a young .new-* dir that goes once old.
@test "a pruned record's folder is reused by the next start, with none of its old output" {
	local_only "the record dirs on the host"
	local sb i procs spares pid ino
	sb=$(sbx_new_id)
	procs="$SBX_STATE_DIR/local/sandboxes/$sb/procs"
	for i in $(seq 1 130); do
		sbx-proc start --id "$sb" -- sh -c "echo old-out-$i; echo old-err-$i >&2" >/dev/null
	done
	run compgen -G "$procs/.free-*"
	assert_success
	spares=$(stat -c %i "$procs"/.free-*)
	[ "$(printf '%s\n' "$spares" | wc -l)" -le 64 ]
	pid=$(sbx-proc start --id "$sb" -- sh -c 'echo new-err >&2' | jq -r .proc.pid)
	ino=$(stat -c %i "$procs/$pid")
	printf '%s\n' "$spares" | grep -qx "$ino"
	for i in $(seq 1 100); do
		[ "$(sbx-proc ls --id "$sb" | jq -r --argjson p "$pid" '.procs[] | select(.pid == $p) | .running')" = false ] && break
		sleep 0.05
	done
	run sbx-proc output --id "$sb" --pid "$pid"
	assert_success
	[ "$(jqo .output.stdout)" = "" ]
	[ "$(jqo .output.stderr)" = "new-err" ]
	[ "$(jqo .output.exit_code)" = 0 ]
	# a quiet stream has no file; the state is whole beside its previous one
	[ ! -e "$procs/$pid/out" ]
	grep -q '^err_start ' "$procs/$pid/state"
	[ -e "$procs/$pid/.state" ]
	# killed after it took a spare: its .new-* dir is young, then goes
	run env SBX_FAULT=local:proc-recorded sbx-proc start --id "$sb" -- true
	[ "$status" -eq 137 ]
	local d
	d=$(ls -d "$procs/.new-"*)
	sbx-proc start --id "$sb" -- true >/dev/null
	[ -d "$d" ]
	touch -d '2 minutes ago' "$d"
	sbx-proc start --id "$sb" -- true >/dev/null
	[ ! -e "$d" ]
	sbx-ctl kill --id "$sb" >/dev/null
}
