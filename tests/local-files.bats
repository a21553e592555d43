#!/usr/bin/env bats
# suite: conformance
# sbx-fs on any backend: copies both ways (files and folders with
# awkward names, modes kept), identity (uid 1000 unless --root), escapes
# refused with the host checked afterwards, /proc and devices off limits,
# restore/collect, cat, the document protocol, and auto-resume.  Real
# sandboxes; one shared by the file where a test does not need its own.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	SB=$(sbx_new --label suite=files | jq -r .sandbox.id)
	export SB
}
teardown_file() { sbx_teardown_file; }

fs() { sbx-fs --id "$SB" "$@"; }
# Run sh -c SCRIPT in $SB (as root with --root first) and print its stdout.
in_sb() {
	local root=()
	[ "$1" = --root ] && { root=(--root); shift; }
	sbx-exec --id "$SB" "${root[@]}" -- sh -c "$1" | jq -r .exec.stdout
}
# The three awkward names of these tests.
long_name() { printf 'L%.0s' $(seq 1 200); }
NL_NAME=$'new\nline'
UNI_NAME='ünï cødé ✓'

@test "a file goes in and comes back byte for byte, mode kept, owned by 1000" {
	local src="$BATS_TEST_TMPDIR/in.bin"
	head -c 70000 /dev/urandom >"$src"
	chmod 0750 "$src"
	run fs put "$src" /workspace/in.bin
	assert_success
	[ "$(jqo .files.path)" = /workspace/in.bin ]
	[ "$(jqo .files.size)" = 70000 ]
	[ "$(jqo .files.as_root)" = false ]
	run fs stat /workspace/in.bin
	[ "$(jqo .files.mode)" = 0750 ]
	[ "$(jqo .files.uid)" = 1000 ]
	[ "$(jqo .files.type)" = file ]
	run fs get /workspace/in.bin "$BATS_TEST_TMPDIR/out.bin"
	assert_success
	cmp "$src" "$BATS_TEST_TMPDIR/out.bin"
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/out.bin")" = 750 ]
	# and the sandbox's own processes see the same bytes
	[ "$(in_sb 'md5sum </workspace/in.bin')" = "$(md5sum <"$src")" ]
}

@test "files with spaces, newlines, 200-character and unicode names round-trip" {
	local name
	for name in "with space" "$NL_NAME" "$(long_name)" "$UNI_NAME"; do
		printf 'content of %s' "$name" >"$BATS_TEST_TMPDIR/$name"
		run fs put "$BATS_TEST_TMPDIR/$name" "/workspace/$name"
		assert_success
		[ "$(jqo .files.path)" = "/workspace/$name" ]
		rm -f "$BATS_TEST_TMPDIR/back"
		run fs get "/workspace/$name" "$BATS_TEST_TMPDIR/back"
		assert_success
		[ "$(cat "$BATS_TEST_TMPDIR/back")" = "content of $name" ]
	done
	run fs ls /workspace
	[ "$(jqo --arg n "$NL_NAME" '.files.entries[] | select(.name == $n) | .path')" = "/workspace/$NL_NAME" ]
}

@test "a folder tree with awkward names, modes and symlinks round-trips" {
	local t="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$t/sub dir/$UNI_NAME" "$t/empty" "$t/$NL_NAME"
	printf 'a' >"$t/sub dir/a b.txt"
	printf 'x' >"$t/$(long_name)"
	printf 'u' >"$t/sub dir/$UNI_NAME/$(long_name)"
	printf 'n' >"$t/$NL_NAME/inner"
	printf '#!/bin/sh\necho run\n' >"$t/tool.sh"
	chmod 0755 "$t/tool.sh"
	chmod 0600 "$t/sub dir/a b.txt"
	chmod 0700 "$t/sub dir"
	ln -s "sub dir/a b.txt" "$t/rel-link"
	ln -s /etc/passwd "$t/abs-link"
	run fs put "$t" /workspace/tree
	assert_success
	[ "$(jqo .files.type)" = dir ]
	[ "$(in_sb '/workspace/tree/tool.sh')" = run ]
	[ "$(in_sb 'stat -c "%U %a" "/workspace/tree/sub dir"')" = "user 700" ]
	[ "$(in_sb 'readlink /workspace/tree/abs-link')" = /etc/passwd ]
	run fs get /workspace/tree "$BATS_TEST_TMPDIR/back"
	assert_success
	[ "$(jqo .files.dest)" = "$BATS_TEST_TMPDIR/back" ]
	# The link policy (sbx-fs(1)): a link leading out of the copy is
	# removed and reported; the relative one inside stays.
	[ "$(jqo .files.links_removed)" = 1 ]
	[ "$(jqo '.files.removed_links[0] | "\(.path) \(.target)"')" = "abs-link /etc/passwd" ]
	rm "$t/abs-link"
	diff -r --no-dereference "$t" "$BATS_TEST_TMPDIR/back"
	# same names, types, modes and link targets, entry by entry
	[ "$(cd "$t" && find . -printf '%y %m %l %p\n' | sort)" = \
	  "$(cd "$BATS_TEST_TMPDIR/back" && find . -printf '%y %m %l %p\n' | sort)" ]
}

