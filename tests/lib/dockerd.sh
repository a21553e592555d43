#!/usr/bin/env bash
# tests/lib/dockerd.sh - a private dockerd for the docker backend's tests,
# and the tiny busybox base image `sbx/base:latest` it runs.
#
#   eval "$(tests/lib/dockerd.sh start DIR)"   start dockerd with all its state
#                                              under DIR; prints `export DOCKER_HOST=...`
#   tests/lib/dockerd.sh image                 build sbx/base:latest into $DOCKER_HOST
#                                              (idempotent; Engine API import, no registry)
#   tests/lib/dockerd.sh stop DIR              stop it, wait until it is gone, remove DIR
#   tests/lib/dockerd.sh ping                  exit 0 when $DOCKER_HOST answers /_ping
#
# With SBX_DOCKERD_TLS_PORT=N, `start` also listens on tcp://127.0.0.1:N with
# --tlsverify, using a throwaway CA and certificates made with openssl in
# DIR/tls (ca.pem, cert.pem, key.pem are the client's: a profile's
# tls_cert_path), and prints `export SBX_DOCKERD_TLS_DIR=DIR/tls` too.
#
# The daemon runs with its own data root, exec root, socket and containerd
# namespace, no iptables and no bridge (these machines have neither), so it
# never touches a system dockerd.  Setup talks to the Engine API with curl;
# the docker CLI is not needed here (the backend itself never uses it).
set -euo pipefail

die() { echo "dockerd.sh: $*" >&2; exit 1; }

sock_of() {   # DOCKER_HOST -> socket path
	case "${DOCKER_HOST:-}" in
	unix://*) echo "${DOCKER_HOST#unix://}" ;;
	*) die "DOCKER_HOST must be unix:///path (got '${DOCKER_HOST:-}')" ;;
	esac
}

api() {   # api METHOD PATH [curl args...]
	local m=$1 p=$2
	shift 2
	curl -sS --fail-with-body --unix-socket "$(sock_of)" -X "$m" "http://docker/v1.41$p" "$@"
}

cmd_ping() {
	[ -n "${DOCKER_HOST:-}" ] || return 1
	curl -s --max-time 2 --unix-socket "$(sock_of)" http://docker/_ping 2>/dev/null | grep -qx OK
}

