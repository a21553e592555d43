#!/usr/bin/env bats
# Local images: templates and snapshots as immutable layer stacks, on the
# real local backend (namespaces, overlayfs, cgroup freezer; needs root).
# A busybox rootfs (tests/lib/rootfs.sh) is the base of every sandbox here:
# the builtin `host` template cannot carry snapshot layers on a state dir
# that shares the root filesystem (see the last tests).

load lib/helpers
load lib/images

setup_file() {
	sbx_setup_file
	export ROOTFS_TAR="$SBX_TEST_DIR/rootfs.tar" ROOTFS_DIR="$SBX_TEST_DIR/rootfs"
	export SBX_LIST="$SBX_TEST_DIR/sandboxes.ndjson"
	"$SBX_TOP/tests/lib/rootfs.sh" "$ROOTFS_TAR"
	"$SBX_TOP/tests/lib/rootfs.sh" --dir "$ROOTFS_DIR"
	sbx-tpl import bb --dir "$ROOTFS_DIR" >/dev/null
}

teardown_file() {
	[ -f "${SBX_LIST:-/nonexistent}" ] && sbx-ctl kill <"$SBX_LIST" >/dev/null 2>&1
	sbx_teardown_file
}

IMAGES() { echo "$SBX_STATE_DIR/local/images"; }

# new_sb TEMPLATE -> path of a file holding the sandbox's document.
new_sb() {
	local f
	f=$(mktemp "$BATS_TEST_TMPDIR/sb.XXXXXX")
	sbx-create --template "$1" >"$f" || return 1
	cat "$f" >>"$SBX_LIST"
	echo "$f"
}
# The tree as its processes see it: names, types, modes, owners, sizes,
# file mtimes and contents, one line each, sorted.  (Directory mtimes are
# left out: create refreshes /workspace, /tmp and friends in every new
# sandbox's own layer.)
TREE='cd / && find bin etc home opt root tmp workspace usr sbin var -xdev 2>/dev/null | sort |
	while read -r f; do stat -c "%n %F %a %u %g %s" "$f"
	if [ -f "$f" ]; then stat -c %Y "$f"; md5sum "$f"; fi; done'

@test "import a busybox rootfs tarball, create from it, and id user works" {
	run sbx-tpl import bbtar --file "$ROOTFS_TAR"
	assert_success
	[ "$(jqo .template.id)" = bbtar ]
	[ "$(jqo .template.kind)" = rootfs ]
	[ "$(jqo .template.size_bytes)" -gt 1000000 ]
	run sbx-tpl import bbstdin - <"$ROOTFS_TAR"
	assert_success
	d=$(new_sb bbtar)
	run sb "$d" id user
	assert_success
	assert_output "uid=1000(user) gid=1000(user) groups=1000(user)"
	run sb "$d" --root stat -c '%u %g %a' /home/user /bin/busybox /tmp
	assert_output $'1000 1000 755\n0 0 755\n0 0 1777'
	sb_kill "$d"
}

@test "import --dir keeps owners, modes, links, xattrs and whiteouts in the layer" {
	src="$BATS_TEST_TMPDIR/src"
	mkdir -p "$src/a/b"
	echo data >"$src/a/b/f"
	chmod 4755 "$src/a/b/f"
	ln "$src/a/b/f" "$src/a/hard"
	ln -s b/f "$src/a/soft"
	chown -h 1000:1000 "$src/a/b" "$src/a/soft"
	mknod "$src/gone" c 0 0
	mkfifo "$src/fifo"
	python3 -c "import os; os.setxattr('$src/a', 'trusted.overlay.opaque', b'y'); os.setxattr('$src/a/b/f', 'user.k', b'v')"
	touch -h -d '2001-02-03 04:05:06' "$src/a/soft" "$src/a/b/f"
	run sbx-tpl import folder --dir "$src"
	assert_success
	[ "$(jqo .template.kind)" = folder ]
	lid=$(jq -r '.layers[0]' "$(IMAGES)/templates/folder.json")
	L="$(IMAGES)/layers/$lid"
	[ "$(stat -c '%a %u %g %s %Y' "$L/a/b/f")" = "$(stat -c '%a %u %g %s %Y' "$src/a/b/f")" ]
	[ "$(stat -c %i "$L/a/b/f")" = "$(stat -c %i "$L/a/hard")" ]
	[ "$(readlink "$L/a/soft")" = b/f ]
	[ "$(stat -c '%u %g %Y' "$L/a/soft")" = "$(stat -c '%u %g %Y' "$src/a/soft")" ]
	[ "$(stat -c '%u %g' "$L/a/b")" = "1000 1000" ]
	[ "$(stat -c '%F %t:%T' "$L/gone")" = "character special file 0:0" ]
	[ "$(stat -c %F "$L/fifo")" = fifo ]
	run python3 -c "import os; print(os.getxattr('$L/a', 'trusted.overlay.opaque'), os.getxattr('$L/a/b/f', 'user.k'))"
	assert_output "b'y' b'v'"
}

