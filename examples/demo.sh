#!/usr/bin/env bash
# examples/demo.sh - the main job (`make demo`): install a skill once, as
# root, in an installer sandbox; freeze it into the tenant's skill image
# (ledger first, then snapshot, then the image pointer); start sessions from
# that image and run the skill in them; install a second skill while a
# user's turn is in flight and watch the turn keep its sandbox while the
# next turn moves onto the new image; reap; clean up.
#
# Everything is private to this run: a redis-server on a unix socket in a
# temp folder, the backend's state in that folder, and every sandbox it
# makes.  SBX_BACKEND picks the backend: `local` (the default; its state on
# a tmpfs: snapshots over the builtin `host` template need their layers on
# another filesystem than /) or `docker` (the engine DOCKER_HOST names when
# it answers, else a private dockerd started for the run, as the tests do;
# the busybox base image sbx/base:latest).  All of it is removed on exit,
# also on failure or Ctrl-C: sandboxes, snapshots, a dockerd it started.
# Prints every document, then a summary with timings; exits non-zero when
# any check fails.
#
# Needs root (namespaces, overlayfs, cgroups; or dockerd), the programs
# built by `make` ($BUILD/bin, default ./build/bin), redis-server, jq.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$top/build}
export PATH="$BUILD/bin:$PATH"
skills="$top/examples/skills"
TENANT=demo
# On an engine others may use, a tenant of this run's own.
[ "${SBX_BACKEND:-local}" = local ] || TENANT=demo-$$

die() { echo "demo: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run me as root (the local backend needs namespaces and cgroups; a private dockerd, root)"
for p in sbx-create sbx-exec sbx-fs sbx-snap sbx-ctl sbx-lease sbx-ls; do
	command -v "$p" >/dev/null || die "$p is not built (run make)"
done
for p in redis-server redis-cli jq; do
	command -v "$p" >/dev/null || die "$p is missing (tools/deps installs it)"
done

work=$(mktemp -d /tmp/sbx-demo.XXXXXX) || die "mktemp failed"
chmod 755 "$work"
backend=${SBX_BACKEND:-local}
export SBX_STATE_DIR="$work/state" SBX_CONFIG="$work/config.json" SBX_BACKEND=$backend
unset SBX_PROFILE SBX_FAULT
mkdir -p "$SBX_STATE_DIR" "$work/docs"
dockerd_dir=
serve_dir=
case $backend in
local) echo '{}' >"$SBX_CONFIG" ;;
docker|e2b|cube) ;;   # below, once cleanup is in place
*) die "SBX_BACKEND must be local, docker, e2b or cube (got '$backend')" ;;
esac

# ---- cleanup: always, in this order: sandboxes, redis, state, folder ----
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "${SBX_REDIS_URL:-}" ]; then
		# local: the state is this run's; docker: only this run's tenant
		sbx-ls --all $([ "$backend" = docker ] && echo --label "sbx.tenant=$TENANT") 2>/dev/null |
			sbx-ctl kill >/dev/null 2>&1 || true
	fi
	if [ "$backend" = docker ] && [ -s "$SBX_CONFIG" ]; then
		# the snapshots this run made (an engine outlives the run)
		for sid in $(jq -r '.snapshot.id // empty' "$work"/docs/install-*.ndjson 2>/dev/null | sort -u); do
			sbx-snap rm --force "$sid" >/dev/null 2>&1 || true
		done
	fi
	[ -z "$dockerd_dir" ] || "$top/tests/lib/dockerd.sh" stop "$dockerd_dir" >/dev/null 2>&1 || true
	[ -z "$serve_dir" ] || fixture_engine_stop "$serve_dir" >/dev/null 2>&1 || true
	if [ -f "$work/redis/redis.pid" ]; then
		redis-cli -s "$work/redis/redis.sock" shutdown nosave >/dev/null 2>&1 ||
			kill "$(cat "$work/redis/redis.pid")" 2>/dev/null || true
	fi
	mountpoint -q "$SBX_STATE_DIR" && umount -l "$SBX_STATE_DIR" 2>/dev/null
	rm -rf --one-file-system "$work" 2>/dev/null || true
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- a private redis-server (as tests/lib/helpers.bash does) ----
mkdir -p "$work/redis"
redis-server --port 0 --unixsocket "$work/redis/redis.sock" --unixsocketperm 700 \
	--save '' --appendonly no --daemonize yes --pidfile "$work/redis/redis.pid" \
	--logfile "$work/redis/redis.log" --dir "$work/redis" >/dev/null || die "redis-server did not start"
