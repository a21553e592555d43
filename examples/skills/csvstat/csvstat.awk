# csvstat.awk - the fallback of csvstat.py for sandboxes without python3
# (busybox awk is enough): the same JSON object, or --text table, for a CSV
# whose fields hold no quoted delimiters or newlines.  Run by bin/csvstat:
#   awk -v file=NAME -v delim=C -v text=0|1 -f csvstat.awk FILE
function jstr(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, "\\t", s); return "\"" s "\"" }
# A number as Python's repr prints a float: 4.0, 2.5, 1e+20.
function pyf(v,   s) {
	if (v == int(v) && v < 1e16 && v > -1e16) return sprintf("%d.0", v)
	s = sprintf("%.15g", v)
	return s
}
function round6(v,   s) {
	s = sprintf("%.6f", v)
	sub(/0+$/, "", s); sub(/\.$/, ".0", s)
	return s
}
function isnum(c) { return c ~ /^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/ }
function trim(s) { sub(/^[ \t\r]+/, "", s); sub(/[ \t\r]+$/, "", s); return s }
{ sub(/\r$/, "") }
$0 == "" { next }
NR > 0 && !started {
	if (delim == "") {
		best = ","; bn = 0
		split(",;\t|", cands, "")
		for (i = 1; i <= 4; i++) { n = gsub("[" cands[i] "]", "&"); if (n > bn) { bn = n; best = cands[i] } }
		delim = best
	}
	started = 1
	nh = split($0, header, delim)
	ncols = nh
	next
}
{
	rows++
	n = split($0, f, delim)
	if (n > ncols) ncols = n
	for (i = 1; i <= n; i++) cell[rows, i] = f[i]
	width[rows] = n
}
END {
	if (!started) {
		if (text) printf "%s: 0 rows, 0 columns\n", file
		else printf "{\"file\": %s, \"rows\": 0, \"columns\": 0, \"header\": [], \"numeric\": {}, \"empty_cells\": 0}\n", jstr(file)
		exit 0
	}
	for (i = nh + 1; i <= ncols; i++) header[i] = "column" i
	empty = 0; nnum = 0
	for (i = 1; i <= ncols; i++) {
		cnt = 0; ok = 1; sum = 0
		for (r = 1; r <= rows; r++) {
			c = i <= width[r] ? trim(cell[r, i]) : ""
			if (c == "") { empty++; continue }
			if (!isnum(c)) { ok = 0; continue }
			v = c + 0
			if (!cnt || v < mn) mn = v
			if (!cnt || v > mx) mx = v
			sum += v; cnt++
		}
		if (ok && cnt) { num[++nnum] = i; ncnt[i] = cnt; nmin[i] = mn; nmax[i] = mx; nmean[i] = sum / cnt }
	}
	if (text) {
		printf "%s: %d rows, %d columns\n", file, rows, ncols
		if (nnum) {
			w = 0
			for (k = 1; k <= nnum; k++) if (length(header[num[k]]) > w) w = length(header[num[k]])
			printf "%-" w "s %8s %12s %12s %12s\n", "column", "count", "min", "max", "mean"
			for (k = 1; k <= nnum; k++) { i = num[k]; printf "%-" w "s %8d %12g %12g %12g\n", header[i], ncnt[i], nmin[i], nmax[i], nmean[i] }
		}
		exit 0
	}
	h = ""
	for (i = 1; i <= ncols; i++) h = h (i > 1 ? ", " : "") jstr(header[i])
	nu = ""
	for (k = 1; k <= nnum; k++) {
		i = num[k]
		nu = nu (k > 1 ? ", " : "") jstr(header[i]) ": {\"count\": " ncnt[i] ", \"min\": " pyf(nmin[i]) ", \"max\": " pyf(nmax[i]) ", \"mean\": " round6(nmean[i]) "}"
	}
	printf "{\"file\": %s, \"rows\": %d, \"columns\": %d, \"header\": [%s], \"numeric\": {%s}, \"empty_cells\": %d}\n", jstr(file), rows, ncols, h, nu, empty
}
