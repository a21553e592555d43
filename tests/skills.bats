#!/usr/bin/env bats
# suite: conformance
# Skills: install -> verify -> snapshot in one pipeline (DESIGN §2, §7), on
# every backend over its base template (local: the builtin `host`, python3
# from the host; docker: busybox, csvstat's awk version), with a private
# redis-server.  The local state dir is a tmpfs: snapshots over `host`
# need their layers on another filesystem than /.

load lib/helpers
load lib/skills

T=acme

setup_file() { skills_setup_file sbx-skills-state; }
teardown_file() { skills_teardown_file; }
setup() { skills_setup; }

# install NAME [TENANT]: the DESIGN §2 pipeline; documents in $DOCS/NAME.*
install_skill() {
	local name=$1 t=${2:-$T}
	sbx-create --tenant "$t" --skill-image --label purpose=skill-install \
		| sbx-fs put --root "$SKILLS/$name" "/opt/sbx/skills/$name" \
		| sbx-exec --root --check -- "/opt/sbx/skills/$name/install.sh" \
		| sbx-exec --check -- "/opt/sbx/skills/$name/verify.sh" \
		| sbx-snap --tenant "$t" --skill "$name" --clean-scratch \
		| sbx-ctl kill >"$DOCS/$name.$t.out"
}

# new_session S [TENANT] -> the document file of session S's sandbox
new_session() {
	local f="$DOCS/sess.$1.${2:-$T}.$RANDOM"
	sbx-create --tenant "${2:-$T}" --session "$1" >"$f" || return 1
	echo "$f"
}

# in DOC [--root] CMD...: raw output and status of a command in the sandbox
in_sb() {
	local doc=$1
	shift
	local root=()
	[ "${1:-}" = --root ] && { root=(--root); shift; }
	sbx-exec --raw "${root[@]}" -- "$@" <"$doc"
}