@test "a trailing slash puts a file or folder into DEST; put merges a folder" {
	printf 'one' >"$BATS_TEST_TMPDIR/one.txt"
	fs mkdir /workspace/into >/dev/null
	run fs put "$BATS_TEST_TMPDIR/one.txt" /workspace/into
	[ "$(jqo .files.path)" = /workspace/into/one.txt ]
	mkdir -p "$BATS_TEST_TMPDIR/d1" "$BATS_TEST_TMPDIR/d2"
	printf 1 >"$BATS_TEST_TMPDIR/d1/f1"
	printf 2 >"$BATS_TEST_TMPDIR/d2/f2"
	run fs put "$BATS_TEST_TMPDIR/d1" /workspace/into/
	[ "$(jqo .files.path)" = /workspace/into/d1 ]
	fs put "$BATS_TEST_TMPDIR/d2" /workspace/into/d1 >/dev/null
	[ "$(in_sb 'ls /workspace/into/d1 | tr "\n" " "')" = "f1 f2 " ]
}

@test "get of a folder refuses a non-empty host DEST and leaves it alone" {
	fs mkdir /workspace/g >/dev/null
	mkdir "$BATS_TEST_TMPDIR/full"
	echo mine >"$BATS_TEST_TMPDIR/full/keep"
	run --separate-stderr fs get /workspace/g "$BATS_TEST_TMPDIR/full"
	[ "$status" -eq 75 ]
	[ "$(jqo .error.kind)" = conflict ]
	[ "$(cat "$BATS_TEST_TMPDIR/full/keep")" = mine ]
	mkdir "$BATS_TEST_TMPDIR/empty"
	run fs get /workspace/g "$BATS_TEST_TMPDIR/empty"
	assert_success
}

@test "get of a file never replaces a host device or FIFO (it used to unlink /dev/null)" {
	echo data >"$BATS_TEST_TMPDIR/src"
	fs put "$BATS_TEST_TMPDIR/src" /workspace/gf >/dev/null
	mknod "$BATS_TEST_TMPDIR/null" c 1 3
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	local t
	for t in null fifo; do
		run --separate-stderr fs get /workspace/gf "$BATS_TEST_TMPDIR/$t"
		[ "$status" -ne 0 ]
		[ "$(jqo .error.kind)" = conflict ]
	done
	[ -c "$BATS_TEST_TMPDIR/null" ]
	[ -p "$BATS_TEST_TMPDIR/fifo" ]
	run ls -A "$BATS_TEST_TMPDIR"
	refute_output --partial .tmp.
	fs get /workspace/gf "$BATS_TEST_TMPDIR/plain" >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/plain")" = data ]
}

# The reader stops at the archive's end marker; a writer still sending
# the record's padding then gets EPIPE, which is not a failed copy.
@test "get of an empty folder succeeds every time (padding after the end marker)" {
	fs mkdir /workspace/hollow >/dev/null
	local round
	for round in $(seq 12); do
		run --separate-stderr fs get /workspace/hollow "$BATS_TEST_TMPDIR/h$round"
		assert_success
		[ -d "$BATS_TEST_TMPDIR/h$round" ]
	done
}

