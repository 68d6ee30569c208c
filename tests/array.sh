#!/bin/sh
# array.sh: an array of electrostatic actuators large enough that its
# evaluations run in two halves (the linear part is over 50,000 entries,
# form.c's split_rows), nonlinear C(x) batches included, against the
# static deflection each plate must settle to.
#
# 10,000 plates of 200 um square over a 2 um gap, C(x) = eps0 A/(g0 - x),
# each on its own spring k (0.9 to 1.1 times 5 N/m, by fives), damped
# near critically, charged through 1 Mohm from one source ramped to 0.6 of
# the pull-in voltage of 5 N/m.  At rest the spring holds the
# electrostatic force:  k x = eps0 A V^2 / (2 (g0 - x)^2),  solved here by
# bisection below g0/3 (the stable branch).  A batch evaluated with the
# wrong plate's locals, or added to the wrong coordinate, settles
# elsewhere.
. "$(dirname "$0")/lib.sh"

N=10000
consts='eps0 = 8.854e-12; area = 200e-6 * 200e-6; g0 = 2e-6; km = 5
    vpi = sqrt(8 * km * g0^3 / (27 * eps0 * area)); v = 0.6 * vpi'
awk -v N=$N "BEGIN { $consts"'
    printf "array of %d electrostatic actuators\n", N
    printf "Vd in 0 PWL(0 0 2u %.9g)\n", v
    for (i = 1; i <= N; i++) {
        k = km * (0.9 + 0.05 * ((i - 1) % 5))
        printf "Rs%d in t%d 1meg\n", i, i
        printf "C%d t%d 0 C=%c%.9g/(%.9g - x(p%d))%c\n", i, i, 39, eps0 * area, g0, i, 39
        printf "Mp%d p%d 1.864e-10\nSp%d p%d 0 %.9g\nDp%d p%d 0 6.1e-5\n", i, i, i, i, k, i, i
    }
    printf ".print tran x(p1) x(p2) x(p3) x(p4) x(p5) x(p%d)\n", N
    print ".tran 5u 150u"
}' >"$WORK/array.cir"

run_emnet -q array.cir
ok $rc "$N actuators: the transient completes (exit 0)" "exit status $rc" "$err"
cp "$WORK/stdout" "$WORK/two.out"
set -- $(awk "BEGIN { $consts }"'
    END {
        for (c = 2; c <= 7; c++) {
            i = c < 7 ? c - 1 : N
            k = km * (0.9 + 0.05 * ((i - 1) % 5))
            lo = 0; hi = g0 / 3
            for (it = 0; it < 200; it++) {
                x = (lo + hi) / 2
                if (k * x < eps0 * area * v * v / (2 * (g0 - x)^2)) lo = x; else hi = x
            }
            d = ($c - x) / x; if (d < 0) d = -d
            if (d >= w) { w = d; wi = i }
        }
        printf "%d %.3e %d\n", NR, w, wi
    }' N=$N "$WORK/two.out")
awk -v n="$1" -v w="$2" 'BEGIN { exit !(n == 32 && w <= 1e-4) }'
ok $? "$N actuators: six plates settle on their static deflections (1e-4)" \
    "rows $1 (want 32), worst $2 of the deflection, plate $3"
echo "# worst $2 of the deflection, plate $3"

# The halves' results are added in one order; one core gives the same
# table to the last digit.
EMNET_THREADS=1 run_emnet -q array.cir
cmp -s "$WORK/stdout" "$WORK/two.out"
ok $? "$N actuators: EMNET_THREADS=1 prints the same table" "$(cmp "$WORK/stdout" "$WORK/two.out" 2>&1)"

done_testing
