#!/usr/bin/env bats
# suite: conformance
# sbx-exec on any backend: identity, confinement, persistence across
# execs, timeouts, output capture, stdin, --check and --raw.  Real
# sandboxes, real processes; one sandbox shared by the file where a test
# does not need its own.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	SB=$(sbx_new --label suite=exec | jq -r .sandbox.id)
	export SB
}
teardown_file() { sbx_teardown_file; }

# Run a command in $SB and print the exec result object.
ex() { sbx-exec --id "$SB" "$@" | jq -c .exec; }
# The command lines of the sandbox's processes, one a line (no pgrep in
# the docker backend's busybox image; /proc works everywhere).
PROCS='for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null && echo; done'

@test "commands run as uid 1000 by default and as root with --root" {
	run sbx-exec --id "$SB" -- id -u
	assert_success
	[ "$(jqo .exec.stdout)" = "1000" ]
	[ "$(jqo .exec.as_root)" = "false" ]
	run sbx-exec --id "$SB" --root -- id -u
	assert_success
	[ "$(jqo .exec.stdout)" = "0" ]
	[ "$(jqo .exec.as_root)" = "true" ]
	run sbx-exec --id "$SB" -- id -un
	[ "$(jqo .exec.stdout)" = "user" ]
}

@test "root in a sandbox has Docker's capability set less MKNOD, and no_new_privs" {
	run sbx-exec --id "$SB" --root -- sh -c 'grep -E "^(CapBnd|CapEff|NoNewPrivs)" /proc/self/status'
	assert_success
	# The backend's set (the fixture says which): never MKNOD (a device
	# node is the way to a host device), nor SYS_ADMIN.
	local caps=$FIXTURE_ROOT_CAPS
	(( (0x$caps & (1 << 27 | 1 << 21)) == 0 ))
	[[ "$(jqo .exec.stdout)" == *"CapEff:	$caps"* ]]
	[[ "$(jqo .exec.stdout)" == *"CapBnd:	$caps"* ]]
	[[ "$(jqo .exec.stdout)" == *"NoNewPrivs:	1"* ]]
	# ... so even root cannot mount or change the hostname.
	run sbx-exec --id "$SB" --root -- sh -c 'mount -t tmpfs x /mnt 2>&1 || echo refused'
	[[ "$(jqo .exec.stdout)" == *refused* ]]
	run sbx-exec --id "$SB" --root -- sh -c 'hostname evil 2>/dev/null || echo refused'
	[[ "$(jqo .exec.stdout)" == *refused* ]]
}

@test "/opt/sbx/skills is root's: uid 1000 cannot write it, root can" {
	run sbx-exec --id "$SB" -- sh -c 'touch /opt/sbx/skills/x 2>/dev/null && echo wrote || echo denied'
	[ "$(jqo .exec.stdout)" = "denied" ]
	run sbx-exec --id "$SB" --root -- sh -c 'mkdir -p /opt/sbx/skills/pdf && echo ok'
	[ "$(jqo .exec.stdout)" = "ok" ]
	run sbx-exec --id "$SB" -- stat -c '%U %a' /opt/sbx/skills
	[ "$(jqo .exec.stdout)" = "root 755" ]
}

@test "/workspace and its input/output belong to uid 1000; /tmp is 1777" {
	run sbx-exec --id "$SB" -- stat -c '%u %n' /workspace /workspace/input /workspace/output
	assert_success
	[ "$(jqo .exec.stdout)" = "$(printf '1000 /workspace\n1000 /workspace/input\n1000 /workspace/output')" ]
	run sbx-exec --id "$SB" -- stat -c '%a' /tmp
	[ "$(jqo .exec.stdout)" = "1777" ]
	run sbx-exec --id "$SB" -- pwd
	[ "$(jqo .exec.stdout)" = "/workspace" ]
}

