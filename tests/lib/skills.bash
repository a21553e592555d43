# tests/lib/skills.bash - what the skill tests share: the local backend as
# root over a tmpfs state dir (snapshots over the `host` template need
# their layers on another filesystem than /), an sbx-snap with skill mode,
# and a few jq readers.
# Load after lib/helpers:  load lib/helpers; load lib/skills

SKILLS="$SBX_TOP/examples/skills"

# skills_setup_file NAME: sbx_setup_file, then (as root) a 2 GB tmpfs named
# NAME as the state dir, and $DOCS for the tests' document files.
skills_setup_file() {
	sbx_setup_file
	[ "$(id -u)" -eq 0 ] || return 0
	mount -t tmpfs -o size=2g,mode=0700 "$1" "$SBX_STATE_DIR"
	export DOCS="$SBX_TEST_DIR/docs"
	mkdir -p "$DOCS"
}

# Kill what is left, then unmount the state dir.
skills_teardown_file() {
	if mountpoint -q "${SBX_STATE_DIR:-/nonexistent}"; then
		sbx-ls --all 2>/dev/null | sbx-ctl kill >/dev/null 2>&1 || true
		umount -l "$SBX_STATE_DIR"
	fi
	sbx_teardown_file
}

skills_setup() {
	[ "$(id -u)" -eq 0 ] || skip "the local backend needs root"
	sbx-snap --help | grep -q -- '--skill ' || skip "this sbx-snap has no skill mode"
}

# jq on the documents of the last `run` (stderr lines interleave there).
jqd() { printf '%s\n' "$output" | grep '^{' | jq -r "$@"; }

# image_of [TENANT]: the snapshot the tenant's image points at (default $T).
image_of() { sbx-snap ls --tenant "${1:-$T}" | jq -r 'select(.image) | .image.snapshot_id'; }
