#!/usr/bin/env bats
# The local backend's sandbox lifecycle: create, list, pause/resume with
# memory kept, the idle timer, kill (idempotent), dead inits, crashes
# during create, network isolation.  Real sandboxes (limits: limits.bats).

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

new_sb() { sbx-create "$@" | jq -r .sandbox.id; }
state_of() { sbx-ls --id "$1" 2>/dev/null | jq -r .sandbox.state; }
# Wait (bounded) until sandbox $1 is in state $2; the assertion is the state,
# the bound only keeps a broken build from hanging the suite.
wait_state() {
	local i
	for i in $(seq 1 200); do
		[ "$(state_of "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# Nothing of sandbox $1 is left on the host.
assert_no_trace() {
	local id=$1
	[ ! -e "$SBX_STATE_DIR/local/sandboxes/$id" ]
	run ls -d /sys/fs/cgroup/*/sbx/"$id" /sys/fs/cgroup/*/"$id"
	[ "$status" -ne 0 ]
	run ! grep -q "$id" /proc/mounts
	! grep -qs "$id" /proc/[0-9]*/mountinfo
}

# (create, list and filter on every backend: lifecycle.bats)
@test "create: the local id format, the host template, the record on disk carries the labels" {
	run sbx-create --label team=blue --label purpose=t1
	assert_success
	local id
	id=$(jqo .sandbox.id)
	[[ "$id" =~ ^sb-[0-9a-f]{12}$ ]]
	[ "$(jqo .sandbox.template)" = "host" ]
	# The record on disk carries the metadata.
	[ "$(jq -r .metadata.team "$SBX_STATE_DIR/local/sandboxes/$id/sandbox.json")" = "blue" ]
}

@test "pause freezes the processes and keeps their memory; resume continues" {
	local id c1 c2 c3
	id=$(new_sb)
	# The counter lives in the shell's memory; the file only shows it.  It
	# is written whole (temp file + rename): a freeze can land between a
	# truncate and a write, and an empty read is not a count.
	sbx-exec --id "$id" -- sh -c \
		'i=0; while :; do i=$((i+1)); echo $i > /workspace/c.t; mv /workspace/c.t /workspace/c; sleep 0.05; done >/dev/null 2>&1 &' >/dev/null
	local f="$SBX_STATE_DIR/local/sandboxes/$id/upper/workspace/c"
	for _ in $(seq 1 100); do [ "$(cat "$f" 2>/dev/null || echo 0)" -ge 5 ] && break; sleep 0.05; done
	run sbx-ctl pause --id "$id"
	assert_success
	[ "$(jqo .sandbox.state)" = "paused" ]
	c1=$(cat "$f")
	sleep 0.5
	c2=$(cat "$f")
	[ "$c1" = "$c2" ]                    # frozen: no progress at all
	[ "$c1" -ge 5 ]
	run sbx-ctl resume --id "$id"
	[ "$(jqo .sandbox.state)" = "running" ]
	for _ in $(seq 1 100); do [ "$(cat "$f")" -gt "$c1" ] && break; sleep 0.05; done
	c3=$(cat "$f")
	[ "$c3" -gt "$c1" ]                  # counts on from where it stopped ...
	[ "$c3" -lt $((c1 + 100)) ]           # ... not from a fresh start elsewhere
	# The same process, not a new one: one sh whose parent is the init
	# (the loop's own children are briefly named sh between fork and exec,
	# and a plain count of sh saw them; their parent is the loop).
	run sbx-exec --id "$id" -- pgrep -c -x -P 1 sh
	[ "$(jqo .exec.stdout)" = "1" ]
}

@test "idle timer pauses an idle sandbox; the next exec resumes it" {
	local id
	id=$(new_sb --timeout 1s --on-timeout pause --auto-resume)
	sbx-exec --id "$id" -- sh -c 'sleep 1000 >/dev/null 2>&1 &' >/dev/null
	wait_state "$id" paused
	run sbx-exec --id "$id" -- sh -c 'pgrep -x sleep >/dev/null && echo still-there'
	[ "$(jqo .exec.stdout)" = "still-there" ]
	# A long exec is activity: the timer does not freeze it midway (if it
	# did, the exec would stay frozen until its own timeout).
	run sbx-exec --id "$id" --timeout 30s -- sh -c 'sleep 2.5; echo finished'
	[ "$(jqo .exec.stdout)" = "finished" ]
	[ "$(jqo .exec.timed_out)" = "false" ]
}

@test "idle timer with on-timeout kill ends the sandbox" {
	local id
	id=$(new_sb --timeout 1s --on-timeout kill)
	wait_state "$id" terminal
	run --separate-stderr sbx-exec --id "$id" -- true
	[ "$status" -eq 66 ]
	[ "$(jqo .error.kind)" = "terminal" ]
	sbx-ctl kill --id "$id" >/dev/null
	assert_no_trace "$id"
}

@test "sbx-ctl timeout changes the policy of a running sandbox" {
	local id
	id=$(new_sb)
	run sbx-ctl timeout --id "$id" --seconds 1 --on-timeout pause --auto-resume
	assert_success
	[ "$(jqo .ctl.seconds)" = "1" ]
	wait_state "$id" paused
	run sbx-ctl timeout --id "$id" --seconds 0
	assert_success
	sbx-ctl resume --id "$id" >/dev/null
	sleep 1.5
	[ "$(state_of "$id")" = "running" ]   # 0 = never
}

@test "kill is idempotent and leaves nothing behind" {
	local id
	id=$(new_sb)
	sbx-exec --id "$id" -- sh -c 'sleep 1000 >/dev/null 2>&1 &' >/dev/null
	sbx-ctl pause --id "$id" >/dev/null          # frozen processes die too
	run sbx-ctl kill --id "$id"
	assert_success
	[ "$(jqo .ctl.gone)" = "false" ]
	[ "$(jqo .sandbox.state)" = "terminal" ]
	assert_no_trace "$id"
	run sbx-ctl kill --id "$id"
	assert_success
	[ "$(jqo .ctl.gone)" = "true" ]
	run --separate-stderr sbx-ls --id "$id"
	[ "$status" -eq 66 ]
}

@test "the init leads a session of its own pid namespace and holds no namespace file open (CRIU needs both)" {
	local id pid f
	id=$(new_sb)
	# Inside, field 6 of /proc/1/stat is the session in the sandbox's pid
	# namespace: 1 when the init leads it, 0 when its leader is outside.
	run sbx-exec --id "$id" -- cat /proc/1/stat
	[ "$(jqo .exec.stdout | sed 's/.*) //' | cut -d' ' -f4)" = 1 ]
	pid=$(jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$id/sandbox.json")
	for f in /proc/"$pid"/fd/*; do
		[[ "$(readlink "$f")" != *'net:['* ]] || { echo "the init holds $(readlink "$f")"; false; }
	done
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a sandbox whose init died shows as dead, refuses exec, and kill cleans it" {
	local id pid
	id=$(new_sb)
	pid=$(jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$id/sandbox.json")
	kill -9 "$pid"
	wait_state "$id" dead
	run sbx-ls
	[[ "$output" != *"$id"* ]]           # not live ...
	run sbx-ls --all
	[[ "$output" == *"$id"* ]]           # ... but listed with --all
	run --separate-stderr sbx-exec --id "$id" -- true
	[ "$(jqo .error.kind)" = "terminal" ]
	sbx-ctl kill --id "$id" >/dev/null
	assert_no_trace "$id"
}

@test "kill -9 of sbx-create at every step leaves something list + kill cleans" {
	local p id
	for p in after-mkdir after-cgroup after-upper after-init after-ready; do
		run env SBX_FAULT="local:$p" sbx-create --label crash="$p"
		[ "$status" -eq 137 ]
		run sbx-ls --all --label crash="$p"
		id=$(jqo .sandbox.id)
		[[ "$id" =~ ^sb- ]] || { echo "no leftover after $p"; return 1; }
		case $p in after-ready) ;; *) [ "$(jqo .sandbox.state)" = "dead" ];; esac
		sbx-ls --all --label crash="$p" | sbx-ctl kill >/dev/null
		assert_no_trace "$id"
		run sbx-ls --all --label crash="$p"
		[ -z "$output" ]
	done
}

@test "egress off: only lo, no host Redis by socket or by 127.0.0.1" {
	local id port
	id=$(new_sb)
	[ -S "$REDIS_SOCK" ]
	run sbx-exec --id "$id" -- ls /sys/class/net
	[ "$(jqo .exec.stdout)" = "lo" ]
	run sbx-exec --id "$id" -- sh -c "test -e '$REDIS_SOCK' && echo visible || echo hidden"
	[ "$(jqo .exec.stdout)" = "hidden" ]
	run sbx-exec --id "$id" -- sh -c "redis-cli -s '$REDIS_SOCK' ping 2>&1 || echo refused"
	[[ "$(jqo .exec.stdout)" == *refused* ]]
	# A TCP Redis on the host's loopback, reachable from the host ...
	port=$((20000 + RANDOM % 20000))
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
		--pidfile "$BATS_TEST_TMPDIR/r.pid" --dir "$BATS_TEST_TMPDIR" --logfile /dev/null
	for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
	run redis-cli -p "$port" ping
	[ "$output" = "PONG" ]
	# ... is not reachable from the sandbox.
	run sbx-exec --id "$id" -- sh -c "redis-cli -h 127.0.0.1 -p $port ping 2>&1 || echo refused"
	kill "$(cat "$BATS_TEST_TMPDIR/r.pid")"
	[[ "$(jqo .exec.stdout)" == *refused* ]]
	[[ "$(jqo .exec.stdout)" != *PONG* ]]
}

SHARED="/run/sbx/sysfs /run/sbx/sysfs.net /run/sbx/hostview /run/sbx/empty /run/sbx/dev"

# What a sandbox sees that must hold whichever mounts it got: the host's
# software, a working read-only /dev, /sys with lo only, /proc masks.
# With "no-lo": the host's pin of the shared sysfs's network namespace was
# unmounted; sbx-init does not hold it (so that CRIU can checkpoint it),
# so its lo is listed only while something else still does (a sandbox of
# an older sbx-init on this host): either is right.
sees_a_sandbox() {
	run sbx-exec --id "$1" -- sh -c 'ls /usr/bin/env && echo x >/dev/null && head -c 3 /dev/urandom | wc -c && ls -A /proc/acpi | wc -l && echo "net: $(ls /sys/class/net)" && touch /dev/x /sys/x 2>&1'
	[ "$(jqo .exec.stdout | head -3 | tr '\n' ' ')" = "/usr/bin/env 3 0 " ]
	if [ "${2:-}" = no-lo ]; then
		[[ "$(jqo .exec.stdout | sed -n 4p)" =~ ^net:\ (lo)?$ ]]
	else
		[ "$(jqo .exec.stdout | sed -n 4p)" = "net: lo" ]
	fi
	[ "$(jqo .exec.stdout | grep -c 'Read-only file system')" = 2 ]
}

@test "sandboxes without egress share sysfs, /dev and the host view: no superblock of their own for them" {
	local a b
	a=$(new_sb)
	b=$(new_sb)
	for p in /sys /dev /proc/acpi; do
		run sbx-exec --id "$a" -- stat -c %d "$p"
		local da=$(jqo .exec.stdout)
		run sbx-exec --id "$b" -- stat -c %d "$p"
		[ "$(jqo .exec.stdout)" = "$da" ]
	done
	[ "$(stat -f -c %T /run/sbx/sysfs)" = sysfs ]
	[ "$(stat -f -c %T /run/sbx/hostview)" = overlayfs ]
	# Their own: the root overlay, proc, devpts, shm.
	for p in / /proc /dev/pts /dev/shm; do
		run sbx-exec --id "$a" -- stat -c %d "$p"
		local da=$(jqo .exec.stdout)
		run sbx-exec --id "$b" -- stat -c %d "$p"
		[ "$(jqo .exec.stdout)" != "$da" ]
	done
	sees_a_sandbox "$a"
	run sbx-exec --id "$a" --root -- mount -o remount,rw /sys
	[ "$(jqo .exec.exit_code)" != 0 ]
}

@test "the root overlay is volatile: its unmount (a kill) and a syncfs inside sync nothing of the host's filesystem" {
	local a
	a=$(new_sb)
	run sbx-exec --id "$a" -- sh -c "awk '\$5 == \"/\" {print \$NF}' /proc/self/mountinfo"
	[[ "$(jqo .exec.stdout)" == *volatile* ]]
	run sbx-exec --id "$a" -- sh -c 'echo kept >/workspace/f && sync && cat /workspace/f'
	[ "$(jqo .exec.stdout)" = kept ]
}

@test "shared mounts unmounted by an admin: running sandboxes keep theirs, the next create mounts them again" {
	local a b
	a=$(new_sb)
	umount $SHARED
	sees_a_sandbox "$a" no-lo
	b=$(new_sb)
	[ "$(stat -f -c %T /run/sbx/sysfs)" = sysfs ]
	[ "$(stat -f -c %T /run/sbx/dev)" = tmpfs ]
	sees_a_sandbox "$b"
}

@test "shared mounts gone between the creator's look and the init: the init makes its own" {
	new_sb >/dev/null   # they are there now
	SBX_STOP=local:after-upper sbx-create >"$BATS_TEST_TMPDIR/out" &
	local pid=$!
	wait_stopped "$pid"
	umount $SHARED
	kill -CONT "$pid"
	wait "$pid"
	local id=$(jq -r .sandbox.id "$BATS_TEST_TMPDIR/out")
	sees_a_sandbox "$id"
	# Its own: not the device of the (remounted) shared ones.
	new_sb >/dev/null
	run sbx-exec --id "$id" -- stat -c %d /dev
	[ "$(jqo .exec.stdout)" != "$(stat -c %d /run/sbx/dev)" ]
}

@test "host template: host secrets and state are hidden" {
	local id
	id=$(new_sb)
	run sbx-exec --id "$id" --root -- sh -c \
		"test -e /etc/shadow && echo shadow; ls -A /root /home; test -e '$SBX_STATE_DIR' && echo state; test -e /work && ls -A /work; test -e '$SBX_TEST_DIR' && echo testdir; echo end"
	[[ "$(jqo .exec.stdout)" != *shadow* ]]
	[[ "$(jqo .exec.stdout)" != *state* ]]
	[[ "$(jqo .exec.stdout)" != *testdir* ]]
	[[ "$(jqo .exec.stdout)" == *"/home:"*"user"* ]]
	run sbx-exec --id "$id" -- grep -c '^user:x:1000:1000:' /etc/passwd
	[ "$(jqo .exec.stdout)" = "1" ]
	# Writes stay in the sandbox's own layer, the host is untouched.
	run sbx-exec --id "$id" --root -- sh -c 'echo x > /etc/sbx-probe-file'
	[ ! -e /etc/sbx-probe-file ]
	[ -e "$SBX_STATE_DIR/local/sandboxes/$id/upper/etc/sbx-probe-file" ]
}

@test "egress on: slirp4netns, host loopback still unreachable" {
	command -v slirp4netns || skip "slirp4netns not installed"
	local id
	id=$(new_sb --allow-internet)
	run sbx-exec --id "$id" -- ls /sys/class/net
	[[ "$(jqo .exec.stdout)" == *tap0* ]]
	run sbx-exec --id "$id" -- sh -c 'ip -4 -o addr show tap0'
	[[ "$(jqo .exec.stdout)" == *10.0.2.100* ]]
	# 10.0.2.2 would be the host's loopback; it is disabled.
	run sbx-exec --id "$id" --timeout 5s -- sh -c "redis-cli -h 10.0.2.2 -p 1 ping 2>&1 || echo refused"
	[[ "$(jqo .exec.stdout)" != *PONG* ]]
	sbx-ctl kill --id "$id" >/dev/null
	assert_no_trace "$id"
}

@test "sbx-ctl caps advertises what the local backend can do" {
	run sbx-ctl caps
	assert_success
	[ "$(jqo .backend)" = "local" ]
	[ "$(jqo .caps.exec)" = "true" ]
	[ "$(jqo .caps.pause)" = "true" ]
	[ "$(jqo .caps.install)" = "true" ]
	[ "$(jqo .caps.idle_kill)" = "false" ]
}

@test "without root the local backend says so clearly" {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
		env -u SBX_CONFIG XDG_CONFIG_HOME=/nonexistent SBX_STATE_DIR=/nonexistent/u sbx-create
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"unsupported"*"needs root"* ]]
}

@test "sbx-ls --all | sbx-ctl kill removes everything" {
	new_sb >/dev/null
	new_sb >/dev/null
	run bash -c 'sbx-ls --all | sbx-ctl kill'
	assert_success
	run sbx-ls --all
	[ -z "$output" ]
	run ls "$SBX_STATE_DIR/local/sandboxes"
	[ -z "$output" ]
}