# A CA, a server certificate for 127.0.0.1 and a client certificate.
make_certs() {
	local t=$1
	command -v openssl >/dev/null || die "openssl is needed for a TLS dockerd"
	mkdir -p "$t"
	(
		cd "$t"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 2 \
			-subj /CN=sbx-test-ca
		openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr -subj /CN=127.0.0.1
		printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
			-out server-cert.pem -days 2 -extfile server.ext
		openssl req -newkey rsa:2048 -nodes -keyout key.pem -out client.csr -subj /CN=sbx-client
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
			-out cert.pem -days 2 -extfile client.ext
	) >/dev/null 2>&1 || die "making test certificates failed"
	chmod 600 "$t"/*key.pem
}

cmd_start() {
	local dir=${1:?usage: dockerd.sh start DIR}
	command -v dockerd >/dev/null || die "dockerd is not installed"
	mkdir -p "$dir/run" "$dir/dkr"
	dir=$(cd "$dir" && pwd)
	local sock=$dir/run/docker.sock
	[ ${#sock} -lt 100 ] || die "socket path too long for a unix socket: $sock"
	local tls=()
	if [ -n "${SBX_DOCKERD_TLS_PORT:-}" ]; then
		make_certs "$dir/tls"
		tls=(--host "tcp://127.0.0.1:$SBX_DOCKERD_TLS_PORT" --tlsverify
			--tlscacert "$dir/tls/ca.pem" --tlscert "$dir/tls/server-cert.pem"
			--tlskey "$dir/tls/server-key.pem")
	fi
	# shellcheck disable=SC2086 # SBX_DOCKERD_ARGS: extra flags, word-split on purpose
	dockerd --host "unix://$sock" "${tls[@]}" ${SBX_DOCKERD_ARGS:-} --data-root "$dir/dkr/data" --exec-root "$dir/dkr/exec" \
		--pidfile "$dir/dkr/dockerd.pid" --iptables=false --ip6tables=false --bridge=none \
		--storage-driver overlay2 --containerd-namespace "sbx-$(basename "$dir")" \
		--containerd-plugins-namespace "sbx-$(basename "$dir")-plugins" \
		>"$dir/dockerd.log" 2>&1 </dev/null &
	echo $! >"$dir/dockerd.launcher.pid"
	local i
	for i in $(seq 1 200); do
		if curl -s --max-time 1 --unix-socket "$sock" http://docker/_ping 2>/dev/null | grep -qx OK; then
			echo "export DOCKER_HOST=unix://$sock"
			[ -z "${SBX_DOCKERD_TLS_PORT:-}" ] || echo "export SBX_DOCKERD_TLS_DIR=$dir/tls"
			return 0
		fi
		kill -0 "$(cat "$dir/dockerd.launcher.pid")" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$dir/dockerd.log" >&2
	die "dockerd did not come up (log: $dir/dockerd.log)"
}

cmd_stop() {
	local dir=${1:?usage: dockerd.sh stop DIR}
	[ -d "$dir" ] || return 0
	local pid=
	[ -f "$dir/dkr/dockerd.pid" ] && pid=$(cat "$dir/dkr/dockerd.pid" 2>/dev/null || true)
	[ -n "$pid" ] || pid=$(cat "$dir/dockerd.launcher.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		# Containers first, so dockerd's shutdown does not wait on them.
		if [ -S "$dir/run/docker.sock" ]; then
			local ids
			ids=$(DOCKER_HOST=unix://$dir/run/docker.sock api GET '/containers/json?all=1' 2>/dev/null |
				jq -r '.[].Id' 2>/dev/null || true)
			for c in $ids; do
				DOCKER_HOST=unix://$dir/run/docker.sock api DELETE "/containers/$c?force=1&v=1" >/dev/null 2>&1 || true
			done
		fi
		kill "$pid"
		local i
		for i in $(seq 1 300); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && die "dockerd $pid did not stop"
	fi
	# The mounts under the data root are gone once dockerd has exited.
	umount -R "$dir/dkr" 2>/dev/null || true
	rm -rf --one-file-system "$dir"
}

# The base image: busybox-static with applet links, a uid 1000 `user`,
# /workspace and the activity-marker directory.  Import through the Engine
# API (POST /images/create?fromSrc=-), so no registry and no CLI.
cmd_image() {
	local tag=${1:-sbx/base:latest}
	cmd_ping || die "no dockerd at DOCKER_HOST=${DOCKER_HOST:-}"
	if api GET "/images/$tag/json" >/dev/null 2>&1; then
		return 0
	fi
	local bb
	bb=$(command -v busybox || true)
	[ -n "$bb" ] && file -L "$bb" 2>/dev/null | grep -q 'statically linked' || bb=/bin/busybox
	[ -x "$bb" ] || die "busybox-static is needed for the base image"
	local w
	w=$(mktemp -d /tmp/sbx-img.XXXXXX)
	local r=$w/rootfs
	mkdir -p "$r/bin" "$r/etc" "$r/home/user" "$r/root" "$r/tmp" "$r/proc" "$r/dev" "$r/sys" \
		"$r/workspace" "$r/var/lib" "$r/opt/sbx/skills" "$r/usr/bin" "$r/sbin" "$r/usr/sbin"
	cp "$bb" "$r/bin/busybox"
	chroot "$r" /bin/busybox --install -s /bin
	printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n' >"$r/etc/passwd"
	printf 'root:x:0:\nuser:x:1000:\n' >"$r/etc/group"
	chown 1000:1000 "$r/home/user" "$r/workspace"
	chmod 1777 "$r/tmp"
	local name=${tag%:*} ver=${tag##*:}
	[ "$name" != "$tag" ] || ver=latest
	tar -C "$r" --numeric-owner -c . |
		api POST "/images/create?fromSrc=-&repo=$name:$ver" \
			-H 'Content-Type: application/x-tar' --data-binary @- >/dev/null
	rm -rf "$w"
	api GET "/images/$tag/json" >/dev/null || die "import of $tag failed"
}

case "${1:-}" in
start) shift; cmd_start "$@" ;;
stop) shift; cmd_stop "$@" ;;
image) shift; cmd_image "$@" ;;
ping) cmd_ping ;;
*) die "usage: dockerd.sh start DIR | stop DIR | image [TAG] | ping" ;;
esac