@test "uid 1000 cannot write /opt/sbx/skills through sbx-fs; --root can, and root owns it" {
	printf 'skill' >"$BATS_TEST_TMPDIR/s.txt"
	mkdir -p "$BATS_TEST_TMPDIR/skill"
	printf 'x' >"$BATS_TEST_TMPDIR/skill/f"
	run --separate-stderr fs put "$BATS_TEST_TMPDIR/s.txt" /opt/sbx/skills/s.txt
	[ "$status" -eq 65 ]
	[[ "$(jqo .error.message)" == *"Permission denied"* ]]
	run --separate-stderr fs put "$BATS_TEST_TMPDIR/skill" /opt/sbx/skills/skill
	[ "$status" -ne 0 ]
	run fs mkdir /opt/sbx/skills/nope
	[ "$status" -ne 0 ]
	[ "$(in_sb 'ls -A /opt/sbx/skills | wc -l')" = 0 ]
	run fs put --root "$BATS_TEST_TMPDIR/skill" /opt/sbx/skills/skill
	assert_success
	[ "$(in_sb 'stat -c "%U %G" /opt/sbx/skills/skill /opt/sbx/skills/skill/f | sort -u')" = "root root" ]
	run fs rm -r /opt/sbx/skills/skill
	[ "$status" -ne 0 ]
	run fs rm -r --root /opt/sbx/skills/skill
	assert_success
}

@test "'..' in a path is refused and the host's /etc/passwd is untouched" {
	local before
	before=$(md5sum </etc/passwd)
	printf 'pwned\n' >"$BATS_TEST_TMPDIR/evil"
	run --separate-stderr fs put --root "$BATS_TEST_TMPDIR/evil" /workspace/../../../../etc/passwd
	[ "$status" -eq 65 ]
	[[ "$(jqo .error.message)" == *"'..'"* ]]
	[ "$(md5sum </etc/passwd)" = "$before" ]
}

@test "symlinks planted in the sandbox cannot redirect writes to the host" {
	local victim="$BATS_TEST_TMPDIR/victim"
	mkdir -p "$victim"
	echo original >"$victim/file"
	printf 'pwned\n' >"$BATS_TEST_TMPDIR/evil"
	in_sb --root "ln -s '$victim' /workspace/esc-abs; ln -s ../../../../../../..'$victim' /workspace/esc-rel;
		ln -s / /workspace/esc-root; ln -s /etc/passwd /workspace/pw; ln -s '$victim/file' /workspace/vf" >/dev/null
	# through a symlinked directory: lands in the sandbox, not on the host
	run fs put --root "$BATS_TEST_TMPDIR/evil" /workspace/esc-abs/new
	run fs put --root "$BATS_TEST_TMPDIR/evil" /workspace/esc-rel/new2
	run fs put --root "$BATS_TEST_TMPDIR/evil" "/workspace/esc-root$victim/new3"
	run fs mkdir --root /workspace/esc-abs/newdir
	[ ! -e "$victim/new" ] && [ ! -e "$victim/new2" ] && [ ! -e "$victim/new3" ] && [ ! -e "$victim/newdir" ]
	# as the last component: never followed.  The backend either refuses
	# it (local) or replaces the link with the file (docker: mv -T); the
	# fixture says which (FIXTURE_PUT_OVER_LINK).
	run --separate-stderr fs put --root "$BATS_TEST_TMPDIR/evil" /workspace/vf
	if [ "$FIXTURE_PUT_OVER_LINK" = replace ]; then
		assert_success
		[ "$(in_sb 'test -L /workspace/vf || cat /workspace/vf')" = pwned ]
	else
		[ "$status" -eq 65 ]
		[[ "$(jqo .error.message)" == *"symbolic link"* ]]
	fi
	[ "$(cat "$victim/file")" = original ]
	run fs put --root "$BATS_TEST_TMPDIR/evil" /workspace/pw
	if [ "$FIXTURE_PUT_OVER_LINK" = replace ]; then assert_success; else [ "$status" -eq 65 ]; fi
	[ "$(in_sb 'head -c 5 /etc/passwd')" != pwned ]
	# rm and mv act on the link, never on its target
	run fs rm --root /workspace/vf
	assert_success
	run fs mv --root /workspace/esc-abs /workspace/esc-moved
	assert_success
	[ "$(cat "$victim/file")" = original ]
	[ -d "$victim" ]
}

@test "writing a file the template provides changes the sandbox's copy, not the host's" {
	# A file of the template's own (docker bind-mounts /etc/hostname, so
	# the fixture names one that is the template's).
	local f=$FIXTURE_TEMPLATE_FILE before
	before=$(md5sum <"$f")
	fs get "$f" "$BATS_TEST_TMPDIR/orig" >/dev/null
	{ cat "$BATS_TEST_TMPDIR/orig"; printf 'sandboxed\n'; } >"$BATS_TEST_TMPDIR/hn"
	run fs put --root "$BATS_TEST_TMPDIR/hn" "$f"
	assert_success
	[ "$(in_sb "tail -n 1 $f")" = sandboxed ]
	[ "$(md5sum <"$f")" = "$before" ]
}