@test "the sandbox has its own hostname, pid namespace, /dev and only lo" {
	# The hostname and the init are the backend's (the fixture says
	# which): what matters is that neither is the host's.
	local host init=$FIXTURE_INIT_COMM
	host=$(fixture_hostname "$SB")
	[ "$host" != "$(hostname)" ]
	run sbx-exec --id "$SB" -- hostname
	[ "$(jqo .exec.stdout)" = "$host" ]
	run sbx-exec --id "$SB" -- sh -c 'cat /proc/1/comm'
	[ "$(jqo .exec.stdout)" = "$init" ]
	run sbx-exec --id "$SB" -- ls /dev
	for n in null zero full random urandom tty ptmx pts shm; do
		[[ " $(jqo .exec.stdout | tr '\n' ' ') " == *" $n "* ]]
	done
	[[ "$(jqo .exec.stdout)" != *vda* ]]
	run sbx-exec --id "$SB" -- ls /sys/class/net
	[ "$(jqo .exec.stdout)" = "lo" ]
}

@test "a file and a background process survive from one exec to the next" {
	run sbx-exec --id "$SB" -- sh -c 'echo kept > /workspace/note; sleep 1000 >/dev/null 2>&1 &'
	assert_success
	[ "$(jqo .exec.exit_code)" = "0" ]
	run sbx-exec --id "$SB" -- sh -c "cat /workspace/note; { $PROCS; } | grep -qx 'sleep 1000 ' && echo alive"
	[ "$(jqo .exec.stdout)" = "$(printf 'kept\nalive')" ]
}

@test "a timeout kills the whole tree, grandchildren included" {
	run sbx-exec --id "$SB" --timeout 1s -- sh -c \
		'sh -c "exec sleep 4242" & setsid sh -c "exec sleep 4343" & sleep 4444'
	assert_success
	[ "$(jqo .exec.timed_out)" = "true" ]
	[ "$(jqo .exec.exit_code)" = "-1" ]
	run sbx-exec --id "$SB" -- sh -c "{ $PROCS; } | grep -c '^sleep 4[234][234] '"
	[ "$(jqo .exec.stdout)" = "0" ]
	# ... and the scan does see processes: its own shell
	run sbx-exec --id "$SB" -- sh -c "{ $PROCS; } | grep -q '^sh -c .*SCAN-SELF' && echo seen"
	[ "$(jqo .exec.stdout)" = "seen" ]
}

@test "output beyond the cap is dropped and flagged, per stream" {
	run sbx-exec --id "$SB" --output-cap 10 -- sh -c 'printf %0100d 0; printf abc >&2'
	assert_success
	[ "$(jqo .exec.stdout)" = "0000000000" ]
	[ "$(jqo .exec.stdout_truncated)" = "true" ]
	[ "$(jqo .exec.stderr)" = "abc" ]
	[ "$(jqo .exec.stderr_truncated)" = "false" ]
	# A large output does not block the command.
	run sbx-exec --id "$SB" --output-cap 1K -- sh -c 'head -c 5000000 /dev/zero; echo done >&2'
	[ "$(jqo .exec.stderr)" = "done" ]
	# NUL bytes come as base64 (sbx(7)): 1024 of them.
	[ "$(jqo '.exec.stdout_base64 | @base64d | length')" = "1024" ]
}

@test "stdin is injected from text or a file; without it stdin is empty" {
	run sbx-exec --id "$SB" --stdin-text 'hello there' -- cat
	[ "$(jqo .exec.stdout)" = "hello there" ]
	head -c 300000 /dev/urandom | base64 -w0 >"$BATS_TEST_TMPDIR/in"
	run sbx-exec --id "$SB" --stdin-file "$BATS_TEST_TMPDIR/in" -- sha256sum
	[ "$(jqo .exec.stdout | cut -d' ' -f1)" = "$(sha256sum <"$BATS_TEST_TMPDIR/in" | cut -d' ' -f1)" ]
	run sbx-exec --id "$SB" -- sh -c 'wc -c'
	[ "$(jqo .exec.stdout)" = "0" ]
}

