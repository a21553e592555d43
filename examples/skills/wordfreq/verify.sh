#!/bin/sh
# verify.sh - run as the sandbox user (uid 1000) after install.sh: the
# program runs unprivileged and counts a known text right.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -ne 0 ] || { echo "verify.sh: run me as the sandbox user, not root" >&2; exit 1; }
out=$(printf 'The cat sat.\nThe dog saw the cat\nand THE end\n' | "$here/bin/wordfreq" -n 2)
want=$(printf 'lines 3\nwords 11\nchars 45\nunique 7\n4 the\n2 cat')
[ "$out" = "$want" ] || { printf 'verify.sh: got\n%s\nwanted\n%s\n' "$out" "$want" >&2; exit 1; }
echo "wordfreq ok"
