#!/usr/bin/env bats
# suite: local docker e2b cube
# not-on: podman -- docker's code, covered by the docker run; a podman commit is slow: 238 s for this file against 50 s
# Checkpoints and rewind (issue 32; local, docker, and e2b and cube through
# the fixture's sbx-serve, where a checkpoint is the service's snapshot).  A
# session over three turns with a checkpoint at the end of each; turn 3
# wrecks the sandbox (rm -rf /workspace/*, a broken file under /opt and
# /usr); `sbx-ctl rewind --to 2` brings back turn 2's tree exactly (a
# digest of every file, taken inside the sandbox) on a new sandbox bound
# to the same session, and by label too; the history keeps every entry.
# A checkpoint's added disk is what changed (its layer), not the whole
# upper dir (local; a docker checkpoint commits the whole container).  A
# rewind is refused while another turn holds the session's lease, and a
# rewind killed with -9 at each step leaves the session bound
# to one live sandbox, old or new, which the reaper makes the only one.
# A rewind and a fork create with what the session's create was granted
# (its --env and volumes); a checkpoint killed between its snapshot and
# its history entry leaves a planned record the reaper resolves.

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
# entry's type and mode (stat's %A: the type letter, the permission bits
# with set-id and sticky), sorted.  GNU and busybox (the docker base
# image: its find has no -printf, and drops an -exec + inside parentheses)
# both have sha256sum and stat -c.
DIGEST='cd / && { T="workspace opt/ck usr/local/ck"; find $T -xdev -type f -exec sha256sum {} +; find $T -xdev ! -type f -exec stat -c "%n %A" {} +; } 2>/dev/null | LC_ALL=C sort'
digest() { in_s "$1" "$DIGEST"; }
# has_entries FILE: a digest that saw files and directories (never an
# empty one that any other empty one would equal).
has_entries() { grep -qE '^[0-9a-f]{64}  workspace/' "$1" && grep -qE '^workspace/[^ ]* d' "$1"; }
# Local only: what the local backend's checkpoints are and docker's are
# not (docs/docker.md, "Checkpoints and rewind": a docker checkpoint is a
# commit of the whole container, not a layer over the previous one).
on_local() { [ "$FIXTURE_BACKEND" = local ]; }
# e2b and cube: a checkpoint is the service's snapshot (docs/e2b.md,
# "Checkpoints, rewind and fork"), here sbx-serve's over the local backend.
# Whether a checkpoint of the same sandbox stacks on the previous one, so
# that retention must wait for what stacks on it (local only: a docker
# commit and a service's snapshot each stand on the sandbox's template).
stacks() { on_local; }
on_remote() { [ "$FIXTURE_BACKEND" = e2b ] || [ "$FIXTURE_BACKEND" = cube ]; }

bound() { rcli get "$(skey $T "$1" binding)" | jq -r .sandbox_id; }

# three_turns S: turn 1 and 2 write, each ends in a checkpoint (turn 2's
# labelled); the digest after turn 2 is in $BATS_TEST_TMPDIR/d2.
three_turns() {
	local s=$1
	in_s "$s" 'mkdir -p /workspace/out /opt/ck/lib /usr/local/ck && echo one >/workspace/out/a &&
		   dd if=/dev/urandom of=/workspace/big bs=1M count=8 2>/dev/null &&
		   echo lib1 >/opt/ck/lib/mod.py && echo bin1 >/usr/local/ck/tool' || return 1
	# Under load, files written in the last moments before a checkpoint
	# were copied again by the next one (a cost, never a loss; the cause
	# is open, docs/local.md): turn 1 ends a moment before its checkpoint,
	# so that turn 2's layer measures what turn 2 changed.
	sleep 0.3
	sbx-snap checkpoint --tenant $T --session "$s" --label turn-1 >"$BATS_TEST_TMPDIR/c1" || return 1
	in_s "$s" 'echo two >/workspace/out/b && rm /workspace/out/a && mkdir /workspace/new &&
		   echo n >/workspace/new/f && echo lib2 >/opt/ck/lib/mod.py && chmod 700 /opt/ck' || return 1
	sbx-snap checkpoint --tenant $T --session "$s" --label turn-2 >"$BATS_TEST_TMPDIR/c2" || return 1
	digest "$s" >"$BATS_TEST_TMPDIR/d2" || return 1
	has_entries "$BATS_TEST_TMPDIR/d2" || { echo "an empty digest: $(cat "$BATS_TEST_TMPDIR/d2")"; return 1; }
	in_s "$s" 'rm -rf /workspace/* && echo broken >/opt/ck/lib/mod.py && rm /usr/local/ck/tool' || return 1
	sbx-snap checkpoint --tenant $T --session "$s" --label turn-3 >"$BATS_TEST_TMPDIR/c3"
}