@test "a sandbox symlink never reaches the host as what it points to; links leading out are dropped" {
	in_sb --root 'mkdir -p /workspace/sl && ln -s /etc /workspace/sl/etc && ln -s ../../.. /workspace/sl/up && ln -s up /workspace/sl/in' >/dev/null
	run fs get /workspace/sl "$BATS_TEST_TMPDIR/sl"
	assert_success
	[ ! -e "$BATS_TEST_TMPDIR/sl/etc" ] && [ ! -L "$BATS_TEST_TMPDIR/sl/etc" ]
	[ ! -L "$BATS_TEST_TMPDIR/sl/up" ]
	# "in" stays: its target's text stays inside (it dangles now).
	[ -L "$BATS_TEST_TMPDIR/sl/in" ]
	[ "$(find "$BATS_TEST_TMPDIR/sl" | wc -l)" = 2 ]
	[ "$(jqo .files.links_removed)" = 2 ]
}

@test "a sandbox flipping a directory and a symlink to the host during puts cannot redirect them" {
	# (local: races the host-side resolver, openat2 on the sandbox root;
	# docker resolves paths inside the container, which cannot see the host)
	local victim="$BATS_TEST_TMPDIR/race-victim"
	mkdir -p "$victim"
	# inside the sandbox, as root: /workspace/flip is a directory, then a
	# symlink to the host folder, then a ../.. chain to it, round and round
	sbx-exec --id "$SB" --root --timeout 120s -- sh -c "
		cd /workspace; rm -rf flip stop; mkdir flip
		while [ ! -e stop ]; do
			ln -sfn '$victim' flip.l; mv -T flip.l flip 2>/dev/null || { rm -rf flip; mv -T flip.l flip; }
			ln -sfn ../../../../../../../..'$victim' flip.l; mv -T flip.l flip
			rm -f flip; mkdir flip
		done" >/dev/null 3>&- &
	local flipper=$! i
	printf r >"$BATS_TEST_TMPDIR/r"
	for i in $(seq 1 40); do
		fs put --root "$BATS_TEST_TMPDIR/r" "/workspace/flip/f$i" >/dev/null 2>&1 || true
		fs mkdir --root "/workspace/flip/d$i" >/dev/null 2>&1 || true
	done
	fs put --root "$BATS_TEST_TMPDIR/r" /workspace/stop >/dev/null
	wait "$flipper" || true
	[ -z "$(ls -A "$victim")" ]
}

@test "/proc, /sys and /dev are off limits, also through symlinks" {
	local before
	before=$(cat /proc/sys/kernel/core_pattern)
	printf '|/tmp/pwn' >"$BATS_TEST_TMPDIR/cp"
	run --separate-stderr fs put --root "$BATS_TEST_TMPDIR/cp" /proc/sys/kernel/core_pattern
	[ "$status" -eq 65 ]
	[[ "$(jqo .error.message)" == *"off limits"* ]]
	in_sb --root 'ln -s /proc/sys/kernel /workspace/k; ln -s /proc/1/root /workspace/r1' >/dev/null
	run fs put --root "$BATS_TEST_TMPDIR/cp" /workspace/k/core_pattern
	# refused: by sbx (local: 65), or inside the container, where the
	# kernel refuses the write (docker: read-only /proc/sys)
	[ "$status" -ne 0 ]
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ]
	[ "$(in_sb 'cat /proc/sys/kernel/core_pattern')" = "$before" ]
	run --separate-stderr fs cat /proc/1/environ
	[ "$status" -eq 65 ]
	run fs ls /workspace/r1/
	[ "$status" -ne 0 ]
	run fs ls /sys
	[ "$status" -eq 65 ]
	run fs put --root "$BATS_TEST_TMPDIR/cp" /dev/x
	[ "$status" -eq 65 ]
}

