#!/bin/sh
# tests/lib/rootfs.sh - build a tiny busybox rootfs tarball (~2 MB) for
# tests and benchmarks, per
# machine-notes §8: static /bin/busybox with applet symlinks, /etc/passwd
# and /etc/group with root and user:1000, a home for user, a sticky /tmp
# and an empty /workspace.
#
#   tests/lib/rootfs.sh OUT.tar          write the tarball (owners kept)
#   tests/lib/rootfs.sh --dir OUTDIR     leave the tree in OUTDIR instead
#
# Needs root (chown) and busybox-static.  Exits non-zero on any failure.
set -eu

usage() { echo "usage: $0 OUT.tar | --dir OUTDIR" >&2; exit 64; }
[ $# -ge 1 ] || usage
mode=tar
if [ "$1" = --dir ]; then
	[ $# -eq 2 ] || usage
	mode=dir
	R=$2
	mkdir -p "$R"
else
	[ $# -eq 1 ] || usage
	out=$1
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	R=$work/rootfs
	mkdir -p "$R"
fi
BB=${BUSYBOX:-/bin/busybox}
[ -x "$BB" ] || { echo "$0: $BB not found (apt-get install busybox-static)" >&2; exit 69; }

mkdir -p "$R/bin" "$R/sbin" "$R/usr/bin" "$R/usr/sbin" "$R/etc" "$R/home/user" "$R/root" \
	"$R/tmp" "$R/proc" "$R/dev" "$R/sys" "$R/workspace" "$R/var/tmp" "$R/opt"
cp "$BB" "$R/bin/busybox"
# Applet symlinks without chroot: the list comes from busybox itself.
for a in $("$BB" --list); do
	[ -e "$R/bin/$a" ] || ln -s busybox "$R/bin/$a"
done
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\n' >"$R/etc/group"
printf 'sbx\n' >"$R/etc/hostname"
chown 1000:1000 "$R/home/user"
chmod 0755 "$R"
chmod 0700 "$R/root"
chmod 1777 "$R/tmp" "$R/var/tmp"

if [ "$mode" = tar ]; then
	tar -C "$R" --numeric-owner -cf "$out" .
fi
