# tests/lib/images.bash - what the template and snapshot tests share
# (images.bats, local-images.bats).  Load after lib/helpers.

# jq on the documents of the last `run` (stderr lines interleave there).
jqd() { printf '%s\n' "$output" | grep '^{' | jq -r "$@"; }
# sb DOC [--root] CMD...: run a command in the sandbox, raw output and status.
sb() {
	local doc=$1
	shift
	sbx-exec --raw "$@" <"$doc"
}
sb_kill() { sbx-ctl kill <"$1" >/dev/null; }
# snap DOC [ARGS...]: take a snapshot; sets SID and SNAPDOC (its document).
snap() {
	local doc=$1
	shift
	SNAPDOC=$(sbx-snap "$@" <"$doc") || return 1
	SID=$(printf '%s\n' "$SNAPDOC" | jq -r .snapshot.id)
}

# wait_path DOC PATH: until PATH exists in the sandbox, at most 10 s.
wait_path() {
	for _ in $(seq 400); do
		sb "$1" --root test -e "$2" >/dev/null 2>&1 && return 0
		sleep 0.025
	done
}
