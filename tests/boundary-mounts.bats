#!/usr/bin/env bats
# The sandbox's mounts hold no usable device but the allow-listed ones:
# every writable mount is nodev and nosuid, except /dev/pts (its nodes are
# the sandbox's own ptys); /dev is read-only and holds only null, zero,
# full, random, urandom, tty, ptmx and pts (plus shm and the fd links).
# A device node planted in a layer (a hostile template, a snapshot, the
# sandbox's own upper dir) cannot be opened inside, by anyone.  Local
# backend only: these are its mounts.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	SB=$(sbx_new --label suite=mounts | jq -r .sandbox.id)
	export SB
}
teardown_file() { sbx_teardown_file; }

@test "every writable mount is nodev and nosuid, except /dev/pts (nosuid)" {
	# Field 5 is the mount point, field 6 its per-mount options.  The
	# masks over /proc files are file binds: nothing can be made in them.
	run sbx-exec --id "$SB" -- awk '
		$5 ~ "^/proc/" { next }
		{ split($6, o, ","); rw = 0; nodev = 0; nosuid = 0
		  for (i in o) { rw += o[i] == "rw"; nodev += o[i] == "nodev"; nosuid += o[i] == "nosuid" }
		  if (!nosuid) print "suid " $5
		  if (rw && !nodev && $5 != "/dev/pts") print "dev " $5 }' /proc/self/mountinfo
	assert_success
	[ "$(jqo .exec.exit_code)" = 0 ]
	[ "$(jqo .exec.stdout)" = "" ]
	# ... and the root and /dev are where they should be.
	run sbx-exec --id "$SB" -- awk '$5 == "/" || $5 == "/dev" { print $5, $6 }' /proc/self/mountinfo
	[[ "$(jqo .exec.stdout)" == *"/ rw,nosuid,nodev"* ]]
	[[ "$(jqo .exec.stdout)" == *"/dev ro,nosuid"* ]]
}

@test "/dev holds only the allow-listed nodes, and nothing can be made in it" {
	run sbx-exec --id "$SB" -- ls -A /dev
	assert_success
	[ "$(jqo .exec.stdout | grep . | sort | tr '\n' ' ')" = \
	  "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero " ]
	# Root tries to add a node, a file, to remove one: read-only.
	run sbx-exec --id "$SB" --root -- sh -c '
		mknod /dev/mem2 c 1 1 2>/dev/null && echo made-node
		touch /dev/x 2>/dev/null && echo made-file
		rm -f /dev/null 2>/dev/null; [ -c /dev/null ] || echo removed
		mkdir /dev/d 2>/dev/null && echo made-dir
		echo done'
	[ "$(jqo .exec.stdout)" = "done" ]
	# The allow-listed nodes work, for uid 1000 too.
	run sbx-exec --id "$SB" -- sh -c 'echo x >/dev/null && head -c 4 /dev/zero | wc -c &&
		head -c 4 /dev/urandom | wc -c && head -c 1 /dev/full | wc -c'
	[ "$(jqo .exec.stdout | grep . | tr "\n" " ")" = "4 4 1 " ]
}

@test "a device node planted in the sandbox's layer cannot be opened, even by root" {
	local id upper
	id=$(sbx_new --label suite=mounts-plant | jq -r .sandbox.id)
	upper=$SBX_STATE_DIR/local/sandboxes/$id/upper
	# /dev/zero's numbers, mode 0666, as a hostile template or snapshot
	# layer would carry it; no one inside has looked the name up yet.
	mknod -m 0666 "$upper/workspace/zero" c 1 5
	mknod -m 0666 "$upper/home/user/zero" c 1 5
	run sbx-exec --id "$id" -- sh -c '
		for n in /workspace/zero /home/user/zero; do
			[ -c $n ] || echo "$n missing"
			head -c 1 $n >/dev/null 2>&1 && echo "$n opened"
		done; echo end'
	assert_success
	[ "$(jqo .exec.stdout)" = "end" ]
	run sbx-exec --id "$id" --root -- sh -c 'head -c 1 /workspace/zero >/dev/null && echo opened'
	[ "$(jqo .exec.stdout)" = "" ]
	[[ "$(jqo .exec.stderr)" == *"ermission denied"* ]]
}

@test "root cannot make a usable device node in any writable place" {
	# CAP_MKNOD may refuse the node; if it does not, the mount must.
	run sbx-exec --id "$SB" --root -- sh -c '
		for d in /workspace /tmp /var/tmp /home/user /root /dev/shm /opt; do
			mknod $d/zero c 1 5 2>/dev/null && chmod 666 $d/zero
			head -c 1 $d/zero >/dev/null 2>&1 && echo "$d opened"
			rm -f $d/zero
		done; echo end'
	assert_success
	[ "$(jqo .exec.stdout)" = "end" ]
}

@test "setuid bits are inert: /dev/shm is noexec, and the root is nosuid" {
	# A setuid-root copy of id, made by root inside, run by uid 1000.
	run sbx-exec --id "$SB" --root -- sh -c 'cp "$(command -v id)" /workspace/suid-id &&
		chmod 4755 /workspace/suid-id && echo ok'
	[ "$(jqo .exec.stdout)" = "ok" ]
	run sbx-exec --id "$SB" -- /workspace/suid-id -u
	[ "$(jqo .exec.stdout)" = "1000" ]
	run sbx-exec --id "$SB" -- sh -c 'cp "$(command -v true)" /dev/shm/t && /dev/shm/t 2>/dev/null && echo ran'
	[ "$(jqo .exec.stdout)" = "" ]
}
