# Closed-form capacitor voltage of small.awk's circuit: L q'' + R q' + q/C
# = V sin(w t) with q(0) = q'(0) = 0, the sum of the steady-state response
# and the decaying underdamped transient.  Reads a table ("time ..."
# header, one row per time point) and prints "time v(c)" at exactly its
# times, so a simulator's own points are compared without interpolation.
BEGIN {
	R = 10; L = 1e-3; C = 10e-6; V = 1; w = 2 * 3.141592653589793 * 1000
	a = 1 / C - L * w * w; b = R * w
	A = V * a / (a * a + b * b); B = -V * b / (a * a + b * b)
	al = R / (2 * L); wd = sqrt(1 / (L * C) - al * al)
	c1 = -B; c2 = (al * c1 - w * A) / wd
	print "time v(c)"
}
FNR > 1 {
	t = $1 + 0
	q = A * sin(w * t) + B * cos(w * t) + exp(-al * t) * (c1 * cos(wd * t) + c2 * sin(wd * t))
	printf "%s %.12e\n", $1, q / C
}
