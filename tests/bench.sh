#!/bin/sh
# bench.sh: the benchmark harness's judges, on numbers worked out by hand.
# bench/lib/cmp.awk measures each transient's error, dccmp.awk each
# operating point's, and targets.awk (run by `bench/run --table`) turns a
# run's numbers into issue 8's verdicts.  A slip in any of them would
# misreport every record, and no record would show it.
. "$(dirname "$0")/lib.sh"

cmp_awk="$top_srcdir/bench/lib/cmp.awk"

# --- cmp.awk: the first table sets the times and signals; the second is
# read at those times, linearly between its rows, its columns found by
# name.  At t = 1, v(b) lies halfway between 1 and 1.25: off by 0.125; at
# t = 2, a third of the way from 1.25 to 1: 1.1667, off by 0.1667, the
# worst; v(a) is a line in both.  Four times by two signals: 8 compared.
cat >"$WORK/a.tab" <<'EOF'
time v(a) v(b)
0 0 1
1 1 1
2 2 1
3 3 1
EOF
cat >"$WORK/b.tab" <<'EOF'
time v(b) v(a)
0 1 0
0.5 1 0.5
1.5 1.25 1.5
3 1 3
EOF
got=$(awk -f "$cmp_awk" "$WORK/a.tab" "$WORK/b.tab")
[ "$got" = "1.667e-01 v(b) 2.000000e+00 8" ]
ok $? "cmp.awk: worst difference, its signal and time, read between the second table's rows" \
    "got '$got', want '1.667e-01 v(b) 2.000000e+00 8'"

# Relative to each signal's peak in the first table: v(b) at 2 off by
# 0.3333 is 0.1667 of its peak; v(a) (peak 3) is exact.
cat >"$WORK/a2.tab" <<'EOF'
time v(a) v(b)
0 0 2
1 1 2
2 2 2
3 3 2
EOF
cat >"$WORK/b2.tab" <<'EOF'
time v(b) v(a)
0 2 0
0.5 2 0.5
1.5 2.5 1.5
3 2 3
EOF
got=$(awk -f "$cmp_awk" "$WORK/a2.tab" "$WORK/b2.tab")
[ "$got" = "3.333e-01 v(b) 2.000000e+00 8" ]
ok $? "cmp.awk: absolute difference" "got '$got', want '3.333e-01 v(b) 2.000000e+00 8'"
got=$(awk -f "$cmp_awk" -v rel=1 "$WORK/a2.tab" "$WORK/b2.tab")
[ "$got" = "1.667e-01 v(b) 2.000000e+00 8" ]
ok $? "cmp.awk: rel=1 divides by the signal's peak in the first table" \
    "got '$got', want '1.667e-01 v(b) 2.000000e+00 8'"

# ngspice cuts a column's head to 15 characters: it still matches the one
# signal whose name it begins.  Names that match nothing: nothing compared.
printf 'time v(long_node_name_1)\n0 1\n1 2\n' >"$WORK/c.tab"
printf 'time v(long_node_name\n0 1\n1 2.5\n' >"$WORK/d.tab"
got=$(awk -f "$cmp_awk" "$WORK/c.tab" "$WORK/d.tab")
[ "$got" = "5.000e-01 v(long_node_name_1) 1.000000e+00 2" ]
ok $? "cmp.awk: a head cut to 15 characters matches its signal" \
    "got '$got', want '5.000e-01 v(long_node_name_1) 1.000000e+00 2'"
printf 'time v(x)\n0 1\n1 2\n' >"$WORK/e.tab"
got=$(awk -f "$cmp_awk" "$WORK/a.tab" "$WORK/e.tab")
[ "$got" = "- none - 0" ]
ok $? "cmp.awk: no signal in common compares nothing" "got '$got'"

# --- dccmp.awk: a DC solution against its reference, nodes by name in
# any case, emnet's v(node) or ngspice's bare names; a current, a heading
# and ground are passed over, a node the simulator lacks is counted.
# n1 off by 1e-3, N2 by 1.5e-3 (the worst), n3 missing.
printf 'n1 1.0\nN2 0.5\nn3 0.25\n0 0\n' >"$WORK/ref.sol"
printf 'v(n1) 1.001\nv(n2) 0.4985\ni(v1) 5\n' >"$WORK/em.op"
got=$(awk -f "$top_srcdir/bench/lib/dccmp.awk" "$WORK/ref.sol" "$WORK/em.op")
[ "$got" = "1.500e-03 n2 2 1" ]
ok $? "dccmp.awk: emnet's operating point, worst node, compared and missing" "got '$got', want '1.500e-03 n2 2 1'"
printf 'Node Voltage\nn1 1.0005\nn2 0.5\nn3 0.25\n' >"$WORK/ng.op"
got=$(awk -f "$top_srcdir/bench/lib/dccmp.awk" "$WORK/ref.sol" "$WORK/ng.op")
[ "$got" = "5.000e-04 n1 3 0" ]
ok $? "dccmp.awk: ngspice's table of bare names" "got '$got', want '5.000e-04 n1 3 0'"