@test "environment: clean defaults, create-time env, --env; cwd" {
	run sbx-exec --id "$SB" -e FOO=bar --cwd /tmp -- sh -c \
		'echo "$PATH|$HOME|$USER|$LANG|$SBX_SKILL_OUTPUT_DIR|$SBX_SESSION_INPUT_DIR|$FOO|$(pwd)"'
	[ "$(jqo .exec.stdout)" = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|/home/user|user|C.UTF-8|/workspace/output|/workspace/input|bar|/tmp" ]
	# Nothing of the caller's environment leaks in.
	SECRET_THING=x run sbx-exec --id "$SB" -- sh -c 'env | grep -c SECRET_THING || true'
	[ "$(jqo .exec.stdout)" = "0" ]
	local sb2
	sb2=$(sbx_new --env GREETING=hi | jq -r .sandbox.id)
	run sbx-exec --id "$sb2" -- sh -c 'echo $GREETING'
	[ "$(jqo .exec.stdout)" = "hi" ]
	sbx-ctl kill --id "$sb2" >/dev/null
}

@test "no fd of the caller reaches the command" {
	exec 7</etc/hostname
	run sbx-exec --id "$SB" -- sh -c 'ls /proc/self/fd | tr "\n" " "'
	exec 7<&-
	[ "$(jqo .exec.stdout)" = "0 1 2 3 " ]   # 3 = ls's own directory
}

@test "--check: a failing command is an error document that keeps the result" {
	run --separate-stderr sbx-exec --id "$SB" --check -- sh -c 'echo out; exit 3'
	[ "$status" -eq 1 ]
	[ "$(jqo .error.kind)" = "failed" ]
	[ "$(jqo .exec.exit_code)" = "3" ]
	[ "$(jqo .exec.stdout)" = "out" ]
	[[ "$stderr" == "sbx-exec: error: failed: "* ]]
	run --separate-stderr sbx-exec --id "$SB" --check --timeout 1s -- sleep 30
	[ "$status" -eq 1 ]
	[ "$(jqo .exec.timed_out)" = "true" ]
	run sbx-exec --id "$SB" --check -- true
	assert_success
	# The error document passes through a next stage untouched.
	run --separate-stderr bash -c "sbx-exec --id $SB --check -- false | sbx-exec -- echo never"
	[ "$status" -eq 1 ]
	[ "$(jqo .error.program)" = "sbx-exec" ]
	[ "$(jqo .exec.argv[0])" = "false" ]
}

@test "without --check a failing command is still success for sbx-exec" {
	run sbx-exec --id "$SB" -- sh -c 'exit 7'
	assert_success
	[ "$(jqo .exec.exit_code)" = "7" ]
	run sbx-exec --id "$SB" -- no-such-command
	assert_success
	[ "$(jqo .exec.exit_code)" = "127" ]
	run sbx-exec --id "$SB" -- sh -c 'kill -9 $$'
	if [ "$FIXTURE_SIGNAL_SEEN" = 1 ]; then
		[ "$(jqo .exec.signal)" = "9" ]
	else
		# The backend reports 128+N for a death by signal N (the Engine
		# API cannot tell it from `exit 137`), so no signal field.
		[ "$(jqo .exec.exit_code)" = "137" ]
	fi
}

@test "--raw streams output, passes stdin and exits with the command's status" {
	run sbx-exec --id "$SB" --raw -- sh -c 'echo to-out; echo to-err >&2; exit 3'
	[ "$status" -eq 3 ]
	[[ "$output" == *to-out* ]]
	[[ "$output" == *to-err* ]]
	[[ "$output" != *'"exec"'* ]]
	run bash -c "echo piped | sbx-exec --id $SB --raw -- tr a-z A-Z"
	[ "$status" -eq 0 ]
	[ "$output" = "PIPED" ]
	run sbx-exec --id "$SB" --raw --timeout 1s -- sleep 30
	[ "$status" -eq 124 ]
	run sbx-exec --id "$SB" --raw -- sh -c 'kill -9 $$'
	[ "$status" -eq 137 ]
	run sbx-exec --id "$(missing_id)" --raw -- true
	[ "$status" -eq 125 ]
	# Documents in, raw out: stdout carries only the command's bytes.
	run bash -c "sbx-ls --id $SB | sbx-exec --raw -- echo hi"
	[ "$output" = "hi" ]
}

@test "bytes that are not UTF-8 come back as base64" {
	run sbx-exec --id "$SB" -- printf '\377\376ok'
	assert_success
	[ "$(jqo '.exec.stdout // "absent"')" = "absent" ]
	[ "$(jqo .exec.stdout_base64 | base64 -d | od -An -tx1 | tr -d ' ')" = "fffe6f6b" ]
}

@test "unknown keys pass through; a missing sandbox is not_found" {
	run bash -c "echo '{\"sandbox\":{\"id\":\"$SB\"},\"mine\":{\"k\":1}}' | sbx-exec -- true"
	assert_success
	[ "$(jqo .mine.k)" = "1" ]
	run --separate-stderr sbx-exec --id "$(missing_id)" -- true
	[ "$status" -eq 66 ]
	[ "$(jqo .error.kind)" = "not_found" ]
}

@test "exec resumes a paused sandbox first" {
	sbx-ctl pause --id "$SB" >/dev/null
	run sbx-ls --id "$SB"
	[ "$(jqo .sandbox.state)" = "paused" ]
	run sbx-exec --id "$SB" -- echo awake
	[ "$(jqo .exec.stdout)" = "awake" ]
	run sbx-ls --id "$SB"
	[ "$(jqo .sandbox.state)" = "running" ]
}

@test "root in a sandbox cannot write the host kernel's knobs in /proc" {
	run sbx-exec --id "$SB" --root -- sh -c \
		'echo x > /proc/sys/kernel/core_pattern 2>/dev/null && echo wrote; umount /proc/sys 2>/dev/null && echo unmounted; echo end'
	[ "$(jqo .exec.stdout)" = "end" ]
	[ "$(cat /proc/sys/kernel/core_pattern)" != "x" ]
}

@test "the examples of sbx-exec(1), sbx-ctl(1) and sbx-ls(1) run" {
	run bash -c 'sbx-create | sbx-exec -- uname -a | jq -r .exec.stdout'
	[[ "$output" == Linux* ]]
	run bash -c "sbx-create | sbx-exec --root --check -- sh -c 'mkdir -p /opt/sbx/skills/pdf' | sbx-ctl kill"
	assert_success
	[ "$(jqo .ctl.op)" = "kill" ]
	[ "$(jqo .exec.exit_code)" = "0" ]
	# (the docker backend's busybox image has no python3)
	if sbx-exec --id "$SB" --raw -- sh -c 'command -v python3' >/dev/null; then
		run bash -c "echo 'print(6*7)' | sbx-exec --id $SB --raw -- python3"
		[ "$output" = "42" ]
	fi
	run --separate-stderr bash -c 'sbx-create --label team=blue | sbx-ctl timeout --seconds 300 --on-timeout pause --auto-resume'
	if has_cap set_timeout; then
		assert_success
		[ "$(jqo .ctl.on_timeout)" = "pause" ]
	else
		# the idle policy is fixed at create (docker: never pause)
		assert_failure 69
		[ "$(jqo .error.kind)" = "unsupported" ]
	fi
	run bash -c 'sbx-ls --label team=blue | jq -r .sandbox.id'
	[[ "$output" =~ $FIXTURE_ID_RE ]]
	run sbx-ctl pause --id "$SB"
	assert_success
	run sbx-ctl resume --id "$SB"
	[ "$(jqo .sandbox.state)" = "running" ]
	run bash -c 'sbx-ls --state dead | sbx-ctl kill'
	assert_success
}
