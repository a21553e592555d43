#!/usr/bin/env bats
# suite: conformance
# Skills as admins install them: files put anywhere as root, packages
# without a tree of their own, the first install of a tenant named by --id,
# and a profile's environment (CA bundles, proxies) for every command.

load lib/helpers
bats_require_minimum_version 1.5.0
load lib/skills

setup_file() { skills_setup_file sbx-skills-admin-state; }
teardown_file() { skills_teardown_file; }

# A config with the file's default profile plus `$1` (a JSON object) merged in.
with_profile() {
	jq --argjson add "$1" '.profiles.default = ((.profiles.default // {}) + $add)' \
		"$SBX_TEST_DIR/config.json" >"$BATS_TEST_TMPDIR/c.json"
	export SBX_CONFIG="$BATS_TEST_TMPDIR/c.json"
}

@test "sbx-fs put creates the folders above a file: root's with --root, the user's without" {
	local id
	id=$(sbx_new_id)
	echo data >"$BATS_TEST_TMPDIR/f"
	run sbx-fs --id "$id" --root put "$BATS_TEST_TMPDIR/f" /opt/sbx/skills/new/deep/f
	assert_success
	run sbx-exec --id "$id" -- stat -c '%U %a' /opt/sbx/skills/new /opt/sbx/skills/new/deep
	[ "$(jqo .exec.stdout)" = "$(printf 'root 755\nroot 755')" ]
	run sbx-fs --id "$id" put "$BATS_TEST_TMPDIR/f" /workspace/a/b/f
	assert_success
	run sbx-exec --id "$id" -- stat -c '%u' /workspace/a/b /workspace/a/b/f
	[ "$(jqo .exec.stdout)" = "$(printf '1000\n1000')" ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a profile's env reaches every command; --env wins over it" {
	with_profile '{"env": {"SSL_CERT_FILE": "/etc/ssl/corp.pem", "HTTPS_PROXY": "http://proxy.corp:3128"}}'
	local id
	id=$(sbx_new_id --env HTTPS_PROXY=http://other:8080)
	run sbx-exec --id "$id" -- sh -c 'echo "$SSL_CERT_FILE $HTTPS_PROXY"'
	[ "$(jqo .exec.stdout)" = "/etc/ssl/corp.pem http://other:8080" ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a profile env that is not an object of names and strings is a configuration error" {
	local bad
	for bad in '{"env": ["A=1"]}' '{"env": {"A": 1}}' '{"env": {"A=B": "x"}}' '{"env": {"1A": "x"}}'; do
		with_profile "$bad"
		run --separate-stderr sbx-create
		[ "$status" -eq 78 ]
		[[ "$stderr" == *"env"* ]]
	done
}

@test "a tenant's first install named by --id records its base template and parent" {
	skills_setup
	local id
	id=$(sbx-create --tenant first1 --skill-image | jq -er .sandbox.id)
	printf '#!/bin/sh\necho tiny\n' | sbx-fs --id "$id" --root --mode 755 put - /opt/sbx/skills/tiny/bin/tiny >/dev/null
	run --separate-stderr sbx-snap --tenant first1 --skill tiny --id "$id"
	assert_success
	[ "$(jqo '.snapshot.base_template // ""')" != "" ]
	[ "$(jqo '.snapshot.parent // ""')" != "" ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a skill with no tree of its own (packages only) snapshots; an explicit --seal must exist" {
	skills_setup
	local id
	id=$(sbx-create --tenant first2 --skill-image | jq -er .sandbox.id)
	# What an apt-only install leaves: files elsewhere, no /opt/sbx/skills/aptonly.
	sbx-exec --id "$id" --root --check -- sh -c 'mkdir -p /usr/local/share/aptonly && echo hi >/usr/local/share/aptonly/x' >/dev/null
	run --separate-stderr sbx-snap --tenant first2 --skill aptonly --id "$id"
	assert_success
	run sbx-snap show --tenant first2
	[ "$(jqd '.skills.installed | join(",")')" = aptonly ]
	sbx-ctl kill --id "$id" >/dev/null
	# A session of the tenant starts from the image and has the files.
	run sbx-create --tenant first2 --session s1
	run sbx-exec --id "$(jqo .sandbox.id)" -- cat /usr/local/share/aptonly/x
	[ "$(jqo .exec.stdout)" = hi ]
	id=$(sbx-create --tenant first2 --skill-image | jq -er .sandbox.id)
	run --separate-stderr sbx-snap --tenant first2 --skill other --seal /opt/nothing/here --id "$id"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"does not exist"* ]]
	sbx-ctl kill --id "$id" >/dev/null
}
