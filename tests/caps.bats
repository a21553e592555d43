#!/usr/bin/env bats
# suite: conformance
# `sbx-ctl caps` tells the truth, on every backend: each capability it
# reports works through the programs; each one it reports missing is
# refused as `unsupported` (so it claims no less than the backend does);
# and the backend's docs (the fixture's FIXTURE_DOC, line "Missing
# capabilities: ...") list exactly the missing ones, which is what
# tests/run holds every conformance skip against.
load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	sbx_setup_file
	SB=$(sbx_new_id --label suite=caps)
	export SB
}
teardown_file() { sbx_teardown_file; }

caps_with() { sbx-ctl caps | jq -r --argjson v "$1" '.caps | to_entries[] | select(.value == $v) | .key' | sort; }

# probe CAP: use the capability through the programs; exit 0 when it
# worked, else the program's status (the error document is on stdout).
probe() {
	case $1 in
	exec) sbx-exec --id "$SB" -- true ;;
	files) sbx-fs --id "$SB" stat /workspace ;;
	install) sbx-exec --id "$SB" --root --check -- sh -c '[ "$(id -u)" = 0 ]' ;;
	pause) sbx-ctl pause --id "$SB" && sbx-ctl resume --id "$SB" ;;
	hibernate) sbx-ctl hibernate --id "$SB" && sbx-ctl resume --id "$SB" ;;
	snapshots) sbx-snap ls ;;
	templates) sbx-tpl ls ;;
	list) sbx-ls --all ;;
	metadata) sbx-ls --label suite=caps | jq -e --arg id "$SB" 'select(.sandbox.id == $id)' ;;
	set_timeout) sbx-ctl timeout --id "$SB" --seconds 3600 ;;
	process) sbx-proc ls --id "$SB" ;;
	volumes)
		sbx-vol --tenant caps create capsvol >/dev/null 2>&1 || sbx-vol --tenant caps show capsvol >/dev/null || return 1
		sbx_new --tenant caps --volume capsvol:/mnt/caps:ro | sbx-ctl kill ;;
	tty)
		# -t is raw: its own failures are 125 with the stderr grammar;
		# said here the way the other probes say them
		local rc=0
		sbx-exec --id "$SB" -t --tty-size 80x24 -- true 2>"$BATS_TEST_TMPDIR/tty.err" || rc=$?
		if [ "$rc" -eq 125 ] && grep -q 'error: unsupported' "$BATS_TEST_TMPDIR/tty.err"; then
			echo '{"error":{"kind":"unsupported"}}'
			return 69
		fi
		return "$rc" ;;
	checkpoint)
		sbx_new --tenant caps --session ck >/dev/null &&
			sbx-snap checkpoint --tenant caps --session ck ;;
	fork)
		sbx_new --tenant caps --session fk >/dev/null &&
			sbx-create --tenant caps --session "fk-$RANDOM" --fork fk ;;
	flatten)
		local s
		s=$(sbx-snap --id "$SB" | jq -r .snapshot.id) && sbx-snap flatten "$s" ;;
	network_policy)
		if [ "$FIXTURE_BACKEND" = local ] || [ "$FIXTURE_BACKEND" = docker ]; then
			# egress rules on create, replaced while it runs
			local out
			out=$(sbx-create --deny-out 192.0.2.1/32 | sbx-ctl network --allow-out 192.0.2.2/32) || return 1
			printf '%s\n' "$out" | sbx-ctl kill >/dev/null || return 1
			jq -e '.ctl.policy.rules[0].to == "192.0.2.2/32"' <<<"$out" >/dev/null
			return
		fi
		# a profile that asks for public inbound traffic
		jq '.profiles.np = ((.profiles.default // {}) + {"allow_public": true})' "$SBX_CONFIG" \
			>"$SBX_TEST_DIR/np.json"
		SBX_CONFIG=$SBX_TEST_DIR/np.json sbx-create -p np | SBX_CONFIG=$SBX_TEST_DIR/np.json sbx-ctl kill
		;;
	*) return 200 ;;   # a policy or property (idle_kill, host_local) or nothing a program can reach
	esac
}

@test "the docs list exactly the capabilities sbx-ctl caps reports missing" {
	run sbx-ctl caps
	assert_success
	[ "$(jqo .backend)" = "$FIXTURE_BACKEND" ]
	local doc
	doc=$(grep -m1 '^Missing capabilities' "$SBX_TOP/$FIXTURE_DOC" | grep -o '`[a-z_]*`' | tr -d '`' | sort)
	assert_equal "$doc" "$(caps_with false)"
}

@test "every capability sbx-ctl caps reports works through the programs" {
	local c rc
	for c in $(caps_with true); do
		rc=0
		probe "$c" >"$BATS_TEST_TMPDIR/out" 2>&1 || rc=$?
		[ "$rc" -eq 200 ] && continue
		[ "$rc" -eq 0 ] || { echo "caps says $c, but it failed ($rc):"; cat "$BATS_TEST_TMPDIR/out"; false; }
	done
}

@test "every capability sbx-ctl caps reports missing is refused as unsupported" {
	local c rc
	for c in $(caps_with false); do
		rc=0
		probe "$c" >"$BATS_TEST_TMPDIR/out" 2>/dev/null || rc=$?
		[ "$rc" -eq 200 ] && continue
		[ "$rc" -ne 0 ] || { echo "caps says no $c, but it works: caps claims less than the backend does"; false; }
		[ "$rc" -eq 69 ] && grep -q '"kind":"unsupported"' "$BATS_TEST_TMPDIR/out" ||
			{ echo "no $c: expected unsupported (69), got $rc:"; cat "$BATS_TEST_TMPDIR/out"; false; }
	done
}
