#!/usr/bin/env bats
# suite: local
# The local backend's fork server (sbx-forkd, docs/local.md "The fork
# server"): a start through it is the same process as one through the old
# path (SBX_LOCAL_FORKD=0), it is in the sandbox's cgroups without a
# move, a kill -9 of the server falls back, and the server lives and dies
# with its sandbox.  Real sandboxes, real processes, real kill -9.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	SB=$(sbx_new --label suite=forkd | jq -r .sandbox.id)
	export SB
}
teardown_file() { sbx_teardown_file; }

rec() { echo "$SBX_STATE_DIR/local/sandboxes/$1/sandbox.json"; }
# The host pid of sandbox $1's fork server (none: nothing printed).
forkd_pid() {
	local work p
	work=$(jq -r .cgroups.v2 "$(rec "$1")")/work
	for p in $(cat "$work/cgroup.procs"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sbx-forkd ] && echo "$p"
	done
	return 0
}
# The same exec through the fork server and through the old path: both
# result objects, duration dropped, must be equal.
same() {
	local a b
	a=$(sbx-exec --id "$SB" "$@" | jq -c '.exec | del(.duration_ms)')
	b=$(SBX_LOCAL_FORKD=0 sbx-exec --id "$SB" "$@" | jq -c '.exec | del(.duration_ms)')
	[ "$a" = "$b" ] || { echo "fork server: $a" >&2; echo "old path:    $b" >&2; return 1; }
	printf '%s\n' "$a"
}

@test "an exec starts the fork server once; later execs go through it" {
	run sbx-exec --id "$SB" -- true
	assert_success
	p=$(forkd_pid "$SB")
	[ -n "$p" ]
	[ "$(echo "$p" | wc -l)" -eq 1 ]
	run sbx-exec --id "$SB" -- true
	assert_success
	[ "$(forkd_pid "$SB")" = "$p" ]
	# It runs as the sandbox's root, with no_new_privs, in its namespaces.
	[ "$(awk '/^Uid:/ {print $2}' "/proc/$p/status")" = 0 ]
	[ "$(awk '/^NoNewPrivs:/ {print $2}' "/proc/$p/status")" = 1 ]
	init=$(jq -r .init_pid "$(rec "$SB")")
	for ns in mnt pid net uts ipc cgroup; do
		[ "$(readlink "/proc/$p/ns/$ns")" = "$(readlink "/proc/$init/ns/$ns")" ] || { echo "ns $ns differs" >&2; return 1; }
	done
	# Not dumpable: not even the sandbox's root may follow or open its
	# fds (the listening socket, a start's handler's fds).
	run sbx-exec --id "$SB" --root -- sh -c 'n=0; for p in /proc/[0-9]*; do [ "$(cat $p/comm)" = sbx-forkd ] || continue; n=$((n+1)); for f in $p/fd/*; do readlink $f && echo "followed $f"; cat $f </dev/null >/dev/null 2>&1 && echo "opened $f"; done; done; echo "servers $n"'
	assert_success
	[ "$(jqo .exec.stdout)" = "servers 2" ]
}

@test "concurrent first execs start one server and all succeed" {
	S4=$(sbx_new_id --label suite=forkd)
	for i in 1 2 3 4 5 6 7 8; do
		sbx-exec --id "$S4" -- echo "n$i" >"$BATS_TEST_TMPDIR/c$i" &
	done
	wait
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(jq -r .exec.stdout "$BATS_TEST_TMPDIR/c$i")" = "n$i" ] || { cat "$BATS_TEST_TMPDIR/c$i" >&2; return 1; }
	done
	[ "$(forkd_pid "$S4" | wc -l)" -eq 1 ]
	run sbx-ctl kill --id "$S4"
	assert_success
}