# --- targets.awk, through bench/run --table.  results.tsv's fields (bench/run,
# ORDER results.tsv): case unknowns emnet_s ngspice_s emnet_KiB ngspice_KiB
# steps rejected newton LU ng_eqs ng_steps ng_rej ng_newton err ng_err
# |em-ng| reference note emnet_cpu ngspice_cpu emnet_own twin_own_per_step
# extra_step_own.
row() {     # row CASE UNKNOWNS EMNET_S NGSPICE_S EMNET_KIB NG_KIB STEPS NEWTON ERR NG_ERR CPU OWN [TWIN [EXTRA]]
    [ $# -ge 13 ] || set -- "$@" -
    [ $# -ge 14 ] || set -- "$@" -
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t0\t%s\t5\t-\t-\t-\t-\t%s\t%s\t-\tref\t\t%s\t-\t%s\t%s\t%s\n' "$@"
}
{
    # 99.9x: short of 100; memory at exactly half; error at exactly 0.1 mV
    row ibmpg1t 25372 1.5 149.85 50000 100000 2000 2100 1.0e-04 5.4e-05 3.0 -
    # the smallest size ran under 0.1 s of CPU: left out of the growth,
    # but not out of the steps alone (the extra steps of a run twice as
    # long, own timer): 1e-4 s a step at 10^3, 1000^1.02 times that at
    # 10^6 (0.114815 s): N^1.02, shown beside and not judged
    row rc-1e3 1000 0.05 0.1 1 1 100 100 1e-6 1e-6 0.05 - - 1e-4
    # time per step 0.01 s at 10^4 and 100^1.05 times that at 10^6:
    # N^1.05; the mesh's 100^1.15 times: N^1.15
    row rc-1e4 10000 1.0 5 1 1 100 100 1e-6 1e-6 1.0 -
    row rc-1e6 1000000 100 - 1 - 100 100 - - 125.89 - - 0.114815
    row mesh-1e4 10000 1.0 5 1 1 100 100 1e-6 1e-6 1.0 -
    row mesh-1e6 1000000 100 - 8388608 - 100 100 - - 199.53 -
    # ngspice stopped at 300 s: at least 300x; error below ngspice's
    row rc-1e5 100000 1.0 '>300' 1 1 100 100 2e-6 3e-6 1.0 -
    # 19.9x; error above ngspice's
    row mesh-1e5 100000 1.0 19.9 1 1 100 100 2e-6 1e-6 1.0 -
    row small-1e6 1 0.5 0.4 1 1 1000000 1000000 1e-6 1e-6 0.5 -
    # 3.1 and 2.9 times the linear twin's time per step; 3.01 Newton a step
    row mems-100 200 0.31 - 1 - 100 301 1e-4 - 0.31 0.31
    row memslin-100 200 0.1 - 1 - 100 100 1e-4 - 0.1 0.1
    row mems-1e3 2000 0.29 - 1 - 100 200 1e-4 - 0.29 0.29
    row memslin-1e3 2000 0.1 - 1 - 100 100 1e-4 - 0.1 0.1
    # a twin timed beside the array (2e-3 s a step: 2.5x) counts, not
    # its own case's run (1e-3 s a step: it would be 5x)
    row mems-1e4 20000 0.5 - 1 - 100 100 1e-4 - 0.5 0.5 2e-3
    row memslin-1e4 20000 0.1 - 1 - 100 100 1e-4 - 0.1 0.1
} >"$WORK/results.tsv"
"$top_srcdir/bench/run" --table "$WORK/results.tsv" >"$WORK/table" 2>"$WORK/table.err"
ok $? "bench/run --table reads a results file" "$(cat "$WORK/table.err")"

# verdict WHAT WANT: the target line that begins with WHAT, verdict and
# numbers, is WANT (the spacing of the columns folded)
verdict() {
    got=$(sed -n '/^Targets/,$p' "$WORK/table" | tr -s ' ' | grep -F -- "$1" | head -n 1)
    case $got in
    "$2"*) ok 0 "targets.awk says: $2" ;;
    *) ok 1 "targets.awk says: $2" "got '$got'" ;;
    esac
}
verdict "ibmpg1t at least 100x" "FAIL ibmpg1t at least 100x faster than ngspice 99.9x (1.5 s vs 149.85 s)"
verdict "ibmpg1t worst error" "PASS ibmpg1t worst error at most 0.1 mV 1.0e-04 V"
verdict "ibmpg1t peak memory" "PASS ibmpg1t peak memory at most half of ngspice's 49 MiB vs 98 MiB"
verdict "ibmpg1 DC at least" "NOT RUN ibmpg1 DC at least 10x faster than ngspice no ngspice time"
verdict "RC ladder time per step" "PASS RC ladder time per step grows at most ~N^1.1 N^1.05 from 10000 to 1000000 unknowns (0.01 to 1.26 CPU s/step"
got=$(grep -F "RC ladder time per step" "$WORK/table")
case $got in *"; steps alone N^1.02 from 1000 to 1000000 (own clock))") ok 0 "targets.awk shows the steps alone beside the growth" ;;
*) ok 1 "targets.awk shows the steps alone beside the growth" "got '$got'" ;; esac
# and size to size: mesh-1e5's 1.0 s over 100 steps is mesh-1e4's time
# per step (N^0.00), so the whole growth is in the last decade (N^2.30)
verdict "RLC mesh time per step" "FAIL RLC mesh time per step grows at most ~N^1.1 N^1.15 from 10000 to 1000000 unknowns (0.01 to 2 CPU s/step; wall N^1.00; size to size N^0.00, N^2.30)"
verdict "rc-1e5 at least" "PASS rc-1e5 at least 20x faster than ngspice at least 300.0x (1.0 s vs ngspice stopped at 300 s)"
verdict "rc-1e5 error" "PASS rc-1e5 error no worse than ngspice's 2e-6 V vs 3e-6 V"
verdict "mesh-1e5 at least" "FAIL mesh-1e5 at least 20x faster than ngspice 19.9x (1.0 s vs 19.9 s)"
verdict "mesh-1e5 error" "FAIL mesh-1e5 error no worse than ngspice's 2e-6 V vs 1e-6 V"
verdict "mesh-1e6 runs" "FAIL mesh-1e6 runs in under 8 GiB 8.00 GiB, 100 s"
verdict "small-1e6 steps" "FAIL small-1e6 steps faster than ngspice 0.8x (0.5 s vs 0.4 s)"
verdict "MEMS array N=100:" "FAIL MEMS array N=100: time/step within 3x of linear twin 3.1x"
verdict "MEMS array N=1e3:" "PASS MEMS array N=1e3: time/step within 3x of linear twin 2.9x (0.0029 vs 0.001 s/step, emnet's own timer, twin's own case)"
verdict "MEMS array N=1e4:" "PASS MEMS array N=1e4: time/step within 3x of linear twin 2.5x (0.005 vs 0.002 s/step, emnet's own timer, side by side)"
verdict "at most 3 Newton" "FAIL electromechanical arrays: at most 3 Newton/step worst 3.01 (mems-100)"

