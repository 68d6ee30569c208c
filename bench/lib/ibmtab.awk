# Turn an IBM power-grid reference waveform file (ibmpg*.output: for each
# node a "Node: name" line, "time value" rows, then "END: name") into a
# table "time v(name) ..." that lib/cmp.awk can read.  Every node is
# printed at the same times in those files; rows are joined by position.
$1 == "Node:" { nn++; col[nn] = "v(" tolower($2) ")"; r = 0; next }
$1 == "END:" || NF != 2 { next }
nn {
	r++
	t[r] = $1
	v[nn, r] = $2
	if (r > nr) nr = r
}
END {
	if (!nn) exit 1
	line = "time"
	for (k = 1; k <= nn; k++) line = line " " col[k]
	print line
	for (r = 1; r <= nr; r++) {
		line = t[r]
		for (k = 1; k <= nn; k++) line = line " " v[k, r]
		print line
	}
}
