#!/usr/bin/env bats
# suite: local docker podman e2b cube
# Egress by name (issue 28), the same cases on local (the broker instead
# of slirp) and docker/podman (the broker attached to the container's
# namespace, docs/docker.md "Egress"), gated by network_policy.  On e2b
# and cube the policy goes to the service as E2B's lists (allowOut,
# denyOut; PUT /sandboxes/{id}/network for sbx-ctl network) and the
# setup below runs their server, over the local backend, in the
# namespace; what the lists cannot say (a domain deny, ports) is asserted
# to be refused as unsupported, naming the rule (docs/e2b.md "Egress").
# Only busybox is used inside (wget, nc, nslookup, od; TLS ClientHellos
# are made on the host and sent with nc), so the
# docker base image runs them as the local host view does; the fuller
# client set (curl, python3, pip, git) is egress-policy.bats's, on local.
#
# Nothing leaves this machine: the sandboxes are created from inside a
# network namespace this file makes (on docker that is where sbx-create
# starts the broker), the "internet" on private addresses there (the
# profile's egress_allow opens 10.98.0.0/16), names from a test DNS server
# (egress_resolver) and a test certificate.

load lib/helpers
load lib/netns
bats_require_minimum_version 1.5.0

API=10.98.0.1      # api.sbx.test, the allowed name
OTHER=10.98.0.2    # other.sbx.test, a name no rule allows
DNS=10.98.0.53

setup_file() {
	sbx_setup_file
	has_cap network_policy || return 0
	netns_setup
	local a
	for a in "$API" "$OTHER" "$DNS" 169.254.169.254; do in_ns ip addr add "$a/32" dev lo; done
	in_ns setsid python3 "$BATS_TEST_DIRNAME/lib/dns-server.py" "$SBX_TEST_DIR/dns.pid" "$DNS" \
		"api.sbx.test=$API" "other.sbx.test=$OTHER" "meta.sbx.test=169.254.169.254" \
		"loop.sbx.test=127.0.0.1" >/dev/null 2>&1 3>&- &
	local c="$SBX_TEST_DIR/ca"
	mkdir -p "$c"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=api.sbx.test \
		-addext "subjectAltName=DNS:api.sbx.test,DNS:other.sbx.test" \
		-keyout "$c/srv.key" -out "$c/srv.pem" 2>/dev/null
	in_ns setsid python3 "$BATS_TEST_DIRNAME/lib/egress-servers.py" "$SBX_TEST_DIR/srv.pid" \
		"$c/srv.pem" "$c/srv.key" "$API" "$OTHER" 169.254.169.254 >/dev/null 2>&1 3>&- &
	for _ in $(seq 1 400); do [ -s "$SBX_TEST_DIR/srv.pid" ] && [ -s "$SBX_TEST_DIR/dns.pid" ] && break; sleep 0.05; done
	[ -s "$SBX_TEST_DIR/srv.pid" ]
	local egress
	egress=$(jq -cn --arg dns "$DNS" '{"egress_allow": ["10.98.0.0/16"], "egress_resolver": $dns}')
	if [ -n "${SBX_TEST_SERVE_URL:-}" ]; then
		# e2b, cube: a server of this file's own (local backend) in the
		# namespace, so the brokers it starts are there too; the profile
		# points at it.
		local sd=$SBX_TEST_DIR/eg-serve port= i
		mkdir -p "$sd"
		jq -n --argjson e "$egress" '{profiles: {default: $e}}' >"$sd/config.json"
		# shellcheck disable=SC2086
		nsenter --net="$NS" env -u SBX_PROFILE SBX_CONFIG="$sd/config.json" SBX_STATE_DIR="$sd/state" \
			SBX_BACKEND=local sbx-serve --listen 127.0.0.1:0 --api-key-file "$SBX_TEST_SERVE_KEY" \
			--state-dir "$sd/serve" --quiet ${FIXTURE_SERVE_FLAGS:-} </dev/null >"$sd/log" 2>&1 3>&- &
		echo $! >"$SBX_TEST_DIR/serve.pid"
		for i in $(seq 1 200); do
			port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$sd/log" | head -1)
			[ -n "$port" ] && break
			sleep 0.05
		done
		[ -n "$port" ]
		# Cube's data plane goes through the profile's proxy node: this
		# server too.
		jq --arg u "http://127.0.0.1:$port" '.profiles.default.endpoint = $u |
			if .profiles.default.proxy then .profiles.default.proxy = $u else . end' \
			"$SBX_CONFIG" >"$SBX_CONFIG.new" && mv "$SBX_CONFIG.new" "$SBX_CONFIG"
	else
		jq --argjson e "$egress" '.profiles.default += $e' \
			"$SBX_CONFIG" >"$SBX_CONFIG.new" && mv "$SBX_CONFIG.new" "$SBX_CONFIG"
	fi
}

