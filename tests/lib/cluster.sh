#!/usr/bin/env bash
# tests/lib/cluster.sh - start and stop a real Redis Cluster (3 masters, 3
# replicas; 3 masters and 6 replicas with SBX_CLUSTER_REPLICAS=2) or a
# Sentinel set (1 master, 2 replicas, 3 sentinels) on loopback ports, for
# tests/scale/ and the benchmarks.  Timeouts are short (cluster-node-timeout
# and down-after-milliseconds 1000) so that a failover takes seconds, not
# half a minute.  With two replicas a master killed leaves its successor a
# replica, so durable writes (WAIT 1) are acknowledged again at once.
#
#   cluster.sh start DIR      -> DIR/url holds redis+cluster://..., DIR/ports the 6 (9) ports
#   cluster.sh sentinel DIR   -> DIR/url holds redis+sentinel://.../sbxm
#   cluster.sh stop DIR       stops every server it started in DIR (by pidfile)
#   cluster.sh master-of DIR KEY   -> the port of the master serving KEY
#   cluster.sh other-master DIR PORT -> the port of a live master other than PORT
#   cluster.sh wait-ok DIR    waits until every live node says cluster_state:ok
#
# Sourcing it gives the same as functions (scale_cluster_start ...).
set -u

# A free base port: 20 consecutive ports nobody listens on, and their
# cluster bus ports (+10000).  All stay below the kernel's ephemeral range
# (32768-60999 here), where an outgoing connection of any other program may
# hold a port at any moment: bases 20000-22650, bus ports 30000-32655.
_scale_free_base() {
	local base tries=0
	while :; do
		base=$((20000 + (RANDOM % 54) * 50))
		local p busy=0
		for p in $(seq "$base" $((base + 19))) $(seq $((base + 10000)) $((base + 10008))); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then busy=1; break; fi
		done
		[ "$busy" = 0 ] && { echo "$base"; return 0; }
		tries=$((tries + 1))
		[ "$tries" -gt 50 ] && { echo "# cluster.sh: no free port range" >&2; return 1; }
	done
}