@test "a checkpoint per turn: numbered, labelled, listed; each costs what changed" {
	three_turns s1
	run jq -r '.checkpoint.n, .checkpoint.label, .tenant, .session' "$BATS_TEST_TMPDIR/c2"
	assert_output $'2\nturn-2\nckpt\ns1'
	[[ "$(jq -r .checkpoint.snapshot "$BATS_TEST_TMPDIR/c2")" =~ $FIXTURE_SNAP_ID_RE ]]
	[ "$(jq -r .checkpoint.sandbox "$BATS_TEST_TMPDIR/c2")" = "$(bound s1)" ]
	# Local: turn 2's stacks on turn 1's (a docker commit stands on the
	# container's image, the template here).
	if on_local; then
		[ "$(jq -r .checkpoint.checkpoint_of "$BATS_TEST_TMPDIR/c2")" = \
		  "$(jq -r .checkpoint.snapshot "$BATS_TEST_TMPDIR/c1")" ]
	fi
	run sbx-snap ls --tenant $T --session s1
	assert_success
	[ "$(jqo -s 'map(.checkpoint.n) | join(",")')" = 1,2,3 ]
	[ "$(jqo -s 'map(.checkpoint.label) | join(",")')" = turn-1,turn-2,turn-3 ]
	# Turn 1 wrote 8 MB; turn 2 a few bytes: its layer holds only those.
	local s1 s2
	s1=$(jq -r .checkpoint.size_bytes "$BATS_TEST_TMPDIR/c1")
	s2=$(jq -r .checkpoint.size_bytes "$BATS_TEST_TMPDIR/c2")
	if on_remote; then
		# E2B's snapshot calls report no size (docs/e2b.md).
		[ "$s1" = -1 ] && [ "$s2" = -1 ]
	else
		[ "$s1" -gt 8000000 ]
	fi
	if on_remote; then
		:
	elif on_local; then
		[ "$s2" -lt 100000 ] || { echo "turn 2's layer is $s2 bytes"; return 1; }
		# The layer on disk (the top of the snapshot's stack) says the same.
		local snap lid
		snap=$(jq -r .checkpoint.snapshot "$BATS_TEST_TMPDIR/c2")
		lid=$(jq -r '.layers[0]' "$SBX_STATE_DIR/local/images/templates/$snap.json")
		run du -sb "$SBX_STATE_DIR/local/images/layers/$lid"
		[ "${output%%[[:space:]]*}" -lt 1000000 ]
	else
		# A commit holds the whole writable layer: turn 1's 8 MB again.
		[ "$s2" -gt 8000000 ] || { echo "turn 2's commit is $s2 bytes"; return 1; }
		# Its size is that layer's own, not the image's: the template's
		# layers under it are not counted.
		local tpl
		tpl=$(sbx-tpl ls | jq -r --arg t "$SBX_TEST_TEMPLATE" \
			'select(.template.id == $t or .template.name == $t) | .template.size_bytes' | head -1)
		[ "${tpl:-0}" -gt 1000000 ] || { echo "the template's size: $tpl"; return 1; }
		[ "$s1" -lt $((8388608 + 1000000)) ] || { echo "turn 1's commit is $s1 bytes"; return 1; }
	fi
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

@test "rewind --to 2: turn 2's tree exactly, on a new sandbox bound to the session; by label, forward and back" {
	three_turns s2
	local old new
	old=$(bound s2)
	fixture_settings "$old" >"$BATS_TEST_TMPDIR/old.set"
	[ -s "$BATS_TEST_TMPDIR/old.set" ]
	run sbx-ctl rewind --tenant $T --session s2 --to 2
	assert_success
	new=$(jqo -r .sandbox.id)
	[ "$new" != "$old" ]
	[ "$(jqo -r .ctl.replaced)" = "$old" ]
	[ "$(jqo -r .checkpoint.n)" = 2 ]
	# Made from the checkpoint's snapshot (docker: a container of its image).
	[ "$(jqo -r .sandbox.template)" = "$(jq -r .checkpoint.snapshot "$BATS_TEST_TMPDIR/c2")" ]
	[ "$(bound s2)" = "$new" ]
	assert_one_sandbox $T s2 "$new"
	run digest s2
	assert_success
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/d2")" ] || {
		diff <(echo "$output") "$BATS_TEST_TMPDIR/d2"; return 1; }
	# The new sandbox has the settings the old one had, both used once
	# (on e2b and cube a command's connect sets the service's timeout).
	[ "$(fixture_settings "$new")" = "$(cat "$BATS_TEST_TMPDIR/old.set")" ] || {
		diff <(fixture_settings "$new") "$BATS_TEST_TMPDIR/old.set"; return 1; }
	# The next resolve is the rewound sandbox, bound.
	run resolve $T s2
	assert_output "$new bound"
	# Later checkpoints are kept: rewinding forward undoes the rewind.
	run sbx-snap ls --tenant $T --session s2
	[ "$(jqo -s 'map(.checkpoint.n) | join(",")')" = 1,2,3 ]
	run sbx-ctl rewind --tenant $T --session s2 --to turn-3
	assert_success
	run in_s s2 'ls /workspace/out || cat /opt/ck/lib/mod.py'
	assert_output --partial broken
	[[ "$output" != *" b"* ]]
	run sbx-ctl rewind --tenant $T --session s2 --to turn-2
	assert_success
	[ "$(jqo -r .checkpoint.label)" = turn-2 ]
	run digest s2
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/d2")" ]
	# A checkpoint of the rewound sandbox stacks on the checkpoint it
	# came from and costs what changed since.
	in_s s2 'echo four >/workspace/out/d'
	run sbx-snap checkpoint --tenant $T --session s2 --label turn-4
	assert_success
	[ "$(jqo -r .checkpoint.n)" = 4 ]
	[ "$(jqo -r .checkpoint.checkpoint_of)" = "$(jq -r .checkpoint.snapshot "$BATS_TEST_TMPDIR/c2")" ]
	if on_local; then
		[ "$(jqo -r .checkpoint.size_bytes)" -lt 100000 ]
	fi
}

