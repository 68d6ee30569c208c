#!/bin/sh
# dissection.sh: a mesh large enough that the L D L' solver orders it by
# nested dissection (sparse.c, dissected: AMD leaves L over a million
# entries and four times A here, 48,400 unknowns), against its closed form.
#
# Every node of a 220 x 220 grid is charged from one source through its own
# 1k and holds 1n to ground; neighbours are joined by 10 ohm.  All nodes
# see the same source through the same RC, so all sit at the same voltage
# and the grid resistors carry nothing: each node follows the RC's
# response to the source's 10 ns ramp to 1 V (tau = 1 us),
#   v(t) = (t - tau (1 - exp(-t/tau))) / tr                 for t <= tr,
#   v(t) = 1 - (tau/tr) (exp(tr/tau) - 1) exp(-t/tau)     after.
# A solve in a wrong order would not keep the nodes equal, let alone there.
. "$(dirname "$0")/lib.sh"

awk -v K=220 'BEGIN {
    print "uniform RC grid"
    print "V1 in 0 PWL(0 0 10n 1)"
    for (i = 0; i < K; i++) for (j = 0; j < K; j++) {
        n = "n" i "_" j
        printf "RG%d_%d in %s 1k\nC%d_%d %s 0 1n\n", i, j, n, i, j, n
        if (i + 1 < K) printf "RX%d_%d %s n%d_%d 10\n", i, j, n, i + 1, j
        if (j + 1 < K) printf "RY%d_%d %s n%d_%d 10\n", i, j, n, i, j + 1
    }
    m = int(K / 2)
    printf ".print tran v(n0_0) v(n%d_%d) v(n%d_0) v(n0_%d)\n", m, m, K - 1, K - 1
    print ".tran 50n 5u"
}' >"$WORK/grid.cir"

run_emnet -q grid.cir
ok $rc "220 x 220 RC grid: the transient completes (exit 0)" "exit status $rc" "$err"
cp "$WORK/stdout" "$WORK/two.out"
set -- $(awk 'NR > 1 {
        t = $1; tau = 1e-6; tr = 1e-8
        if (t <= tr) v = (t - tau * (1 - exp(-t / tau))) / tr
        else v = 1 - (tau / tr) * (exp(tr / tau) - 1) * exp(-t / tau)
        for (i = 2; i <= 5; i++) {
            d = $i - v; if (d < 0) d = -d
            if (d >= w) { w = d; wt = t }
            s = $i - $2; if (s < 0) s = -s
            if (s > sp) sp = s
        }
        n++
    }
    END { printf "%d %.3e %s %.3e\n", n, w, wt, sp }' "$WORK/two.out")
awk -v n="$1" -v w="$2" 'BEGIN { exit !(n == 101 && w <= 5e-4) }'
ok $? "220 x 220 RC grid: four nodes at 101 points within 0.5 mV of the RC's ramp response" \
    "rows $1 (want 101), worst $2 V at t = $3"
echo "# worst $2 V at t = $3"
# The transient's factorizations are kept in single precision (emnet(1),
# Integration), whose rounding parts the nodes by some 2e-7 V; a solve in
# a wrong order would part them by the ramp itself.
awk -v s="$4" 'BEGIN { exit !(s <= 1e-6) }'
ok $? "220 x 220 RC grid: corner, centre and edge nodes equal (within 1 uV)" "largest spread $4 V"

# The factorization and solves run in two halves; one core gives the same
# table to the last digit.
EMNET_THREADS=1 run_emnet -q grid.cir
cmp -s "$WORK/stdout" "$WORK/two.out"
ok $? "220 x 220 RC grid: EMNET_THREADS=1 prints the same table" "$(cmp "$WORK/stdout" "$WORK/two.out" 2>&1)"

done_testing