@test "template names are validated, duplicates are a conflict, host stays" {
	for bad in snap-x Bad host .x ''; do
		run sbx-tpl import "$bad" --dir "$ROOTFS_DIR"
		[ "$status" -eq 65 ] || { echo "$bad: $status $output"; false; }
	done
	run sbx-tpl import bb --dir "$ROOTFS_DIR"
	[ "$status" -eq 75 ]
	[ "$(jqd .error.kind)" = conflict ]
	run sbx-tpl rm host
	[ "$status" -eq 65 ]
	run sbx-tpl show host
	assert_success
	[ "$(jqo .template.kind)" = builtin ]
}

@test "a snapshot carries the sandbox's new files; the source keeps running and its later writes stay out" {
	d=$(new_sb bb)
	sb "$d" sh -c 'echo one >/workspace/a && mkdir -p /workspace/dir && echo two >/workspace/dir/b'
	snap "$d" --name first; sid=$SID
	[[ $sid == snap-* ]]
	[ "$(printf '%s' "$SNAPDOC" | jq -r .snapshot.name)" = first ]
	[ "$(printf '%s' "$SNAPDOC" | jq -r .snapshot.parent)" = bb ]
	[ "$(printf '%s' "$SNAPDOC" | jq -r .snapshot.layers)" = 2 ]
	[ "$(printf '%s' "$SNAPDOC" | jq -r .sandbox.id)" = "$(jq -r .sandbox.id "$d")" ]
	# The source is not frozen and keeps writing.
	run sb "$d" sh -c 'echo three >/workspace/later && cat /workspace/a'
	assert_success
	assert_output one
	n=$(new_sb "$sid")
	run sb "$n" cat /workspace/a /workspace/dir/b
	assert_output $'one\ntwo'
	run sb "$n" ls /workspace/later
	assert_failure
	# A write in the new sandbox does not reach the source either.
	sb "$n" sh -c 'echo mine >/workspace/a'
	run sb "$d" cat /workspace/a
	assert_output one
	sb_kill "$n"
	sb_kill "$d"
}

@test "deleted files stay deleted and replaced directories stay replaced" {
	d=$(new_sb bb)
	sb "$d" --root sh -c 'rm /etc/hostname && rm -rf /usr/bin && mkdir /usr/bin && echo new >/usr/bin/only'
	snap "$d"; sid=$SID
	n=$(new_sb "$sid")
	run sb "$n" ls /etc/hostname
	assert_failure
	run sb "$n" ls /usr/bin
	assert_output only
	run sb "$n" cat /etc/passwd
	assert_success
	sb_kill "$n"
	sb_kill "$d"
}

