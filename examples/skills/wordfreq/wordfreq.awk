#!/usr/bin/awk -f
# wordfreq.awk - the same output as wordfreq.c, for images without a C
# compiler.  TOP comes in as -v top=N.
BEGIN { if (top == "") top = 10 }
{
	lines++; bytes += length($0) + 1
	s = tolower($0)
	while (match(s, /[[:alnum:]\047\200-\377]+/)) {
		w = substr(s, RSTART, RLENGTH); n[w]++; words++
		s = substr(s, RSTART + RLENGTH)
	}
}
END {
	u = 0; for (w in n) u++
	printf "lines %d\nwords %d\nchars %d\nunique %d\n", lines, words, bytes, u
	cmd = "sort -k1,1nr -k2,2"
	for (w in n) printf "%d %s\n", n[w], w | cmd
	close(cmd)
}
