# Two-dimensional RLC mesh, a power grid in miniature: s x s nodes joined
# to their neighbours by 50-110 milliohm segments, 20 fF to ground at each
# node, and a supply pad at every 10th node in both directions (0.25 ohm
# and 1 nH to the 1.8 V rail, as in the IBM grids).  A quarter of the nodes
# draw PWL load currents in four phase groups.  Unknowns in emnet's flux
# formulation: s^2 mesh nodes + one per pad (the node between R and L).
#
# -v n=unknowns (s = round(sqrt(n)))  [-v fine=1 for a reference run]
BEGIN {
	s = int(sqrt(n) + 0.5)
	if (s < 4) { print "rlcmesh.awk: n must be at least 16" > "/dev/stderr"; exit 2 }
	printf "RLC mesh %d x %d, pads every 10th node, PWL loads\n", s, s
	print "V1 vdd 0 1.8"
	for (i = 0; i < s; i++)
		for (j = 0; j < s; j++) {
			nd = "n" i "_" j
			if (j + 1 < s) printf "Rh%d_%d %s n%d_%d %g\n", i, j, nd, i, j + 1, 0.05 + 0.01 * ((i + 2 * j) % 7)
			if (i + 1 < s) printf "Rv%d_%d %s n%d_%d %g\n", i, j, nd, i + 1, j, 0.05 + 0.01 * ((3 * i + j) % 7)
			printf "C%d_%d %s 0 20f\n", i, j, nd
			if (i % 10 == 5 && j % 10 == 5) {
				printf "Rp%d_%d %s p%d_%d 0.25\n", i, j, nd, i, j
				printf "Lp%d_%d p%d_%d vdd 1n\n", i, j, i, j
			}
			if ((i + j) % 2 == 0 && i % 2 == 0)
				printf "I%d_%d %s 0 %s\n", i, j, nd, load_pwl((7 * i + 3 * j) % 4, "1m")
		}
	print tran_line(fine)
	print ".options acct nopage"
	print ".width out=256"
	c = int(s / 2)
	printf ".print tran v(n0_0) v(n%d_%d) v(n%d_%d) v(n%d_%d)\n", c, c, s - 1, s - 1, c, s - 1
	print ".end"
}
