#!/usr/bin/env bats
# suite: local docker e2b cube
# Terminals: `sbx-exec -it` driven by a real terminal.  tmux runs it in a
# pane of a known size, types with send-keys and reads the screen with
# capture-pane; a wrapper records the caller's `stty -a` before and after
# and sbx-exec's exit status.  No timed assertion: every wait is for
# something to appear, bounded only so that a hang fails.
load lib/helpers
load lib/tty
bats_require_minimum_version 1.5.0

setup_file() {
	command -v tmux >/dev/null || { echo "tmux is missing (tools/deps installs it)" >&2; return 1; }
	sbx_setup_file
	SB=$(sbx_new_id --label suite=tty)
	export SB
	# bash where the image has it (local: the host's), else sh (docker's
	# busybox image)
	if sbx-exec --id "$SB" --raw -- sh -c 'command -v bash' >/dev/null; then
		export TTY_SHELL="bash --norc --noprofile"
	else
		export TTY_SHELL="sh"
	fi
	tty_setup_file
}
teardown_file() {
	tty_teardown_file
	sbx_teardown_file
}

# A shell with a prompt we know (no rc file to change it).
# shellcheck disable=SC2206
SHELL_ARGS=(--id "$SB" -e 'PS1=sbx-tty$ ' -e ENV=/dev/null -- $TTY_SHELL)

@test "sbx-ctl caps reports tty" {
	run sbx-ctl caps
	assert_success
	[ "$(jqo .caps.tty)" = true ]
}

@test "sbx-exec -it gives bash a prompt on a terminal of its own, and passes exit 7 out" {
	pane exit7 sbx-exec -it "${SHELL_ARGS[@]}"
	wait_screen exit7 '^sbx-tty\$ *$'
	tm send-keys -t exit7 'tty; id -u; exit 7' Enter
	wait_file "$SBX_TEST_DIR/exit7/rc"
	[ "$(cat "$SBX_TEST_DIR/exit7/rc")" = 7 ]
	screen exit7 | grep -qx '/dev/pts/[0-9]*'
	screen exit7 | grep -qx 1000
	# the caller's terminal is put back as it was
	diff "$SBX_TEST_DIR/exit7/before" "$SBX_TEST_DIR/exit7/after"
}

@test "stty size inside follows tmux resize-window" {
	pane resize sbx-exec -it "${SHELL_ARGS[@]}"
	wait_screen resize '^sbx-tty\$ *$'
	tm send-keys -t resize 'stty size' Enter
	wait_screen resize '^24 80$'
	tm resize-window -t resize -x 100 -y 30
	tm send-keys -t resize 'clear; stty size' Enter
	wait_screen resize '^30 100$'
	tm send-keys -t resize 'exit' Enter
	wait_file "$SBX_TEST_DIR/resize/rc"
	[ "$(cat "$SBX_TEST_DIR/resize/rc")" = 0 ]
}

@test "Ctrl-C stops sleep 100 inside, not the shell" {
	pane intr sbx-exec -it "${SHELL_ARGS[@]}"
	wait_screen intr '^sbx-tty\$ *$'
	tm send-keys -t intr 'echo go; sleep 100' Enter
	wait_screen intr '^go$'
	tm send-keys -t intr C-c
	wait_screen intr '^sbx-tty\$ *$'
	tm send-keys -t intr 'echo "status $? alive $((6*7))"' Enter
	wait_screen intr '^status 130 alive 42$'
	tm send-keys -t intr 'exit 0' Enter
	wait_file "$SBX_TEST_DIR/intr/rc"
	[ "$(cat "$SBX_TEST_DIR/intr/rc")" = 0 ]
	diff "$SBX_TEST_DIR/intr/before" "$SBX_TEST_DIR/intr/after"
}

@test "the caller's terminal is put back when sbx-exec gets SIGTERM, SIGHUP or SIGINT" {
	local sig
	for sig in TERM HUP INT; do
		pane "kill$sig" sbx-exec -it "${SHELL_ARGS[@]}"
		wait_screen "kill$sig" '^sbx-tty\$ *$'
		kill -"$sig" "$(cat "$SBX_TEST_DIR/kill$sig/pid")"
		wait_file "$SBX_TEST_DIR/kill$sig/rc"
		# it died of the signal, as it would have without a terminal
		[ "$(cat "$SBX_TEST_DIR/kill$sig/rc")" = $((128 + $(kill -l "$sig"))) ]
		diff "$SBX_TEST_DIR/kill$sig/before" "$SBX_TEST_DIR/kill$sig/after"
	done
}

@test "--root gives root a terminal" {
	pane root sbx-exec -it --root "${SHELL_ARGS[@]}"
	wait_screen root '^sbx-tty\$ *$'
	tm send-keys -t root 'echo "uid=$(id -u)"; exit 3' Enter
	wait_file "$SBX_TEST_DIR/root/rc"
	[ "$(cat "$SBX_TEST_DIR/root/rc")" = 3 ]
	screen root | grep -qx 'uid=0'
}

@test "-t without a terminal is a usage error unless --tty-size gives one" {
	run sbx-exec --id "$SB" -t -- true </dev/null
	[ "$status" -eq 125 ]
	[[ "$output" == *"error: usage: -t needs a terminal on stdin; give --tty-size COLSxROWS"* ]]
	run sbx-exec -t --tty-size 80x24 -- true </dev/null
	[ "$status" -eq 125 ]
	[[ "$output" == *"need --id"* ]]
	run sbx-exec --id "$SB" -t --tty-size 80 -- true </dev/null
	[ "$status" -eq 125 ]
	[[ "$output" == *"--tty-size must be COLSxROWS"* ]]
	run sbx-exec --id "$SB" -t --tty-size 100x30 -- sh -c 'stty size; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-tty'
	assert_success
	[[ "$output" == *"30 100"* ]]
	[[ "$output" == *"all-tty"* ]]
}

@test "a script drives -it --tty-size through a pipe: keys in, the shell's status out" {
	run bash -c "printf 'echo hi-\$((1+2))\nexit 3\n' | sbx-exec --id '$SB' -it --tty-size 80x24 -- $TTY_SHELL"
	[ "$status" -eq 3 ]
	[[ "$output" == *"hi-3"* ]]
	# stdin's end is the terminal's EOF: cat ends, its status passes out
	run bash -c "printf 'abc\n' | sbx-exec --id '$SB' -it --tty-size 80x24 -- cat"
	assert_success
	[[ "$output" == *abc* ]]
}

@test "the terminal belongs to the user the command runs as" {
	run sbx-exec --id "$SB" -t --tty-size 80x24 -- sh -c 'stat -c %u "$(tty)"'
	assert_success
	[[ "$output" == 1000* ]]
}

@test "a terminal's TERM is xterm unless --env says otherwise" {
	run sbx-exec --id "$SB" -t --tty-size 80x24 -- sh -c 'echo "term=$TERM"'
	assert_success
	[[ "$output" == *"term=xterm"* ]]
	run sbx-exec --id "$SB" -t --tty-size 80x24 -e TERM=vt100 -- sh -c 'echo "term=$TERM"'
	assert_success
	[[ "$output" == *"term=vt100"* ]]
}