@test "exit status, signals, uid, cwd and environment are the old path's" {
	run same -- sh -c 'exit 7'
	assert_success
	[ "$(jqo .exit_code)" = 7 ]
	run same -- sh -c 'kill -TERM $$'
	assert_success
	[ "$(jqo .signal)" = 15 ]
	run same -- sh -c 'id; umask; ulimit -n'
	assert_success
	run same --root -- sh -c 'id; grep -E "^(Cap|NoNewPrivs|Seccomp)" /proc/self/status'
	assert_success
	[[ "$(jqo .stdout)" == *"Seccomp:	2"* ]]
	run same --cwd /tmp --env A=b -- sh -c 'pwd; env | sort'
	assert_success
	[[ "$(jqo .stdout)" == "/tmp"*"A=b"* ]]
	run sbx-exec --id "$SB" --cwd /nonexistent -- true
	[ "$status" -eq 65 ]
	a=$output
	run env SBX_LOCAL_FORKD=0 sbx-exec --id "$SB" --cwd /nonexistent -- true
	[ "$status" -eq 65 ]
	[ "$output" = "$a" ]
	run same -- no-such-command
	assert_success
	[ "$(jqo .exit_code)" = 127 ]
	# Its own session, and no fd but stdio.
	run same -- sh -c 'ls /proc/self/fd | sort -n | tr "\n" " "; ps -o sid= -p $$ >/dev/null 2>&1; test "$(cut -d" " -f6 /proc/self/stat)" = $$ || echo not-leader'
	assert_success
}

@test "stdin reaches the command through the fork server as through the old path" {
	a=$(printf 'hello\n' | sbx-exec --id "$SB" --raw -- cat)
	b=$(printf 'hello\n' | SBX_LOCAL_FORKD=0 sbx-exec --id "$SB" --raw -- cat)
	[ "$a" = hello ]
	[ "$a" = "$b" ]
}

@test "what it forks is in the sandbox's cgroups, v1 and v2" {
	run sbx-exec --id "$SB" -- cat /proc/self/cgroup
	assert_success
	[ -n "$(forkd_pid "$SB")" ]
	# From the host: the process, held by sleep, in every group of the record.
	sbx-exec --id "$SB" -- sleep 30 >/dev/null &
	bg=$!
	pid=
	for _ in $(seq 100); do
		pid=$(for p in $(cat "$(jq -r .cgroups.v2 "$(rec "$SB")")/work/cgroup.procs"); do [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ] && echo "$p"; done | head -1)
		[ -n "$pid" ] && break
		sleep 0.05
	done
	[ -n "$pid" ]
	for k in memory pids cpu devices; do
		dir=$(jq -r ".cgroups.$k // empty" "$(rec "$SB")")
		[ -z "$dir" ] && continue
		grep -qx "$pid" "$dir/cgroup.procs" || { echo "$pid not in $dir" >&2; return 1; }
	done
	kill "$bg" 2>/dev/null || true
	kill -9 "$pid"
	wait "$bg" || true
	# A timed exec is born in its own group below work.
	run sbx-exec --id "$SB" --timeout 5s -- cat /proc/self/cgroup
	assert_success
	[[ "$(jqo .exec.stdout)" == *"0::/work/x-"* ]]
}

@test "kill -9 of the fork server: the next exec still works, and a new server takes over" {
	run sbx-exec --id "$SB" -- true
	p=$(forkd_pid "$SB")
	[ -n "$p" ]
	kill -9 "$p"
	for _ in $(seq 100); do [ -z "$(forkd_pid "$SB")" ] && break; sleep 0.05; done
	run sbx-exec --id "$SB" -- echo after
	assert_success
	[ "$(jqo .exec.stdout)" = after ]
	q=$(forkd_pid "$SB")
	[ -n "$q" ]
	[ "$q" != "$p" ]
	# The old path alone while the server is gone (forced): works too.
	kill -9 "$q"
	run env SBX_LOCAL_FORKD=0 sbx-exec --id "$SB" -- echo old
	assert_success
	[ "$(jqo .exec.stdout)" = old ]
	[ -z "$(forkd_pid "$SB")" ]
}