# --- bench/run itself, on four small cases of four kinds (a deck of
# the repository's, a generated grid with its run twice as long, a
# small circuit, a MEMS array with its twin), emnet alone: every case
# makes its row, and nothing is left unset on the way.
EMNET="$EMNET" BENCH_WORK="$WORK/bw" BENCH_OUT="$WORK/bo" NGSPICE=/nonexistent \
    "$top_srcdir/bench/run" ibmpg1 rc-1e3 small-1e3 mems-10 >"$WORK/run.out" 2>"$WORK/run.err"
ok $? "bench/run runs ibmpg1, rc-1e3, small-1e3 and mems-10" "$(tail -n 5 "$WORK/run.err")"
bad=$(grep -v '^bench/run: table in \|^[a-z0-9-]*$\|^  [a-z0-9-]*: ' "$WORK/run.err" | head -n 3)
[ -z "$bad" ]
ok $? "bench/run says nothing but its progress" "$bad"
rows=$(awk -F'\t' '$3 ~ /^[0-9.]+$/ { n++ } END { print n + 0 }' "$WORK/bw/results.tsv")
[ "$rows" = 4 ]
ok $? "bench/run times every case" "$rows of 4 rows have a time: $(cat "$WORK/bw/results.tsv")"
twin=$(awk -F'\t' '$1 == "mems-10" { print $23 }' "$WORK/bw/results.tsv")
case $twin in [0-9]*) ok 0 "bench/run times mems-10's twin beside it" ;;
*) ok 1 "bench/run times mems-10's twin beside it" "got '$twin'" ;; esac
# rc-1e3 twice as long: twice the steps (within a twentieth: the first
# steps from rest are not repeated), so its extra steps are timed
steps=$(awk -F'\t' '$1 == "rc-1e3" { print $7 }' "$WORK/bw/results.tsv")
long=$(sed -n 's/.*: \([0-9]*\) steps,.*/\1/p' "$WORK/bw/rc-1e3/l1.err")
[ -n "$steps" ] && [ $((20 * long)) -ge $((39 * steps)) ] && [ $((20 * long)) -le $((41 * steps)) ] 2>/dev/null
ok $? "rc-1e3's long run takes twice the steps" "$steps steps, long run $long"
extra=$(awk -F'\t' '$1 == "rc-1e3" { print $24 }' "$WORK/bw/results.tsv")
case $extra in [0-9]*) ok 0 "bench/run times rc-1e3's extra steps" ;;
*) ok 1 "bench/run times rc-1e3's extra steps" "got '$extra'" ;; esac
# the machine's cost of fresh memory, on the report's last line
fresh=$(tail -n 1 "$WORK/run.out")
case $fresh in "fresh memory: 1 GiB first written in "[0-9]*" s, "*) ok 0 "bench/run ends with what fresh memory costs" ;;
*) ok 1 "bench/run ends with what fresh memory costs" "got '$fresh'" ;; esac

done_testing
