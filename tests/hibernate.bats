#!/usr/bin/env bats
# suite: local
# Hibernate on the local backend (issue 33; docs/local.md, Hibernate):
# offered only where `criu check` passes on the host, asked once per boot
# and criu binary (<state>/local/criu-check), and refused elsewhere as
# `unsupported` with the reason -- never a plain pause in its place.
# The dump and restore themselves run in the check-vm guest (CRIU
# 3.17 fails `criu check` on newer kernels than Debian 12's):
# tests/hibernate-vm.bats, which tests/vm-run runs there.
load lib/helpers
load lib/session
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

CACHE() { echo "$SBX_STATE_DIR/local/criu-check"; }

# What this host should say: criu missing, or `criu check` failing (its
# first Error line); empty where it passes (hibernate is offered).
expected_reason() {
	local criu
	criu=$(PATH="$PATH:/usr/sbin:/sbin:/usr/local/sbin" command -v criu) || { echo "CRIU is not installed"; return; }
	"$criu" check >/dev/null 2>&1 || echo "\`$criu check\` fails on this host: Error"
}

@test "sbx-ctl caps reports hibernate only where criu check passes, and why not elsewhere" {
	run --separate-stderr sbx-ctl caps
	assert_success
	if [ -z "$(expected_reason)" ]; then
		[ "$(jqo .caps.hibernate)" = true ]
		[ "$(jqo .unavailable)" = null ]
	else
		[ "$(jqo .caps.hibernate)" = false ]
		[[ "$(jqo .unavailable.hibernate)" == *"$(expected_reason)"* ]]
	fi
}

@test "sbx-ctl hibernate where CRIU cannot: unsupported (69) with the reason, and the sandbox is not paused" {
	[ -n "$(expected_reason)" ] || skip "criu check passes here (tests/hibernate-vm.bats covers hibernate)"
	local id
	id=$(sbx_new_id)
	run --separate-stderr sbx-ctl hibernate --id "$id"
	[ "$status" -eq 69 ]
	[ "$(jqo .error.kind)" = unsupported ]
	[[ "$(jqo .error.message)" == *"$(expected_reason)"* ]]
	[[ "$stderr" == "sbx-ctl: error: unsupported: "*"$(expected_reason)"* ]]
	[ "$(sbx-ls --id "$id" | jq -r .sandbox.state)" = running ]
	run sbx-exec --id "$id" -- echo alive
	[ "$(jqo .exec.stdout)" = alive ]
	sbx-ctl kill --id "$id" >/dev/null
}

criu_path() { PATH="$PATH:/usr/sbin:/sbin:/usr/local/sbin" command -v criu; }

@test "criu check is asked once per boot and criu binary: the verdict is kept, a changed key asks again" {
	criu_path >/dev/null || skip "criu is not installed (tools/deps installs it)"
	# The verdict is kept in the backend's folder only where it exists
	# (caps makes no state folder): where the test above skipped (criu
	# works: the check-vm guest), no sandbox has made it yet.
	mkdir -p "$(dirname "$(CACHE)")"
	rm -f "$(CACHE)"
	sbx-ctl caps >/dev/null
	local key
	key=$(sed -n 1p "$(CACHE)")
	[[ "$key" == "boot=$(cat /proc/sys/kernel/random/boot_id) criu=$(stat -L -c '%d:%i:%s' "$(criu_path)"):"* ]]
	# The kept verdict is what is reported (no new `criu check`) ...
	printf '%s\nfail kept-verdict-marker\n' "$key" >"$(CACHE)"
	run sbx-ctl caps
	[[ "$(jqo .unavailable.hibernate)" == *kept-verdict-marker* ]]
	# ... until the key changes (another boot, another criu): asked again.
	printf '%s\nfail kept-verdict-marker\n' "${key/boot=/boot=x}" >"$(CACHE)"
	run sbx-ctl caps
	[[ "$(jqo .unavailable.hibernate)" != *kept-verdict-marker* ]]
	[ "$(sed -n 1p "$(CACHE)")" = "$key" ]
	# A malformed one is asked again too.
	printf 'garbage' >"$(CACHE)"
	run sbx-ctl caps
	[[ "$(jqo .unavailable.hibernate)" != *kept-verdict-marker* ]]
	[ "$(sed -n 1p "$(CACHE)")" = "$key" ]
}

@test "no criu on the host: unsupported, CRIU is not installed" {
	local id criu
	id=$(sbx_new_id)
	if criu=$(criu_path); then
		# hidden in a mount namespace of this command's own: a device,
		# not a program, where criu was
		run --separate-stderr unshare -m -- sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh \
			"$criu" sbx-ctl hibernate --id "$id"
	else
		run --separate-stderr sbx-ctl hibernate --id "$id"
	fi
	[ "$status" -eq 69 ]
	[ "$(jqo .error.kind)" = unsupported ]
	[[ "$(jqo .error.message)" == *"CRIU is not installed"* ]]
	sbx-ctl kill --id "$id" >/dev/null
}