@test "a kill -9 of the fork server during an exec ends it as exited, status lost" {
	run sbx-exec --id "$SB" -- true
	p=$(forkd_pid "$SB")
	[ -n "$p" ]
	sbx-exec --id "$SB" -- sh -c 'sleep 1; echo done' >"$BATS_TEST_TMPDIR/o" &
	bg=$!
	sleep 0.3
	# The start's handler (a child of the server) and the server.
	for c in $(cat "/proc/$p/task/$p/children"); do kill -9 "$c"; done
	kill -9 "$p"
	wait "$bg"
	[ "$(jq -r .exec.stdout "$BATS_TEST_TMPDIR/o")" = done ]
	[ "$(jq -r .exec.exit_code "$BATS_TEST_TMPDIR/o")" = -1 ]
}

@test "detached processes start through the fork server, supervised as before" {
	run sbx-proc start --id "$SB" -- sh -c 'echo out; exit 5'
	assert_success
	pid=$(jqo .proc.pid)
	for _ in $(seq 100); do
		[ "$(sbx-proc ls --id "$SB" | jq -r ".procs[] | select(.pid == $pid) | .running")" = false ] && break
		sleep 0.05
	done
	run sbx-proc output --id "$SB" --pid "$pid"
	assert_success
	[ "$(jqo .output.stdout)" = out ]
	[ "$(jqo .output.exit_code)" = 5 ]
	# Killed through the sandbox's kill: signal recorded as for the old path.
	run sbx-proc start --id "$SB" -- sleep 30
	pid=$(jqo .proc.pid)
	run sbx-proc kill --id "$SB" --pid "$pid" --signal TERM
	assert_success
	for _ in $(seq 100); do
		[ "$(sbx-proc ls --id "$SB" | jq -r ".procs[] | select(.pid == $pid) | .running")" = false ] && break
		sleep 0.05
	done
	[ "$(sbx-proc ls --id "$SB" | jq -r ".procs[] | select(.pid == $pid) | .signal")" = 15 ]
	# A cwd that does not exist leaves no process and no record.
	run sbx-proc start --id "$SB" --cwd /nonexistent -- true
	assert_failure
	[ -n "$(forkd_pid "$SB")" ]
}

# A detached start's supervisor is launched while the server forks and
# reads the server's reply itself (docs/local.md "The fork server"): a
# kill -9 of it before that read leaves no process (the server kills
# what it forked when the connection closes unadopted), no record, and
# the next start works.
@test "a supervisor killed -9 before it reads the fork server's reply leaves no process and no record" {
	run sbx-exec --id "$SB" -- true
	[ -n "$(forkd_pid "$SB")" ]
	procs="$SBX_STATE_DIR/local/sandboxes/$SB/procs"
	run --separate-stderr env SBX_FAULT=procd:before-reply sbx-proc start --id "$SB" --tag early -- sleep 3071
	assert_failure
	[[ "$stderr" == *"supervisor did not start"* ]] || { echo "$stderr" >&2; return 1; }
	for _ in $(seq 100); do pgrep -f 'sleep 3071' >/dev/null || break; sleep 0.05; done
	run ! pgrep -f 'sleep 3071'
	[ "$(sbx-proc ls --id "$SB" | jq '[.procs[] | select(.tag == "early")] | length')" = 0 ]
	run ! compgen -G "$procs/.new-*"
	# The tag is free and the path works.
	run sbx-proc start --id "$SB" --tag early -- sh -c 'echo again'
	assert_success
	pid=$(jqo .proc.pid)
	for _ in $(seq 100); do
		[ "$(sbx-proc ls --id "$SB" | jq -r ".procs[] | select(.pid == $pid) | .running")" = false ] && break
		sleep 0.05
	done
	run sbx-proc output --id "$SB" --pid "$pid"
	[ "$(jqo .output.stdout)" = again ]
	[ "$(jqo .output.exit_code)" = 0 ]
}

