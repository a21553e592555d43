#!/bin/sh
# install.sh - run as root inside the installer sandbox, from the skill's
# folder (/opt/sbx/skills/csvstat).  Byte-compiles the program and writes
# the launcher bin/csvstat.  Offline: needs only python3; without it (a
# busybox image), installs the awk version, csvstat.awk, instead.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "install.sh: run me as root" >&2; exit 1; }
py=$(command -v /usr/bin/python3 python3 2>/dev/null | head -n1 || true)
mkdir -p "$here/bin" "$here/lib"
if [ -z "$py" ]; then
	awk=$(command -v awk)
	cp "$here/csvstat.awk" "$here/lib/csvstat.awk"
	cat >"$here/bin/csvstat" <<LAUNCH
#!/bin/sh
# csvstat (awk version): csvstat [--text] [--delimiter C] FILE|-
text=0 delim=
case \${1:-} in -h|--help) echo "usage: csvstat [--text] [--delimiter C] FILE|-"; exit 0 ;; esac
while [ \$# -gt 1 ]; do
	case \$1 in
	--text) text=1; shift ;;
	--delimiter) delim=\$2; shift 2 ;;
	*) break ;;
	esac
done
[ \$# -eq 1 ] || { echo "usage: csvstat [--text] [--delimiter C] FILE|-" >&2; exit 2; }
[ "\$1" = - ] || [ -r "\$1" ] || { echo "csvstat: cannot read \$1" >&2; exit 2; }
exec $awk -v file="\$1" -v delim="\$delim" -v text=\$text -f "$here/lib/csvstat.awk" "\$1"
LAUNCH
	chmod 755 "$here/bin/csvstat" "$here/install.sh" "$here/verify.sh"
	echo "csvstat: no python3, installed the awk version in $here"
	exit 0
fi
cp "$here/csvstat.py" "$here/lib/csvstat.py"
"$py" -m py_compile "$here/lib/csvstat.py"
cat >"$here/bin/csvstat" <<LAUNCH
#!/bin/sh
exec $py "$here/lib/csvstat.py" "\$@"
LAUNCH
chmod 755 "$here/bin/csvstat" "$here/install.sh" "$here/verify.sh"
echo "csvstat installed in $here (python: $py)"
