#!/bin/sh
# cli.sh: the command line of spec netlist section 5.
#
# Usage and version; -lagrangian's header line for the chosen formulation,
# with coordinate counts worked out by hand for each netlist (see their
# comments); -form auto and its tie rule; -q; GCC-style error locations;
# and every exit status: 0 success, 1 invalid netlist, 2 bad command line,
# 3 simulation failure (with the rows computed before it intact in the
# table, the CSV and the raw file), 4 -compare beyond -cmptol.

. "$(dirname "$0")/lib.sh"

NETS="$TESTS_DIR/netlists/tran"
EXAMPLES="$top_srcdir/netlists"

# expect_rc WANT NAME: the last run_emnet exited with WANT.
expect_rc() {
    ok $([ "$rc" -eq "$1" ]; echo $?) "$2" "exit status $rc, want $1" "$err"
}

# ---------------------------------------------------------------- usage and version
for opt in -h --help; do
    run_emnet $opt
    expect_rc 0 "$opt exits 0"
    printf '%s\n' "$out" | grep -q '^usage: emnet '
    ok $? "$opt prints the usage on standard output" "$out"
done
run_emnet --version
expect_rc 0 "--version exits 0"
printf '%s\n' "$out" | grep -Eq '^emnet [0-9]+\.[0-9]+'
ok $? "--version prints 'emnet X.Y...'" "$out"

# ---------------------------------------------------------------- -lagrangian headers
# header NETLIST FORM N E M: the expected first line.
header() {
    printf '# %s formulation: %d generalized coordinates (%d electrical, %d mechanical)' "$1" "$2" "$3" "$4"
}
# (netlist, formulation, N, E, M), counted by hand: rc one loop / node out;
# rlc one loop / nodes a b; tank_i two loops / node a; ladder_v two loops /
# nodes a b c; msd one mass in either; speaker one loop or node a, plus the
# cone.
for row in "rc charge 1 1 0" "rc flux 1 1 0" "rlc charge 1 1 0" "rlc flux 2 2 0" \
           "tank_i charge 2 2 0" "tank_i flux 1 1 0" "ladder_v charge 2 2 0" "ladder_v flux 3 3 0" \
           "msd charge 1 0 1" "msd flux 1 0 1"; do
    set -- $row
    run_emnet -lagrangian -form $2 "$NETS/$1.cir"
    want=$(header $2 $3 $4 $5)
    first=$(printf '%s\n' "$out" | head -n 1)
    ok $([ $rc -eq 0 ] && [ "$first" = "$want" ]; echo $?) "$1 -form $2 -lagrangian: '$want'" \
        "exit status $rc, first line: $first" "$err"
done
run_emnet -lagrangian -form charge "$EXAMPLES/speaker.cir"
first=$(printf '%s\n' "$out" | head -n 1)
want=$(header charge 2 1 1)
ok $([ "$first" = "$want" ]; echo $?) "speaker -form charge -lagrangian: '$want'" "got: $first"

# -lagrangian alone stops after the text: no table
run_emnet -lagrangian -form flux "$NETS/rc.cir"
printf '%s\n' "$out" | grep -q '^time '
ok $([ $? -ne 0 ] && [ $rc -eq 0 ]; echo $?) "-lagrangian without -tran prints no table" "$out"
run_emnet -q -lagrangian -form flux -tran "$NETS/rc.cir"
printf '%s\n' "$out" | grep -q '^time v(out) '
ok $([ $? -eq 0 ] && [ $rc -eq 0 ]; echo $?) "-lagrangian -tran prints the text, then the table" "$out" "$err"

# -compare: both, charge first
run_emnet -lagrangian -compare "$NETS/ladder_v.cir"
got=$(printf '%s\n' "$out" | grep '^# [a-z]* formulation:')
want=$(header charge 2 2 0; echo; header flux 3 3 0)
ok $([ $rc -eq 0 ] && [ "$got" = "$want" ]; echo $?) "-lagrangian -compare prints both formulations' headers" \
    "got:" "$got" "want:" "$want"

