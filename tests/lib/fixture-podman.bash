# tests/lib/fixture-podman.bash - the docker backend on podman's
# Docker-compatible API: `podman system service` on a private socket with
# its own storage and configuration (tests/lib/podman.sh).  Everything else
# is the docker fixture's (tests/lib/fixture-docker.bash).

FIXTURE_ENGINE_SH=podman.sh
. "$(dirname "${BASH_SOURCE[0]}")/fixture-docker.bash"
# Init: true runs catatonit, as podman-init.
FIXTURE_INIT_COMM=podman-init
