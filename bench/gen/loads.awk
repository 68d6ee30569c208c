# Shared by the power-grid generators: the PWL current drawn by a load in
# phase group g (0..3).  Four groups of trapezoids, each switching twice in
# 2 ns, so the breakpoints (and with them the step count) do not grow with
# the circuit: the step count stays put and time per step shows the cost
# of the linear algebra alone.  With -v periods=P the same 2 ns repeat P
# times and the run is P times as long: the difference between two
# lengths is the cost of steps alone, without the setup.
function load_pwl(g, ipk,    t0, s, k) {
	s = "PWL(0 0"
	for (k = 0; k < 2 * (periods > 1 ? periods : 1); k++) {
		t0 = 0.1 + k + 0.2 * g
		s = s sprintf(" %gn 0 %gn %s %gn %s %gn 0", t0, t0 + 0.1, ipk, t0 + 0.4, ipk, t0 + 0.6)
	}
	return s ")"
}
# Output grid and length shared by both families; a reference run asks for
# a grid ten times finer so that reading it between points costs nothing.
function tran_line(fine) {
	return sprintf(".tran %gp %gn", fine ? 1 : 10, 2 * (periods > 1 ? periods : 1))
}