for _ in $(seq 1 100); do
	redis-cli -s "$work/redis/redis.sock" ping >/dev/null 2>&1 && break
	sleep 0.05
done
redis-cli -s "$work/redis/redis.sock" ping >/dev/null 2>&1 || die "redis-server does not answer"
export SBX_REDIS_URL="unix://$work/redis/redis.sock"

if [ "$backend" = e2b ] || [ "$backend" = cube ]; then
	# A private sbx-serve over the local backend (as the tests start it):
	# the e2b backend speaks E2B's wire to it, cube Cube's, through a
	# proxy node for the data plane.
	# shellcheck source=tests/lib/fixture-e2b.bash
	. "$top/tests/lib/fixture-$backend.bash"
	serve_dir="$work/serve"
	mkdir -p "$serve_dir"
	out=$(fixture_engine_start "$serve_dir") || die "sbx-serve did not start"
	eval "$out"
	fixture_profile "$SBX_CONFIG" || die "no profile for $backend"
elif [ "$backend" = local ]; then
	mount -t tmpfs -o size=4g,mode=0700 sbx-demo-state "$SBX_STATE_DIR" ||
		die "cannot mount a tmpfs for the state dir"
else
	# The engine: DOCKER_HOST when it answers, else a private dockerd.
	if ! "$top/tests/lib/dockerd.sh" ping; then
		dockerd_dir="$work/dockerd"
		out=$("$top/tests/lib/dockerd.sh" start "$dockerd_dir") || die "no engine at DOCKER_HOST and a private dockerd did not start"
		eval "$out"
		export DOCKER_HOST
	fi
	"$top/tests/lib/dockerd.sh" image sbx/base:latest || die "building the base image sbx/base:latest failed"
	printf '{"profiles": {"default": {"backend": "docker", "template": "sbx/base:latest", "on_timeout": "kill"}}}\n' >"$SBX_CONFIG"
fi

# ---- checks, timings, documents ----
failures=0
declare -a summary=()
now_ms() { date +%s%3N; }
pass() { summary+=("  ok    $*"); echo "demo: ok - $*" >&2; }
fail() { summary+=("  FAIL  $*"); echo "demo: FAIL - $*" >&2; failures=$((failures + 1)); }
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
timed() { # timed LABEL: runs the rest of the line in a pipeline-friendly way
	local label=$1 t0 t1
	shift
	t0=$(now_ms)
	"$@"
	local rc=$?
	t1=$(now_ms)
	summary+=("  $(printf '%6d ms' $((t1 - t0)))  $label")
	return $rc
}
show() { # print a stage's documents (compact, one per line)
	echo "# $1"
	jq -c . "$2" 2>/dev/null || cat "$2"
}
jqf() { jq -r "$2" "$1" 2>/dev/null | tail -n1; }

# install SKILL: the DESIGN §2 pipeline, one process per stage.
install_skill() {
	local name=$1
	local out="$work/docs/install-$name.ndjson"
	sbx-create --tenant "$TENANT" --skill-image --label purpose=skill-install \
		| sbx-fs put --root "$skills/$name" "/opt/sbx/skills/$name" \
		| sbx-exec --root --check -- "/opt/sbx/skills/$name/install.sh" \
		| sbx-exec --check -- "/opt/sbx/skills/$name/verify.sh" \
		| sbx-snap --tenant "$TENANT" --skill "$name" --clean-scratch \
		| sbx-ctl kill >"$out"
	local rc=$?
	show "install $name (sbx-create | sbx-fs put | sbx-exec install.sh | sbx-exec verify.sh | sbx-snap | sbx-ctl kill)" "$out"
	return $rc
}

# session S [FILE]: resolve the session's sandbox into FILE (a document).
session() {
	sbx-create --tenant "$TENANT" --session "$1" >"$2"
}