_scale_wait_ping() { # PORT (a loaded machine may take seconds)
	local i
	for i in $(seq 1 400); do
		redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

# redis-server on PORT in DIR/PORT, daemonized, with extra args.
_scale_server() { # DIR PORT ARGS...
	local dir=$1 port=$2
	shift 2
	mkdir -p "$dir/$port"
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize yes --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log" \
		--dir "$dir/$port" "$@" >/dev/null
	_scale_wait_ping "$port" && return 0
	echo "# cluster.sh: redis-server on port $port did not start:" >&2
	sed 's/^/#   /' "$dir/$port/redis.log" 2>/dev/null | tail -5 >&2
	return 1
}

# Restart a node that was killed, with its old cluster config (it rejoins
# as a replica of whoever took over).
scale_node_restart() { # DIR PORT
	local dir=$1 port=$2
	_scale_server "$dir" "$port" --cluster-enabled yes --cluster-config-file nodes.conf \
		--cluster-node-timeout 1000
}

scale_cluster_wait_ok() { # DIR
	local dir=$1 i p ok
	for i in $(seq 1 600); do
		ok=1
		for p in $(cat "$dir/ports"); do
			[ -f "$dir/$p/killed" ] && continue
			redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || { ok=0; break; }
		done
		[ "$ok" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

scale_cluster_start() { # DIR   ($SBX_CLUSTER_REPLICAS: 1 or 2 per master)
	local dir=$1 base p reps=${SBX_CLUSTER_REPLICAS:-1}
	case $reps in 1 | 2) ;; *) echo "# cluster.sh: SBX_CLUSTER_REPLICAS is 1 or 2" >&2; return 1 ;; esac
	mkdir -p "$dir"
	base=$(_scale_free_base) || return 1
	: >"$dir/ports"
	for p in $(seq "$base" $((base + 3 * (reps + 1) - 1))); do
		_scale_server "$dir" "$p" --cluster-enabled yes --cluster-config-file nodes.conf \
			--cluster-node-timeout 1000 || return 1
		echo "$p" >>"$dir/ports"
	done
	# shellcheck disable=SC2046
	redis-cli --cluster create $(sed 's/^/127.0.0.1:/' "$dir/ports") --cluster-replicas "$reps" \
		--cluster-yes >"$dir/create.log" 2>&1 || { sed 's/^/#   /' "$dir/create.log" >&2; return 1; }
	scale_cluster_wait_ok "$dir" || {
		echo "# cluster.sh: the cluster did not reach cluster_state:ok" >&2
		for p in $(cat "$dir/ports"); do redis-cli -p "$p" cluster info 2>&1 | head -1 | sed "s/^/#   $p: /" >&2; done
		return 1
	}
	# Every replica has synced once (a WAIT from its master can succeed).
	local i
	for i in $(seq 1 100); do
		local lag=0
		for p in $(cat "$dir/ports"); do
			redis-cli -p "$p" info replication | grep -q 'master_link_status:down' && lag=1
		done
		[ "$lag" = 0 ] && break
		sleep 0.1
	done
	echo "redis+cluster://127.0.0.1:$base,127.0.0.1:$((base + 1))" >"$dir/url"
}

scale_sentinel_start() { # DIR
	local dir=$1 base p
	mkdir -p "$dir"
	base=$(_scale_free_base) || return 1
	: >"$dir/ports"
	_scale_server "$dir" "$base" || return 1
	echo "$base" >>"$dir/ports"
	for p in $((base + 1)) $((base + 2)); do
		_scale_server "$dir" "$p" --replicaof 127.0.0.1 "$base" || return 1
		echo "$p" >>"$dir/ports"
	done
	local i
	for i in $(seq 1 100); do      # both replicas synced: WAIT 1 can succeed
		[ "$(redis-cli -p "$base" info replication | grep -c 'state=online')" = 2 ] && break
		sleep 0.1
	done
	: >"$dir/sentinels"
	for p in $((base + 10)) $((base + 11)) $((base + 12)); do
		mkdir -p "$dir/$p"
		cat >"$dir/$p/sentinel.conf" <<-EOF
			port $p
			bind 127.0.0.1
			daemonize yes
			pidfile $dir/$p/redis.pid
			logfile $dir/$p/redis.log
			dir $dir/$p
			sentinel monitor sbxm 127.0.0.1 $base 2
			sentinel down-after-milliseconds sbxm 1000
			sentinel failover-timeout sbxm 5000
			sentinel parallel-syncs sbxm 2
		EOF
		redis-server "$dir/$p/sentinel.conf" --sentinel >/dev/null || return 1
		_scale_wait_ping "$p" || return 1
		echo "$p" >>"$dir/sentinels"
	done
	# The sentinels have found both replicas.
	for i in $(seq 1 100); do
		[ "$(redis-cli -p $((base + 10)) sentinel replicas sbxm 2>/dev/null | grep -c '^ip$')" -ge 2 ] && break
		sleep 0.1
	done
	echo "redis+sentinel://127.0.0.1:$((base + 10)),127.0.0.1:$((base + 11)),127.0.0.1:$((base + 12))/sbxm" >"$dir/url"
}

scale_stop() { # DIR
	local dir=$1 f pid i
	for f in "$dir"/*/redis.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f" 2>/dev/null) || continue
		kill "$pid" 2>/dev/null
	done
	for f in "$dir"/*/redis.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f" 2>/dev/null) || continue
		for i in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			grep -q zombie "/proc/$pid/status" 2>/dev/null && break
			sleep 0.05
		done
	done
}

# kill -9 the node on PORT (a crash: no shutdown, no save).
scale_kill() { # DIR PORT
	local dir=$1 port=$2 pid
	pid=$(cat "$dir/$port/redis.pid")
	kill -9 "$pid"
	touch "$dir/$port/killed"
	rm -f "$dir/$port/redis.pid"
}

scale_master_of() { # DIR KEY
	local dir=$1 key=$2 slot p
	slot=$(redis-cli -p "$(head -1 "$dir/ports")" cluster keyslot "$key")
	for p in $(cat "$dir/ports"); do
		[ -f "$dir/$p/killed" ] && continue
		local out
		out=$(redis-cli -p "$p" cluster nodes 2>/dev/null | awk -v s="$slot" '
			$3 ~ /master/ && $3 !~ /fail/ {
				for (i = 9; i <= NF; i++) {
					n = split($i, r, "-")
					lo = r[1]; hi = (n > 1) ? r[2] : r[1]
					if ($i !~ /^\[/ && s + 0 >= lo + 0 && s + 0 <= hi + 0) { split($2, h, "[:@]"); print h[2]; exit }
				}
			}')
		[ -n "$out" ] && { echo "$out"; return 0; }
	done
	return 1
}

# The port of a live master other than PORT.
scale_other_master() { # DIR PORT
	local dir=$1 port=$2 p
	for p in $(cat "$dir/ports"); do
		[ "$p" = "$port" ] && continue
		[ -f "$dir/$p/killed" ] && continue
		redis-cli -p "$p" role 2>/dev/null | head -1 | grep -q '^master$' && { echo "$p"; return 0; }
	done
	return 1
}

# Move SLOT from its master to another, by the documented procedure:
# begin = IMPORTING/MIGRATING (ASK from here on), keys = MIGRATE every key
# (in batches), end = SETSLOT NODE on every master; all = the three.  The
# target is written to DIR/migrate.to by begin.
scale_migrate() { # DIR SLOT PHASE
	local dir=$1 slot=$2 phase=${3:-all} src dst sid did keys p
	src=$(cat "$dir/migrate.from" 2>/dev/null)
	if [ "$phase" = begin ] || [ "$phase" = all ]; then
		src=""
		for p in $(cat "$dir/ports"); do
			[ -f "$dir/$p/killed" ] && continue
			redis-cli -p "$p" role | head -1 | grep -q '^master$' || continue
			if redis-cli -p "$p" cluster nodes | awk -v s="$slot" '
				$3 ~ /myself/ { for (i = 9; i <= NF; i++) { n = split($i, r, "-"); lo = r[1]; hi = n > 1 ? r[2] : r[1]
					if ($i !~ /^\[/ && s + 0 >= lo + 0 && s + 0 <= hi + 0) f = 1 } }
				END { exit !f }'; then src=$p; break; fi
		done
		[ -n "$src" ] || return 1
		dst=$(scale_other_master "$dir" "$src") || return 1
		echo "$src" >"$dir/migrate.from"
		echo "$dst" >"$dir/migrate.to"
		sid=$(redis-cli -p "$src" cluster myid)
		did=$(redis-cli -p "$dst" cluster myid)
		redis-cli -p "$dst" cluster setslot "$slot" importing "$sid" >/dev/null
		redis-cli -p "$src" cluster setslot "$slot" migrating "$did" >/dev/null
	fi
	dst=$(cat "$dir/migrate.to")
	if [ "$phase" = keys ] || [ "$phase" = all ]; then
		while :; do
			# shellcheck disable=SC2207
			keys=($(redis-cli -p "$src" cluster getkeysinslot "$slot" 100))
			[ "${#keys[@]}" = 0 ] && break
			redis-cli -p "$src" migrate 127.0.0.1 "$dst" "" 0 5000 keys "${keys[@]}" >/dev/null
		done
	fi
	if [ "$phase" = end ] || [ "$phase" = all ]; then
		did=$(redis-cli -p "$dst" cluster myid)
		redis-cli -p "$dst" cluster setslot "$slot" node "$did" >/dev/null
		redis-cli -p "$src" cluster setslot "$slot" node "$did" >/dev/null
		for p in $(cat "$dir/ports"); do
			[ -f "$dir/$p/killed" ] && continue
			redis-cli -p "$p" role | head -1 | grep -q '^master$' &&
				redis-cli -p "$p" cluster setslot "$slot" node "$did" >/dev/null
		done
		rm -f "$dir/migrate.from" "$dir/migrate.to"
	fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case "${1:-}" in
	# A start that fails stops what it started (its daemons would hold the
	# caller's inherited pipes open).
	start) scale_cluster_start "$2" || { scale_stop "$2"; exit 1; } ;;
	sentinel) scale_sentinel_start "$2" || { scale_stop "$2"; exit 1; } ;;
	stop) scale_stop "$2" ;;
	master-of) scale_master_of "$2" "$3" ;;
	wait-ok) scale_cluster_wait_ok "$2" ;;
	migrate) scale_migrate "$2" "$3" "${4:-all}" ;;
	kill) scale_kill "$2" "$3" ;;
	other-master) scale_other_master "$2" "$3" ;;
	restart) scale_node_restart "$2" "$3" ;;
	*) echo "usage: $0 start|sentinel|stop|master-of|other-master|wait-ok|migrate|kill|restart DIR [ARG...]" >&2; exit 64 ;;
	esac
fi
