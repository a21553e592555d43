#!/usr/bin/env bats
# The caller's secrets do not live on in the sandbox: the init is its own
# program (sbx-init) with a fixed argv and an empty environment, slirp4netns
# gets a minimal one, so no configuration secret (the Redis URL's password,
# the api_key_env variable) nor a value given to sbx-create is in any
# /proc/*/cmdline or environ of the host's sbx processes or the sandbox's
# while the sandbox lives.  --env KEY takes the value from the caller's
# environment, so that a value never has to be on a command line.  The
# markers below are random test strings, never printed.

load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

# A file of fixed-string patterns, one per secret; grep -f reads them, so
# no scanning process carries a marker in its own command line.
marker_file() {
	local f=$BATS_TEST_TMPDIR/markers i
	: >"$f"
	for i in "$@"; do echo "$i" >>"$f"; done
	echo "$f"
}

# Every process on the host whose cmdline or environ holds a marker: "PID
# file" lines (grep -l).  Processes that exit while we look are skipped.
host_hits() {
	local f=$1 p
	for p in /proc/[0-9]*; do
		[ "$p" = "/proc/$$" ] && continue
		grep -qaFf "$f" "$p/cmdline" 2>/dev/null && echo "${p#/proc/} cmdline"
		grep -qaFf "$f" "$p/environ" 2>/dev/null && echo "${p#/proc/} environ"
	done
	return 0
}

@test "no secret of the caller is in /proc of the init, slirp or the sandbox's processes" {
	command -v slirp4netns >/dev/null || skip "slirp4netns not installed"
	local m1 m2 m3 m4 id init f
	m1=redispw-$RANDOM$RANDOM$RANDOM m2=apikey-$RANDOM$RANDOM$RANDOM
	m3=envkey-$RANDOM$RANDOM$RANDOM m4=envval-$RANDOM$RANDOM$RANDOM
	printf '{"profiles": {"default": {"api_key_env": "SBX_TEST_API_KEY"}}}\n' \
		>"$BATS_TEST_TMPDIR/config.json"
	# The caller's environment holds the configuration secrets; one value
	# comes by name (--env KEY), one on the command line (--env K=V).
	id=$(SBX_CONFIG=$BATS_TEST_TMPDIR/config.json SBX_REDIS_URL="redis://:$m1@127.0.0.1:1/0" \
		SBX_TEST_API_KEY=$m2 SBX_TEST_ENVKEY=$m3 \
		sbx-create --allow-internet --env SBX_TEST_ENVKEY --env "ENVVAL=$m4" | jq -r .sandbox.id)
	[ -n "$id" ]
	init=$(jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$id/sandbox.json")
	# The init is sbx-init, with its fixed argv and nothing in its environment.
	[ "$(tr '\0' ' ' </proc/"$init"/cmdline)" = "sbx-init " ]
	[ ! -s /proc/"$init"/environ ]
	# Its slirp4netns runs (it is in the sandbox's top cgroup).
	local slirp=""
	for p in $(cat /sys/fs/cgroup/unified/sbx/"$id"/cgroup.procs); do
		[ "$(cat /proc/"$p"/comm)" = slirp4netns ] && slirp=$p
	done
	[ -n "$slirp" ]
	run grep -c . <(tr '\0' '\n' </proc/"$slirp"/environ)
	[ "$output" -le 1 ]
	# Nothing on the host holds any of the four, while the sandbox lives.
	f=$(marker_file "$m1" "$m2" "$m3" "$m4")
	run host_hits "$f"
	assert_success
	[ "$output" = "" ]
	# Inside, as root: the configuration secrets are nowhere (the --env
	# values are, by design, in the commands' environment).
	f=$(marker_file "$m1" "$m2")
	sbx-fs --id "$id" put --root "$f" /root/markers >/dev/null
	run sbx-exec --id "$id" --root -- sh -c '
		for p in /proc/[0-9]*; do
			grep -qaFf /root/markers $p/cmdline 2>/dev/null && echo "$p cmdline"
			grep -qaFf /root/markers $p/environ 2>/dev/null && echo "$p environ"
		done; echo end'
	assert_success
	[ "$(jqo .exec.stdout)" = "end" ]
	# The values reached the commands, as asked.
	run sbx-exec --id "$id" -- sh -c 'test "$SBX_TEST_ENVKEY" = "$1" && test "$ENVVAL" = "$2" && echo ok' \
		sh "$m3" "$m4"
	[ "$(jqo .exec.stdout)" = "ok" ]
	sbx-ctl kill --id "$id" >/dev/null
}

@test "--env KEY takes the value from the caller's environment (sbx-exec, sbx-create)" {
	local id
	id=$(SBX_T_A=from-create sbx_new --env SBX_T_A | jq -r .sandbox.id)
	run env SBX_T_B=from-exec sbx-exec --id "$id" --env SBX_T_B -- sh -c 'echo "$SBX_T_A $SBX_T_B"'
	assert_success
	[ "$(jqo .exec.stdout)" = "from-create from-exec" ]
	# An empty value is a value.
	run env SBX_T_B= sbx-exec --id "$id" --env SBX_T_B -- sh -c 'echo "[${SBX_T_B-unset}]"'
	[ "$(jqo .exec.stdout)" = "[]" ]
}

@test "--env KEY with KEY unset is a usage error, before anything is done" {
	run -64 env -u SBX_T_NOPE sbx-exec --id "$(missing_id)" --env SBX_T_NOPE -- true
	[[ "$output" == *"SBX_T_NOPE"*"not set"* ]]
	local before
	before=$(sbx-ls --all | wc -l)
	run -64 env -u SBX_T_NOPE sbx-create --env SBX_T_NOPE
	[[ "$output" == *"SBX_T_NOPE"*"not set"* ]]
	[ "$(sbx-ls --all | wc -l)" = "$before" ]
	# A bad name is still refused.
	run -64 sbx-exec --id "$(missing_id)" --env =x -- true
}

@test "sbx-init is found beside the program, never elsewhere; it runs only for the backend" {
	# A copy of sbx-create with no libexec/sbx/sbx-init beside it.
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cp "$BUILD/bin/sbx-create" "$BATS_TEST_TMPDIR/bin/"
	run -69 "$BATS_TEST_TMPDIR/bin/sbx-create"
	[[ "$output" == *"libexec/sbx/sbx-init"*"missing"* ]]
	# ... and one with it: the same program works.
	mkdir -p "$BATS_TEST_TMPDIR/libexec/sbx"
	cp "$BUILD/libexec/sbx/sbx-init" "$BATS_TEST_TMPDIR/libexec/sbx/"
	run "$BATS_TEST_TMPDIR/bin/sbx-create"
	assert_success
	[ "$(jqo .sandbox.state)" = running ]
	# Run by hand, without its status pipe and configuration: refused.
	run -64 "$BUILD/libexec/sbx/sbx-init" 3>&- 4>&-
	[[ "$output" == *"local backend only"* ]]
}
