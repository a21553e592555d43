#!/usr/bin/env python3
"""csvstat - summarise a CSV: rows, columns, numeric min/max/mean.

Standard library only, so it works offline in any sandbox with python3."""
import argparse
import csv
import json
import math
import sys


def number(cell):
    """The cell as a finite float, or None when it is not a number."""
    try:
        v = float(cell.replace("_", "x"))   # refuse "1_000": ambiguous in CSVs
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def summarise(stream, name, delimiter=None):
    text = stream.read()
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:65536], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    rows = list(csv.reader(text.splitlines(), delimiter=delimiter))
    rows = [r for r in rows if r]              # blank lines are not rows
    if not rows:
        return {"file": name, "rows": 0, "columns": 0, "header": [], "numeric": {},
                "empty_cells": 0}
    header, body = rows[0], rows[1:]
    ncols = max(len(header), max((len(r) for r in body), default=0))
    header = header + ["column%d" % (i + 1) for i in range(len(header), ncols)]
    numeric, empty = {}, 0
    for i, col in enumerate(header):
        cells = [r[i].strip() if i < len(r) else "" for r in body]
        empty += sum(1 for c in cells if c == "")
        vals = [number(c) for c in cells if c != ""]
        if vals and all(v is not None for v in vals):
            numeric[col] = {"count": len(vals), "min": min(vals), "max": max(vals),
                            "mean": round(sum(vals) / len(vals), 6)}
    return {"file": name, "rows": len(body), "columns": ncols, "header": header,
            "numeric": numeric, "empty_cells": empty}


def as_text(s):
    out = ["%s: %d rows, %d columns" % (s["file"], s["rows"], s["columns"])]
    if s["numeric"]:
        w = max(len(c) for c in s["numeric"])
        out.append("%-*s %8s %12s %12s %12s" % (w, "column", "count", "min", "max", "mean"))
        for c, v in s["numeric"].items():
            out.append("%-*s %8d %12g %12g %12g" % (w, c, v["count"], v["min"], v["max"], v["mean"]))
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(prog="csvstat", description=__doc__.splitlines()[0])
    ap.add_argument("file", help="CSV file, or - for stdin")
    ap.add_argument("--delimiter", help="field separator (default: sniffed)")
    ap.add_argument("--text", action="store_true", help="a table for people instead of JSON")
    a = ap.parse_args(argv)
    try:
        if a.file == "-":
            s = summarise(sys.stdin, "-", a.delimiter)
        else:
            with open(a.file, newline="", encoding="utf-8", errors="replace") as f:
                s = summarise(f, a.file, a.delimiter)
    except OSError as e:
        print("csvstat: %s" % e, file=sys.stderr)
        return 2
    print(as_text(s) if a.text else json.dumps(s))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
