#!/bin/sh
# duals.sh: branch currents, voltages and energies that come from the
# branch duals, each printed alone and all together, in both
# formulations, against the closed form.  A run forms only the duals its
# signals read (sim.c, dual_arrays): the current of a voltage source is
# summed from the subtree it feeds (flux), a node voltage along the tree
# (charge); a signal that a plan left out of its reach reads a stale or
# zero slot, and misses the closed form.
#
# V1 ramps node a at k = 2000 V/s from 0; V2 holds b one volt above a;
# R2 = 2k loads a; R1 = 1k charges C1 = 1u from b, which the operating
# point leaves at 1 V.  With tau = R1 C1 = 1 ms:
#   v(c)  = 1 + k (t - tau (1 - e^(-t/tau)))
#   i(R1) = C1 k (1 - e^(-t/tau))        i(R2) = k t / R2
#   i(V2) = -i(R1)                       i(V1) = -(i(R1) + i(R2))
#   w(R2) = k^2 t^3 / (3 R2)             (energy dissipated since 0)
. "$(dirname "$0")/lib.sh"

sigs='i(v1) i(v2) i(r1) v(c) w(r2) i(r2)'
deck() {        # deck SIGNAL...: the circuit printing SIGNAL...
    cat <<EOF
duals: a source chain feeding an RC and a load
V1 a 0 PWL(0 0 1m 2)
V2 b a 1
R2 a 0 2k
R1 b c 1k
C1 c 0 1u
.tran 10u 1m
.print tran $*
.end
EOF
}

exact() {       # exact FILE: the closed form at FILE's times, columns as sigs
    awk 'NR == 1 { print "time i(v1) i(v2) i(r1) v(c) w(r2) i(r2)"; next }
        { t = $1; k = 2000; tau = 1e-3; e = exp(-t / tau)
          ir1 = 1e-6 * k * (1 - e); ir2 = k * t / 2000
          printf "%.9e %.9e %.9e %.9e %.9e %.9e %.9e\n", t, -(ir1 + ir2), -ir1, ir1,
                 1 + k * (t - tau * (1 - e)), k * k * t^3 / 6000, ir2 }' "$1"
}

for form in charge flux; do
    deck "$sigs" >"$WORK/all.cir"
    run_emnet -q -tran -form $form all.cir
    ok $rc "$form: all six signals (exit 0)" "exit status $rc" "$err"
    cp "$WORK/stdout" "$WORK/all.out"
    exact "$WORK/all.out" >"$WORK/exact.out"
    check_table "$WORK/all.out" "$WORK/exact.out" 1e-4 1e-12 "$form: all six signals match the closed form"
    for s in $sigs; do
        deck "$s" >"$WORK/one.cir"
        run_emnet -q -tran -form $form one.cir
        ok $rc "$form: $s alone (exit 0)" "exit status $rc" "$err"
        select_cols "$WORK/exact.out" "$s" >"$WORK/want.out"
        check_table "$WORK/stdout" "$WORK/want.out" 1e-4 1e-12 "$form: $s alone matches the closed form"
    done
done

# Elements whose state a source alone sets: an inductor across a voltage
# source has no coordinate of its own in the flux formulation (its flux
# is the source's integral), nor has a capacitor in series with a
# current source in the charge one (its charge is the source's).  Both
# must read that integral, in the formulation that has no coordinate and
# in the other.
#   V1 = 1 V across L1 = 1 mH || R1 = 1 ohm, from rest:
#     i(L1) = t / L1, phi(L1) = t, w(L1) = t^2 / (2 L1), i(V1) = -(1 + t / L1)
#   I1 = 1 mA into C1 = 1 uF through R3 = 1k, from rest:
#     v(d) = I1 t / C1, v(c) = v(d) + I1 R3, q(C1) = I1 t, w(C1) = q v(d) / 2
cat >"$WORK/fixed.cir" <<EOF
source-fixed inductor and capacitor
V1 a 0 1
L1 a 0 1m
R1 a 0 1
I1 0 c 1m
R3 c d 1k
C1 d 0 1u
.tran 0.1m 2m uic
.print tran i(l1) phi(l1) w(l1) i(v1) v(c) v(d) q(c1) w(c1)
.end
EOF
for form in charge flux; do
    run_emnet -q -tran -form $form fixed.cir
    ok $rc "$form: source-fixed L and C (exit 0)" "exit status $rc" "$err"
    awk 'NR == 1 { print; next }
        { t = $1; q = 1e-3 * t; vd = q / 1e-6
          printf "%.9e %.9e %.9e %.9e %.9e %.9e %.9e %.9e %.9e\n", t, t / 1e-3, t, t * t / 2e-3,
                 -(1 + t / 1e-3), vd + 1, vd, q, q * vd / 2 }' "$WORK/stdout" >"$WORK/want.out"
    check_table "$WORK/stdout" "$WORK/want.out" 1e-6 1e-12 "$form: source-fixed L and C match the closed form"