setup() { need_cap network_policy; }

teardown_file() {
	if [ -n "${NS:-}" ]; then
		in_ns sbx-ls --all 2>/dev/null | in_ns sbx-ctl kill >/dev/null 2>&1 || true
		netns_teardown dns.pid srv.pid serve.pid
		local sd=$SBX_TEST_DIR/eg-serve
		[ ! -d "$sd" ] || SBX_CONFIG="$sd/config.json" SBX_STATE_DIR="$sd/state" SBX_BACKEND=local \
			sbx-ls --all 2>/dev/null | SBX_CONFIG="$sd/config.json" SBX_STATE_DIR="$sd/state" \
			SBX_BACKEND=local sbx-ctl kill >/dev/null 2>&1 || true
	fi
	sbx_teardown_file
}

# Every program from inside the namespace: on e2b and cube the server is
# there (on local and docker it changes nothing).
sx() { in_ns "$@"; }

# The backend sends the policy as E2B's lists (e2b, cube).
e2b_lists() { [ "$SBX_TEST_BACKEND" = e2b ] || [ "$SBX_TEST_BACKEND" = cube ]; }

# An HTTP/1.0 request for Host $2 sent to address $1 port 80 by nc: the
# answer's text.
http_to() { echo "printf 'GET / HTTP/1.0\\r\\nHost: $2\\r\\n\\r\\n' | busybox nc $1 80 2>&1; echo rc=\$?"; }

# A TLS ClientHello for SNI $2 (none when "-") sent to $1 port 443 by nc;
# prints the first bytes that came back in hex: 16 03 03 (the server's
# handshake) or 15 03 03 00 02 02 31 (the broker's access_denied alert).
# Made on the host (python3's ssl), so no TLS client is needed inside.
hello_to() {
	local oct
	oct=$(python3 - "$2" <<'PY'
import ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
s = ctx.wrap_bio(i, o, server_hostname=None if sys.argv[1] == '-' else sys.argv[1])
try:
    s.do_handshake()
except ssl.SSLWantReadError:
    pass
print(''.join('\\%03o' % b for b in o.read()))
PY
)
	echo "printf '$oct' | busybox nc -w 3 $1 443 | busybox od -An -tx1 | busybox head -1"
}

@test "egress conformance: an allowed name answers over HTTP and HTTPS, as uid 1000 and as root; sbx-ls shows the policy" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	run sx sbx-ls --id "$id"
	assert_success
	[ "$(jqo '.sandbox.network_policy.rules[0].to')" = api.sbx.test ]
	[ "$(jqo '.sandbox.network_policy.default')" = deny ]
	inside "$id" 'busybox wget -qO- http://api.sbx.test/'
	[[ "$output" == *"answer-$API host=api.sbx.test"* ]]
	inside --root "$id" 'busybox wget -qO- http://api.sbx.test/'
	[[ "$output" == *"answer-$API host=api.sbx.test"* ]]
	# TLS: the allowed name's server answers the ClientHello.
	inside "$id" "$(hello_to api.sbx.test api.sbx.test)"
	[[ "$output" == *" 16 03 03"* ]]
}

