# n moving-coil loudspeakers (the woofer of netlists/speaker.cir) in
# parallel on one amplifier with 50 milliohm output resistance, playing a
# 40 Hz, 2.83 V sine for 25 ms from rest.  Moving masses spread over
# +-10 % so the drivers are not copies of one another.  Linear.  Unknowns:
# per driver one loop (charge formulation) or the node between Re and Le
# (flux), plus the cone: 2n, or 2n + 1 in flux.  The deck asks for the flux
# formulation: -form auto would take the charge one for its one coordinate
# less, and there the output resistor lies in every loop and couples each
# with all the others (a dense n x n block: 10^8 entries at n = 10^4).
#
# -v n=drivers  [-v fine=1 for a reference run's finer output grid]
BEGIN {
	if (n < 1) n = 1
	printf "%d loudspeakers on one amplifier\n", n
	print ".param re=5.6 le=0.6m bl=7 cms=1.13m rms=1"
	print "V1 amp 0 SIN(0 2.83 40)"
	print "Rout amp out 0.05"
	for (k = 1; k <= n; k++) {
		printf "Rvc%d out a%d re\n", k, k
		printf "Lvc%d a%d b%d le\n", k, k, k
		printf "Tvc%d b%d 0 c%d 0 bl\n", k, k, k
		printf "Mc%d c%d %gm\n", k, k, 14 * (0.9 + 0.2 * ((k * 37) % 101) / 100)
		printf "Sc%d c%d 0 '1/cms'\n", k, k
		printf "Dc%d c%d 0 rms\n", k, k
	}
	printf ".tran %gu 25m uic\n", fine ? 10 : 100
	print ".options acct nopage form=flux"
	printf ".print tran x(c1) v(out) i(lvc1) x(c%d)\n", n
	print ".end"
}