done

# Rates at the start, where the first step (10 us/8, accepted untested)
# is far longer than the fastest time constant.  I1 ramps at k = 5000
# A/s into L1 = 100u, which C1 = 1u and R1 = 10k in series shunt
# (L/R = 10 ns): v(a) = L di(L1)/dt is a rate of a dual in the charge
# formulation.  V2 ramps at 1000 V/s into R2 = 1k and C2 = 1n (1 us):
# i(C2) is one in the flux formulation.  From rest (uic) every signal is
# 0 at t = 0; then, with s1, s2 the roots of L C s^2 + R C s + 1,
#   v(a) = k L (1 + r1 e^(s1 t) + r2 e^(s2 t)),
#     r_i = (s_i R C + 1) / (L C s_i (s_i - s_j))
#   i(L1) = k (t + r1 (e^(s1 t) - 1) / s1 + r2 (e^(s2 t) - 1) / s2)
#   i(C2) = C2 k2 (1 - e^(-t/tau)),  v(c) = k2 (t - tau (1 - e^(-t/tau)))
# The row of t = 0 took its rates from a parabola through the first
# points: v(a) came out 0.16 V (charge), i(C2) 1.9 nA (flux).
cat >"$WORK/rates0.cir" <<EOF
rates at the start
I1 0 a PWL(0 0 1m 5)
L1 a 0 100u
C1 a m 1u
R1 m 0 10k
V2 b 0 PWL(0 0 1m 1)
R2 b c 1k
C2 c 0 1n
.tran 10u 1m uic
.print tran v(a) i(l1) i(c2) v(c)
.end
EOF
for form in charge flux; do
    run_emnet -q -tran -form $form rates0.cir
    ok $rc "$form: rates at the start (exit 0)" "exit status $rc" "$err"
    awk 'NR == 1 { print; next }
        { t = $1; k = 5000; L = 1e-4; C = 1e-6; R = 1e4
          d = sqrt((R / L)^2 - 4 / (L * C)); s1 = (-R / L - d) / 2; s2 = (-R / L + d) / 2
          r1 = (s1 * R * C + 1) / (L * C * s1 * (s1 - s2)); r2 = (s2 * R * C + 1) / (L * C * s2 * (s2 - s1))
          e = exp(-t / 1e-6)
          printf "%.9e %.9e %.9e %.9e %.9e\n", t, k * L * (1 + r1 * exp(s1 * t) + r2 * exp(s2 * t)),
                 k * (t + r1 * (exp(s1 * t) - 1) / s1 + r2 * (exp(s2 * t) - 1) / s2),
                 1e-6 * (1 - e), 1000 * (t - 1e-6 * (1 - e)) }' "$WORK/stdout" >"$WORK/want.out"
    check_table "$WORK/stdout" "$WORK/want.out" 2e-3 1e-12 "$form: rates at the start match the closed form"
    msg=$(awk 'NR == 1 { next } NR == 2 { for (i = 2; i <= NF; i++) { z[i] = $i + 0; if (z[i] < 0) z[i] = -z[i] } next }
        { for (i = 2; i <= NF; i++) { a = $i + 0; a = a < 0 ? -a : a; if (a > pk[i]) pk[i] = a } }
        END { for (i in z) if (z[i] > 1e-5 * pk[i]) { print "column " i " is " z[i] " at t = 0"; bad = 1 }
              exit bad }' "$WORK/stdout")
    ok $? "$form: every signal 0 at t = 0 from rest" "$msg"
done

done_testing
