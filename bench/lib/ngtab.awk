# Turn the .print output of `ngspice -b` into the plain table emnet writes:
# a header "time sig ..." and one row per time point.
#
# ngspice prints one "Index time sig ..." table per group of columns that
# fits its output width, every table repeating the index and the time, so
# rows are gathered by index and the groups joined side by side.  Page
# headers and other chatter are skipped: only lines that start with an
# index and a tab are data.
$1 == "Index" && $2 == "time" {
	grp++
	ncol[grp] = NF - 2
	for (k = 3; k <= NF; k++) name[grp, k - 2] = tolower($k)
	next
}
grp && /^[0-9]+\t/ {
	i = $1 + 0
	t[i] = $2
	for (k = 3; k <= NF && k - 2 <= ncol[grp]; k++) val[grp, i, k - 2] = $k
	if (i > last) last = i
	seen = 1
	next
}
END {
	if (!seen) exit 1
	line = "time"
	for (g = 1; g <= grp; g++)
		for (k = 1; k <= ncol[g]; k++) line = line " " name[g, k]
	print line
	for (i = 0; i <= last; i++) {
		if (!(i in t)) continue
		line = t[i]
		for (g = 1; g <= grp; g++)
			for (k = 1; k <= ncol[g]; k++) line = line " " val[g, i, k]
		print line
	}
}