@test "egress conformance: a name no rule allows does not resolve; by address it is refused with the rule named" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	inside "$id" 'busybox nslookup other.sbx.test 2>&1; echo rc=$?'
	[[ "$output" == *"NXDOMAIN"* || "$output" == *"can't resolve"* ]]
	[[ "$output" != *"$OTHER"* ]]
	inside "$id" "$(http_to "$OTHER" other.sbx.test)"
	[[ "$output" == *"other.sbx.test:80 by the policy's default (deny)"* ]]
	if e2b_lists; then
		# E2B's denyOut takes IPs and CIDRs only: refused before any
		# sandbox is made, the rule named.
		run -69 sx sbx-create "${SBX_TEST_CREATE_ARGS[@]}" --deny-out other.sbx.test --allow-out api.sbx.test
		[[ "$output" == *"unsupported: the $SBX_TEST_BACKEND backend: rule 1 (deny other.sbx.test): E2B's denyOut takes IPs and CIDRs only"* ]]
		return 0
	fi
	id=$(new_sb --deny-out other.sbx.test --allow-out '*.sbx.test' --allow-out api.sbx.test)
	inside "$id" 'busybox nslookup other.sbx.test 2>&1; echo rc=$?'
	[[ "$output" == *"NXDOMAIN"* || "$output" == *"can't resolve"* ]]
	[[ "$output" != *"$OTHER"* ]]
	inside "$id" "$(http_to "$OTHER" other.sbx.test)"
	[[ "$output" == *"403 Forbidden"*"refused: other.sbx.test:80 by rule 1 (deny other.sbx.test)"* ]]
	[[ "$output" != *answer-* ]]
}

@test "egress conformance: an allowed name at metadata or loopback is refused; an IP literal is judged by CIDR rules" {
	local id
	id=$(new_sb --allow-out meta.sbx.test --allow-out loop.sbx.test --allow-out api.sbx.test)
	inside "$id" "$(http_to 169.254.169.254 meta.sbx.test)"
	[[ "$output" == *"meta.sbx.test at 169.254.169.254:80 is never reachable from a sandbox (link-local"* ]]
	inside "$id" "$(http_to 127.0.0.1 loop.sbx.test)"
	[[ "$output" != *answer-* ]]
	# The allowed name's own address as a literal: no domain rule covers it.
	inside "$id" "$(http_to "$API" "$API")"
	[[ "$output" == *"refused: $API:80 by the policy's default (deny)"* ]]
	id=$(new_sb --allow-out "$API/32")
	inside "$id" "$(http_to "$API" "$API"); echo | busybox nc $API 7000; echo | busybox nc $OTHER 7000; echo rc=\$?"
	[[ "$output" == *"answer-$API host=$API"* ]]
	[[ "$output" == *"raw-$API"* ]]
	[[ "$output" != *"raw-$OTHER"* ]]
}

@test "egress conformance: domain fronting and a refused SNI go nowhere the policy refuses" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	# Host of the allowed name at the refused one's address: the broker
	# dials what it resolved.
	inside "$id" "$(http_to "$OTHER" api.sbx.test)"
	[[ "$output" == *"answer-$API host=api.sbx.test"* ]]
	# The refused name as SNI at the allowed name's address: the broker's
	# TLS alert (access_denied), nothing reached.
	inside "$id" "$(hello_to "$API" other.sbx.test)"
	[[ "$output" == *" 15 03 03 00 02 02 31"* ]]
	# The allowed name as SNI at the refused one's address: the allowed
	# name's server (what the broker resolved) answers.
	inside "$id" "$(hello_to "$OTHER" api.sbx.test)"
	[[ "$output" == *" 16 03 03"* ]]
	# A ClientHello with no SNI: judged by CIDR as an IP literal, refused.
	inside "$id" "$(hello_to "$API" -)"
	[[ "$output" == *" 15 03 03 00 02 02 31"* ]]
}

