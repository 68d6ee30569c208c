# The benchmark table: one row per line of bench/run's results.tsv
# (fields in the order run_case writes them), or with -v header=1 just the
# column heads.  Memory in MiB, times in seconds, errors in volts.  "ng/em"
# is the ratio of wall times, "cpu" the ratio of user + system times.
function mb(kb) { return kb ~ /^[0-9]+$/ ? sprintf("%.0f", kb / 1024) : "-" }
function ratio(e, n,    gt) {
	gt = ""
	if (n ~ /^>[0-9.]+$/) { gt = ">"; n = substr(n, 2) } # ngspice timed out
	if (e !~ /^[0-9.]+$/ || n !~ /^[0-9.]+$/) return "-"
	if (e + 0 == 0) e = 0.005 # /usr/bin/time's resolution is 10 ms
	return gt sprintf("%.1f", n / e)
}
function per(a, b) { return (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/ && b > 0) ? sprintf("%.2f", a / b) : "-" }
BEGIN {
	fmt = "%-14s %8s %8s %9s %6s %6s %11s %7s %8s %8s %5s %7s %6s %6s %9s %9s %9s\n"
	if (header) {
		printf fmt, "case", "unknowns", "emnet_s", "ngspice_s", "ng/em", "cpu", "steps(rej)", "ng_stp", \
			"newton", "ng_newt", "nw/st", "LU", "MB", "ng_MB", "err", "ng_err", "|em-ng|"
		exit
	}
}
{
	steps = $7 ~ /^[0-9]+$/ ? $7 "(" $8 ")" : "-"
	printf fmt, $1, $2, $3, $4, ratio($3, $4), ratio($20, $21), steps, $12, $9, $14, per($9, $7), $10, \
		mb($5), mb($6), $15, $16, $17
}