@test "rewind: the new sandbox has what the session's create was granted (its --env, its volumes), not the profile's defaults" {
	sbx-vol --tenant $T create gvol >/dev/null
	sbx-create --tenant $T --session g1 --env GV=granted --volume gvol:/mnt/gvol |
		sbx-exec --raw -- sh -c 'echo kept >/mnt/gvol/f && echo w >/workspace/w'
	sbx-snap checkpoint --tenant $T --session g1 >/dev/null
	local old
	old=$(bound g1)
	run sbx-ctl rewind --tenant $T --session g1 --to 1
	assert_success
	local new
	new=$(jqo -r .sandbox.id)
	run in_s g1 'echo "$GV"; cat /mnt/gvol/f /workspace/w; echo more >>/mnt/gvol/f'
	assert_output $'granted\nkept\nw'
	# The volume counts the new sandbox among its users, not the old one.
	[ "$(rcli sismember "sbx:{$T}:vol:gvol:users" "$new")" = 1 ]
	run sbx-vol --tenant $T rm gvol
	[ "$status" -ne 0 ]
	# And so again after a second rewind (the grant moved with the binding).
	run sbx-ctl rewind --tenant $T --session g1 --to 1
	assert_success
	run in_s g1 'echo "$GV"; cat /mnt/gvol/f'
	assert_output $'granted\nkept\nmore'
	[ "$old" != "$new" ]
}

@test "fork: the new session has the source's --env and its read-only volumes, none of its writable ones" {
	sbx-vol --tenant $T create fro >/dev/null
	sbx-vol --tenant $T create frw >/dev/null
	echo ro-data | sbx-vol --tenant $T put fro - /f >/dev/null
	sbx-create --tenant $T --session fsrc --env GV=granted --volume fro:/mnt/ro:ro --volume frw:/mnt/rw |
		sbx-exec --raw -- sh -c 'echo rw-data >/mnt/rw/f && echo w >/workspace/w'
	run sbx-create --tenant $T --session fdst --fork fsrc
	assert_success
	# (the source's mount point is in its files; the volume is not)
	run in_s fdst 'echo "$GV"; cat /workspace/w /mnt/ro/f; cat /mnt/rw/f 2>/dev/null || echo no-rw'
	assert_output $'granted\nw\nro-data\nno-rw'
	run --separate-stderr sbx-create --tenant $T --session fdst2 --fork fsrc --volume frw:/mnt/rw
	[ "$status" -eq 64 ]
}

@test "rewind: refused while another turn holds the lease; --in-turn from the only holder" {
	in_s s3 'echo x >/workspace/x'
	sbx-snap checkpoint --tenant $T --session s3 >/dev/null
	local old
	old=$(bound s3)
	sbx-lease begin --tenant $T --session s3 >/dev/null
	run sbx-ctl rewind --tenant $T --session s3 --to 1
	[ "$status" -eq 75 ]
	[ "$(jqo -r .error.kind)" = conflict ] || [[ "$output" == *conflict* ]]
	[ "$(bound s3)" = "$old" ]
	sbx-lease begin --tenant $T --session s3 >/dev/null
	run sbx-ctl rewind --tenant $T --session s3 --to 1 --in-turn
	[ "$status" -eq 75 ]
	[ "$(bound s3)" = "$old" ]
	sbx-lease end --tenant $T --session s3 >/dev/null
	run sbx-ctl rewind --tenant $T --session s3 --to 1 --in-turn
	assert_success
	[ "$(bound s3)" != "$old" ]
	sbx-lease end --tenant $T --session s3 >/dev/null
}

@test "rewind: usage errors, an unknown checkpoint, a session without a sandbox" {
	run sbx-ctl rewind --tenant $T --session s3
	[ "$status" -eq 64 ]
	run sbx-ctl rewind --session s3 --to 1
	[ "$status" -eq 64 ]
	run sbx-ctl pause --to 1
	[ "$status" -eq 64 ]
	run sbx-ctl rewind --tenant $T --session s3 --to 99
	[ "$status" -eq 66 ]
	run sbx-ctl rewind --tenant $T --session s3 --to no-such-label
	[ "$status" -eq 66 ]
	run sbx-ctl rewind --tenant $T --session nobody --to 1
	[ "$status" -eq 66 ]
}