# A start the server refuses before any fork (here: the timed process's
# own cgroup removed while the start is stopped just before it sends, so
# the server's clone3 into it fails) takes the old path with a second
# supervisor; that fails the same way (its group is gone), and the start
# reports the old path's failed step and leaves nothing behind.
@test "a start the fork server refuses takes the old path, and its failure leaves nothing" {
	run sbx-exec --id "$SB" -- true
	[ -n "$(forkd_pid "$SB")" ]
	procs="$SBX_STATE_DIR/local/sandboxes/$SB/procs"
	work=$(jq -r .cgroups.v2 "$(rec "$SB")")/work
	SBX_STOP=local:proc-before-send sbx-proc start --id "$SB" --tag refused --timeout 60s -- sleep 3072 \
		>"$BATS_TEST_TMPDIR/o" 2>"$BATS_TEST_TMPDIR/e" &
	bg=$!
	for _ in $(seq 200); do [ "$(awk '{print $3}' "/proc/$bg/stat" 2>/dev/null)" = T ] && break; sleep 0.05; done
	[ "$(awk '{print $3}' "/proc/$bg/stat")" = T ]
	x=$(ls -d "$work/x-$bg-p"*)
	rmdir "$x"
	kill -CONT "$bg"
	rc=0
	wait "$bg" || rc=$?
	[ "$rc" -ne 0 ]
	grep -q 'step 1)' "$BATS_TEST_TMPDIR/e" || { cat "$BATS_TEST_TMPDIR/e" >&2; return 1; }
	run ! pgrep -f 'sleep 3072'
	[ "$(sbx-proc ls --id "$SB" | jq '[.procs[] | select(.tag == "refused")] | length')" = 0 ]
	run ! compgen -G "$procs/.new-*"
	run sbx-proc start --id "$SB" --tag refused --timeout 60s -- true
	assert_success
}

@test "the fork server is gone with its sandbox: kill, and a reap" {
	S2=$(sbx_new_id --label suite=forkd)
	run sbx-exec --id "$S2" -- true
	p=$(forkd_pid "$S2")
	[ -n "$p" ]
	run sbx-ctl kill --id "$S2"
	assert_success
	for _ in $(seq 100); do [ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] || break; sleep 0.05; done
	[ ! -d "/proc/$p" ] || [ "$(awk '{print $3}' "/proc/$p/stat")" = Z ]
	# A reap deletes a sandbox whose session binding is gone: its server too.
	S3=$(sbx-create --tenant fk --session s1 | jq -er .sandbox.id)
	rcli DEL "sbx:{fk}:sess:s1:binding" >/dev/null
	rcli SREM "sbx:{fk}:bound" "$S3" >/dev/null
	run sbx-exec --id "$S3" -- true
	p=$(forkd_pid "$S3")
	[ -n "$p" ]
	run sbx-reap --tenant fk --grace 0
	assert_success
	[[ "$(jqo '[.reap.deleted[]?.id] | join(" ")')" == *"$S3"* ]] || { echo "$output" >&2; return 1; }
	for _ in $(seq 100); do [ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] || break; sleep 0.05; done
	[ ! -d "/proc/$p" ] || [ "$(awk '{print $3}' "/proc/$p/stat")" = Z ]
}

@test "the server's socket is not in the sandbox's view" {
	run sbx-exec --id "$SB" -- true
	sock="$SBX_STATE_DIR/local/sandboxes/$SB/forkd.sock"
	[ -S "$sock" ]
	run sbx-exec --id "$SB" --root -- sh -c "test -e '$sock' && echo visible; test -e '$SBX_STATE_DIR/local/sandboxes' && echo state-visible; echo checked"
	assert_success
	[ "$(jqo .exec.stdout)" = checked ]
}

@test "a pause freezes the server with work; an exec after resume goes through it" {
	run sbx-exec --id "$SB" -- true
	p=$(forkd_pid "$SB")
	[ -n "$p" ]
	work=$(jq -r .cgroups.v2 "$(rec "$SB")")/work
	run sbx-ctl pause --id "$SB"
	assert_success
	grep -qx "frozen 1" "$work/cgroup.events"
	grep -qx "$p" "$work/cgroup.procs"
	run sbx-ctl resume --id "$SB"
	assert_success
	run sbx-exec --id "$SB" -- echo back
	assert_success
	[ "$(jqo .exec.stdout)" = back ]
	[ "$(forkd_pid "$SB")" = "$p" ]
}

@test "a start too big for the server's wire takes the old path" {
	big=$(head -c 120000 /dev/zero | tr '\0' a)
	run sbx-exec --id "$SB" -- sh -c 'echo ${#1}' x "$big"
	assert_success
	[ "$(jqo .exec.stdout)" = 120000 ]
}
