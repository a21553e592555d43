#!/usr/bin/env python3
"""tests/lib/wire-check.py LOG FIXTURE - every expectation of FIXTURE
(tests/fixtures/wire/client-*.ndjson) is met by some request in LOG (what
wire-record.py recorded); prints the ones that are not, exits 1 then."""
import base64, json, re, struct, sys


def contains(have, want):
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and contains(have[k], v) for k, v in want.items())
    return have == want


def connect_body(rec):
    raw = rec.get("body", "").encode() if "body" in rec else base64.b64decode(rec.get("body_b64", ""))
    if len(raw) < 5:
        return None
    n = struct.unpack(">I", raw[1:5])[0]
    return json.loads(raw[5:5 + n])


def header_ok(have, want):
    if want == "*":
        return have is not None
    if want.endswith(":*"):
        return have is not None and have.startswith(want[:-1])
    return have == want


def meets(rec, e):
    if rec["method"] != e["method"] or not re.search(e["path"], rec["path"]):
        return False
    h = rec["headers"]
    if any(not header_ok(h.get(k), v) for k, v in e.get("headers", {}).items()):
        return False
    if any(k in h for k in e.get("absent", [])):
        return False
    if "body" in e or "body_absent" in e:
        try:
            body = json.loads(rec.get("body") or "{}")
        except ValueError:
            return False
        if "body" in e and not contains(body, e["body"]):
            return False
        if any(k in body for k in e.get("body_absent", [])):
            return False
    if "connect" in e:
        try:
            if not contains(connect_body(rec), e["connect"]):
                return False
        except ValueError:
            return False
    return True


log = [json.loads(l) for l in open(sys.argv[1])]
bad = 0
for line in open(sys.argv[2]):
    e = json.loads(line)
    if not any(meets(r, e) for r in log):
        bad += 1
        print("not sent: " + e["what"])
        cands = [r for r in log if r["method"] == e["method"] and re.search(e["path"], r["path"])]
        for r in cands[:3]:
            print("  closest: " + json.dumps(r)[:600])
sys.exit(1 if bad else 0)
