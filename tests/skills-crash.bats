#!/usr/bin/env bats
# suite: conformance
# Crash safety of the skill ledger (DESIGN §7): sbx-snap is killed with a
# real SIGKILL (SBX_FAULT) after the ledger write, after the snapshot, after
# the record and after the pointer move.  After each, `sbx-snap --recover`
# leaves exactly one consistent state - the row ready with a snapshot that
# exists and the image pointer on it, or the row failed and no snapshot
# under its planned name - and a second --recover changes nothing.  Also:
# two concurrent installs cannot both win.

load lib/helpers
load lib/skills

T=crashco

setup_file() { skills_setup_file sbx-crash-state; }
teardown_file() { skills_teardown_file; }
setup() { skills_setup; }

# installer NAME -> a document file: an installer sandbox on the tenant's
# current image, with a one-file skill NAME placed and installed.
installer() {
	local f="$DOCS/inst.$1"
	sbx-create --tenant $T --skill-image \
		| sbx-exec --root --check -- sh -c "mkdir -p /opt/sbx/skills/$1/bin && printf '#!/bin/sh\necho $1\n' >/opt/sbx/skills/$1/bin/run && chmod 755 /opt/sbx/skills/$1/bin/run" \
		>"$f" || return 1
	echo "$f"
}

# The tenant's ledger and image as one normalised text (for "nothing
# changed" comparisons).
state() { sbx-snap ls --tenant $T 2>/dev/null | jq -cS .; }
row() { sbx-snap ls --tenant $T | jq -r --arg s "$1" "select(.skill.skill == \$s) | .skill | $2"; }
snapshot_named() { sbx-snap ls | jq -r --arg n "$1" 'select(.snapshot.name == $n or .snapshot.id == $n) | .snapshot.id'; }

# The one consistent state after recovery, for skill $1.
assert_consistent() {
	local st
	st=$(row "$1" .state)
	case $st in
	ready)
		local id
		id=$(row "$1" .snapshot_id)
		[ -n "$(snapshot_named "$id")" ] || { echo "ready row's snapshot $id is missing"; return 1; }
		[ "$(image_of)" = "$id" ] || { echo "the pointer is on $(image_of), not $id"; return 1; }
		[ "$(row "$1" .published)" = true ] || { echo "not published"; return 1; }
		;;
	failed)
		local pn
		pn=$(row "$1" .planned_name)
		[ -z "$(snapshot_named "$pn")" ] || { echo "failed row left snapshot $pn"; return 1; }
		;;
	*)
		echo "row $1 is '$st' after recovery"
		return 1
		;;
	esac
}

# crash_at FAULT NAME EXPECTED-STATE
crash_at() {
	local fault=$1 name=$2 want=$3 doc
	doc=$(installer "$name")
	local img_before
	img_before=$(image_of)
	SBX_FAULT=$fault run sbx-snap --tenant $T --skill "$name" --clean-scratch <"$doc"
	[ "$status" -eq 137 ] || { echo "sbx-snap was not killed at $fault (status $status): $output"; return 1; }
	[ "$(row "$name" .state)" != "" ]

	run sbx-snap --recover --tenant $T
	assert_success
	[ "$(jqd '.recover.actions | length')" = 1 ] || { echo "$output"; return 1; }
	assert_consistent "$name"
	[ "$(row "$name" .state)" = "$want" ]
	if [ "$want" = failed ]; then
		[ "$(image_of)" = "$img_before" ]
	fi

	local before
	before=$(state)
	run sbx-snap --recover --tenant $T
	assert_success
	[ "$(jqd '.recover.actions | length')" = 0 ]
	[ "$(state)" = "$before" ]
	sbx-ctl kill <"$doc" >/dev/null
}

@test "a clean install first (generation 1)" {
	doc=$(installer base)
	run sbx-snap --tenant $T --skill base <"$doc"
	assert_success
	[ "$(jqd .snapshot.generation)" = 1 ]
	assert_consistent base
	sbx-ctl kill <"$doc" >/dev/null
}

@test "killed after the ledger write: recovery fails the row, no snapshot, pointer unchanged" {
	crash_at snap:after-ledger c-ledger failed
	[ "$(row c-ledger .error)" = "the run died before its snapshot existed" ]
}