@test "a device node or FIFO made by sandbox root is never opened" {
	in_sb --root 'mkfifo /workspace/fifo' >/dev/null
	run --separate-stderr fs cat /workspace/fifo
	[ "$status" -eq 65 ]
	[[ "$(jqo .error.message)" == *"not a regular file"* ]]
	run fs stat /workspace/fifo
	[ "$(jqo .files.type)" = other ]
	# root inside has no CAP_MKNOD on either backend: no device node can
	# be made there
	[ "$(in_sb --root 'mknod /workspace/mem c 1 1 2>/dev/null || echo refused')" = refused ]
	# ... so where the fixture can, it plants one from the host, to check
	# that sbx-fs never opens it.
	declare -F fixture_plant_node >/dev/null || return 0
	fixture_plant_node "$SB" /workspace/mem
	run --separate-stderr fs cat /workspace/mem
	[ "$status" -eq 65 ]
	[[ "$(jqo .error.message)" == *"not a regular file"* ]]
	printf x >"$BATS_TEST_TMPDIR/x"
	run fs put --root "$BATS_TEST_TMPDIR/x" /workspace/mem
	[ "$status" -eq 65 ]
	run fs stat /workspace/mem
	[ "$(jqo .files.type)" = other ]
}

@test "restore fills /workspace/input for uid 1000; collect brings /workspace/output home" {
	local att="$BATS_TEST_TMPDIR/attachments"
	mkdir -p "$att/nested dir"
	printf 'report\n' >"$att/report.txt"
	printf 'deep\n' >"$att/nested dir/$UNI_NAME"
	chmod 0600 "$att/report.txt"
	chmod 0700 "$att/nested dir"
	run fs restore "$att"
	assert_success
	[ "$(jqo .files.path)" = /workspace/input ]
	[ "$(in_sb 'stat -c "%u %g" /workspace/input/report.txt "/workspace/input/nested dir" | sort -u')" = "1000 1000" ]
	# readable by everyone, whatever the host modes were
	[ "$(in_sb 'stat -c %a /workspace/input/report.txt')" = 644 ]
	[ "$(in_sb 'stat -c %a "/workspace/input/nested dir"')" = 755 ]
	[ "$(in_sb 'cat /workspace/input/report.txt')" = report ]
	in_sb 'wc -l /workspace/input/report.txt >/workspace/output/counts; mkdir -p /workspace/output/sub; echo s >/workspace/output/sub/s' >/dev/null
	in_sb --root 'echo x >/workspace/output/suid; chmod 4755 /workspace/output/suid' >/dev/null
	run fs collect "$BATS_TEST_TMPDIR/results"
	assert_success
	[ "$(jqo .files.dest)" = "$BATS_TEST_TMPDIR/results" ]
	[ "$(cat "$BATS_TEST_TMPDIR/results/counts")" = "1 /workspace/input/report.txt" ]
	[ "$(cat "$BATS_TEST_TMPDIR/results/sub/s")" = s ]
	# setuid bits never reach the host
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/results/suid")" = 755 ]
	# no leftovers of the private extraction folder
	[ -z "$(ls -A "$BATS_TEST_TMPDIR" | grep sbx-fs-get || true)" ]
	run --separate-stderr fs collect "$BATS_TEST_TMPDIR/results"
	[ "$status" -eq 75 ]
}

@test "cat puts text in the document, and binary as base64" {
	printf 'héllo\n' | fs put - /workspace/t.txt >/dev/null
	run fs cat /workspace/t.txt
	[ "$(jqo .files.content)" = 'héllo' ]
	[ "$(jqo .files.content_base64)" = null ]
	printf '\377\000\001' | fs put - /workspace/b.bin >/dev/null
	run fs cat /workspace/b.bin
	[ "$(jqo .files.content)" = null ]
	[ "$(jqo .files.content_base64 | base64 -d | od -An -tx1 | tr -d ' ')" = ff0001 ]
	run --separate-stderr fs cat --max 2 /workspace/t.txt
	[ "$status" -eq 65 ]
	[[ "$(jqo .error.message)" == *"sbx-fs get"* ]]
}

