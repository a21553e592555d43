#!/usr/bin/env bash
# tests/lib/podman.sh - a private podman engine for the docker backend's
# tests: `podman system service` on its own socket, with its own storage,
# run root, temp folder and configuration, so it never touches a system
# podman.  The docker backend talks to it through its Docker-compatible API
# (docs/docker.md, "Docker Engine and podman").
#
#   eval "$(tests/lib/podman.sh start DIR)"   start it; prints `export DOCKER_HOST=...`
#   tests/lib/podman.sh stop DIR              stop it and what it left (by pid), remove DIR
#
# The configuration is what podman needs on these machines
# (machine-notes §9): runc (crun cannot set rlimits here), default ulimits
# the host can grant (no CAP_SYS_RESOURCE), cgroupfs, a file events log,
# and exit_command_delay = 1, so that the conmon each exec leaves behind
# goes away within a second instead of five minutes.  Network plugins are
# looked for in an empty folder: a container on the engine's bridge fails
# to start rather than make a host interface and firewall rules (dockerd
# runs with --bridge=none for the same reason); sbx sandboxes use "none".  `stop` then kills by
# pid whatever conmon still names DIR.
set -euo pipefail

die() { echo "podman.sh: $*" >&2; exit 1; }

cmd_start() {
	local dir=${1:?usage: podman.sh start DIR}
	command -v podman >/dev/null || die "podman is not installed"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	mkdir -p "$dir/root" "$dir/runroot" "$dir/tmp" "$dir/net" "$dir/no-cni-plugins"
	local sock=$dir/podman.sock
	[ ${#sock} -lt 100 ] || die "socket path too long for a unix socket: $sock"
	# SBX_PODMAN_ULIMITS=engine and SBX_PODMAN_INIT=PATH break the
	# engine on purpose (tests of how sbx reports a misconfigured engine).
	local ulimits='default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]'
	[ "${SBX_PODMAN_ULIMITS:-}" != engine ] || ulimits=
	cat >"$dir/containers.conf" <<CONF
[containers]
$ulimits
init_path = "${SBX_PODMAN_INIT:-/usr/bin/catatonit}"
[network]
network_config_dir = "$dir/net"
cni_plugin_dirs = ["$dir/no-cni-plugins"]
[engine]
runtime = "runc"
exit_command_delay = 1
events_logger = "file"
events_logfile_path = "$dir/events.log"
cgroup_manager = "cgroupfs"
CONF
	CONTAINERS_CONF=$dir/containers.conf podman --root "$dir/root" --runroot "$dir/runroot" \
		--tmpdir "$dir/tmp" system service --time=0 "unix://$sock" \
		>"$dir/podman.log" 2>&1 </dev/null &
	echo $! >"$dir/podman.pid"
	local i
	for i in $(seq 1 200); do
		if curl -s --max-time 1 --unix-socket "$sock" http://d/_ping 2>/dev/null | grep -qx OK; then
			echo "export DOCKER_HOST=unix://$sock"
			return 0
		fi
		kill -0 "$(cat "$dir/podman.pid")" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$dir/podman.log" >&2
	die "podman did not come up (log: $dir/podman.log)"
}

# Pids of the processes whose command line names DIR (conmon, the
# containers' runtime leftovers), the service itself excluded.
pids_naming() {
	local dir=$1 self=$2 p
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		[ "$p" != "$self" ] && [ "$p" != $$ ] || continue
		{ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF -- "$dir/" && echo "$p"
	done
	return 0
}

cmd_stop() {
	local dir=${1:?usage: podman.sh stop DIR}
	[ -d "$dir" ] || return 0
	dir=$(cd "$dir" && pwd)
	local pid
	pid=$(cat "$dir/podman.pid" 2>/dev/null || true)
	# Containers first, through the engine, so nothing keeps their mounts.
	if [ -S "$dir/podman.sock" ]; then
		local ids c
		ids=$(curl -s --unix-socket "$dir/podman.sock" 'http://d/v1.41/containers/json?all=1' 2>/dev/null |
			jq -r '.[].Id' 2>/dev/null || true)
		for c in $ids; do
			curl -s -X DELETE --unix-socket "$dir/podman.sock" "http://d/v1.41/containers/$c?force=1&v=1" \
				>/dev/null 2>&1 || true
		done
	fi
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		local i
		for i in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	fi
	# What the engine left behind (conmon of execs and containers), by pid.
	local left
	left=$(pids_naming "$dir" "${pid:-0}")
	[ -z "$left" ] || kill -9 $left 2>/dev/null || true
	# podman's storage mounts, then the folder.
	local m
	for m in $(awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf --one-file-system "$dir"
}

case "${1:-}" in
start) shift; cmd_start "$@" ;;
stop) shift; cmd_stop "$@" ;;
*) die "usage: podman.sh start DIR | stop DIR" ;;
esac
