#!/usr/bin/env bats
# suite: conformance
# sbx-fs reads with the sandbox user's rights, and copies to the host keep
# no way out: links the sandbox planted do not read its root-only files
# for uid 1000, a host copy is never more permissive than its source,
# symlinks that lead out of a copied folder are dropped (and reported),
# and a folder copy has a byte budget in which sparse files stay sparse.
# Backend-neutral: runs on docker too (SBX_TEST_BACKEND=docker).

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	SB=$(sbx_new --label suite=files-links | jq -r .sandbox.id)
	export SB
	# A root-only secret, and the sandbox user's links to it.
	sbx-exec --id "$SB" --root --check -- sh -c '
		mkdir -p /opt/vault && echo topsecret >/opt/vault/key &&
		chmod 700 /opt/vault && chmod 600 /opt/vault/key' >/dev/null
	sbx-exec --id "$SB" --check -- sh -c '
		ln -s /opt/vault/key /workspace/key-link &&
		ln -s /opt/vault /workspace/vault-link &&
		ln -s ../opt/vault/key /workspace/rel-key-link' >/dev/null
}
teardown_file() { sbx_teardown_file; }

fs() { sbx-fs --id "$SB" "$@"; }
in_sb() {
	local root=()
	[ "$1" = --root ] && { root=(--root); shift; }
	sbx-exec --id "$SB" "${root[@]}" -- sh -c "$1" | jq -r .exec.stdout
}

@test "cat, get, ls and stat through a planted link do not read root-only files as uid 1000" {
	local l
	for l in /workspace/key-link /workspace/rel-key-link; do
		run --separate-stderr fs cat "$l"
		[ "$status" -ne 0 ]
		[[ "$output$stderr" != *topsecret* ]]
		run --separate-stderr fs get "$l" "$BATS_TEST_TMPDIR/got"
		[ "$status" -ne 0 ]
		[ ! -e "$BATS_TEST_TMPDIR/got" ]
	done
	run --separate-stderr fs ls /workspace/vault-link
	[ "$status" -ne 0 ]
	[[ "$output" != *key* ]]
	run --separate-stderr fs stat /workspace/vault-link/key
	[ "$status" -ne 0 ]
	run --separate-stderr fs get /workspace/vault-link "$BATS_TEST_TMPDIR/vault"
	[ "$status" -ne 0 ]
	[ ! -e "$BATS_TEST_TMPDIR/vault/key" ]
	run --separate-stderr fs get /opt/vault/key -
	[ "$status" -ne 0 ]
	[[ "$output" != *topsecret* ]]
}

@test "--root reads what root may read" {
	run --separate-stderr fs cat --root /workspace/key-link
	[ "$status" -eq 0 ]
	[ "$(jqo .files.content)" = topsecret ]
	run --separate-stderr fs ls --root /workspace/vault-link
	[ "$status" -eq 0 ]
	[ "$(jqo '.files.entries[0].name')" = key ]
	run --separate-stderr fs get --root /workspace/vault-link "$BATS_TEST_TMPDIR/rootcopy"
	[ "$status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/rootcopy/key")" = topsecret ]
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/rootcopy/key")" = 600 ]
}

@test "a host copy is never more permissive than its source, through a link too" {
	in_sb 'echo mine >/workspace/priv && chmod 600 /workspace/priv && ln -sf priv /workspace/priv-link' >/dev/null
	run fs get /workspace/priv "$BATS_TEST_TMPDIR/p1"
	assert_success
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/p1")" = 600 ]
	run fs get /workspace/priv-link "$BATS_TEST_TMPDIR/p2"
	assert_success
	[ "$(cat "$BATS_TEST_TMPDIR/p2")" = mine ]
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/p2")" = 600 ]
}

@test "collect drops the links that lead out of the copy, keeps the rest, and says which" {
	in_sb 'cd /workspace/output && mkdir -p sub && echo f >sub/f &&
		ln -s /etc/passwd abs && ln -s ../../../../etc/passwd climb &&
		ln -s sub/f inside && ln -s . self && ln -s self/.. chain &&
		ln -s ../output/sub/f around' >/dev/null
	run --separate-stderr fs collect "$BATS_TEST_TMPDIR/out"
	assert_success
	local o="$BATS_TEST_TMPDIR/out"
	[ "$(jqo .files.links_removed)" = 4 ]
	[ "$(jqo '[.files.removed_links[].path] | sort | join(" ")')" = "abs around chain climb" ]
	[ ! -L "$o/abs" ] && [ ! -L "$o/climb" ] && [ ! -L "$o/chain" ] && [ ! -L "$o/around" ]
	[ "$(readlink "$o/inside")" = sub/f ] && [ "$(cat "$o/inside")" = f ]
	[ -L "$o/self" ]
	# Whatever follows the links stays inside the copy.
	[ "$(find -L "$o" -type f | wc -l)" -le 3 ]
	in_sb 'cd /workspace/output && rm -rf sub abs climb inside self chain around' >/dev/null
}

@test "get and collect of a folder have a byte budget (--max, default 1G); sparse stays sparse" {
	in_sb 'mkdir -p /workspace/sp && truncate -s 1536M /workspace/sp/huge' >/dev/null
	run --separate-stderr fs get /workspace/sp "$BATS_TEST_TMPDIR/sp"
	[ "$status" -eq 75 ]
	[[ "$stderr" == *"--max"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/sp" ]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR" | grep sbx-fs-get)" ]
	in_sb 'rm /workspace/sp/huge && truncate -s 48M /workspace/sp/holes && echo end >>/workspace/sp/holes' >/dev/null
	run --separate-stderr fs get --max 16M /workspace/sp "$BATS_TEST_TMPDIR/sp"
	[ "$status" -eq 75 ]
	run --separate-stderr fs get /workspace/sp "$BATS_TEST_TMPDIR/sp"
	[ "$status" -eq 0 ]
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/sp/holes")" = $((48 * 1048576 + 4)) ]
	[ "$(tail -c 4 "$BATS_TEST_TMPDIR/sp/holes")" = end ]
	[ "$(du -k "$BATS_TEST_TMPDIR/sp/holes" | cut -f1)" -lt 1024 ]
	in_sb 'truncate -s 1536M /workspace/output/huge' >/dev/null
	run --separate-stderr fs collect "$BATS_TEST_TMPDIR/col"
	[ "$status" -eq 75 ]
	[ ! -e "$BATS_TEST_TMPDIR/col" ]
	in_sb 'rm -f /workspace/output/huge; rm -rf /workspace/sp' >/dev/null
}