@test "egress conformance: DNS answers only allowed names; a direct resolver and other UDP are refused" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	inside "$id" 'busybox nslookup api.sbx.test 2>&1'
	[[ "$output" == *"$API"* ]]
	inside "$id" 'busybox nslookup -type=TXT api.sbx.test 2>&1; echo rc=$?'
	[[ "$output" != *"text ="* ]]
	inside "$id" "busybox nslookup api.sbx.test $DNS 2>&1; echo rc=\$?"
	[[ "$output" != *"Address: $API"* ]]
	[[ "$output" != *"Address 1: $API"* ]]
	inside "$id" "echo x | busybox nc -u -w 2 $API 443 2>&1; echo rc=\$?"
	[[ "$output" == *rc=* ]]
}

@test "egress conformance: egress without a policy reaches the open internet but never metadata or link-local" {
	local id
	id=$(new_sb --allow-internet)
	run sx sbx-ls --id "$id"
	assert_success
	[ "$(jqo '.sandbox.network_policy // "none"')" = none ]
	# By address (local's slirp asks the host's resolver, not the test's).
	inside "$id" "busybox wget -qO- http://$API/"
	[[ "$output" == *"answer-$API host=$API"* ]]
	inside "$id" "busybox wget -qO- http://169.254.169.254/latest/meta-data/ 2>&1; echo rc=\$?"
	[[ "$output" != *answer-* ]]
	[[ "$output" == *rc=1* ]]
	inside --root "$id" "busybox wget -qO- http://169.254.169.254/ 2>&1; echo rc=\$?"
	[[ "$output" != *answer-* ]]
	# Without egress, nothing: no resolver, no route.
	id=$(new_sb)
	inside "$id" "busybox wget -qO- http://$API/ 2>&1; echo rc=\$?"
	[[ "$output" != *answer-* ]]
	[[ "$output" == *rc=1* ]]
}

@test "egress conformance: root inside cannot route around the broker" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	inside --root "$id" "busybox ip addr add 10.98.0.9/32 dev lo 2>&1; echo rc=\$?; busybox ip route add 10.98.0.0/16 dev lo 2>&1; echo rc=\$?"
	[[ "$output" != *rc=0* ]]
	inside --root "$id" "busybox ping -c1 -W2 $OTHER 2>&1; echo rc=\$?"
	[[ "$output" != *"bytes from"* ]]
}

@test "egress conformance: sbx-ctl network allows, then revokes, a name on a running sandbox" {
	local id
	id=$(new_sb --allow-out api.sbx.test)
	inside "$id" 'busybox wget -qO- http://other.sbx.test/ 2>&1; echo rc=$?'
	[[ "$output" != *answer-* ]]
	local port=:80
	if e2b_lists; then
		# E2B's lists have no ports: refused, the rule named, the
		# policy unchanged; the same without the port.
		run -69 sx sbx-ctl network --id "$id" --allow-out api.sbx.test --allow-out other.sbx.test:80
		[[ "$output" == *"unsupported: the $SBX_TEST_BACKEND backend: rule 2 (allow other.sbx.test:80): E2B's lists have no ports"* ]]
		run sx sbx-ls --id "$id"
		[ "$(jqo '.sandbox.network_policy.rules | length')" = 1 ]
		port=
	fi
	run sx sbx-ctl network --id "$id" --allow-out api.sbx.test --allow-out "other.sbx.test$port"
	assert_success
	run sx sbx-ls --id "$id"
	[ "$(jqo '.sandbox.network_policy.rules | length')" = 2 ]
	inside "$id" 'busybox wget -qO- http://other.sbx.test/'
	[[ "$output" == *"answer-$OTHER host=other.sbx.test"* ]]
	run sx sbx-ctl network --id "$id" --allow-out api.sbx.test
	assert_success
	inside "$id" "$(http_to "$OTHER" other.sbx.test)"
	[[ "$output" == *"other.sbx.test:80 by the policy's default (deny)"* ]]
	# A sandbox made without a policy has none to replace.
	id=$(new_sb --allow-internet)
	run -69 sx sbx-ctl network --id "$id" --allow-out api.sbx.test
	[[ "$output" == *"created without a network policy"* ]]
}