# ---------------------------------------------------------------- -form auto
# picked NETLIST ARGS...: the formulation -lagrangian reports
picked() {
    local net=$1
    shift
    run_emnet -lagrangian "$@" "$NETS/$net.cir"
    printf '%s\n' "$out" | head -n 1 | awk '{ print $2 }'
}
for row in "ladder_v charge fewer loop charges (2 vs 3)" "tank_i flux fewer node fluxes (1 vs 2)" \
           "rc flux tie (1 and 1) goes to flux" "msd flux tie (mechanical only) goes to flux"; do
    set -- $row
    net=$1 want=$2
    shift 2
    for args in "" "-form auto"; do
        got=$(picked $net $args)
        ok $([ "$got" = "$want" ]; echo $?) "$net ${args:-(no -form)}: auto picks $want, $*" "got '$got'"
    done
done
# .options form=charge is the default that -form overrides
got=$(picked rc_charge)
ok $([ "$got" = charge ]; echo $?) "rc_charge: .options form=charge holds without -form" "got '$got'"
got=$(picked rc_charge -form auto)
ok $([ "$got" = flux ]; echo $?) "rc_charge: -form auto overrides .options form=charge (tie: flux)" "got '$got'"
got=$(picked rc_charge -form flux)
ok $([ "$got" = flux ]; echo $?) "rc_charge: -form flux overrides .options form=charge" "got '$got'"
# the transient's summary names the same formulation
run_emnet -tran "$NETS/tank_i.cir"
printf '%s\n' "$err" | grep -q 'flux formulation'
ok $? "tank_i -tran: the summary on standard error says flux formulation" "$err"

# ---------------------------------------------------------------- -q
run_emnet -tran "$NETS/rc.cir"
ok $([ $rc -eq 0 ] && [ -n "$err" ]; echo $?) "without -q a run writes its summary to standard error" "$err"
run_emnet -q -tran "$NETS/rc.cir"
ok $([ $rc -eq 0 ] && [ -z "$err" ]; echo $?) "-q: a successful run writes nothing to standard error" "$err"
printf '%s\n' "$out" | head -n 1 | grep -q '^time v(out) '
ok $? "-q: the table still goes to standard output" "$(printf '%s\n' "$out" | head -n 3)"

# ---------------------------------------------------------------- errors, GCC style
# R1's value "-5" starts in column 8 of line 3.
printf 'negative resistor\nV1 a 0 1\nR1 a 0 -5\n.tran 1m 10m uic\n.end\n' >"$WORK/bad.cir"
run_emnet -q bad.cir
expect_rc 1 "invalid netlist: exit 1"
ok $([ -z "$out" ]; echo $?) "invalid netlist: nothing on standard output" "$out"
printf '%s\n' "$err" | grep -q '^bad\.cir:3:8: error: '
ok $? "invalid netlist: the error reads 'bad.cir:3:8: error: ...' (file as given, line, column), even with -q" "$err"
mkdir -p "$WORK/sub"
# node b is electrical on line 3 (R1) and mechanical on line 4 (M1); on
# either line it stands in column 6
printf 'domain clash\nV1 a 0 1\nR1 a b 1k\nM1   b 1\n.tran 1m 10m uic\n.end\n' >"$WORK/sub/clash.cir"
run_emnet sub/clash.cir
expect_rc 1 "node used in both domains: exit 1"
printf '%s\n' "$err" | grep -Eq "^sub/clash\\.cir:[34]:6: error: .*'b'"
ok $? "node used in both domains: 'sub/clash.cir:4:6: error:' (or 3:6) naming node b" "$err"
run_emnet -tran "$WORK/nonexistent.cir"
expect_rc 1 "missing netlist file: exit 1"
printf '%s\n' "$err" | grep -q 'nonexistent\.cir'
ok $? "missing netlist file: the error names the file" "$err"

# ---------------------------------------------------------------- exit 2: bad command line
# (run_emnet runs in $WORK: the netlists are copied there so the test
# names stay short)
cp "$NETS/rc.cir" "$NETS/rl.cir" "$WORK/"
for args in "-bogus rc.cir" "-form" "-form quantum rc.cir" "-form -tran rc.cir" "-method euler rc.cir" \
            "-reltol abc rc.cir" "-cmptol -1 rc.cir" "-r" "" "rc.cir rl.cir"; do
    run_emnet $args
    ok $([ $rc -eq 2 ] && [ -z "$out" ] && [ -n "$err" ]; echo $?) "bad command line '$args': exit 2, message on standard error only" \
        "exit status $rc" "stdout: $out" "stderr: $err"
