# tests/lib/fixture-cube.bash - the cube backend's fixture: the e2b
# fixture's private sbx-serve in Cube's dialect (--flavor cube), reached
# as a Cube client reaches CubeProxy: the data plane at
# 49983-<id>.cube.test, every connection sent to the server's address by
# CURLOPT_CONNECT_TO (the profile's proxy), as cube-wire §3 describes.

FIXTURE_BACKEND=cube
FIXTURE_DOC=docs/cube.md
FIXTURE_SERVE_FLAGS="--flavor cube --domain cube.test"
# shellcheck source=tests/lib/fixture-e2b.bash
. "$(dirname "${BASH_SOURCE[0]}")/fixture-e2b.bash"

fixture_profile_extra() {
	local f=$1
	jq --arg p "$SBX_TEST_SERVE_URL" '.profiles.default += {domain: "cube.test", proxy: $p}' "$f" >"$f.new" &&
		mv "$f.new" "$f"
}
