#!/usr/bin/env bats
# suite: conformance
# Templates and snapshots through sbx-tpl and sbx-snap, on every backend:
# a rootfs tarball imported as a template and used; a snapshot carries the
# sandbox's files (deletions too), the source keeps running and its later
# writes stay out; snapshots stack; snapshots are never listed as
# templates; deleting what is in use is a conflict, deleting what is gone
# succeeds.  The local image store's own mechanics (layers, whiteouts,
# flatten, crashes) are in local-images.bats.
load lib/helpers
load lib/images
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	export ROOTFS_TAR="$SBX_TEST_DIR/rootfs.tar"
	"$SBX_TOP/tests/lib/rootfs.sh" "$ROOTFS_TAR"
}
teardown_file() { sbx_teardown_file; }

# new_sb TEMPLATE -> path of a file holding the sandbox's document.
new_sb() {
	local f
	f=$(mktemp "$BATS_TEST_TMPDIR/sb.XXXXXX")
	sbx-create --template "$1" >"$f" || return 1
	echo "$f"
}

@test "a rootfs tarball becomes a template: listed, shown, used, removed" {
	need_cap templates
	need_cap template_import
	run sbx-tpl import sbx-conf-bb --file "$ROOTFS_TAR"
	assert_success
	local id
	id=$(jqo .template.id)
	[ -n "$id" ]
	run sbx-tpl ls
	[[ "$(jqo '.template.id')" == *"$id"* ]]
	run sbx-tpl show "$id"
	assert_success
	d=$(new_sb "$id")
	run sb "$d" id user
	assert_success
	assert_output "uid=1000(user) gid=1000(user) groups=1000(user)"
	run sb "$d" --root stat -c '%u %g %a' /home/user /tmp
	assert_output $'1000 1000 755\n0 0 1777'
	run sbx-tpl rm "$id"           # in use
	[ "$status" -eq 75 ]
	[ "$(jqd .error.kind)" = conflict ]
	sb_kill "$d"
	run sbx-tpl rm "$id"
	assert_success
	run sbx-tpl ls
	[[ "$(jqo '.template.id')" != *"$id"* ]]
}

@test "a snapshot carries the sandbox's files and deletions; the source keeps running, its later writes stay out" {
	need_cap snapshots
	d=$(new_sb "$SBX_TEST_TEMPLATE")
	sb "$d" sh -c 'echo one >/workspace/a && mkdir -p /workspace/dir && echo two >/workspace/dir/b && echo x >/workspace/gone'
	sb "$d" rm /workspace/gone
	snap "$d" --name conf-first
	[ -n "$SID" ] && [ "$SID" != null ]
	[ "$(printf '%s' "$SNAPDOC" | jq -r .snapshot.name)" = conf-first ]
	[ "$(printf '%s' "$SNAPDOC" | jq -r .sandbox.id)" = "$(jq -r .sandbox.id "$d")" ]
	run sb "$d" sh -c 'echo three >/workspace/later && cat /workspace/a'
	assert_success
	assert_output one
	n=$(new_sb "$SID")
	[ "$(jq -r .sandbox.template "$n")" = "$SID" ]
	run sb "$n" cat /workspace/a /workspace/dir/b
	assert_output $'one\ntwo'
	run sb "$n" ls /workspace/later
	assert_failure
	run sb "$n" ls /workspace/gone
	assert_failure
	sb "$n" sh -c 'echo mine >/workspace/a'
	run sb "$d" cat /workspace/a
	assert_output one
	# Listed as a snapshot, with its name; never as a template.
	run sbx-snap ls
	[ "$(jqo --arg s "$SID" 'select(.snapshot.id == $s) | .snapshot.name')" = conf-first ]
	run sbx-tpl ls
	[[ "$output" != *"$SID"* ]]
	sb_kill "$n"
	sb_kill "$d"
}

@test "snapshots stack, carry no labels of their source, and deleting one in use is a conflict" {
	need_cap snapshots
	d=$(new_sb "$SBX_TEST_TEMPLATE")
	sbx-ctl kill <"$d" >/dev/null
	d=$(mktemp "$BATS_TEST_TMPDIR/sb.XXXXXX")
	sbx_new --label conf.src=yes >"$d"
	sb "$d" sh -c 'echo 1 >/workspace/one'
	snap "$d"; s1=$SID
	n=$(new_sb "$s1")
	[ "$(jq -r '.sandbox.metadata["conf.src"] // "none"' "$n")" = none ]
	sb "$n" sh -c 'echo 2 >/workspace/two'
	run sbx-snap rm "$s1"           # a sandbox was created from it
	[ "$status" -eq 75 ]
	[ "$(jqd .error.kind)" = conflict ]
	snap "$n"; s2=$SID
	m=$(new_sb "$s2")
	run sb "$m" cat /workspace/one /workspace/two
	assert_output $'1\n2'
	run sbx-tpl rm "$s1"            # the wrong program for a snapshot
	[ "$status" -eq 65 ]
	sb_kill "$m"; sb_kill "$n"; sb_kill "$d"
	run sbx-snap rm --force "$s2"
	assert_success
	run sbx-snap rm --force "$s1"
	assert_success
	run sbx-snap rm --force "$s1"   # gone: still a success
	assert_success
}
