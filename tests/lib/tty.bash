# tests/lib/tty.bash - a real terminal for the tests: tmux on a private
# socket runs a program in a pane of a known size; send-keys types and
# capture-pane reads the screen.  A wrapper records the caller's `stty -a`
# before and after, the program's pid (to signal it) and its status.  No
# timed assertion: every wait is for something to appear, bounded only so
# that a hang fails.

tty_setup_file() {
	command -v tmux >/dev/null || { echo "tmux is missing (tools/deps installs it)" >&2; return 1; }
	cat >"$SBX_TEST_DIR/term.sh" <<-'EOF2'
		#!/bin/bash
		d=$1; shift
		stty -a >"$d/before"
		sh -c 'echo $$ >"$0/pid"; exec "$@"' "$d" "$@"
		echo $? >"$d/rc"
		stty -a >"$d/after"
		exec sleep 1000
	EOF2
	chmod +x "$SBX_TEST_DIR/term.sh"
}
tty_teardown_file() { tm kill-server 2>/dev/null || true; }

tm() { tmux -S "$SBX_TEST_DIR/tmux.sock" "$@"; }

# pane NAME PROGRAM ARGS...: a detached 80x24 pane running PROGRAM in the
# wrapper; its files in $SBX_TEST_DIR/NAME.
pane() {
	local name=$1; shift
	mkdir -p "$SBX_TEST_DIR/$name"
	tm new-session -d -s "$name" -x 80 -y 24 \
		"$SBX_TEST_DIR/term.sh $SBX_TEST_DIR/$name $(printf '%q ' "$@")"
}
screen() { tm capture-pane -p -t "$1"; }
# wait_screen NAME REGEX: until the pane shows a line matching REGEX.
wait_screen() {
	local i
	for i in $(seq 1 600); do
		screen "$1" | grep -Eq "$2" && return 0
		sleep 0.05
	done
	echo "pane $1 never showed /$2/:"; screen "$1"; return 1
}
# wait_file PATH: until it exists and is not empty.
wait_file() {
	local i
	for i in $(seq 1 600); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	echo "no $1"; return 1
}
