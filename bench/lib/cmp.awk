# Worst absolute difference between two tables ("time sig ..." header, one
# row per time point): the first file sets the times and the signals; the
# second is read at those times, interpolated linearly between its own
# rows when they fall elsewhere.  ngspice prints its own time points (its
# `.options interp` grid lags the solution by up to a step, so it is not
# used), so the harness passes a simulator's own points first and a
# reference on a finer grid second wherever it can.  Signals are matched
# by name, so the column order need not agree.
#
# Prints "err signal time compared", or "- none - 0" when nothing matched.
# -v rel=1 divides each signal's differences by its largest magnitude in
# the first file, for tables that mix volts, amperes and micrometres.
FNR == 1 {
	f++
	for (k = 2; k <= NF; k++) {
		if (f == 1) { rname[k] = $k; ridx[$k] = k; nrc = NF }
		else if ($k in ridx) bcol[ridx[$k]] = k
		else {
			# ngspice cuts column heads to 15 characters: match
			# the one signal whose name starts with the cut one.
			hit = 0
			for (j = 2; j <= nrc; j++)
				if ((length($k) >= 15 && index(rname[j], $k) == 1) ||
				    (length(rname[j]) >= 15 && index($k, rname[j]) == 1)) { hit++; hj = j }
			if (hit == 1 && !(hj in bcol)) bcol[hj] = k
		}
	}
	next
}
f == 1 {
	nr++; rt[nr] = $1 + 0
	for (k = 2; k <= NF; k++) {
		rv[nr, k] = $k + 0
		a = rv[nr, k] < 0 ? -rv[nr, k] : rv[nr, k]
		if (a > peak[k]) peak[k] = a
	}
	next
}
f == 2 { nb++; bt[nb] = $1 + 0; for (k in bcol) bv[nb, bcol[k]] = $(bcol[k]) + 0 }
END {
	worst = -1; cnt = 0; j = 1
	for (r = 1; r <= nr; r++) {
		tt = rt[r]
		while (j < nb && bt[j + 1] < tt) j++
		if (nb < 1 || tt < bt[1] - 1e-3 * (bt[2] - bt[1]) || tt > bt[nb] + 1e-3 * (bt[nb] - bt[nb - 1])) continue
		for (k = 2; k <= nrc; k++) {
			if (!(k in bcol)) continue
			c = bcol[k]
			if (j >= nb) y = bv[nb, c]
			else {
				t0 = bt[j]; t1 = bt[j + 1]
				w = (t1 > t0) ? (tt - t0) / (t1 - t0) : 0
				if (w < 0) w = 0
				if (w > 1) w = 1
				y = bv[j, c] + w * (bv[j + 1, c] - bv[j, c])
			}
			d = y - rv[r, k]
			if (d < 0) d = -d
			if (rel) d = peak[k] > 0 ? d / peak[k] : 0
			cnt++
			if (d > worst) { worst = d; ws = rname[k]; wt = tt }
		}
	}
	if (cnt == 0) print "- none - 0"
	else printf "%.3e %s %.6e %d\n", worst, ws, wt, cnt
}