@test "killed after the snapshot: recovery finds it by its planned name and completes the row" {
	crash_at snap:after-snapshot c-snapshot ready
}

@test "killed after the record: recovery moves the pointer and marks sessions stale" {
	sbx-create --tenant $T --session watcher >"$DOCS/watcher"
	crash_at snap:after-record c-record ready
	[ "$(rcli get "$(rcli --scan --pattern "sbx:{$T}:sess:watcher:binding")" | jq -r '.stale_at != null')" = true ]
}

@test "killed after the pointer move: recovery only marks stale and publishes" {
	crash_at snap:after-pointer c-pointer ready
}

@test "after every crash the image holds exactly the skills whose rows are ready" {
	sbx-create --tenant $T --session check >"$DOCS/check"
	run sbx-exec --raw -- sh -c 'ls /opt/sbx/skills | tr "\n" " "' <"$DOCS/check"
	assert_output "base c-pointer c-record c-snapshot "
}

@test "a crashed row of the same skill does not block the next install of it" {
	doc=$(installer again)
	SBX_FAULT=snap:after-ledger run sbx-snap --tenant $T --skill again <"$doc"
	[ "$status" -eq 137 ]
	# no explicit --recover: sbx-snap recovers the tenant before it begins
	run sbx-snap --tenant $T --skill again <"$doc"
	assert_success
	[ "$(jqd '.recovered.actions[0].action')" = failed ]
	assert_consistent again
	sbx-ctl kill <"$doc" >/dev/null
}

@test "--recover --dry-run reports and changes nothing" {
	doc=$(installer dry)
	SBX_FAULT=snap:after-snapshot run sbx-snap --tenant $T --skill dry <"$doc"
	[ "$status" -eq 137 ]
	local before
	before=$(state)
	run sbx-snap --recover --dry-run --tenant $T
	assert_success
	[ "$(jqd '.recover.actions[0] | "\(.action) \(.would)"')" = "complete true" ]
	[ "$(state)" = "$before" ]
	run sbx-snap --recover
	assert_success
	assert_consistent dry
	sbx-ctl kill <"$doc" >/dev/null
}

@test "two concurrent installs from the same image: exactly one wins, the loser leaves nothing" {
	a=$(installer race-a)
	b=$(installer race-b)
	sbx-snap --tenant $T --skill race-a <"$a" >"$DOCS/race-a.out" 2>/dev/null &
	pa=$!
	sbx-snap --tenant $T --skill race-b <"$b" >"$DOCS/race-b.out" 2>/dev/null &
	pb=$!
	sa=0 sb=0
	wait $pa || sa=$?
	wait $pb || sb=$?
	echo "status a=$sa b=$sb"
	# one succeeded, the other lost with conflict (75)
	[ $((sa + sb)) -eq 75 ]
	if [ $sa -eq 0 ]; then win=race-a lose=race-b; else win=race-b lose=race-a; fi
	[ "$(jq -r .error.kind "$DOCS/$lose.out")" = conflict ]
	assert_consistent "$win"
	[ "$(image_of)" = "$(row "$win" .snapshot_id)" ]
	# the loser: no row at all (refused before the ledger) or a failed row
	# whose snapshot was deleted
	st=$(row "$lose" .state)
	[ -z "$st" ] || [ "$st" = failed ]
	[ -z "$st" ] || assert_consistent "$lose"
	run sbx-snap --recover --tenant $T
	[ "$(jqd '.recover.actions | length')" = 0 ]
	sbx-ctl kill <"$a" >/dev/null
	sbx-ctl kill <"$b" >/dev/null
}

@test "the reaper's view: every ledger row's snapshot is referenced, nothing is orphaned" {
	# every snapshot the backend has is named by a row or the pointer
	local all named
	all=$(sbx-snap ls | jq -r .snapshot.id | sort)
	named=$( (sbx-snap ls --tenant $T | jq -r '.skill.snapshot_id // empty, .image.snapshot_id // empty') | sort -u)
	[ "$all" = "$named" ] || { echo "backend: $all"; echo "ledger: $named"; false; }
}
