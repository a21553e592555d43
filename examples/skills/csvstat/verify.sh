#!/bin/sh
# verify.sh - run as the sandbox user (uid 1000) after install.sh: the
# launcher works for an unprivileged user and gives the right answers.
# Writes nothing (the CSV comes on stdin), so it works in a sealed tree.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -ne 0 ] || { echo "verify.sh: run me as the sandbox user, not root" >&2; exit 1; }
out=$(printf 'region,units,price\nnorth,4,2.5\nsouth,12,3.5\neast,5,\n' | "$here/bin/csvstat" -)
check() {
	case $out in *"$1"*) ;; *) echo "verify.sh: expected $1 in: $out" >&2; exit 1;; esac
}
check '"rows": 3, "columns": 3'
check '"units": {"count": 3, "min": 4.0, "max": 12.0, "mean": 7.0}'
check '"price": {"count": 2, "min": 2.5, "max": 3.5, "mean": 3.0}'
check '"empty_cells": 1'
echo "csvstat ok"