# The idle timer's third action and the paused tier (sbx-reap(1),
# HIBERNATION) are refused or reported where CRIU cannot: never a plain
# pause that looks like a hibernation.
@test "--on-timeout hibernate where CRIU cannot: sbx-create refuses (69) with the reason, nothing is made" {
	[ -n "$(expected_reason)" ] || skip "criu check passes here (tests/hibernate-vm.bats covers it)"
	local n
	n=$(sbx-ls --all | wc -l)
	run --separate-stderr sbx-create --timeout 30s --on-timeout hibernate
	[ "$status" -eq 69 ]
	[ "$(jqo .error.kind)" = unsupported ]
	[[ "$(jqo .error.message)" == "on_timeout hibernate: "*"$(expected_reason)"* ]]
	[ "$(sbx-ls --all | wc -l)" = "$n" ]
	# A word it does not know is a usage error.
	run -64 sbx-create --timeout 30s --on-timeout sleep
	# No idle timer, nothing to hibernate: made, with no timer.
	run sbx-create --on-timeout hibernate
	assert_success
	sbx-ctl kill --id "$(jqo .sandbox.id)" >/dev/null
}

@test "sbx-ctl timeout --on-timeout hibernate where CRIU cannot: refused (69), the timer unchanged" {
	[ -n "$(expected_reason)" ] || skip "criu check passes here (tests/hibernate-vm.bats covers it)"
	local id
	id=$(sbx-create --timeout 1h --on-timeout kill | jq -r .sandbox.id)
	run --separate-stderr sbx-ctl timeout --id "$id" --seconds 60 --on-timeout hibernate
	[ "$status" -eq 69 ]
	[[ "$(jqo .error.message)" == *"$(expected_reason)"* ]]
	[ "$(jq -r .timeout.on_timeout "$SBX_STATE_DIR/local/sandboxes/$id/sandbox.json")" = kill ]
	[ "$(jq -r .timeout.seconds "$SBX_STATE_DIR/local/sandboxes/$id/sandbox.json")" = 3600 ]
	run sbx-ctl timeout --id "$id" --seconds 60 --on-timeout pause
	assert_success
	[ "$(jqo .ctl.on_timeout)" = pause ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "a profile's on_timeout hibernate where CRIU cannot: a session's create refuses; a bad word is a config error (78)" {
	[ -n "$(expected_reason)" ] || skip "criu check passes here (tests/hibernate-vm.bats covers it)"
	local c=$BATS_TEST_TMPDIR/config.json p
	p=$(jq -r '.default_profile // "default"' "$SBX_CONFIG")
	jq --arg p "$p" '.profiles[$p] += {"idle_timeout": "5m", "on_timeout": "hibernate"}' "$SBX_CONFIG" >"$c"
	run --separate-stderr env SBX_CONFIG="$c" sbx-create --tenant hibp --session s1
	[ "$status" -eq 69 ]
	[[ "$(jqo .error.message)" == *"on_timeout hibernate: "*"$(expected_reason)"* ]]
	[ "$(rcli exists "$(skey hibp s1 binding)")" = 0 ]
	jq --arg p "$p" '.profiles[$p] += {"on_timeout": "nap"}' "$SBX_CONFIG" >"$c"
	run --separate-stderr env SBX_CONFIG="$c" sbx-ls
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"on_timeout must be pause, kill or hibernate"* ]]
}

@test "the reaper's hibernate tier where CRIU cannot: the report says why once, the paused sandbox stays paused" {
	[ -n "$(expected_reason)" ] || skip "criu check passes here (tests/hibernate-vm.bats covers it)"
	local c=$BATS_TEST_TMPDIR/config.json p id
	p=$(jq -r '.default_profile // "default"' "$SBX_CONFIG")
	jq --arg p "$p" '.profiles[$p] += {"hibernate_paused": "1s"}' "$SBX_CONFIG" >"$c"
	export SBX_CONFIG=$c
	id=$(sbx-create --tenant hibt --session s1 | jq -r .sandbox.id)
	sbx-ctl pause --id "$id" >/dev/null
	sleep 2.2                      # past the tier (the clock is in seconds)
	run --separate-stderr sbx-reap --tenant hibt
	assert_success
	[[ "$(jqo .reap.hibernate_unavailable)" == *"$(expected_reason)"* ]]
	[ "$(jqo '.reap.hibernated // "none"')" = none ]
	[ "$(sbx-ls --id "$id" | jq -r '.sandbox.state_word // .sandbox.state')" = paused ]
	sbx-ctl kill --id "$id" >/dev/null
}
