#!/usr/bin/env bats
# suite: local
# Checkpoints and rewind (issue 32, first slice: the local backend).  A
# session over three turns with a checkpoint at the end of each; turn 3
# wrecks the sandbox (rm -rf /workspace/*, a broken file under /opt and
# /usr); `sbx-ctl rewind --to 2` brings back turn 2's tree exactly (a
# digest of every file, taken inside the sandbox) on a new sandbox bound
# to the same session, and by label too; the history keeps every entry.
# A checkpoint's added disk is what changed (its layer), not the whole
# upper dir.  A rewind is refused while another turn holds the session's
# lease, and a rewind killed with -9 at each step leaves the session bound
# to one live sandbox, old or new, which the reaper makes the only one.

load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

T=ckpt

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

# in S CMD: run CMD as root in the session's sandbox.
in_s() {
	local s=$1
	shift
	sbx-create --tenant $T --session "$s" | sbx-exec --root --raw -- sh -c "$*"
}

# The digest of the trees a turn changes: every file's sha256, every
# entry's type and mode, sorted.
DIGEST='cd / && find workspace opt/ck usr/local/ck -xdev \( -type f -exec sha256sum {} + \) -o \( ! -type f -printf "%p %y %m\n" \) 2>/dev/null | LC_ALL=C sort'
digest() { in_s "$1" "$DIGEST"; }

bound() { rcli get "$(skey $T "$1" binding)" | jq -r .sandbox_id; }

# three_turns S: turn 1 and 2 write, each ends in a checkpoint (turn 2's
# labelled); the digest after turn 2 is in $BATS_TEST_TMPDIR/d2.
three_turns() {
	local s=$1
	in_s "$s" 'mkdir -p /workspace/out /opt/ck/lib /usr/local/ck && echo one >/workspace/out/a &&
		   dd if=/dev/urandom of=/workspace/big bs=1M count=8 2>/dev/null &&
		   echo lib1 >/opt/ck/lib/mod.py && echo bin1 >/usr/local/ck/tool' || return 1
	sbx-snap checkpoint --tenant $T --session "$s" --label turn-1 >"$BATS_TEST_TMPDIR/c1" || return 1
	in_s "$s" 'echo two >/workspace/out/b && rm /workspace/out/a && mkdir /workspace/new &&
		   echo n >/workspace/new/f && echo lib2 >/opt/ck/lib/mod.py && chmod 700 /opt/ck' || return 1
	sbx-snap checkpoint --tenant $T --session "$s" --label turn-2 >"$BATS_TEST_TMPDIR/c2" || return 1
	digest "$s" >"$BATS_TEST_TMPDIR/d2" || return 1
	in_s "$s" 'rm -rf /workspace/* && echo broken >/opt/ck/lib/mod.py && rm /usr/local/ck/tool' || return 1
	sbx-snap checkpoint --tenant $T --session "$s" --label turn-3 >"$BATS_TEST_TMPDIR/c3"
}

@test "a checkpoint per turn: numbered, labelled, listed; each costs what changed" {
	three_turns s1
	run jq -r '.checkpoint.n, .checkpoint.label, .tenant, .session' "$BATS_TEST_TMPDIR/c2"
	assert_output $'2\nturn-2\nckpt\ns1'
	[[ "$(jq -r .checkpoint.snapshot "$BATS_TEST_TMPDIR/c2")" =~ $FIXTURE_SNAP_ID_RE ]]
	[ "$(jq -r .checkpoint.sandbox "$BATS_TEST_TMPDIR/c2")" = "$(bound s1)" ]
	[ "$(jq -r .checkpoint.checkpoint_of "$BATS_TEST_TMPDIR/c2")" = \
	  "$(jq -r .checkpoint.snapshot "$BATS_TEST_TMPDIR/c1")" ]
	run sbx-snap ls --tenant $T --session s1
	assert_success
	[ "$(jqo -s 'map(.checkpoint.n) | join(",")')" = 1,2,3 ]
	[ "$(jqo -s 'map(.checkpoint.label) | join(",")')" = turn-1,turn-2,turn-3 ]
	# Turn 1 wrote 8 MB; turn 2 a few bytes: its layer holds only those.
	local s1 s2
	s1=$(jq -r .checkpoint.size_bytes "$BATS_TEST_TMPDIR/c1")
	s2=$(jq -r .checkpoint.size_bytes "$BATS_TEST_TMPDIR/c2")
	[ "$s1" -gt 8000000 ]
	[ "$s2" -lt 100000 ] || { echo "turn 2's layer is $s2 bytes"; return 1; }
	# The layer on disk (the top of the snapshot's stack) says the same.
	local snap lid
	snap=$(jq -r .checkpoint.snapshot "$BATS_TEST_TMPDIR/c2")
	lid=$(jq -r '.layers[0]' "$SBX_STATE_DIR/local/images/templates/$snap.json")
	run du -sb "$SBX_STATE_DIR/local/images/layers/$lid"
	[ "${output%%[[:space:]]*}" -lt 1000000 ]
	# The sandbox kept running through all three.
	run in_s s1 'echo alive'
	assert_output alive
}

@test "checkpoint and ls --session: usage errors and a session without a sandbox" {
	run sbx-snap checkpoint --tenant $T
	[ "$status" -eq 64 ]
	run sbx-snap checkpoint --session s1
	[ "$status" -eq 64 ]
	run sbx-snap checkpoint --tenant $T --session s1 --name x
	[ "$status" -eq 64 ]
	run sbx-snap ls --session s1
	[ "$status" -eq 64 ]
	run sbx-snap checkpoint --tenant $T --session nobody
	[ "$status" -eq 69 ] || [ "$status" -eq 66 ] || { echo "status $status: $output"; return 1; }
	run sbx-snap ls --tenant $T --session nobody
	assert_success
	assert_output ""
}