@test "the pipeline, stage by stage: each stage adds its own key and keeps the rest" {
	sbx-create --tenant $T --skill-image --label purpose=skill-install >"$DOCS/1"
	run jq -r '[.resolved, .sandbox.template, .sandbox.metadata["sbx.tenant"], .sandbox.metadata.purpose] | join(" ")' "$DOCS/1"
	assert_output "created $SBX_TEST_TEMPLATE $T skill-install"

	sbx-fs put --root "$SKILLS/csvstat" /opt/sbx/skills/csvstat <"$DOCS/1" >"$DOCS/2"
	run jq -r '[.files.op, .files.path, .resolved] | join(" ")' "$DOCS/2"
	assert_output "put /opt/sbx/skills/csvstat created"

	sbx-exec --root --check -- /opt/sbx/skills/csvstat/install.sh <"$DOCS/2" >"$DOCS/3"
	run jq -r '[.exec.exit_code, .exec.as_root, .files.op] | join(" ")' "$DOCS/3"
	assert_output "0 true put"

	sbx-exec --check -- /opt/sbx/skills/csvstat/verify.sh <"$DOCS/3" >"$DOCS/4"
	run jq -r '[.exec.exit_code, .exec.as_root, .exec.stdout] | join(" ")' "$DOCS/4"
	assert_output "0 false csvstat ok"

	sbx-snap --tenant $T --skill csvstat --clean-scratch <"$DOCS/4" >"$DOCS/5"
	cp "$DOCS/5" "$DOCS/csvstat.$T.out"
	run jq -r '.snapshot | [.skill, .op, .generation, .image_generation, .parent, .base_template,
		(.fingerprint | test("^[0-9a-f]{64}$")), (.id | test(env.FIXTURE_SNAP_ID_RE)),
		(.name | test("^sbx-sk-acme-g1-[0-9a-f]{8}-k[0-9a-f]{16}$")), ((.layers // 2) >= 2), ((.size_bytes // 1) > 0),
		.stale.marked] | join(" ")' "$DOCS/5"
	assert_output "csvstat install 1 1 $SBX_TEST_TEMPLATE $SBX_TEST_TEMPLATE true true true true true 0"
	run jq -r '.exec.stdout' "$DOCS/5"
	assert_output "csvstat ok"
	sbx-ctl kill <"$DOCS/5" >"$DOCS/6"
	run jq -r '[.ctl.op, .snapshot.skill] | join(" ")' "$DOCS/6"
	assert_output "kill csvstat"

	# The ledger row is ready and published; the image pointer is on it.
	run sbx-snap ls --tenant $T
	assert_success
	local snap
	snap=$(jq -r .snapshot.id "$DOCS/5")
	[ "$(jqd 'select(.skill) | .skill | "\(.skill) \(.state) \(.published) \(.snapshot_id)"')" = "csvstat ready true $snap" ]
	[ "$(jqd 'select(.image) | .image | "\(.snapshot_id) \(.generation) \(.usable) \(.exists)"')" = "$snap 1 true true" ]
	# The tenant's events (sbx-events(1)): the installer, its snapshot,
	# the moved image, the installer's end.
	run sbx-events --tenant $T
	assert_success
	[ "$(jqd -s 'map(.type + ":" + (.why // "")) | join(" ")')" = "created:skill-install snapshot: published: killed:command" ]
	[ "$(jqd -s 'map(select(.type == "snapshot" or .type == "published") | .detail.snapshot) | unique | join(" ")')" = "$snap" ]
	[ "$(jqd -s 'map(select(.type == "published"))[0].detail.generation')" = 1 ]
}

@test "a new session starts from the image and runs the skill without reinstalling" {
	local s
	s=$(new_session s1)
	run jq -r '.resolved + " " + .sandbox.template' "$s"
	assert_output "created $(image_of)"
	run in_sb "$s" sh -c 'printf "a,b\n1,2\n3,4\n" | /opt/sbx/skills/csvstat/bin/csvstat -'
	assert_success
	assert_output --partial '"rows": 2, "columns": 2'
	run in_sb "$s" id -u
	assert_output 1000
	# nothing of the install's scratch: /workspace has just input/ and output/
	run in_sb "$s" sh -c 'ls -A /workspace; stat -c %u /workspace/input /workspace/output; test -w /workspace/output && echo writable'
	assert_output "input
output
1000
1000
writable"
}

@test "the skill tree is root-owned and read-only for uid 1000; exec works" {
	local s
	s=$(new_session s2)
	run in_sb "$s" sh -c 'echo x >/opt/sbx/skills/csvstat/lib/csvstat.py'
	assert_failure
	run in_sb "$s" touch /opt/sbx/skills/csvstat/new-file
	assert_failure
	run in_sb "$s" rm -rf /opt/sbx/skills/csvstat/bin
	assert_failure
	run in_sb "$s" mkdir /opt/sbx/skills/other
	assert_failure
	run in_sb "$s" sh -c 'find /opt/sbx/skills/csvstat \( ! -user 0 -o -perm /222 \) | wc -l'
	assert_output 0
	run in_sb "$s" /opt/sbx/skills/csvstat/bin/csvstat --help
	assert_success
	assert_output --partial "usage: csvstat"
}

@test "a session's own writes stay in its layer and never reach the image" {
	local a b
	a=$(new_session w1)
	# pip install --user style files, and a root-installed tool in /usr/local
	in_sb "$a" sh -c 'mkdir -p ~/.local/lib/python3/site-packages && echo "X=1" >~/.local/lib/python3/site-packages/mine.py'
	in_sb "$a" --root sh -c 'mkdir -p /usr/local/bin && echo "#!/bin/sh" >/usr/local/bin/session-tool && chmod 755 /usr/local/bin/session-tool'
	run in_sb "$a" sh -c 'test -f ~/.local/lib/python3/site-packages/mine.py && test -x /usr/local/bin/session-tool'
	assert_success
	# another session from the same image does not see them
	b=$(new_session w2)
	run in_sb "$b" sh -c 'test -e ~/.local/lib/python3/site-packages/mine.py || test -e /usr/local/bin/session-tool'
	assert_failure
	# nor does the next image (built from the tenant's image, not from a session)
	install_skill wordfreq
	[ "$(jq -r '.error.kind // "none"' "$DOCS/wordfreq.$T.out")" = none ]
	b=$(new_session w3)
	run in_sb "$b" sh -c 'test -e ~/.local/lib/python3/site-packages/mine.py || test -e /usr/local/bin/session-tool'
	assert_failure
	# and session w1 kept its own files (its layer is its own)
	run in_sb "$a" test -x /usr/local/bin/session-tool
	assert_success
}

@test "installs are cumulative: the next image holds every installed skill" {
	run jq -r '.snapshot | "\(.generation) \(.parent)"' "$DOCS/wordfreq.$T.out"
	assert_output "2 $(jq -r .snapshot.id "$DOCS/csvstat.$T.out")"
	local s
	s=$(new_session c1)
	run in_sb "$s" sh -c 'printf "a\n1\n" | /opt/sbx/skills/csvstat/bin/csvstat - >/dev/null && echo "b a b" | /opt/sbx/skills/wordfreq/bin/wordfreq -n 1'
	assert_success
	assert_output --partial "2 b"
	run sbx-snap show --tenant $T
	assert_success
	[ "$(jqd '.skills.installed | join(",")')" = "csvstat,wordfreq" ]
}

@test "an installer that does not stand on the current image is refused" {
	# made from the csvstat image, which is no longer current
	local old
	old=$(jq -r .snapshot.id "$DOCS/csvstat.$T.out")
	sbx-create --template "$old" >"$DOCS/stale-installer"
	run sbx-snap --tenant $T --skill late <"$DOCS/stale-installer"
	[ "$status" -eq 75 ]
	[ "$(jqd .error.kind)" = conflict ]
	assert_output --partial "skill-image"
	sbx-ctl kill <"$DOCS/stale-installer" >/dev/null
}

@test "an out-of-date installer is refused whatever the input: --id, or a document that lies" {
	# The guard reads what the backend recorded the installer was made
	# from; --id carries no template, and a document can be edited.
	local old cur id
	old=$(jq -r .snapshot.id "$DOCS/csvstat.$T.out")
	cur=$(image_of)
	id=$(sbx-create --template "$old" | jq -r .sandbox.id)
	run sbx-snap --tenant $T --skill late --id "$id"
	[ "$status" -eq 75 ]
	[ "$(jqd .error.kind)" = conflict ]
	run bash -c "sbx-ls --id $id | jq -c --arg t '$cur' '.sandbox.template = \$t' | sbx-snap --tenant $T --skill late"
	[ "$status" -eq 75 ]
	[ "$(image_of)" = "$cur" ]
	run sbx-snap show --tenant $T
	[ "$(jqd '.skills.installed | index("late")')" = null ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "removing a skill: a new image without it, the others kept" {
	sbx-create --tenant $T --skill-image \
		| sbx-snap --tenant $T --remove-skill wordfreq --clean-scratch \
		| sbx-ctl kill >"$DOCS/rm.out"
	run jq -r '.snapshot | "\(.op) \(.skill) \(.generation)"' "$DOCS/rm.out"
	assert_output "remove wordfreq 3"
	local s
	s=$(new_session r1)
	run in_sb "$s" sh -c 'test -e /opt/sbx/skills/wordfreq || test ! -x /opt/sbx/skills/csvstat/bin/csvstat'
	assert_failure
	run sbx-snap show --tenant $T
	[ "$(jqd '.skills.installed | join(",")')" = "csvstat" ]
}

@test "the image's snapshot cannot be removed without --force" {
	local img
	img=$(image_of)
	run sbx-snap rm "$img"
	[ "$status" -eq 75 ]
	assert_output --partial "current skill image"
	run sbx-snap rm --tenant $T --skill wordfreq
	[ "$status" -eq 75 ]
	[ "$(image_of)" = "$img" ]
}

@test "another fingerprint: the image is ignored, sessions start from the base template" {
	# The same backend under another profile identity (the fixture knows
	# how: local, the state dir spelt otherwise; docker, the endpoint).
	run fixture_other_identity sbx-snap show --tenant $T
	assert_success
	assert_output --partial "credentials rotated"
	[ "$(jqd .skills.image.usable)" = false ]
	[ "$(jqd .skills.warning)" != null ]
	fixture_other_identity sbx-create --tenant $T --session fp1 >"$DOCS/fp1"
	run jq -r .sandbox.template "$DOCS/fp1"
	assert_output "$SBX_TEST_TEMPLATE"
	run in_sb "$DOCS/fp1" test -e /opt/sbx/skills/csvstat
	assert_failure
	# the original spelling still gets the image
	local s
	s=$(new_session fp2)
	run jq -r .sandbox.template "$s"
	assert_output "$(image_of)"
}

@test "bad skill names and missing --tenant are refused before anything happens" {
	run sbx-snap --tenant $T --skill ../etc --id nope
	[ "$status" -eq 65 ]
	run sbx-snap --skill csvstat --id nope
	[ "$status" -eq 64 ]
	run sbx-snap --tenant $T --skill a --remove-skill b --id nope
	[ "$status" -eq 64 ]
}

@test "--flatten-above: a deep image is flattened through the ledger and becomes the image" {
	need_cap flatten
	sbx-create --tenant $T --skill-image \
		| sbx-fs put --root "$SKILLS/wordfreq" /opt/sbx/skills/wordfreq \
		| sbx-exec --root --check -- /opt/sbx/skills/wordfreq/install.sh \
		| sbx-snap --tenant $T --skill wordfreq --clean-scratch --flatten-above 2 \
		| sbx-ctl kill >"$DOCS/flat.out"
	run jq -r '.snapshot | "\(.layers > 2) \(.flatten.from == .id) \(.flatten.layers)"' "$DOCS/flat.out"
	assert_output "true true $FIXTURE_FLAT_LAYERS"
	local flat
	flat=$(jq -r .snapshot.flatten.id "$DOCS/flat.out")
	[ "$(image_of)" = "$flat" ]
	run sbx-snap ls --tenant $T
	[ "$(jqd 'select(.skill.skill == ".image") | .skill | "\(.op) \(.state) \(.snapshot_id)"')" = "flatten ready $flat" ]
	local s
	s=$(new_session flat1)
	run in_sb "$s" sh -c 'echo a b a | /opt/sbx/skills/wordfreq/bin/wordfreq -n 1 && printf "x\n1\n" | /opt/sbx/skills/csvstat/bin/csvstat - >/dev/null'
	assert_success
	assert_output --partial "2 a"
	# and by hand: flatten the tenant's image again
	run sbx-snap flatten --tenant $T
	assert_success
	[ "$(jqd .flatten.layers)" = "$FIXTURE_FLAT_LAYERS" ]
	[ "$(image_of)" = "$(jqd .flatten.id)" ]
}
