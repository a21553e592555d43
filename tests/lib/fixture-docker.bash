# tests/lib/fixture-docker.bash - the docker backend's fixture on Docker
# Engine: a private dockerd for the whole run (tests/lib/dockerd.sh: own
# data root, socket and containerd namespace, no bridge) and the busybox
# base image sbx/base:latest built into it through the Engine API.  The
# contract of a fixture file is in tests/lib/fixture-local.bash;
# tests/lib/fixture-podman.bash reuses this one on another engine.
# shellcheck disable=SC2034 # the variables are the fixture's answers, read by the tests

FIXTURE_BACKEND=docker
FIXTURE_DOC=docs/docker.md
SBX_TEST_TEMPLATE=${SBX_TEST_DOCKER_IMAGE:-sbx/base:latest}
# CapDrop ALL + CHOWN DAC_OVERRIDE FOWNER FSETID SETGID SETUID KILL
FIXTURE_ROOT_CAPS=00000000000000fb
FIXTURE_ID_RE='^[0-9a-f]{64}$'
export FIXTURE_SNAP_ID_RE='^sha256:[0-9a-f]{64}$'
FIXTURE_FLAT_LAYERS=1   # a self-contained image
# The Engine API reports 128+N for a death by signal N.
FIXTURE_SIGNAL_SEEN=0
FIXTURE_INIT_COMM=docker-init
FIXTURE_PUT_OVER_LINK=replace
# dockerd bind-mounts /etc/hostname; /etc/group is the image's own.
FIXTURE_TEMPLATE_FILE=/etc/group
FIXTURE_ENGINE_SH=${FIXTURE_ENGINE_SH:-dockerd.sh}

fixture_lib() { echo "${SBX_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/tests/lib"; }

# Start the engine in DIR and build the base image into it.
fixture_engine_start() {
	local out
	out=$("$(fixture_lib)/$FIXTURE_ENGINE_SH" start "$1") || return 1
	eval "$out"
	export DOCKER_HOST
	"$(fixture_lib)/dockerd.sh" image "$SBX_TEST_TEMPLATE" || return 1
	printf '%s\n' "$out"
}
fixture_engine_stop() { "$(fixture_lib)/$FIXTURE_ENGINE_SH" stop "$1"; }

# The base image as the profile's template, and kill as the idle action:
# docker refuses pause on timeout (docs/docker.md).
fixture_profile() {
	"$(fixture_lib)/dockerd.sh" ping || {
		echo "SBX_TEST_BACKEND=$SBX_TEST_BACKEND: no engine at DOCKER_HOST='${DOCKER_HOST:-}' (run through tests/run)" >&2
		return 1
	}
	printf '{"profiles": {"default": {"backend": "docker", "template": "%s", "on_timeout": "kill"}}}\n' \
		"$SBX_TEST_TEMPLATE" >"$1"
}
fixture_missing_id() { printf '%064d\n' 0; }
# The fingerprint is taken over the configured endpoint: the same engine
# named explicitly is another identity.
fixture_other_identity() {
	jq --arg e "$DOCKER_HOST" '.profiles.default.endpoint = $e' "$SBX_CONFIG" >"$SBX_TEST_DIR/other-identity.json"
	SBX_CONFIG=$SBX_TEST_DIR/other-identity.json "$@"
}
# The engine names the container's host after its short id.
fixture_hostname() { echo "${1:0:12}"; }
# What the container runs with: its limits, network and capabilities, and
# the labels that hold the idle timer and the egress broker.
fixture_settings() {
	curl -sf --unix-socket "${DOCKER_HOST#unix://}" "http://docker/v1.41/containers/$1/json" |
		jq -S '{host: .HostConfig | {Memory, MemorySwap, NanoCpus, PidsLimit, NetworkMode,
					 Dns, Init, CapAdd, CapDrop, SecurityOpt},
			ttl: .Config.Labels["sbx.idle-ttl-seconds"],
			no_resume: .Config.Labels["sbx.no-auto-resume"],
			egress: (.Config.Labels["sbx.egress"] != null)}'
}
