#!/usr/bin/env bats
# What every sbx program pays before main: the shared libraries the
# dynamic loader maps and relocates at each start.  libcrypto alone cost
# about 2.5 million instructions per start (three quarters of sbx-exec
# --version under callgrind), so the digests are in-tree (common/base/sha.c) and
# libcurl is opened only when used (common/net/curl-lazy.c).  The list below is
# the whole allowance; a library added to LDLIBS must be argued for here.

load lib/helpers

ALLOWED="libhiredis.so.0.14 libjson-c.so.5 libseccomp.so.2 libc.so.6"
# sbx-serve is a long-running server, started once: its HTTP library and
# zlib (gzip bodies) are paid once per server, not per request.
ALLOWED_SERVE="libmicrohttpd.so.12 libz.so.1"

@test "every program loads only libc, hiredis, json-c and libseccomp at start (sbx-serve: and its HTTP library)" {
	local extra=""
	for p in "$BUILD"/bin/sbx "$BUILD"/bin/sbx-*; do
		local allowed=$ALLOWED
		[ "$(basename "$p")" != sbx-serve ] || allowed="$ALLOWED $ALLOWED_SERVE"
		# A program compiled with the sanitizers (make SANITIZE=1: it calls
		# __asan_init) needs their runtimes, and only those beside the rest.
		local san=
		if readelf --dyn-syms -W "$p" | grep -qE ' (__asan_init|__ubsan_handle_[a-z_]+)(@.*)?$'; then
			san=1
		fi
		for lib in $(readelf -d "$p" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p'); do
			case " $allowed " in *" $lib "*) continue ;; esac
			[ -n "$san" ] && [[ "$lib" =~ ^lib(asan|ubsan)\.so\.[0-9]+$ ]] && continue
			extra="$extra $(basename "$p"):$lib"
		done
	done
	[ -z "$extra" ] || { echo "libraries loaded at start beyond the allowance:$extra"; false; }
}

@test "sbx-init is static: nothing is loaded into a sandbox's PID 1" {
	[ -x "$BUILD/libexec/sbx/sbx-init" ]
	run readelf -d "$BUILD/libexec/sbx/sbx-init"
	assert_success
	refute_output --partial NEEDED
}
