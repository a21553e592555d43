#!/usr/bin/env bats
# suite: local
# Detachable terminals: `sbx-proc start --tty` starts a shell that outlives
# its caller; `sbx-proc attach` in a real terminal (tmux, lib/tty.bash)
# takes it over, one writer at a time, replays its screen, detaches on
# Ctrl-P Ctrl-Q and leaves the caller's terminal as it found it.  Hostile:
# a 100 MB flood keeps sbx-procd's memory bounded (its peak RSS measured).
load lib/helpers
load lib/tty
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	SB=$(sbx_new_id --label suite=tty-proc)
	export SB
	tty_setup_file
}
teardown_file() {
	tty_teardown_file
	sbx_teardown_file
}

# the process tagged $1, as sbx-proc ls shows it
proc_of() { sbx-proc ls --id "$SB" | jq -c --arg t "$1" '.procs[] | select(.tag == $t and .running)'; }

@test "a detached terminal: attach, type, detach with Ctrl-P Ctrl-Q, reattach to its scrollback, exit passes out" {
	run sbx-proc start --id "$SB" --tty --tty-size 80x24 --tag sh1 -e 'PS1=sbx-tty$ ' \
		-- bash --norc --noprofile
	assert_success
	[ "$(jqo .proc.tty)" = true ]
	[ "$(jqo .proc.attached)" = false ]
	pane a1 sbx-proc attach --id "$SB" --tag sh1
	wait_screen a1 '^sbx-tty\$ *$'
	tm send-keys -t a1 'echo "hello-$((2+3))"; stty size' Enter
	wait_screen a1 '^hello-5$'
	wait_screen a1 '^24 80$'
	# attached: shown, and a second writer is refused
	[ "$(proc_of sh1 | jq -r .attached)" = true ]
	run sbx-proc attach --id "$SB" --tag sh1 </dev/null
	[ "$status" -eq 125 ]
	[[ "$output" == *"error: conflict"*"one writer at a time"* ]]
	tm send-keys -t a1 C-p C-q
	wait_file "$SBX_TEST_DIR/a1/rc"
	[ "$(cat "$SBX_TEST_DIR/a1/rc")" = 0 ]
	diff "$SBX_TEST_DIR/a1/before" "$SBX_TEST_DIR/a1/after"
	# the shell is still there, nobody attached
	[ "$(proc_of sh1 | jq -r .attached)" = false ]
	# a new terminal shows the old screen before anything is typed
	pane a2 sbx-proc attach --id "$SB" --tag sh1
	wait_screen a2 '^hello-5$'
	tm send-keys -t a2 'exit 4' Enter
	wait_file "$SBX_TEST_DIR/a2/rc"
	[ "$(cat "$SBX_TEST_DIR/a2/rc")" = 4 ]
	diff "$SBX_TEST_DIR/a2/before" "$SBX_TEST_DIR/a2/after"
}

@test "the attach's claim dies with it: kill -9 leaves the terminal free for the next" {
	run sbx-proc start --id "$SB" --tty --tag sh2 -e 'PS1=sbx-tty$ ' -- bash --norc --noprofile
	assert_success
	pane k1 sbx-proc attach --id "$SB" --tag sh2
	wait_screen k1 '^sbx-tty\$ *$'
	[ "$(proc_of sh2 | jq -r .attached)" = true ]
	kill -9 "$(cat "$SBX_TEST_DIR/k1/pid")"
	wait_file "$SBX_TEST_DIR/k1/rc"
	[ "$(proc_of sh2 | jq -r .attached)" = false ]
	pane k2 sbx-proc attach --id "$SB" --tag sh2
	tm send-keys -t k2 'exit 0' Enter
	wait_file "$SBX_TEST_DIR/k2/rc"
	[ "$(cat "$SBX_TEST_DIR/k2/rc")" = 0 ]
}

@test "attach refuses a process without a terminal, and needs --id" {
	run sbx-proc start --id "$SB" --tag plain -- sleep 100
	assert_success
	[ "$(jqo '.proc.tty // false')" = false ]
	run sbx-proc attach --id "$SB" --tag plain </dev/null
	[ "$status" -eq 125 ]
	[[ "$output" == *"has no terminal"* ]]
	run sbx-proc attach --tag plain </dev/null
	[ "$status" -eq 125 ]
	[[ "$output" == *"attach needs --id"* ]]
	sbx-proc kill --id "$SB" --tag plain >/dev/null
}

# cat closes its stdio before it exits: sbx-procd read EIO from the master
# and closed it, which hung the terminal up, and cat, still exiting, died
# of SIGHUP (1 run in 4 to 8) instead of exiting 0: 40 runs here.  The master now stays
# open until the process is reaped.
@test "a terminal process that closes its stdio on its way out ends with its own status, not SIGHUP" {
	local i pid got=
	for i in $(seq 1 40); do
		pid=$(sbx-proc start --id "$SB" --tty --tty-size 80x24 --tag "eof$i" -- cat | jq -r .proc.pid)
		[ "$pid" -gt 0 ]
		sbx-proc input --id "$SB" --pid "$pid" --text $'\x04' >/dev/null
		for _ in $(seq 1 100); do
			got=$(sbx-proc ls --id "$SB" | jq -r --argjson p "$pid" '.procs[] | select(.pid == $p and (.running | not)) | "\(.exit_code)/\(.signal)"')
			[ -n "$got" ] && break
			sleep 0.05
		done
		assert_equal "$i:$got" "$i:0/0"
	done
}

@test "a 100 MB flood on a terminal keeps sbx-procd's memory bounded" {
	run sbx-proc start --id "$SB" --tty --tag flood -- sh -c 'head -c 100000000 /dev/zero | tr "\0" x; exec sleep 1000'
	assert_success
	local pid i end=0
	pid=$(jqo .proc.pid)
	for i in $(seq 1 1200); do
		end=$(proc_of flood | jq -r '.stdout_end // 0')
		[ "$end" -ge 100000000 ] && break
		[ -n "$(proc_of flood)" ] || break
		sleep 0.1
	done
	[ "$end" -ge 100000000 ]
	# only the bound is kept on disk, and the supervisor's peak RSS is
	# its own few pages, not the flood
	[ "$(proc_of flood | jq -r '.stdout_end - .stdout_start')" -le $((8 << 20)) ]
	local sup hwm
	sup=$(awk '$1 == "sup_pid" {print $2}' "$SBX_STATE_DIR"/local/sandboxes/"$SB"/procs/"$pid"/state)
	hwm=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$sup/status")
	echo "# sbx-procd peak RSS after 100 MB: ${hwm} kB" >&3
	[ "$hwm" -lt 4096 ]
	sbx-proc kill --id "$SB" --tag flood >/dev/null
}
