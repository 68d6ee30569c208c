# A small circuit driven through many steps, to expose per-step overhead:
# a series RLC (10 ohm, 1 mH, 10 uF: f0 = 1.59 kHz, Q = 1) driven by a
# 1 V, 1 kHz sine from rest.  tmax = 1 us forces tstop / 1 us steps while
# output stays at 1000 rows.  The circuit has a closed-form solution,
# which the harness uses as the reference (see exact.awk).
#
# -v steps=number of 1 us steps (tstop = steps us, at least 1000)
BEGIN {
	if (steps < 1000) steps = 1000
	tstop = steps * 1e-6
	print "Series RLC driven by a 1 kHz sine, stepped at 1 us"
	print "V1 in 0 SIN(0 1 1k)"
	print "R1 in a 10"
	print "L1 a c 1m"
	print "C1 c 0 10u"
	printf ".tran %g %g 0 1u\n", tstop / 1000, tstop
	print ".options acct nopage"
	print ".print tran v(c)"
	print ".end"
}
