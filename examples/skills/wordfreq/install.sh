#!/bin/sh
# install.sh - run as root inside the installer sandbox, from the skill's
# folder (/opt/sbx/skills/wordfreq).  Compiles wordfreq.c into
# bin/wordfreq; without a C compiler, installs the awk version instead.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "install.sh: run me as root" >&2; exit 1; }
mkdir -p "$here/bin"
cc=$(command -v cc gcc clang 2>/dev/null | head -n1 || true)
if [ -n "$cc" ] && "$cc" -O2 -o "$here/bin/wordfreq" "$here/wordfreq.c" 2>"$here/build.log"; then
	echo "wordfreq compiled with $cc"
else
	awk=$(command -v awk)
	cat >"$here/bin/wordfreq" <<LAUNCH
#!/bin/sh
top=10
if [ "\${1:-}" = -n ]; then top=\$2; shift 2; fi
[ \$# -gt 0 ] || set -- -
exec $awk -v top="\$top" -f "$here/wordfreq.awk" "\$@" | head -n \$((top + 4))
LAUNCH
	echo "wordfreq: no C compiler, installed the awk version"
fi
rm -f "$here/build.log"
chmod 755 "$here/bin/wordfreq" "$here/install.sh" "$here/verify.sh"
