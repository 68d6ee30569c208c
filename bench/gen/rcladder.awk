# RC ladder of n sections: node k joins node k-1 through 1 ohm and ground
# through 20 fF.  The supply (1.8 V) feeds the ladder at its start and at
# every 100th node through 10 ohm taps, so the DC drop along the ladder
# stays bounded whatever n is; every 10th node draws a PWL load current.
# Unknowns in emnet's flux formulation: n (the supply node is fixed).
#
# -v n=sections  [-v fine=1 for a reference run's finer output grid]
BEGIN {
	if (n < 10) { print "rcladder.awk: n must be at least 10" > "/dev/stderr"; exit 2 }
	printf "RC ladder, %d sections, PWL loads every 10th node\n", n
	print "V1 vdd 0 1.8"
	print "Rin vdd n1 1"
	for (k = 1; k <= n; k++) {
		if (k > 1) printf "R%d n%d n%d 1\n", k, k - 1, k
		printf "C%d n%d 0 20f\n", k, k
		if (k % 100 == 0) printf "Rt%d vdd n%d 10\n", k, k
		if (k % 10 == 5) printf "I%d n%d 0 %s\n", k, k, load_pwl(int(k / 10) % 4, "100u")
	}
	print tran_line(fine)
	print ".options acct nopage"
	print ".width out=256"
	p3 = int(n / 2) + 5
	printf ".print tran v(n5) v(n%d) v(n%d) v(n%d)\n", int(n / 4) + 5, p3, n
	print ".end"
}