@test "put - and get - move raw bytes with --id, and are usage errors without it" {
	head -c 3000 /dev/urandom >"$BATS_TEST_TMPDIR/raw"
	fs put --mode 0640 - /workspace/raw <"$BATS_TEST_TMPDIR/raw" >/dev/null
	fs get /workspace/raw - >"$BATS_TEST_TMPDIR/raw.back"
	cmp "$BATS_TEST_TMPDIR/raw" "$BATS_TEST_TMPDIR/raw.back"
	run fs stat /workspace/raw
	[ "$(jqo .files.mode)" = 0640 ]
	# a folder to stdout is a tar stream
	fs mkdir /workspace/tarme >/dev/null
	printf t | fs put - /workspace/tarme/t >/dev/null
	[ "$(fs get /workspace/tarme - | tar -tf - | sort | tr '\n' ' ')" = "tarme/ tarme/t " ]
	run --separate-stderr sbx-fs put - /workspace/x
	[ "$status" -eq 64 ]
	run --separate-stderr sbx-fs get /workspace/raw -
	[ "$status" -eq 64 ]
}

@test "ls, stat, mkdir, rm and mv report under files" {
	run fs mkdir /workspace/m/a/b
	assert_success
	[ "$(jqo .files.op)" = mkdir ]
	run fs mkdir /workspace/m/a/b
	assert_success
	printf z | fs put - /workspace/m/a/b/z >/dev/null
	run --separate-stderr fs rm /workspace/m
	[ "$status" -eq 75 ]
	run fs mv /workspace/m/a/b/z /workspace/m/
	[ "$(jqo .files.to)" = /workspace/m/z ]
	run fs ls /workspace/m
	[ "$(jqo '[.files.entries[].name] | join(",")')" = "a,z" ]
	[ "$(jqo '.files.entries[0].type')" = dir ]
	run fs rm -r /workspace/m
	assert_success
	[ "$(jqo .files.recursive)" = true ]
	run --separate-stderr fs stat /workspace/m
	[ "$status" -eq 66 ]
	[ "$(jqo .error.kind)" = not_found ]
}

@test "documents pass through: other keys kept, error documents untouched" {
	run bash -c "echo '{\"sandbox\":{\"id\":\"$SB\"},\"mine\":{\"k\":1}}' | sbx-fs ls /workspace"
	assert_success
	[ "$(jqo .mine.k)" = 1 ]
	[ "$(jqo .files.op)" = ls ]
	run --separate-stderr bash -c "echo '{\"sandbox\":{\"id\":\"$SB\"},\"error\":{\"kind\":\"timeout\",\"message\":\"x\",\"program\":\"sbx-exec\",\"exit_status\":75}}' | sbx-fs mkdir /workspace/never"
	[ "$status" -eq 75 ]
	[ "$(jqo .error.program)" = sbx-exec ]
	[ "$(in_sb 'test -e /workspace/never && echo yes || echo no')" = no ]
	run --separate-stderr sbx-fs --id "$(missing_id)" ls /
	[ "$status" -eq 66 ]
}

@test "a file operation resumes a paused sandbox" {
	sbx-ctl pause --id "$SB" >/dev/null
	run sbx-ls --id "$SB"
	[ "$(jqo .sandbox.state)" = paused ]
	run fs ls /workspace
	assert_success
	[ "$(jqo .sandbox.state)" = running ]
	run sbx-ls --id "$SB"
	[ "$(jqo .sandbox.state)" = running ]
}

@test "the man page examples run" {
	mkdir -p "$BATS_TEST_TMPDIR/skills/pdf" "$BATS_TEST_TMPDIR/attachments"
	printf '#!/bin/sh\n' >"$BATS_TEST_TMPDIR/skills/pdf/install.sh"
	printf 'a\nb\n' >"$BATS_TEST_TMPDIR/attachments/a.txt"
	cd "$BATS_TEST_TMPDIR"
	run bash -c "sbx-create | sbx-fs put --root ./skills/pdf /opt/sbx/skills/pdf \
	  | sbx-fs ls /opt/sbx/skills/pdf | jq -r '.files.entries[].name'"
	assert_success
	assert_output install.sh
	local sb
	sb=$(sbx-create | jq -r .sandbox.id)
	SB=$sb fs restore ./attachments >/dev/null
	sbx-exec --id "$sb" -- sh -c 'wc -l /workspace/input/* >/workspace/output/counts' >/dev/null
	sbx-fs --id "$sb" collect ./results >/dev/null
	[ "$(cat results/counts)" = "2 /workspace/input/a.txt" ]
	printf 'hello\n' | sbx-fs --id "$sb" put - /workspace/hello.txt >/dev/null
	[ "$(sbx-fs --id "$sb" get /workspace/hello.txt -)" = hello ]
	[ "$(sbx-fs --id "$sb" cat /workspace/hello.txt | jq -r .files.content)" = hello ]
}
