# n electrostatic MEMS actuators (the plate of netlists/mems.cir) on one
# drive ramping to 80 % of pull-in in 2 us, each through its own 1 Mohm
# bias resistor, followed for 100 us from rest.  Spring constants spread
# over +-10 %.  Each plate's capacitor C(x) = eps0 A / (g0 - x) makes the
# system nonlinear.  With -v lin=1 every C(x) is replaced by its value at
# x = 0: the same coordinates and the same matrix size, linear, the
# yardstick for the cost of the nonlinearity.  Unknowns in emnet's flux
# formulation: per actuator the top plate node and the plate: 2n.
#
# -v n=actuators [-v lin=1] [-v fine=1 for a reference run]
BEGIN {
	if (n < 1) n = 1
	printf "%d electrostatic MEMS actuators%s\n", n, lin ? ", C(x) frozen at x = 0" : ""
	print ".param eps0=8.854e-12 side=200u area='side*side' g0=2u"
	print ".param km=5 mp=1.864e-10 bp=1.22e-5 rs=1meg"
	print ".param vpi='sqrt(8*km*g0^3/(27*eps0*area))' vdc='0.8*vpi'"
	print ".options abstol=1e-15 vntol=1e-12 chgtol=1e-22"
	print "Vd in 0 PWL(0 0 2u vdc)"
	for (k = 1; k <= n; k++) {
		printf "Rs%d in t%d rs\n", k, k
		if (lin) printf "C%d t%d 0 'eps0*area/g0'\n", k, k
		else printf "C%d t%d 0 C='eps0*area/(g0 - x(p%d))'\n", k, k, k
		printf "Mp%d p%d mp\n", k, k
		printf "Sp%d p%d 0 '%g*km'\n", k, k, 0.9 + 0.2 * ((k * 37) % 101) / 100
		printf "Dp%d p%d 0 bp\n", k, k
	}
	printf ".tran %gu 100u uic\n", fine ? 0.05 : 0.5
	print ".options acct nopage"
	printf ".print tran x(p1) v(t1) x(p%d) v(t%d)\n", n, n
	print ".end"
}
