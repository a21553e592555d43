#!/usr/bin/env python3
# tests/lib/pip-index.py DIR - a package index pip can install from, in
# DIR: one pure-Python wheel, sbxdemo 1.0 (module sbxdemo, VALUE =
# "sbx-egress-ok"), under DIR/simple/sbxdemo/ as PEP 503 describes it,
# its RECORD hashed as pip checks it.  Standard library only.
import base64
import hashlib
import os
import sys
import zipfile

root = sys.argv[1]
pkg = os.path.join(root, "simple", "sbxdemo")
os.makedirs(pkg, exist_ok=True)
name = "sbxdemo-1.0-py3-none-any.whl"
files = {
    "sbxdemo/__init__.py": 'VALUE = "sbx-egress-ok"\n',
    "sbxdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n",
    "sbxdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: sbx-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}


def digest(text):
    d = hashlib.sha256(text.encode()).digest()
    return "sha256=" + base64.urlsafe_b64encode(d).decode().rstrip("=")


record = "".join("%s,%s,%d\n" % (p, digest(t), len(t.encode())) for p, t in files.items())
record += "sbxdemo-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(os.path.join(pkg, name), "w") as z:
    for p, t in files.items():
        z.writestr(p, t)
    z.writestr("sbxdemo-1.0.dist-info/RECORD", record)
whl = open(os.path.join(pkg, name), "rb").read()
sha = hashlib.sha256(whl).hexdigest()
with open(os.path.join(pkg, "index.html"), "w") as f:
    f.write('<!DOCTYPE html><html><body><a href="%s#sha256=%s">%s</a></body></html>\n' % (name, sha, name))
with open(os.path.join(root, "simple", "index.html"), "w") as f:
    f.write('<!DOCTYPE html><html><body><a href="sbxdemo/">sbxdemo</a></body></html>\n')
