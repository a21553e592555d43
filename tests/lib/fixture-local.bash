# tests/lib/fixture-local.bash - the local backend's fixture for the
# conformance suites (SBX_TEST_BACKEND=local, the default).
#
# Every backend has one fixture file, tests/lib/fixture-<name>.bash, and
# nothing else in tests/ knows backend names.  It is sourced by tests/run
# (engine start and stop, once per run) and by tests/lib/helpers.bash (the
# profile and facts, once per test file), so it holds plain shell only.  It
# defines:
#
#   FIXTURE_BACKEND          the sbx backend the profile names
#   FIXTURE_DOC              the backend's docs: its "Missing capabilities"
#                            line lists what `sbx-ctl caps` reports false
#   SBX_TEST_TEMPLATE        the base template: a shell and coreutils-level
#                            tools (sh, sleep, cat, stat, tar, awk, ...)
#   fixture_engine_start DIR start what the backend needs, state under DIR;
#                            prints `export VAR=...` lines for tests/run
#   fixture_engine_stop DIR  stop it (by pid) and remove DIR
#   fixture_profile FILE     write the configuration (the default profile)
#   fixture_missing_id       a sandbox id in the backend's format that
#                            names nothing
#   FIXTURE_ROOT_CAPS        CapEff of root in a sandbox (hex)
#   FIXTURE_INIT_COMM        /proc/1/comm inside a sandbox
#   fixture_hostname ID      the hostname a sandbox ID sees
#   FIXTURE_ID_RE            the sandbox id format (an ERE)
#   FIXTURE_SNAP_ID_RE       the snapshot id format (exported: jq reads it)
#   FIXTURE_FLAT_LAYERS      layers of a flattened image over the base template
#   FIXTURE_SIGNAL_SEEN      1 if exec reports a death by signal as `signal`
#                            (0: only as exit code 128+N)
#   FIXTURE_PUT_OVER_LINK    `sbx-fs put --root` onto a symlink: refuse (65)
#                            or replace (the link, never its target)
#   FIXTURE_TEMPLATE_FILE    a file of the template's own that a sandbox
#                            may replace
#   fixture_other_identity CMD...  run CMD against the same backend under
#                            another fingerprint (skill images are per identity)
#   fixture_plant_node SB P  optional: make a device node at P inside SB
#                            from the host (what root inside cannot do)
#   fixture_settings ID      optional: the settings sandbox ID runs with
#                            (limits, idle timer, network), as canonical
#                            JSON: two sandboxes made alike print the same
#
# A new backend (e2b, cube) needs only such a file.
# shellcheck disable=SC2034 # the variables are the fixture's answers, read by the tests

FIXTURE_BACKEND=local
FIXTURE_DOC=docs/local.md
SBX_TEST_TEMPLATE=host
FIXTURE_ROOT_CAPS=00000000a00405fb
FIXTURE_INIT_COMM=sbx-init
FIXTURE_ID_RE='^sb-[0-9a-f]+$'
export FIXTURE_SNAP_ID_RE='^snap-[0-9a-f]+$'
FIXTURE_FLAT_LAYERS=2   # the template's, then one of its own
FIXTURE_SIGNAL_SEEN=1
FIXTURE_PUT_OVER_LINK=refuse
FIXTURE_TEMPLATE_FILE=/etc/hostname

# Nothing to start: the local backend is the programs themselves.
fixture_engine_start() { :; }
fixture_engine_stop() { :; }

fixture_profile() { echo '{}' >"$1"; }
fixture_missing_id() { echo sb-000000000000; }
fixture_hostname() { echo "$1"; }
fixture_settings() {
	jq -S '{limits, timeout, network, resume_on_use}' "$SBX_STATE_DIR/local/sandboxes/$1/sandbox.json"
}
# The fingerprint is taken over the state dir's path, as spelt.
fixture_other_identity() { SBX_STATE_DIR="$SBX_STATE_DIR/." "$@"; }
fixture_plant_node() {
	nsenter -t "$(jq -r .init_pid "$SBX_STATE_DIR/local/sandboxes/$1/sandbox.json")" -m -- mknod "$2" c 1 1
}