first=${DEMO_SKILL:-csvstat}
second=${DEMO_SKILL2:-wordfreq}
[ -d "$skills/$first" ] && [ -d "$skills/$second" ] || die "examples/skills/$first or $second is missing"
csv=$'region,units,price\nnorth,4,2.5\nsouth,12,3.5\neast,5,\n'

# 1. Install the first skill, freeze it into the tenant's image.
timed "install $first: create, put, install.sh, verify.sh, snapshot, kill" install_skill "$first"
check "the install pipeline ends without an error document" \
	test "$(jqf "$work/docs/install-$first.ndjson" '.error.kind // "none"')" = none
snap1=$(jqf "$work/docs/install-$first.ndjson" '.snapshot.id // empty')
check "sbx-snap reported the snapshot ($snap1, generation $(jqf "$work/docs/install-$first.ndjson" '.snapshot.generation'))" \
	test -n "$snap1"
check "install.sh ran as root, verify.sh as uid 1000 (both exit 0)" \
	test "$(jq -s -r '[.[-1].exec.exit_code] | .[0] // 1' "$work/docs/install-$first.ndjson")" = 0

# 2. Two sessions start from the image and run the skill.
for s in s1 s2; do
	timed "resolve session $s (new sandbox from the skill image)" session "$s" "$work/docs/$s.json"
	show "session $s" "$work/docs/$s.json"
	check "session $s starts from the skill image" \
		test "$(jqf "$work/docs/$s.json" '.sandbox.template')" = "$snap1"
	timed "run $first in session $s" sbx-exec --stdin-text "$csv" -- "/opt/sbx/skills/$first/bin/$first" - \
		<"$work/docs/$s.json" >"$work/docs/$s-run.json"
	show "$first in session $s" "$work/docs/$s-run.json"
	check "the skill answers in session $s (uid 1000, no reinstall)" \
		test "$(jqf "$work/docs/$s-run.json" '.exec.exit_code')" = 0
done
id1=$(jqf "$work/docs/s1.json" '.sandbox.id')
id2=$(jqf "$work/docs/s2.json" '.sandbox.id')
check "the two sessions have their own sandboxes" test -n "$id1" -a "$id1" != "$id2"
sbx-exec --check -- sh -c 'echo scratch >/workspace/output/mine.txt' <"$work/docs/s2.json" >/dev/null
check "a session cannot write the skill tree" \
	test "$(sbx-exec -- sh -c "touch /opt/sbx/skills/$first/x" <"$work/docs/s1.json" | jq -r .exec.exit_code)" != 0

# 3. A turn begins in s1; the second skill is installed during it.
sbx-lease begin --tenant "$TENANT" --session s1 >"$work/docs/turn1-begin.json"
show "turn 1 begins in s1" "$work/docs/turn1-begin.json"
timed "resolve s1 at the start of turn 1" session s1 "$work/docs/s1-turn1a.json"
check "the turn starts on s1's sandbox" test "$(jqf "$work/docs/s1-turn1a.json" '.sandbox.id')" = "$id1"

timed "install $second during the turn (cumulative: from the $first image)" install_skill "$second"
check "the second install ends without an error document" \
	test "$(jqf "$work/docs/install-$second.ndjson" '.error.kind // "none"')" = none
snap2=$(jqf "$work/docs/install-$second.ndjson" '.snapshot.id // empty')
check "the image moved to a new snapshot ($snap2)" test -n "$snap2" -a "$snap2" != "$snap1"
check "the tenant's sessions were marked stale ($(jqf "$work/docs/install-$second.ndjson" '.snapshot.stale.marked') marked)" \
	test "$(jqf "$work/docs/install-$second.ndjson" '.snapshot.stale.marked // 0')" -ge 2

timed "resolve s1 again in the same turn" session s1 "$work/docs/s1-turn1b.json"
show "s1 mid-turn" "$work/docs/s1-turn1b.json"
check "mid-turn, s1 keeps its sandbox ($id1)" \
	test "$(jqf "$work/docs/s1-turn1b.json" '.sandbox.id')" = "$id1"
sbx-exec -- sh -c "test -x /opt/sbx/skills/$second/bin/$second" <"$work/docs/s1-turn1b.json" >"$work/docs/s1-mid.json"
check "mid-turn, s1 still runs the old image (no $second yet)" \
	test "$(jqf "$work/docs/s1-mid.json" '.exec.exit_code')" != 0