# crash_rewind POINT: a rewind killed with -9 at POINT leaves the session
# bound to one live sandbox, the old or the new one; the reaper deletes
# the other, and the next resolve finds the bound one.
crash_rewind() {
	local s=crash-${1//:/-} old b ids
	in_s "$s" 'echo one >/workspace/f' || return 1
	sbx-snap checkpoint --tenant $T --session "$s" >/dev/null || return 1
	in_s "$s" 'echo two >/workspace/f' || return 1
	old=$(bound "$s")
	SBX_LOCK_TTL_MS=400 SBX_FAULT=$1 run sbx-ctl rewind --tenant $T --session "$s" --to 1
	[ "$status" -eq 137 ] || { echo "not killed at $1 (status $status): $output"; return 1; }
	wait_key_gone "$(skey $T "$s" lock)"    # the dead holder's lock expires
	b=$(bound "$s")
	[ -n "$b" ] && [ "$b" != null ] || { echo "no binding after a crash at $1"; return 1; }
	ids=$(ids_with sbx.session "$s")
	grep -qx "$b" <<<"$ids" || { echo "bound $b is not live: $ids"; return 1; }
	[ "$(grep -c . <<<"$ids")" -le 2 ]
	run sbx-reap --tenant $T --grace 0
	assert_success
	assert_one_sandbox $T "$s" "$b"
	run resolve $T "$s"
	assert_output "$b bound"
	run in_s "$s" 'cat /workspace/f'
	if [ "$b" = "$old" ]; then assert_output two; else assert_output one; fi
}

@test "rewind killed with -9 after the create: bound to the old sandbox, the new one reaped" {
	crash_rewind rewind:created
	[ "$(bound crash-rewind-created)" != "" ]
}

@test "rewind killed with -9 after the binding moved: bound to the new one, the old one reaped" {
	crash_rewind rewind:bound
}

@test "rewind killed with -9 right before the old sandbox's delete" {
	crash_rewind rewind:before-delete
}

@test "rewinds racing resolves, checkpoints and reaper runs (real processes) leave one bound sandbox" {
	in_s race 'echo r >/workspace/r'
	sbx-snap checkpoint --tenant $T --session race --label base >/dev/null
	local pids=() i
	for i in 1 2 3; do
		sbx-ctl rewind --tenant $T --session race --to base >"$BATS_TEST_TMPDIR/rw.$i" 2>&1 &
		pids+=($!)
		sbx-create --tenant $T --session race >"$BATS_TEST_TMPDIR/rs.$i" 2>&1 &
		pids+=($!)
		sbx-snap checkpoint --tenant $T --session race >"$BATS_TEST_TMPDIR/ck.$i" 2>&1 &
		pids+=($!)
	done
	sbx-reap --tenant $T --grace 0 >"$BATS_TEST_TMPDIR/rp.1" 2>&1 &
	local reaper=$! p
	for p in "${pids[@]}"; do wait "$p" || { cat "$BATS_TEST_TMPDIR"/*.*; return 1; }; done
	wait "$reaper" || cat "$BATS_TEST_TMPDIR/rp.1"   # another reaper may hold the lease
	run sbx-reap --tenant $T --grace 0
	assert_success
	assert_one_sandbox $T race
	run in_s race 'cat /workspace/r'
	assert_output r
	# Every checkpoint got its own number.
	run sbx-snap ls --tenant $T --session race
	[ "$(jqo -s 'map(.checkpoint.n) | join(",")')" = 1,2,3,4 ]
}

@test "sbx-lease end --checkpoint: the turn ends with a checkpoint; a failed one keeps the turn" {
	sbx-lease begin --tenant $T --session lt >/dev/null
	in_s lt 'echo turn >/workspace/t'
	run sbx-lease end --checkpoint --label t1 --tenant $T --session lt
	assert_success
	[ "$(jqo -r .lease.refs)" = 0 ]
	[ "$(jqo -r .lease.checkpoint.n)" = 1 ]
	[ "$(jqo -r .lease.checkpoint.label)" = t1 ]
	run sbx-snap ls --tenant $T --session lt
	[ "$(jqo -r .checkpoint.label)" = t1 ]
	# No sandbox: no checkpoint, and the turn is still held.
	sbx-lease begin --tenant $T --session lt-none >/dev/null
	run sbx-lease end --checkpoint --tenant $T --session lt-none
	[ "$status" -eq 66 ]
	run sbx-lease status --tenant $T --session lt-none
	[ "$(jqo -r .lease.refs)" = 1 ]
	sbx-lease end --tenant $T --session lt-none >/dev/null
	run sbx-lease end --label x --tenant $T --session lt
	[ "$status" -eq 64 ]
	run sbx-lease begin --checkpoint --tenant $T --session lt
	[ "$status" -eq 64 ]
}

@test "checkpoints taken while the sandbox churns its tree stack up to the tree exactly" {
	in_s churn 'mkdir -p /workspace/c && echo base >/workspace/c/base'
	sbx-snap checkpoint --tenant $T --session churn >/dev/null
	# Three seconds of files and directories made, changed, renamed and
	# removed, while checkpoints are taken.
	in_s churn 'end=$(( $(date +%s) + 3 )); i=0; cd /workspace/c
		while [ "$(date +%s)" -lt "$end" ]; do
			i=$((i+1)); mkdir -p d$((i%7))/e$((i%3)); echo $i >d$((i%7))/e$((i%3))/f$((i%5))
			echo $i >>base; rm -rf d$(((i+3)%7)); [ -d d$((i%7)) ] && mv d$((i%7)) m$((i%4)) 2>/dev/null
			rm -rf m$(((i+1)%4))
		done' &
	local writer=$! k
	for k in 1 2 3 4 5; do
		sbx-snap checkpoint --tenant $T --session churn >/dev/null
		sleep 0.3
	done
	wait "$writer"
	run sbx-snap checkpoint --tenant $T --session churn
	assert_success
	local n
	n=$(jqo -r .checkpoint.n)
	[ "$n" = 7 ]
	digest churn >"$BATS_TEST_TMPDIR/live"
	has_entries "$BATS_TEST_TMPDIR/live"
	run sbx-ctl rewind --tenant $T --session churn --to "$n"
	assert_success
	run digest churn
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/live")" ] || {
		diff <(echo "$output") "$BATS_TEST_TMPDIR/live"; return 1; }
}

@test "a chain of checkpoints deeper than a stack can mount starts again over the template" {
	# Every backend takes 76 checkpoints and rewinds to the last; only
	# local's stack layers (the chain started again is local's).
	in_s deep 'echo 0 >/workspace/n'
	local i
	for i in $(seq 1 75); do
		sbx-snap checkpoint --tenant $T --session deep >/dev/null || { echo "checkpoint $i failed"; return 1; }
	done
	in_s deep 'echo 76 >/workspace/n'
	run sbx-snap checkpoint --tenant $T --session deep
	assert_success
	run sbx-snap ls --tenant $T --session deep
	[ "$(jqo -s 'length')" = 76 ]
	if on_local; then
		# The first, and one where the chain started again: no checkpoint_of.
		[ "$(jqo -s '[.[] | select(.checkpoint.checkpoint_of == null)] | length')" = 2 ]
		local snap
		snap=$(jqo -rs '.[-1].checkpoint.snapshot')
		[ "$(jq '.layers | length' "$SBX_STATE_DIR/local/images/templates/$snap.json")" -lt 70 ]
	fi
	run sbx-ctl rewind --tenant $T --session deep --to 76
	assert_success
	run in_s deep 'cat /workspace/n'
	assert_output 76
}

# ---- Retention (issue 32): the last checkpoints_keep of a session's
# history are kept; sbx-reap unlists the older ones and every one of an
# ended session, then deletes their snapshots once nothing stacks on them
# or runs on them (common/session/checkpoint-gc.c, common/reap/reap-ckpt.c).
# Its own tenant, under a profile ck3 (the fixture's, checkpoints_keep 3).
RT=ckret

ret_profile() {
	jq -e '.profiles.ck3' "$SBX_CONFIG" >/dev/null 2>&1 && return 0
	jq '.profiles.ck3 = ((.profiles[.default_profile // "default"] // {}) + {checkpoints_keep: 3})' \
		"$SBX_CONFIG" >"$SBX_CONFIG.new" && mv "$SBX_CONFIG.new" "$SBX_CONFIG"
}

# ret_take S K: K checkpoints of session S, the i-th after writing i to
# /workspace/n; their snapshot ids, oldest first, in $BATS_TEST_TMPDIR/S.snaps.
ret_take() {
	local s=$1 k=$2 i
	ret_profile || return 1
	: >"$BATS_TEST_TMPDIR/$s.snaps"
	for i in $(seq 1 "$k"); do
		sbx-create --tenant $RT --session "$s" | sbx-exec --root --raw -- sh -c "echo $i >/workspace/n" ||
			return 1
		sbx-snap checkpoint --tenant $RT --session "$s" --label "c$i" | jq -r .checkpoint.snapshot \
			>>"$BATS_TEST_TMPDIR/$s.snaps" || return 1
	done
}

ret_listed() { sbx-snap ls --tenant $RT --session "$1" | jq -rs 'map(.checkpoint.n) | join(",")'; }
# How many of session S's snapshots the backend still has.
ret_left() { sbx-snap ls | jq -r .snapshot.id | grep -cxFf "$BATS_TEST_TMPDIR/$1.snaps" || true; }
ret_pending() { rcli hlen "sbx:{$RT}:checkpoints-gc"; }
ret_kill() {
	sbx-ctl kill --id "$(rcli get "$(skey $RT "$1" binding)" | jq -r .sandbox_id)" >/dev/null
}

@test "retention: the reaper keeps the newest checkpoints_keep; a rewind to each kept one works; the older snapshots go once nothing stacks on them" {
	ret_take keep 5
	run sbx-reap -p ck3 --tenant $RT --grace 0
	assert_success
	[ "$(jqo '.reap.checkpoints.keep')" = 3 ]
	[ "$(jqo '.reap.checkpoints.unlisted | map("\(.n) \(.reason)") | join(",")')" = \
	  "1 beyond-keep,2 beyond-keep" ]
	[ "$(ret_listed keep)" = 3,4,5 ]
	if stacks; then
		# 3 stacks on 2 and 2 on 1: not yet, not a failure.
		[ "$(jqo '[.reap.checkpoints.kept[] | select(.reason == "in-use")] | length')" = 2 ]
		[ "$(ret_pending)" = 2 ]
		[ "$(ret_left keep)" = 5 ]
	else
		# Each stands alone: both go now.
		[ "$(jqo '.reap.checkpoints.deleted | map(.n) | join(",")')" = 2,1 ]
		[ "$(ret_pending)" = 0 ]
		[ "$(ret_left keep)" = 3 ]
	fi
	run sbx-ctl rewind --tenant $RT --session keep --to 1
	[ "$status" -eq 66 ]
	local n
	for n in 3 4 5; do
		run sbx-ctl rewind --tenant $RT --session keep --to "$n"
		assert_success
		run sh -c "sbx-create --tenant $RT --session keep | sbx-exec --raw -- cat /workspace/n"
		assert_output "$n"
	done
	# A second run changes nothing that is kept.
	run sbx-reap -p ck3 --tenant $RT --grace 0
	assert_success
	[ "$(ret_listed keep)" = 3,4,5 ]
	# The session ends: everything goes, newest first, in one run.
	ret_kill keep
	run sbx-reap -p ck3 --tenant $RT --grace 0
	assert_success
	[ "$(jqo '.reap.checkpoints.unlisted | map("\(.n) \(.reason)") | join(",")')" = \
	  "3 session-ended,4 session-ended,5 session-ended" ]
	[ "$(jqo '.reap.checkpoints.deleted | length')" = "$(if stacks; then echo 5; else echo 3; fi)" ]
	[ "$(ret_listed keep)" = "" ]
	[ "$(ret_left keep)" = 0 ]
	[ "$(ret_pending)" = 0 ]
}

@test "retention: a dry run collects nothing; an ended session's checkpoints are all collected; --grace keeps young ones" {
	ret_take ended 2
	ret_kill ended
	run sbx-reap -p ck3 --tenant $RT --grace 1h
	assert_success
	[ "$(jqo '.reap.checkpoints.unlisted | length')" = 0 ]
	[ "$(ret_listed ended)" = 1,2 ]
	run sbx-reap -p ck3 --tenant $RT --grace 0 --dry-run
	assert_success
	[ "$(jqo '.reap.checkpoints.would_unlist | map(.n) | join(",")')" = 1,2 ]
	[ "$(jqo '.reap.checkpoints.would_delete | length')" = 2 ]
	[ "$(ret_listed ended)" = 1,2 ]
	[ "$(ret_left ended)" = 2 ]
	[ "$(ret_pending)" = 0 ]
	run sbx-reap -p ck3 --tenant $RT --grace 0 --metrics-file "$BATS_TEST_TMPDIR/m.prom"
	assert_success
	[ "$(jqo '.reap.checkpoints.deleted | length')" = 2 ]
	grep -qx 'sbx_reap_checkpoints_deleted 2' "$BATS_TEST_TMPDIR/m.prom"
	[ "$(ret_listed ended)" = "" ]
	[ "$(ret_left ended)" = 0 ]
}

# A reaper run of the retention tenant killed with -9 at test point $1
# (short lock and lease TTLs, so the next run need not wait long).
reap_killed_at() {
	SBX_LOCK_TTL_MS=400 SBX_REAP_LEASE_TTL=1s SBX_FAULT=$1 \
		run sbx-reap -p ck3 --tenant $RT --grace 0
	[ "$status" -eq 137 ] || { echo "not killed (status $status): $output"; return 1; }
}
# Wait (bounded) for the killed reaper's lease to expire.
wait_reap_lease_gone() {
	local i
	for i in $(seq 1 50); do
		[ -z "$(rcli --scan --pattern 'sbx:reap:lease*')" ] && break
		sleep 0.1
	done
}

@test "retention: a reaper killed with -9 after the unlist leaves pending checkpoints that the next run deletes" {
	ret_take crash 5
	ret_kill crash
	reap_killed_at reap:checkpoint-unlisted
	# Out of the history, not yet deleted: recorded as pending.
	[ "$(ret_listed crash)" = "" ]
	[ "$(ret_pending)" = 5 ]
	[ "$(ret_left crash)" = 5 ]
	wait_reap_lease_gone
	run sbx-reap -p ck3 --tenant $RT --grace 0
	assert_success
	[ "$(jqo '.reap.checkpoints.deleted | length')" = 5 ]
	[ "$(ret_left crash)" = 0 ]
	[ "$(ret_pending)" = 0 ]
}

@test "retention: a checkpoint's snapshot a live sandbox runs on waits for it, and so does what it stacks on" {
	ret_take used 3
	local snap2 other
	snap2=$(sed -n 2p "$BATS_TEST_TMPDIR/used.snaps")
	other=$(sbx-create --template "$snap2" | jq -r .sandbox.id)
	[ -n "$other" ] && [ "$other" != null ]
	ret_kill used
	run sbx-reap -p ck3 --tenant $RT --grace 0
	assert_success
	[ "$(ret_listed used)" = "" ]
	if stacks; then
		[ "$(jqo '.reap.checkpoints.deleted | map(.n) | join(",")')" = 3 ]
		[ "$(jqo '.reap.checkpoints.kept | map("\(.n) \(.reason)") | join(",")')" = "2 in-use,1 in-use" ]
		[ "$(ret_left used)" = 2 ]
		[ "$(ret_pending)" = 2 ]
	else
		# 1 stands alone: only 2, which the sandbox runs on, waits.
		[ "$(jqo '.reap.checkpoints.deleted | map(.n) | join(",")')" = 3,1 ]
		[ "$(jqo '.reap.checkpoints.kept | map("\(.n) \(.reason)") | join(",")')" = "2 in-use" ]
		[ "$(ret_left used)" = 1 ]
		[ "$(ret_pending)" = 1 ]
	fi
	# The sandbox still starts from it; once it is gone, both go.
	run sbx-exec --id "$other" --raw -- cat /workspace/n
	assert_output 2
	sbx-ctl kill --id "$other" >/dev/null
	run sbx-reap -p ck3 --tenant $RT --grace 0
	assert_success
	[ "$(jqo '.reap.checkpoints.deleted | map(.n) | join(",")')" = "$(if stacks; then echo 2,1; else echo 2; fi)" ]
	[ "$(ret_left used)" = 0 ]
	[ "$(ret_pending)" = 0 ]
}

@test "retention: a reaper killed with -9 right after a snapshot's delete; the next run finds it gone and finishes" {
	ret_take crash2 2
	ret_kill crash2
	reap_killed_at reap:checkpoint-deleted
	[ "$(ret_listed crash2)" = "" ]
	[ "$(ret_left crash2)" = 1 ]
	[ "$(ret_pending)" = 2 ]
	wait_reap_lease_gone
	run sbx-reap -p ck3 --tenant $RT --grace 0
	assert_success
	[ "$(jqo '.reap.checkpoints.deleted | map("\(.n) \(.already_gone // false)") | join(",")')" = \
	  "2 true,1 false" ]
	[ "$(ret_left crash2)" = 0 ]
	[ "$(ret_pending)" = 0 ]
}

# ---- A checkpoint cut short (kill -9 between its snapshot and its
# history entry): the snapshot was recorded as planned under its session
# before it existed (checkpoint.c), so the reaper finds it by its planned
# name and collects it.  Its own tenant: the reaper runs over all of it.
KT=ckkill
snaps_now() { sbx-snap ls | jq -r .snapshot.id | LC_ALL=C sort; }
planned() { rcli hlen "sbx:{$KT}:checkpoints-planned"; }

@test "a checkpoint killed with -9 after its snapshot, before its entry: the reaper collects the snapshot" {
	sbx-create --tenant $KT --session k1 | sbx-exec --raw -- sh -c 'echo x >/workspace/x'
	local before left
	before=$(snaps_now)
	SBX_LOCK_TTL_MS=400 SBX_FAULT=checkpoint:snapshotted run sbx-snap checkpoint --tenant $KT --session k1
	[ "$status" -eq 137 ] || { echo "not killed (status $status): $output"; return 1; }
	# Made, in no history, planned under the session.
	run sbx-snap ls --tenant $KT --session k1
	assert_output ""
	left=$(comm -13 <(echo "$before") <(snaps_now))
	[ "$(grep -c . <<<"$left")" = 1 ] || { echo "new snapshots: $left"; return 1; }
	[ "$(planned)" = 1 ]
	[ "$(rcli hvals "sbx:{$KT}:checkpoints-planned" | jq -r .session)" = k1 ]
	wait_key_gone "$(skey $KT k1 lock)"
	# A dry run says so and changes nothing.
	run sbx-reap --tenant $KT --grace 0 --dry-run
	assert_success
	[ "$(jqo -r '.reap.checkpoints.would_unlist | map("\(.session) \(.snapshot) \(.reason)") | join(",")')" = \
	  "k1 $left interrupted" ]
	[ "$(planned)" = 1 ]
	run sbx-reap --tenant $KT --grace 0
	assert_success
	[ "$(jqo -r '.reap.checkpoints.unlisted | map("\(.session) \(.snapshot) \(.reason)") | join(",")')" = \
	  "k1 $left interrupted" ]
	[ "$(jqo -r '.reap.checkpoints.deleted | map(.snapshot) | join(",")')" = "$left" ]
	[ "$(planned)" = 0 ]
	[ "$(rcli hlen "sbx:{$KT}:checkpoints-gc")" = 0 ]
	run snaps_now
	[ "$output" = "$before" ]
	# The session goes on: its next checkpoint is its first.
	run sbx-snap checkpoint --tenant $KT --session k1
	assert_success
	[ "$(jqo .checkpoint.n)" = 1 ]
	[ "$(planned)" = 0 ]
}

@test "a checkpoint killed with -9 before its snapshot: the reaper drops the plan" {
	sbx-create --tenant $KT --session k2 >/dev/null
	local before
	before=$(snaps_now)
	SBX_LOCK_TTL_MS=400 SBX_FAULT=checkpoint:planned run sbx-snap checkpoint --tenant $KT --session k2
	[ "$status" -eq 137 ] || { echo "not killed (status $status): $output"; return 1; }
	[ "$(planned)" = 1 ]
	wait_key_gone "$(skey $KT k2 lock)"
	run sbx-reap --tenant $KT --grace 0
	assert_success
	[ "$(planned)" = 0 ]
	[ "$(jqo '.reap.checkpoints.unlisted | length')" = 0 ]
	run snaps_now
	[ "$output" = "$before" ]
}

@test "a checkpoint still running (its lock held) keeps its plan; one whose lock expired loses its snapshot to the reaper and records nothing" {
	sbx-create --tenant $KT --session k4 >/dev/null
	local before
	before=$(snaps_now)
	# Stopped after its snapshot, its lock held: the reaper leaves it.
	SBX_STOP=checkpoint:snapshotted sbx-snap checkpoint --tenant $KT --session k4 \
		>"$BATS_TEST_TMPDIR/a.out" 2>"$BATS_TEST_TMPDIR/a.err" &
	a=$!
	wait_stopped "$a"
	run sbx-reap --tenant $KT --grace 0
	assert_success
	[ "$(jqo -r '.reap.checkpoints.skipped | map(.reason) | join(",")')" = checkpoint-running ]
	[ "$(planned)" = 1 ]
	kill -CONT "$a"
	wait "$a"
	[ "$(jq .checkpoint.n "$BATS_TEST_TMPDIR/a.out")" = 1 ]
	[ "$(planned)" = 0 ]
	# Stopped there again, until its lock expired: the reaper takes the
	# snapshot; the holder, woken, appends nothing (its lock is lost) and
	# leaves nothing behind.
	before=$(snaps_now)
	freeze_holder checkpoint:snapshotted $KT k4 sbx-snap checkpoint --tenant $KT --session k4
	run sbx-reap --tenant $KT --grace 0
	assert_success
	[ "$(jqo -r '.reap.checkpoints.unlisted | map(.reason) | join(",")')" = interrupted ]
	[ "$(jqo '.reap.checkpoints.deleted | length')" = 1 ]
	[ "$(planned)" = 0 ]
	kill -CONT "$a"
	local st=0
	wait "$a" || st=$?
	[ "$st" -eq 75 ] || { echo "status $st"; cat "$BATS_TEST_TMPDIR/a.err"; return 1; }
	run sbx-snap ls --tenant $KT --session k4
	[ "$(jqo -s 'map(.checkpoint.n) | join(",")')" = 1 ]
	run snaps_now
	[ "$output" = "$before" ]
	[ "$(planned)" = 0 ]
}

@test "checkpoints killed with -9 at random moments (real kills): after the reaper, every snapshot left is in the history" {
	sbx-create --tenant $KT --session k3 | sbx-exec --raw -- sh -c \
		'dd if=/dev/urandom of=/workspace/big bs=1M count=16 2>/dev/null'
	local before d pid
	before=$(snaps_now)
	for d in 0.05 0.1 0.15 0.2 0.3 0.5; do
		sbx-create --tenant $KT --session k3 | sbx-exec --raw -- sh -c "echo $d >>/workspace/big" || return 1
		SBX_LOCK_TTL_MS=400 sbx-snap checkpoint --tenant $KT --session k3 >/dev/null 2>&1 &
		pid=$!
		sleep "$d"
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		wait_key_gone "$(skey $KT k3 lock)"
	done
	run sbx-reap --tenant $KT --grace 0
	assert_success
	[ "$(planned)" = 0 ]
	# Every new snapshot is a checkpoint of the history, and the history
	# names only snapshots that exist.
	local hist
	hist=$(sbx-snap ls --tenant $KT --session k3 | jq -r .checkpoint.snapshot | LC_ALL=C sort)
	run comm -13 <(echo "$before") <(snaps_now)
	[ "$output" = "$hist" ] || { echo "left: $output; history: $hist"; return 1; }
}
