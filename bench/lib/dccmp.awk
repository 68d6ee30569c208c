# Worst absolute difference between a reference DC solution ("node value"
# per line, as in ibmpg1.solution) and a simulator's operating point:
# emnet's "v(node) value" lines or ngspice's "node value" table.  Nodes
# are matched by name, case-insensitively; names the reference lacks
# (branch currents, internal nodes) are ignored, and a reference node the
# simulator lacks is counted as missing.  Ground is skipped.
#
# Prints "err node compared missing".
FNR == 1 { f++ }
f == 1 { if (NF == 2) ref[tolower($1)] = $2 + 0; next }
NF == 2 && $2 ~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/ {
	nm = tolower($1)
	if (nm ~ /^v\(.*\)$/) nm = substr(nm, 3, length(nm) - 3)
	if (nm in ref) val[nm] = $2 + 0
}
END {
	worst = -1; cnt = 0; miss = 0
	for (nm in ref) {
		if (nm == "0" || nm == "g" || nm == "gnd") continue
		if (!(nm in val)) { miss++; continue }
		d = val[nm] - ref[nm]
		if (d < 0) d = -d
		cnt++
		if (d > worst) { worst = d; wn = nm }
	}
	if (cnt == 0) print "- none 0 " miss
	else printf "%.3e %s %d %d\n", worst, wn, cnt, miss
}