@test "a snapshot of a snapshot-based sandbox stacks (layers=3) and lists with names" {
	d=$(new_sb bb)
	sb "$d" sh -c 'echo 1 >/workspace/one'
	snap "$d" --name level1; s1=$SID
	n=$(new_sb "$s1")
	sb "$n" sh -c 'echo 2 >/workspace/two && rm /workspace/one'
	snap "$n" --name level2; s2=$SID
	[ "$(printf '%s' "$SNAPDOC" | jq -r .snapshot.layers)" = 3 ]
	[ "$(printf '%s' "$SNAPDOC" | jq -r .snapshot.parent)" = "$s1" ]
	m=$(new_sb "$s2")
	run sb "$m" sh -c 'ls /workspace/one; cat /workspace/two'
	assert_output --partial 2
	assert_output --partial 'No such file'
	run sbx-snap ls
	assert_success
	[ "$(jqo "select(.snapshot.id == \"$s2\") | .snapshot.name")" = level2 ]
	[ "$(jqo "select(.snapshot.id == \"$s1\") | .snapshot.layers")" = 2 ]
	run sbx-snap show "$s2"
	[ "$(jqo .snapshot.size_bytes)" -ge 2 ]
	# Template listings never show snapshots.
	run sbx-tpl ls
	assert_success
	refute_output --partial snap-
	refute_output --partial level
	[ "$(jqo -s 'map(.template.id) | index("host") != null and index("bb") != null')" = true ]
	for x in "$m" "$n" "$d"; do sb_kill "$x"; done
}

@test "rm of an image in use is a conflict (75); rm of a missing one succeeds" {
	sbx-tpl import base2 --dir "$ROOTFS_DIR" >/dev/null
	d=$(new_sb base2)
	run sbx-tpl rm base2
	[ "$status" -eq 75 ]
	[ "$(jqd .error.kind)" = conflict ]
	snap "$d"; s1=$SID
	sb_kill "$d"
	run sbx-tpl rm base2            # the snapshot stacks on it
	[ "$status" -eq 75 ]
	n=$(new_sb "$s1")
	run sbx-snap rm "$s1"           # a sandbox was created from it
	[ "$status" -eq 75 ]
	snap "$n"; s2=$SID
	sb_kill "$n"
	run sbx-snap rm "$s1"           # another snapshot stacks on it
	[ "$status" -eq 75 ]
	run sbx-tpl rm "$s1"            # the wrong program for a snapshot
	[ "$status" -eq 65 ]
	run sbx-snap rm "$s1" --force   # with the ones stacked on it
	assert_success
	[ "$(jqo -s 'map(.snapshot.id) | join(" ")')" = "$s2 $s1" ]
	run sbx-tpl rm base2
	assert_success
	[ "$(jqo .template.deleted)" = true ]
	run sbx-tpl rm base2
	assert_success
	[ "$(jqo .template.gone)" = true ]
	run sbx-snap rm snap-000000000000
	assert_success
	[ "$(jqo .snapshot.gone)" = true ]
	# Nothing references the layers any more: they are gone from disk.
	for l in "$(IMAGES)"/layers/*; do
		grep -rqF "\"$(basename "$l")\"" "$(IMAGES)"/templates/ || { echo "orphan $l"; false; }
	done
}

@test "flatten yields one layer with the same content, independent of its source" {
	d=$(new_sb bb)
	sb "$d" --root sh -c 'echo a >/workspace/a; mkdir -p /opt/t; echo x >/opt/t/x; rm /etc/hostname'
	snap "$d"; s1=$SID
	n=$(new_sb "$s1")
	sb "$n" --root sh -c 'rm -rf /opt/t; mkdir /opt/t; echo y >/opt/t/y; echo b >/workspace/b; ln /workspace/b /workspace/bb'
	snap "$n"; s2=$SID
	run sbx-snap flatten "$s2" --name flat
	assert_success
	f=$(jqo .snapshot.id)
	[ "$(jqo .snapshot.layers)" = 1 ]
	[ "$(jqo .snapshot.name)" = flat ]
	[ "$(jqo .snapshot.flattened_from)" = "$s2" ]
	a=$(new_sb "$s2")
	b=$(new_sb "$f")
	sb "$a" --root sh -c "$TREE" >"$BATS_TEST_TMPDIR/stack"
	sb "$b" --root sh -c "$TREE" >"$BATS_TEST_TMPDIR/flat"
	run diff "$BATS_TEST_TMPDIR/stack" "$BATS_TEST_TMPDIR/flat"
	assert_success
	grep -q '^workspace/b ' "$BATS_TEST_TMPDIR/flat"
	grep -q '^opt/t/y ' "$BATS_TEST_TMPDIR/flat"
	run grep -E '^(opt/t/x|etc/hostname) ' "$BATS_TEST_TMPDIR/flat"
	assert_failure
	# The flat image does not need its sources.
	for x in "$a" "$n" "$d"; do sb_kill "$x"; done
	run sbx-snap rm "$s1" --force
	assert_success
	run sb "$b" cat /opt/t/y /workspace/b
	assert_output $'y\nb'
	sb_kill "$b"
}

@test "resolv.conf: a snapshot's own is kept as it is (mtime too); one its root rewrote, or hid under an opaque /etc, is replaced" {
	d=$(new_sb bb)
	sb "$d" --root touch -d @1000000000 /etc/resolv.conf
	want=$(sb "$d" cat /etc/resolv.conf)
	snap "$d"; s1=$SID
	# sbx's own file in the image: the new sandbox sees it, nothing rewritten
	n=$(new_sb "$s1")
	run sb "$n" stat -c '%Y %a %u' /etc/resolv.conf
	assert_output '1000000000 644 0'
	# Its root points the resolver elsewhere: the next sandbox gets sbx's
	sb "$n" --root sh -c 'echo "nameserver 169.254.169.254" >/etc/resolv.conf'
	snap "$n"; s2=$SID
	m=$(new_sb "$s2")
	run sb "$m" cat /etc/resolv.conf
	assert_output "$want"
	# Its root replaces /etc (opaque in the snapshot): the copy below is
	# hidden, so the next sandbox gets the file written again
	sb "$n" --root sh -c 'cp -a /etc /tmp/e && rm -rf /etc && mkdir /etc && cp -a /tmp/e/passwd /tmp/e/group /etc/'
	snap "$n"; s3=$SID
	o=$(new_sb "$s3")
	run sb "$o" cat /etc/resolv.conf
	assert_output "$want"
	for x in "$o" "$m" "$n" "$d"; do sb_kill "$x"; done
}

@test "a crash while frozen leaves the sandbox paused, then it resumes; no half snapshot appears" {
	d=$(new_sb bb)
	sb "$d" sh -c 'echo a >/workspace/a'
	before=$(sbx-snap ls | wc -l)
	run env SBX_FAULT=snapshot-frozen sbx-snap <"$d"
	[ "$status" -eq 137 ]
	[ "$(sbx-snap ls | wc -l)" = "$before" ]
	run sb "$d" cat /workspace/a    # auto-resume
	assert_success
	assert_output a
	run env SBX_FAULT=image-commit sbx-snap <"$d"
	[ "$status" -eq 137 ]
	[ "$(sbx-snap ls | wc -l)" = "$before" ]
	snap "$d"; sid=$SID                # a commit collects dead work dirs
	[ -z "$(ls -A "$(IMAGES)/tmp" | grep -v '^\.')" ]
	run sbx-snap rm "$sid"            # a delete collects unnamed layers
	assert_success
	for l in "$(IMAGES)"/layers/*; do
		grep -rqF "\"$(basename "$l")\"" "$(IMAGES)"/templates/ || { echo "orphan $l"; false; }
	done
	sb_kill "$d"
}

# The snapshot's pre-copy runs while the sandbox does; only what changed
# after it began is copied again while frozen.  Stopped right after the
# pre-copy (SBX_STOP), the sandbox edits, grows, removes, renames, chmods,
# hard-links and makes new trees: the snapshot holds the state at the
# freeze, byte for byte, and nothing of what was removed.
LIVE='cd /workspace/t && find . | sort | while read -r f; do stat -c "%n %F %a %u %g %s %h" "$f"
	if [ -f "$f" ]; then stat -c %Y "$f"; md5sum "$f"; fi; done'
@test "what changes between a snapshot's pre-copy and its freeze is in the snapshot" {
	d=$(new_sb bb)
	sb "$d" --root sh -c 'mkdir -p /workspace/t/gone /workspace/t/keep && echo old >/workspace/t/edit &&
		echo x >/workspace/t/gone/f && echo same >/workspace/t/keep/k && echo r >/workspace/t/rename-me &&
		echo m >/workspace/t/mode && echo h >/workspace/t/hard1 && echo s >/workspace/t/shrink'
	SBX_STOP=image:snapshot-precopied sbx-snap <"$d" >"$BATS_TEST_TMPDIR/snap" &
	pid=$!
	wait_stopped "$pid"
	[ "$(awk '/^State:/ {print $2}' /proc/$pid/status)" = T ]
	sb "$d" --root sh -c 'echo new-and-longer >/workspace/t/edit && rm -r /workspace/t/gone &&
		echo born >/workspace/t/new && mv /workspace/t/rename-me /workspace/t/renamed &&
		chmod 600 /workspace/t/mode && mkdir -p /workspace/t/newdir/deep && echo d >/workspace/t/newdir/deep/f &&
		ln /workspace/t/hard1 /workspace/t/hard2 && : >/workspace/t/shrink && chown 1000 /workspace/t/keep'
	kill -CONT "$pid"
	wait "$pid"
	sb "$d" --root sh -c "$LIVE" >"$BATS_TEST_TMPDIR/live"
	sid=$(jq -r .snapshot.id <"$BATS_TEST_TMPDIR/snap")
	n=$(new_sb "$sid")
	sb "$n" --root sh -c "$LIVE" >"$BATS_TEST_TMPDIR/copy"
	run diff "$BATS_TEST_TMPDIR/live" "$BATS_TEST_TMPDIR/copy"
	assert_success
	grep -q '^./renamed ' "$BATS_TEST_TMPDIR/copy"
	grep -q '^./hard2 .* 2$' "$BATS_TEST_TMPDIR/copy"
	run grep -E '^./(gone|rename-me)' "$BATS_TEST_TMPDIR/copy"
	assert_failure
	sb_kill "$n"
	sb_kill "$d"
	sbx-snap rm "$sid" >/dev/null
}

# A write through a shared mapping moves ctime only at the first write
# fault on a clean page: a page dirtied before the pre-copy takes a second
# write silently, unless the pre-copy made it clean first (syncfs).
@test "a write through a shared mapping between the pre-copy and the freeze is in the snapshot" {
	gcc -static -O2 -o "$BATS_TEST_TMPDIR/mmapw" "$SBX_TOP/tests/lib/mmapw.c"
	d=$(new_sb bb)
	sbx-fs put --root "$BATS_TEST_TMPDIR/mmapw" /workspace/mmapw <"$d" >/dev/null
	sb "$d" --root sh -c 'mkdir -p /workspace/t && chmod 755 /workspace/mmapw'
	sbx-proc start --root -- /workspace/mmapw /workspace/t/m /workspace/t <"$d" >/dev/null
	wait_path "$d" /workspace/t/ready
	sb "$d" --root test -e /workspace/t/ready
	SBX_STOP=image:snapshot-precopied sbx-snap <"$d" >"$BATS_TEST_TMPDIR/snap" &
	pid=$!
	wait_stopped "$pid"
	[ "$(awk '/^State:/ {print $2}' /proc/$pid/status)" = T ]
	sb "$d" --root touch /workspace/t/go
	wait_path "$d" /workspace/t/done
	sb "$d" --root test -e /workspace/t/done
	kill -CONT "$pid"
	wait "$pid"
	sid=$(jq -r .snapshot.id <"$BATS_TEST_TMPDIR/snap")
	n=$(new_sb "$sid")
	run sb "$n" --root head -c 1 /workspace/t/m
	assert_success
	assert_output B
	sb_kill "$n"
	sb_kill "$d"
	sbx-snap rm "$sid" >/dev/null
}

@test "an import that crashes is never visible and its name stays free" {
	run env SBX_FAULT=image-commit sbx-tpl import crashy --dir "$ROOTFS_DIR"
	[ "$status" -eq 137 ]
	run sbx-tpl show crashy
	[ "$status" -eq 66 ]
	run sbx-tpl import crashy --dir "$ROOTFS_DIR"
	assert_success
	run sbx-tpl rm crashy
	assert_success
}

@test "a snapshot over the host template on the root filesystem mounts, keeps its files, hides the host's" {
	# overlayfs refuses a lower layer inside another lower layer of the
	# same filesystem; the host's / enters the stack through a view of its
	# own (local-init.c), so this must work with the state dir under /.
	[ "$(stat -c %d "$SBX_STATE_DIR")" = "$(stat -c %d /)" ] || skip "state dir is on another filesystem"
	d=$(new_sb host)
	sbx-exec --check -- sh -c 'echo kept > /workspace/k; mkdir -p /home/user/.cache; echo mine > /home/user/.cache/m' <"$d" >/dev/null
	snap "$d"
	d2=$(new_sb "$SID")
	run sbx-exec --check -- sh -c 'cat /workspace/k /home/user/.cache/m; ls -A /tmp | wc -l; test -e /etc/shadow && echo SHADOW; ls /tmp/sbx-test.* 2>&1 | head -1' <"$d2"
	assert_success
	[ "$(jqd -r .exec.stdout | sed -n 1p)" = kept ]
	[ "$(jqd -r .exec.stdout | sed -n 2p)" = mine ]
	[ "$(jqd -r .exec.stdout | sed -n 3p)" = 0 ]
	[[ "$(jqd -r .exec.stdout)" != *SHADOW* ]]
	[ "$(rcli ping)" = PONG ]     # the host sees its Redis...
	run sbx-exec -- sh -c "test -S '$REDIS_SOCK' && echo VISIBLE || echo hidden" <"$d2"
	[ "$(jqd -r .exec.stdout)" = hidden ]                   # ...the sandbox does not
	sb_kill "$d2"
	sb_kill "$d"
}

@test "the EXAMPLES of sbx-tpl(1) and sbx-snap(1) run" {
	run sbx-tpl import busybox --file "$ROOTFS_TAR"
	assert_success
	run bash -c 'sbx-create --template busybox | sbx-exec -- id'
	assert_success
	[ "$(jqo .exec.exit_code)" = 0 ]
	run bash -c 'sbx-tpl ls | jq -r .template.id'
	assert_line busybox
	run bash -c "sbx-create --template busybox |
		sbx-exec --root --check -- sh -c 'echo hi >/opt/greeting' |
		sbx-snap --name greeting | jq -r .snapshot.id"
	assert_success
	sid=$output
	run bash -c "sbx-snap ls | jq -r '.snapshot | \"\\(.id) \\(.name) \\(.layers)\"'"
	assert_line "$sid greeting 2"
	run sbx-snap flatten "$sid" --name pdf-flat
	assert_success
	flat=$(jqo .snapshot.id)
	d=$(new_sb "$flat")
	run sb "$d" cat /opt/greeting
	assert_output hi
	sb_kill "$d"
	sbx-ls --all | jq -c "select(.sandbox.template == \"$sid\")" | sbx-ctl kill >/dev/null
	run sbx-snap rm "$sid" --force
	assert_success
}

@test "concurrent snapshots of one sandbox all land; concurrent imports of one name: one wins" {
	d=$(new_sb bb)
	sb "$d" sh -c 'echo c >/workspace/c'
	for i in 1 2 3 4; do sbx-snap --name "par$i" <"$d" >"$BATS_TEST_TMPDIR/par$i" & done
	wait
	for i in 1 2 3 4; do
		[ "$(jq -r .snapshot.name "$BATS_TEST_TMPDIR/par$i")" = "par$i" ]
	done
	[ "$(cat "$BATS_TEST_TMPDIR"/par* | jq -r .snapshot.id | sort -u | wc -l)" = 4 ]
	run sb "$d" cat /workspace/c      # thawed, still running
	assert_output c
	n=$(new_sb "$(jq -r .snapshot.id "$BATS_TEST_TMPDIR/par3")")
	run sb "$n" cat /workspace/c
	assert_output c
	sb_kill "$n"
	sb_kill "$d"
	for i in 1 2 3 4; do
		(rc=0; sbx-tpl import race --dir "$ROOTFS_DIR" >"$BATS_TEST_TMPDIR/imp$i" 2>/dev/null || rc=$?
		 echo $rc >"$BATS_TEST_TMPDIR/imp$i.rc") &
	done
	wait
	run sh -c "cat '$BATS_TEST_TMPDIR'/imp*.rc | sort | tr '\n' ' '"
	assert_output "0 75 75 75 "
	[ -z "$(ls -A "$(IMAGES)/tmp" | grep -v '^\.')" ]
	run sbx-tpl rm race
	assert_success
}
