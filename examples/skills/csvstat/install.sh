#!/bin/sh
# install.sh - run as root inside the installer sandbox, from the skill's
# folder (/opt/sbx/skills/csvstat).  Byte-compiles the program and writes
# the launcher bin/csvstat.  Offline: needs only python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "install.sh: run me as root" >&2; exit 1; }
py=$(command -v /usr/bin/python3 python3 2>/dev/null | head -n1)
[ -n "$py" ] || { echo "install.sh: python3 not found" >&2; exit 1; }
mkdir -p "$here/bin" "$here/lib"
cp "$here/csvstat.py" "$here/lib/csvstat.py"
"$py" -m py_compile "$here/lib/csvstat.py"
cat >"$here/bin/csvstat" <<LAUNCH
#!/bin/sh
exec $py "$here/lib/csvstat.py" "\$@"
LAUNCH
chmod 755 "$here/bin/csvstat" "$here/install.sh" "$here/verify.sh"
echo "csvstat installed in $here (python: $py)"
