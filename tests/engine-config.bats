#!/usr/bin/env bats
# suite: docker
# An engine that cannot start containers as it is set up is a
# configuration error (exit 78, not retryable), never `unavailable`: a
# missing init binary for Init: true (dockerd started with --init-path to
# nowhere) and rlimits the host cannot grant (podman with its default
# ulimits on a host without CAP_SYS_RESOURCE).  Each test starts a broken
# engine of the run's kind beside the run's own (tests/lib/dockerd.sh,
# tests/lib/podman.sh) and stops it.
load lib/helpers
bats_require_minimum_version 1.5.0

setup_file() { sbx_setup_file; }
teardown_file() { sbx_teardown_file; }

teardown() {
	[ -z "${BROKEN:-}" ] || "$SBX_TOP/tests/lib/$ENGINE_SH" stop "$BROKEN" || true
}

# broken_engine SCRIPT VAR=VALUE...: start SCRIPT's engine with the
# variables set; points DOCKER_HOST at it and builds the base image there.
broken_engine() {
	ENGINE_SH=$1
	shift
	BROKEN=$(mktemp -d /tmp/sbx-broken.XXXXXX)
	local out
	out=$(env "$@" "$SBX_TOP/tests/lib/$ENGINE_SH" start "$BROKEN")
	eval "$out"
	export DOCKER_HOST
	"$SBX_TOP/tests/lib/dockerd.sh" image "$SBX_TEST_TEMPLATE"
}

assert_config_error() {
	run --separate-stderr sbx-create --label suite=engine-config
	[ "$status" -eq 78 ] || { echo "status $status: $output"; false; }
	[ "$(jqo .error.retryable)" = false ]
	[[ "$stderr" == *"cannot start containers as configured"* ]]
	[[ "$stderr" == *"$1"* ]]
	# and nothing was left behind
	[ -z "$(sbx-ls --all --label suite=engine-config)" ]
}

@test "dockerd without its init binary: sbx-create exits 78" {
	[ "$SBX_TEST_BACKEND" = docker ] || skip "a dockerd test (this run: $SBX_TEST_BACKEND)"
	broken_engine dockerd.sh SBX_DOCKERD_ARGS="--init-path /nonexistent/docker-init"
	assert_config_error docker-init
}

@test "podman with rlimits the host cannot grant: sbx-create exits 78" {
	[ "$SBX_TEST_BACKEND" = podman ] || skip "a podman test (this run: $SBX_TEST_BACKEND)"
	broken_engine podman.sh SBX_PODMAN_ULIMITS=engine
	assert_config_error rlimit
}