done

# ---------------------------------------------------------------- exit 0 and the default analyses
run_emnet -q "$NETS/rc.cir"
expect_rc 0 "no analysis option: runs the netlist's .tran (exit 0)"
n=$(printf '%s\n' "$out" | grep -c '^[0-9]')
ok $([ "$n" -eq 51 ]; echo $?) "no analysis option: the .print table has its 51 rows" "got $n"

# ---------------------------------------------------------------- exit 3: simulation failure
# MEMS plate above pull-in (netlists/mems_pullin.cir): the capacitor's gap
# closes, the run stops, and what was computed before must be intact.
run_emnet -q -tran -form charge -r pullin.raw -o pullin.csv "$EXAMPLES/mems_pullin.cir"
expect_rc 3 "pull-in: exit 3"
printf '%s\n' "$out" >"$WORK/pullin.tbl"
printf '%s\n' "$err" | grep -qi 'cact'
ok $? "pull-in: the error names Cact" "$err"
printf '%s\n' "$err" | grep -Eq '^[^ ]*mems_pullin\.cir:[0-9]+:[0-9]+: error: '
ok $? "pull-in: the error is GCC-style, at the capacitor's line" "$err"
# Every row: 7 numeric fields, time = k * 0.1u, the plate short of the
# electrode (x(plate) < g0 = 2 um); at least 200 rows (the gap closes near
# 24.6 us).
msg=$(awk 'NR == 1 { if ($0 != "time x(plate) v(plate) q(cact) i(cact) v(top) f(cact,plate)") { print "header: " $0; bad = 1 } next }
    { k = NR - 2
      if (NF != 7) { print "row " k ": " NF " fields"; bad = 1 }
      for (i = 1; i <= NF; i++) if ($i !~ /^-?[0-9]\.[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]e[-+][0-9][0-9][0-9]?$/) {
          print "row " k ": field " i " is " $i; bad = 1 }
      if (bad) exit 1
      d = $1 - k * 1e-7; if (d < 0) d = -d; if (d > 1e-15) { print "row " k ": time " $1; bad = 1 }
      if (!($2 < 2e-6)) { print "row " k ": x(plate) " $2 " past the gap"; bad = 1 } }
    END { if (NR - 1 < 200) { print "only " NR - 1 " rows"; bad = 1 } exit bad }' "$WORK/pullin.tbl" 2>&1)
ok $? "pull-in: the table printed before the failure is intact" "$msg"
# the last byte of standard output is a newline: no half-written row
[ "$(tail -c 1 "$WORK/stdout" | od -An -c | tr -d ' ')" = '\n' ]
ok $? "pull-in: standard output ends with a complete line"
nrows=$(($(wc -l <"$WORK/pullin.tbl") - 1))
# the CSV: same rows, same values (columns named as in .save's default)
ncsv=$(($(wc -l <"$WORK/pullin.csv") - 1))
ok $([ "$ncsv" -eq "$nrows" ]; echo $?) "pull-in: the CSV holds as many rows as the table" "csv $ncsv, table $nrows"
msg=$(awk -F, 'NR == FNR { if (FNR > 1) { T[FNR] = $1; X[FNR] = $2 } next }
    FNR == 1 { for (i = 1; i <= NF; i++) if ($i == "x(plate)") c = i; if (!c) { print "no x(plate) in " $0; exit 1 } next }
    { if ($1 != T[FNR] || $c != X[FNR]) { print "row " FNR - 1 ": " $1 " " $c " vs " T[FNR] " " X[FNR]; exit 1 } }' \
    FS=' ' "$WORK/pullin.tbl" FS=, "$WORK/pullin.csv" 2>&1)
ok $? "pull-in: the CSV's time and x(plate) equal the table's" "$msg"
# the raw file: its header's point count matches the data that follows
msg=$(awk '/^No. Variables:/ { nv = $3 } /^No. Points:/ { np = $3 } END { print nv, np }' "$WORK/pullin.raw")
set -- $msg
off=$(grep -abo '^Binary:' "$WORK/pullin.raw" | head -n 1 | cut -d: -f1)
size=$(wc -c <"$WORK/pullin.raw")
ok $([ -n "$off" ] && [ "$2" -eq "$nrows" ] && [ $((size - off - 8)) -eq $((8 * $1 * $2)) ]; echo $?) \
    "pull-in: the raw file is finished: $nrows points declared and present" \
    "variables $1, points $2, table rows $nrows, data bytes $((size - off - 8))"

# A movable plate straight across a 10 V sine on a 1 kN/m spring: the
# force grows as the gap closes (C = c0 g / (g - x)), and the plate pulls
# in near 18.6 ms.  The flux formulation steps past contact and finds
# the capacitance negative; the charge formulation's steps shrink with
# the time left to contact, its charge C v growing without bound, and it
# stops there.  Its error names the capacitor, at its line, and how far
# its value grew (before, it named the source's loop only).
cat >"$WORK/pin.cir" <<EOF
a movable plate across a sine source, pulled in
.param g=10m
V1 n1 0 SIN(0 10 50)
CX n1 0 C='1m*g/(g-x(m1))'
R1 n1 0 100
M1 m1 0.05
S1 m1 0 1k
D1 m1 0 0.1
.tran 50u 50m uic
.print tran v(n1) v(m1) x(m1)
.end
EOF
# And two movable cores L(x) = L0 (1 + x / g) across a sine source, one
# coupled (k = 0.95) to an inductor, on a mass-less spring: the plunger
# runs to x = -g, where L(x) goes to 0, in both formulations, which
# stopped there with "time step too small" naming no element or
# coordinate.
cat >"$WORK/lpin.cir" <<EOF
two movable cores across a sine source, one coupled
.param g=10m
V1 n1 0 SIN(0 10 100)
LX1 n1 0 L='10m*(1+x(m1)/g)'
LX2 n1 0 L='1m*(1+x(m1)/g)'
R0 n2 0 1
L2 n2 n1 10m
K1 LX2 L2 0.95
Rg2 n2 0 10k
S1 m1 0 1e4
.tran 50u 50m uic
.print tran v(n1) v(n2) x(m1)
.end
EOF
for form in charge flux; do
    run_emnet -q -form $form -tran pin.cir
    expect_rc 3 "pin $form: pull-in stops the run (exit 3)"
    printf '%s\n' "$err" | grep -Eq '^pin\.cir:4:1: error: .*capacitance of cx .*pull-in'
    ok $? "pin $form: the error names the capacitor, at its line, and pull-in" "$err"
    run_emnet -q -form $form -tran lpin.cir
    expect_rc 3 "lpin $form: a core's L(x) running to 0 stops the run (exit 3)"
    printf '%s\n' "$err" | grep -Eq '^lpin\.cir:[45]:1: error: .*inductance of lx[12] .*pull-in'
    ok $? "lpin $form: the error names the core, at its line, and pull-in" "$err"
done

# ---------------------------------------------------------------- exit 4: -compare beyond -cmptol
# At the netlist's default reltol (1e-3) the two formulations of the RC
# differ at the integration-error level; -cmptol 1e-15 must flag that,
# -cmptol 1 must not.  The report's largest difference for v(out) is
# checked against the two single-formulation tables.
run_emnet -q -compare -cmptol 1e-15 "$NETS/rc.cir"
expect_rc 4 "-compare -cmptol 1e-15: exit 4"
printf '%s\n' "$out" >"$WORK/cmp.out"
run_emnet -q -compare -cmptol 1 "$NETS/rc.cir"
expect_rc 0 "-compare -cmptol 1 on the same circuit: exit 0"
run_emnet -q -form charge -tran "$NETS/rc.cir"
printf '%s\n' "$out" >"$WORK/rc.charge"
run_emnet -q -form flux -tran "$NETS/rc.cir"
printf '%s\n' "$out" >"$WORK/rc.flux"
dmax=$(awk 'NR == FNR { V[FNR] = $2; next } FNR > 1 { d = $2 - V[FNR]; if (d < 0) d = -d; if (d > m) m = d }
            END { printf "%.6e\n", m }' "$WORK/rc.charge" "$WORK/rc.flux")
rep=$(awk '$1 == "v(out)" { print $2 }' "$WORK/cmp.out")
ok $(awk -v a="$rep" -v b="$dmax" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b > 0 && d <= 0.01 * b) }'; echo $?) \
    "-compare reports the largest v(out) difference of the two formulations' tables" "reported '$rep', tables differ by $dmax" \
    "$(cat "$WORK/cmp.out")"

# -tran on a deck without a .tran line: exit 1, GCC style at the .end
# card (where the line would go), or naming the file if it has none.
printf 'no tran\nR1 a 0 1k\nV1 a 0 1\n.end\n' >"$WORK/notran.cir"
run_emnet -tran notran.cir
ok $([ $rc -eq 1 ] && printf '%s\n' "$err" | grep -q '^notran\.cir:4:1: error: no \.tran line'; echo $?) \
    "-tran without a .tran line: exit 1, at the .end line" "exit $rc" "$err"
printf 'no tran\nR1 a 0 1k\nV1 a 0 1\n' >"$WORK/notran2.cir"
run_emnet -tran notran2.cir
ok $([ $rc -eq 1 ] && printf '%s\n' "$err" | grep -q 'notran2\.cir: no \.tran line'; echo $?) \
    "-tran without a .tran line or a .end: exit 1, naming the file" "exit $rc" "$err"

# A signal that is zero in the circuit is zero to the runs' tolerances in
# both, not a disagreement: L2 dangles from n4, where 1 A flows through
# 10k and 1k.  Its current is 0 in the charge formulation and, in the
# flux one, the difference of two fluxes of volt-seconds over 100 uH
# (1e-11 A, rel_diff 1).  It is below reltol of the largest current, so
# -compare exits 0 and still prints its line; at -cmptol 1e-12 the node
# voltages, which are not zero, still disagree.  Before, exit 4.
cat >"$WORK/dangle.cir" <<EOF
a dangling inductor
I1 n1 0 DC 1
Rg1 n1 0 1k
L1 n1 n4 10m
L2 n2 n4 100u
Rg4 n4 0 10k
.tran 10u 2m uic
.print tran v(n1) v(n4)
.end
EOF
# compare_zero DECK SIGNAL WHAT: -compare on DECK exits 0 (WHAT is no
# disagreement) and still prints SIGNAL's line
compare_zero() {
    run_emnet -q -compare "$1"
    expect_rc 0 "-compare: $3 is no disagreement"
    ok $(printf '%s\n' "$out" | awk -v s="$2" '$1 == s { f = 1 } END { exit !f }'; echo $?) \
        "-compare: $2's line is printed" "$out"
}
compare_zero dangle.cir "i(l2)" "a current that is zero in the circuit"
run_emnet -q -compare -cmptol 1e-12 dangle.cir
expect_rc 4 "-compare -cmptol 1e-12: the node voltages still disagree"
# The one current of a deck, 4e-14 A of round-off in a dangling L2:
# below ABSTOL, so zero (no other current to measure it against).
cat >"$WORK/dangle2.cir" <<EOF
the one current
I1 n1 0 PULSE(0 1 0.1m 0.05m 0.05m 0.3m 1m)
C1 n1 n5 1u
L2 n5 n4 10m
C3 n5 0 1u
R5 n5 0 1k
.tran 10u 2m uic
.print tran v(n1) v(n5)
.end
EOF
run_emnet -q -compare dangle2.cir
expect_rc 0 "-compare: a current below ABSTOL is no disagreement"
# A mass at rest at its operating point, held off its spring by a
# movable plate's force at DC: its velocity is 0 (rounding, 1e-20 m/s,
# in each formulation, and the largest velocity printed).  Zero to the
# runs' tolerances, as it would not move the mass by reltol of its
# displacement over the run.  Before, exit 4 (rel_diff 1).
cat >"$WORK/plate_rest.cir" <<EOF
a plate at rest at its operating point
.param g=10m
V1 n1 0 DC 5
CX1 n3 n1 C='100u*g/(g-x(m1))'
C0 n2 n3 10u
R1 n2 n3 4
R3 n1 n2 4
R4 n1 0 1
Rg2 n2 0 10k
Rg3 n3 0 1k
M1 m1 0.2
S1 m1 0 1k
D1 m1 0 10
.tran 50u 50m
.print tran v(n3) v(m1) x(m1)
.end
EOF
compare_zero plate_rest.cir "v(m1)" "a mechanical velocity that moves its node by less than reltol of the displacement"

done_testing