sbx-lease end --tenant "$TENANT" --session s1 >"$work/docs/turn1-end.json"
show "turn 1 ends" "$work/docs/turn1-end.json"

# 4. The next turn rebuilds s1 onto the new image: both skills present.
sbx-lease begin --tenant "$TENANT" --session s1 >/dev/null
timed "resolve s1 at the start of turn 2 (rebuild onto the new image)" session s1 "$work/docs/s1-turn2.json"
show "s1 in turn 2" "$work/docs/s1-turn2.json"
id1b=$(jqf "$work/docs/s1-turn2.json" '.sandbox.id')
check "turn 2 got a new sandbox ($id1b, was $id1)" test -n "$id1b" -a "$id1b" != "$id1"
check "from the new image" test "$(jqf "$work/docs/s1-turn2.json" '.sandbox.template')" = "$snap2"
timed "run both skills in s1" sbx-exec --stdin-text "$csv" -- sh -c \
	"/opt/sbx/skills/$first/bin/$first - && echo 'the cat and the hat' | /opt/sbx/skills/$second/bin/$second -n 2" \
	<"$work/docs/s1-turn2.json" >"$work/docs/s1-both.json"
show "both skills in s1" "$work/docs/s1-both.json"
check "both skills run in the rebuilt sandbox" test "$(jqf "$work/docs/s1-both.json" '.exec.exit_code')" = 0
sbx-lease end --tenant "$TENANT" --session s1 >/dev/null

# s2 has no turn in flight: its next resolve moves it onto the new image.
timed "resolve s2 (stale, no turn in flight: rebuilt)" session s2 "$work/docs/s2-new.json"
show "s2 after the second install" "$work/docs/s2-new.json"
id2=$(jqf "$work/docs/s2-new.json" '.sandbox.id')
check "s2 was rebuilt onto the new image ($id2)" \
	test "$(jqf "$work/docs/s2-new.json" '.resolved + " " + .sandbox.template')" = "rebuilt $snap2"

# 5. The ledger and the image, as an admin sees them.
sbx-snap ls --tenant "$TENANT" >"$work/docs/ledger.ndjson" 2>"$work/docs/ledger.err"
show "sbx-snap ls --tenant $TENANT" "$work/docs/ledger.ndjson"
check "the ledger has both skills ready" \
	test "$(jq -s -r '[.[] | select(.skill.state == "ready")] | length' "$work/docs/ledger.ndjson")" = 2
summary+=("  image $(jq -s -r '.[] | select(.image) | .image | "\(.snapshot_id): generation \(.generation), \(.layers) layers, \(.image_bytes) bytes over \(.base_template)"' "$work/docs/ledger.ndjson")")
check "the image is on the second snapshot, usable by this profile" \
	test "$(jq -s -r '.[] | select(.image) | "\(.image.snapshot_id) \(.image.usable)"' "$work/docs/ledger.ndjson")" = "$snap2 true"

# 6. The reaper, when it is built: nothing bound may go.
if command -v sbx-reap >/dev/null; then
	timed "sbx-reap --all-tenants --grace 0" sbx-reap --all-tenants --grace 0 >"$work/docs/reap.json"
	rrc=$?
	show "sbx-reap" "$work/docs/reap.json"
	check "the reaper finds the world consistent (exit $rrc)" test "$rrc" = 0
	session s2 "$work/docs/s2-after.json"
	check "session s2 survived the reaper" test "$(jqf "$work/docs/s2-after.json" '.sandbox.id')" = "$id2"
	session s1 "$work/docs/s1-after.json"
	check "session s1 survived the reaper" test "$(jqf "$work/docs/s1-after.json" '.sandbox.id')" = "$id1b"
else
	summary+=("  skip  sbx-reap is not built")
fi

echo
echo "== sbx demo: tenant $TENANT, skills $first + $second, backend $backend =="
printf '%s\n' "${summary[@]}"
if [ "$failures" -gt 0 ]; then
	echo "== $failures check(s) FAILED =="
	exit 1
fi
echo "== all checks passed =="
