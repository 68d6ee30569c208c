#!/bin/sh
# random.sh: random RLC and electromechanical circuits through emnet and
# through ngspice.
#
# RANDOM_DECKS circuits (default 100) of 3 to 7 nodes, drawn by a
# generator of our own (Park and Miller's, so every awk draws the same
# circuits): resistors, capacitors and inductors between random nodes, a
# resistor to ground at most nodes, sometimes a K between two inductors,
# one voltage or current source with a SIN, PULSE, PWL, EXP or DC value,
# from rest (uic) or from the operating point.  Circuits like these found
# the dead ends, the corners met at rest and the drifting flux linkages
# of the notes in form.c and integ.c.
#
# A second family, of linear electromechanical circuits (gen_em: coils
# between a driven network and masses on springs and dampers), runs
# through ngspice as its mobility analogue (to_spice), step capped at
# 2.5 us; its velocities are a kind of their own.
#
# Each runs through ngspice at reltol 1e-6 (its step capped at 50 ns):
# the reference.  emnet runs it in both formulations at its default
# tolerances and must exit 0, or reject the netlist (exit 1) or find no
# operating point (exit 3, "no steady state"), both of which the netlist
# language makes errors; each such case is a SKIP with emnet's message.
# Its error is measured as ngspice's own default run's is: the largest
# difference from the reference over the printed node voltages and
# inductor currents, each kind against the largest magnitude of its kind
# in the reference.  emnet's may be no more than twice ngspice's, or
# 2e-3 where ngspice's is smaller than 1e-3.
# Skipped when ngspice is not installed.

. "$(dirname "$0")/lib.sh"

N=${RANDOM_DECKS:-100}
# Circuits past the first N that found faults, run always (RANDOM_ALSO
# sets others): 106 and 228 (flux: stopped), 138 (flux: an inductor
# coupled by K untested), 150, 151 and 214 (inductors that carry no
# current: the measure's floor)
ALSO=${RANDOM_ALSO-"106 138 150 151 214 228"}
# The electromechanical family: RANDOM_EM_DECKS circuits (default 60),
# and past them RANDOM_EM_ALSO (default 147 and 187, which stopped the
# charge formulation, as 31 and 46 did both, and 39 took 10^6 steps a
# millisecond, until 2ffe5fc and 2e3570b; 1 was 0.32 off until 39ef509;
# 193, a mass-less coil, whose decay 2ffe5fc left untested; 216, 355,
# 440, 467 and 605, below)
NEM=${RANDOM_EM_DECKS:-60}
ALSO_EM=${RANDOM_EM_ALSO-"147 187 193 216 355 440 467 605"}

# Known to fail: 266, whose reference is wrong: its operating point has a
# node that only a capacitor meets, ngspice starts from its
# pseudo-transient's end (0.42 V off the 1 V steady state), and with
# rshunt its run at reltol 1e-6 stops at 5 ns.  Of the first 300
# (RANDOM_DECKS=300) none other fails; 106 and 228 stopped the flux
# formulation (integ.c, kernel_setup) and 138 erred there by 1.6 of an
# inductor's current (the inductors a K couples had no branch test:
# form.c, term_reads) until 2026-11-28.
# Electromechanical circuit 23 (a mass-less coil whose loop has no
# inductance, at its operating point) had its velocity 3.6e-6 m/s off 0
# from the consistent start and alternating by 1.1e-6 m/s (charge), or
# 2.6e-7 m/s off (flux), until 2026-11-28 (integ.c,
# const_momentum_history and direct_rates_residual).
# Of electromechanical circuits 201-800, 216 (flux) took a mass moving at
# 5e-5 m/s for its operating point until 2026-11-28 (op.c, the stall
# rule); 355, 440 and 467 (flux), where no current or velocity should
# flow at all (coil loops with no net drive), showed 1e-11 to 2e-10 m/s,
# the start's residual at a resistive node alternating in its
# trapezoidal history, until 2026-11-28 (integ.c, emn_integ_start's
# kzero, still_followers).  605 (flux) is known: an LC tank between a
# PWL source's node and one it alone meets, which nothing drives, rings
# at 6e-12 A (the charge formulation gives 0): the consistent start's
# velocities are those at 1e-9 hmax past t = 0, and the source's slope
# over that step is the tank's voltage.
KNOWN="266:charge 266:flux e605:flux"
KNOWN_WHY="ngspice's reference does not start from the operating point (266), or known (e605)"
# Electromechanical circuits run again at a tighter reltol
# (RANDOM_EM_TIGHT: SEED at 1e-5, or SEED@RELTOL), against bounds scaled
# from the default run's by it (one_deck): 13, 25 and 31 stopped the charge
# formulation at 1e-5 (13 at 1e-4 too) until 2026-11-28, the error test
# taking the rounding of a large momentum (a coil's T x, or an
# inductor's flux shared with a coil's loop) for the error of a small
# velocity (integ.c, rounding_setup); 25 and 31 also at 1e-6, where a
# combination of loops that no coil's T x reaches alternated, undamped
# (integ.c, free_nulls).
TIGHT_EM=${RANDOM_EM_TIGHT-"13 25 31 25@1e-6 31@1e-6"}

if ! command -v ngspice >/dev/null 2>&1; then
    skip "random circuits: emnet agrees with ngspice" "ngspice not installed"
    done_testing
    exit
fi

# gen SEED: one circuit on standard output
gen() {
    awk -v seed="$1" -v title="$1" '
    function rnd() { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
    function pick(list,   n, a) { n = split(list, a, " "); return a[int(rnd() * n) + 1] }
    BEGIN {
        seed = seed * 7919 % 2147483647 + 1
        for (i = 0; i < 3; i++) rnd()
        nn = 3 + int(rnd() * 5)
        print "random circuit " title
        src = pick("V I")
        fn = pick("SIN PULSE PWL EXP DC SIN PULSE")
        amp = src == "I" ? pick("1 1m") : "1"
        if (fn == "SIN") f = "SIN(" pick("0 0.5") " " amp " " pick("1k 3k 10k") ")"
        else if (fn == "PULSE") f = "PULSE(0 " amp " 0.1m " pick("1u 10u 50u") " " pick("1u 10u 50u") " 0.3m 1m)"
        else if (fn == "PWL") f = "PWL(0 0 0.2m " amp " 0.5m -0.5 1m 0)"
        else if (fn == "EXP") f = "EXP(0 " amp " 0.1m 0.2m 1m 0.3m)"
        else f = "DC " amp
        print src "1 n1 0 " f
        ne = nn + int(rnd() * (nn + 2))
        nind = 0
        for (e = 0; e < ne; e++) {
            a = int(rnd() * (nn + 1)); b = int(rnd() * nn); if (b >= a) b++
            na = a ? "n" a : "0"; nb = b ? "n" b : "0"
            t = pick("R R C C L")
            across = (na == "n1" && nb == "0") || (na == "0" && nb == "n1")
            if (across && ((src == "V" && t == "C") || (src == "I" && t == "L"))) t = "R"
            if (t == "R") v = pick("1 10 100 1k 10k")
            else if (t == "C") v = pick("1n 10n 100n 1u")
            else v = pick("10u 100u 1m 10m")
            print t e " " na " " nb " " v
            used[na] = used[nb] = 1
            if (t == "L") ind[++nind] = "L" e
        }
        for (i = 1; i <= nn; i++)
            if (rnd() < 0.6 || !(("n" i) in used)) print "Rg" i " n" i " 0 " pick("1k 10k 100k")
        if (nind >= 2 && rnd() < 0.3) {
            a = 1 + int(rnd() * nind); b = 1 + int(rnd() * (nind - 1)); if (b >= a) b++
            print "K1 " ind[a] " " ind[b] " " pick("0.5 0.9 0.99")
        }
        print ".tran 10u 2m" (rnd() < 0.7 ? " uic" : "")
        printf ".print tran"
        for (i = 1; i <= nn; i++) printf " v(n%d)", i
        for (i = 1; i <= nind; i++) printf " i(%s)", tolower(ind[i])
        print ""
        print ".end"
    }'
}

# gen_em SEED: one linear electromechanical circuit on standard output:
# 2 to 4 electrical nodes driven by a voltage source, 1 to 3 mechanical
# nodes with masses (most), springs and dampers, sometimes a force on
# the first, and one or two moving coils, each behind its own
# resistance, between them
gen_em() {
    awk -v seed="$1" -v title="$1" '
    function rnd() { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
    function pick(list,   n, a) { n = split(list, a, " "); return a[int(rnd() * n) + 1] }
    function enode(z) { k = int(rnd() * (ne + z)); return k >= ne ? "0" : "n" (k + 1) }
    function mnode(z) { k = int(rnd() * (nm + z)); return k >= nm ? "0" : "m" (k + 1) }
    BEGIN {
        seed = seed * 7919 % 2147483647 + 1
        for (i = 0; i < 3; i++) rnd()
        ne = 2 + int(rnd() * 3); nm = 1 + int(rnd() * 3)
        print "random electromechanical circuit " title
        fn = pick("SIN PULSE PWL DC SIN")
        if (fn == "SIN") f = "SIN(0 " pick("1 10") " " pick("20 50 100 200") ")"
        else if (fn == "PULSE") f = "PULSE(0 " pick("1 10") " 2m " pick("10u 1m") " " pick("10u 1m") " 10m 30m)"
        else if (fn == "PWL") f = "PWL(0 0 5m 1 20m -1 30m 0)"
        else f = "DC " pick("1 5")
        print "V1 n1 0 " f
        if (rnd() < 0.3) { k = int(rnd() * 3)
            print "F1 m1 0 " (k == 0 ? "SIN(0 1 30)" : k == 1 ? "PULSE(0 1 5m 1m 1m 10m 40m)" : "DC 0.5") }
        nt = 1 + int(rnd() * 2)
        for (t = 1; t <= nt; t++) {
            ea = "n" (1 + int(rnd() * ne)); eb = enode(1); if (eb == ea) eb = "0"
            ma = "m" (1 + int(rnd() * nm)); mb = mnode(2); if (mb == ma) mb = "0"
            print "Rc" t " " ea " c" t " " pick("1 4 8")
            print "T" t " c" t " " eb " " ma " " mb " " pick("0.5 2 5 10")
        }
        nb = ne + int(rnd() * ne)
        nind = 0
        for (e = 0; e < nb; e++) {
            a = "n" (1 + int(rnd() * ne)); b = enode(1); if (b == a) b = "0"
            tp = pick("R R L C")
            if (a == "n1" && b == "0" && tp != "R") tp = "R"
            if (tp == "R") v = pick("1 4 10 100")
            else if (tp == "L") v = pick("1m 3m 10m")
            else v = pick("10u 100u 1m")
            print tp e " " a " " b " " v
            if (tp == "L") ind[++nind] = "L" e
            used[a] = used[b] = 1
        }
        for (i = 1; i <= ne; i++) if (rnd() < 0.5 || !(("n" i) in used)) print "Rg" i " n" i " 0 " pick("100 1k 10k")
        for (i = 1; i <= nm; i++) {
            if (rnd() < 0.85) print "M" i " m" i " " pick("0.01 0.05 0.2 1")
            b = mnode(2); if (b == "m" i) b = "0"
            print "S" i " m" i " " b " " pick("100 1k 1e4")
            b = mnode(2); if (b == "m" i) b = "0"
            if (rnd() < 0.7) print "D" i " m" i " " b " " pick("0.1 1 10")
        }
        if (nm >= 2 && rnd() < 0.5) print "S9 m1 m2 " pick("100 1k")
        print ".tran 50u 50m" (rnd() < 0.7 ? " uic" : "")
        printf ".print tran"
        for (i = 1; i <= ne; i++) printf " v(n%d)", i
        for (i = 1; i <= nm; i++) printf " v(m%d)", i
        for (i = 1; i <= nind; i++) printf " i(%s)", tolower(ind[i])
        print ""
        print ".end"
    }'
}

# to_spice: an electromechanical netlist (standard input) as its mobility
# analogue, velocity as voltage and force as current: a mass as a
# capacitor to ground, a spring of stiffness k as an inductor of 1/k, a
# damper b as a resistor of 1/b, a force as a current source into its
# first node, and a coil of constant T as a VCVS of T times the velocity
# difference, a 0 V source sensing its current i, and a CCCS of T i
# into its first mechanical node.  The mechanical nodes keep their
# names, so v(m) is the velocity in both.
to_spice() {
    awk 'NR == 1 { print; next }
         { t = toupper(substr($1, 1, 1)); nm = tolower($1) }
         t == "M" { print "C_" nm, $2, 0, $3; next }
         t == "S" { print "L_" nm, $2, $3, "{1/" $4 "}"; next }
         t == "D" { print "R_" nm, $2, $3, "{1/" $4 "}"; next }
         t == "F" { src = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ */, "", src); print "I_" nm, $3, $2, src; next }
         t == "T" { print "E_" nm, $2, "x_" nm, $4, $5, $6; print "V_" nm, "x_" nm, $3, 0
                    print "F_" nm, $5, $4, "V_" nm, $6; next }
         { print }'
}

# ngspice DECK OUT EXTRA-OPTIONS TMAX SIGNALS: ngspice's result as a table
# (status 1: none; 2: one that does not start from an operating point)
ngspice_run() {
    local deck=$1 out=$2 opt=$3 tmax=$4
    shift 4
    rm -f "$out.dat" "$out"
    awk -v opt="$opt" -v tmax="$tmax" -v dat="$out.dat" -v sigs="$*" '
        tolower($1) == ".print" || tolower($1) == ".end" { next }
        tolower($1) == ".tran" && tmax != "" { print $1, $2, $3, 0, tmax, (tolower($NF) == "uic" ? "uic" : ""); next }
        { print }
        END { if (opt != "") print ".options " opt
              print ".control"; print "run"; print "linearize"; print "set wr_singlescale"
              print "set numdgt=12"; print "wrdata " dat " " sigs; print ".endc"; print ".end" }' "$deck" >"$out.sp"
    (cd "$WORK" && ulimit -v 4000000 2>/dev/null; timeout 120 ngspice -b "$out.sp" >"$out.log" 2>&1)
    # (a run that stops still writes its vectors, zero past the stop)
    [ -s "$out.dat" ] && ! grep -q "simulation(s) aborted" "$out.log" || return 1
    awk '{ $1 = $1; print }' "$out.dat" >"$out"
    # 2: its operating point failed, and it started from the end of a
    # pseudo-transient, which need not be a steady state
    ! grep -q "Transient op started" "$out.log" || return 2
}

# deck_error GOT REF KINDS: the largest difference over the rows both have (by
# time), each column against the largest magnitude in REF of its kind
# (KINDS: one letter per column after time, v or i), or a millionth of
# the smallest drive where that is smaller: 1 uV (vntol) for voltages,
# 1 nA for currents.  Below that a signal is zero to the measure: an
# inductor that carries no current (a tank that nothing excites) shows in
# the flux formulation the rounding of the difference of two flux
# linkages of some mWb, 1e-14 A and more, and in ngspice 1e-17 A.
deck_error() {
    awk -v kinds="$3" '
        function abs(x) { x += 0; return x < 0 ? -x : x }
        BEGIN { pk["v"] = 1e-6; pk["i"] = 1e-9; pk["u"] = 1e-9 }
        NR == FNR { if ($1 !~ /^[-+0-9.]/) next; k = sprintf("%.6e", $1); for (i = 2; i <= NF; i++) R[k, i] = $i
                    for (i = 2; i <= NF; i++) { c = substr(kinds, i - 1, 1); if (abs($i) > pk[c]) pk[c] = abs($i) } next }
        $1 !~ /^[-+0-9.]/ { next }
        { k = sprintf("%.6e", $1); if (!((k, 2) in R)) next; rows++
          for (i = 2; i <= NF; i++) { c = substr(kinds, i - 1, 1); d = abs($i - R[k, i]); if (pk[c] > 0 && d / pk[c] > w) w = d / pk[c] } }
        END { if (rows < 100) print "rows"; else printf "%.3g\n", w }' "$2" "$1"
}

# one_deck LABEL KEY DECK SPICE TMAX KINDS [STRICT [RELTOL]]: DECK through
# emnet in both formulations, against SPICE (DECK itself, or its
# analogue) through ngspice with its step capped at TMAX; KINDS one
# letter per printed signal (v, i, or u for a mechanical velocity); KEY
# names it in KNOWN.  STRICT: no reference from a pseudo-transient
# (below).  RELTOL: emnet runs at that reltol, and its bounds shrink with
# it from the default's 1e-3, down to 1e-5's (the reference's own error
# is not far below).
one_deck() {
    local label=$1 key=$2 deck=$3 spice=$4 tmax=$5 kinds=$6 strict=${7:-} rt=${8:-} sigs opt shunt ng eng form name e st why
    local scale=1
    [ -z "$rt" ] || scale=$(awk -v r="$rt" 'BEGIN { print (r > 1e-5 ? r : 1e-5) / 1e-3 }')
    sigs=$(awk 'tolower($1) == ".print" { for (i = 3; i <= NF; i++) printf "%s ", $i }' "$deck")
    # Where ngspice finds no operating point (a node that only a
    # capacitor meets leaves its matrix singular), it starts from the end
    # of a pseudo-transient, which need not be a steady state: both its
    # runs are then made again with 1e12 ohm from every node to ground
    # (rshunt), and where those fail too (an inductor loop's current
    # stays singular; at reltol 1e-6 a shunted run can stop), the
    # pseudo-transient's start stands, or with STRICT there is no
    # reference (the mobility analogue of springs that close a loop, or
    # of a free mass under a DC force, is such a loop).
    opt="reltol=1e-6 abstol=1e-15 vntol=1e-12 chgtol=1e-20"
    shunt=
    ngspice_run "$spice" "$WORK/ref" "$opt" "$tmax" $sigs
    ng=$?
    if [ $ng -eq 2 ]; then
        if ngspice_run "$spice" "$WORK/ref" "$opt rshunt=1e12" "$tmax" $sigs; then
            shunt=rshunt=1e12
            ng=0
        elif [ -z "$strict" ]; then
            ngspice_run "$spice" "$WORK/ref" "$opt" "$tmax" $sigs
            ng=0
        fi
    fi
    if [ $ng -ne 0 ]; then
        skip "$label: emnet agrees with ngspice" "ngspice $([ $ng -eq 2 ] && echo "finds no operating point" || echo "does not run it")"
        return
    fi
    ngspice_run "$spice" "$WORK/def" "$shunt" "" $sigs
    [ $? -ne 1 ] || : >"$WORK/def"
    eng=$(deck_error "$WORK/def" "$WORK/ref" "$kinds")
    case $eng in *[!0-9.e+-]*|'') eng=1 ;; esac
    for form in charge flux; do
        name="$label, $form"
        run_emnet -q ${rt:+-reltol $rt} -form $form -tran "$deck"
        if [ $rc -eq 1 ] || { [ $rc -eq 3 ] && printf '%s' "$err" | grep -q "no steady state"; }; then
            skip "$name: emnet agrees with ngspice" "$(printf '%s' "$err" | grep -m1 error: | sed 's/.*error: //')"
            continue
        fi
        if [ $rc -ne 0 ]; then
            ok 1 "$name: emnet runs (exit 0)" "exit status $rc" "$err" "$(cat "$deck")"
            continue
        fi
        printf '%s\n' "$out" >"$WORK/em"
        e=$(deck_error "$WORK/em" "$WORK/ref" "$kinds")
        awk -v e="$e" -v n="$eng" -v k="$scale" 'BEGIN { exit !(e != "rows" && (e <= 2 * k * n || (n < 1e-3 && e <= 2e-3 * k))) }'
        st=$?
        why=
        case " $KNOWN " in *" $key:$form "*) why=$KNOWN_WHY ;; esac
        check_or_todo $st "$name: within twice ngspice's own default error of the reference${rt:+, times $scale}" \
            "$(printf 'error %s of the largest of its kind; ngspice default run: %s\n%s' "$e" "$eng" "$(cat "$deck")")" "$why"
    done
}

# seeds COUNT EXTRA: 1 to COUNT, then those of EXTRA past COUNT
seeds() {
    awk -v n="$1" -v also="$2" 'BEGIN { for (i = 1; i <= n; i++) print i
                                        k = split(also, a, " "); for (i = 1; i <= k; i++) if (a[i] > n) print a[i] }'
}

for s in $(seeds "$N" "$ALSO"); do
    gen "$s" >"$WORK/r$s.cir"
    kinds=$(awk 'tolower($1) == ".print" { for (i = 3; i <= NF; i++) printf "%s", substr($i, 1, 1) }' "$WORK/r$s.cir")
    one_deck "random circuit $s" "$s" "$WORK/r$s.cir" "$WORK/r$s.cir" 50n "$kinds"
done

for s in $(seeds "$NEM" "$ALSO_EM"); do
    gen_em "$s" >"$WORK/e$s.cir"
    to_spice <"$WORK/e$s.cir" >"$WORK/e$s.sp"
    kinds=$(awk 'tolower($1) == ".print" { for (i = 3; i <= NF; i++) printf "%s", $i ~ /^v\(m/ ? "u" : substr($i, 1, 1) }' "$WORK/e$s.cir")
    one_deck "random electromechanical circuit $s" "e$s" "$WORK/e$s.cir" "$WORK/e$s.sp" 2.5u "$kinds" strict
done

for t in $TIGHT_EM; do
    s=${t%@*}
    r=1e-5
    [ "$s" = "$t" ] || r=${t#*@}
    gen_em "$s" >"$WORK/e$s.cir"
    to_spice <"$WORK/e$s.cir" >"$WORK/e$s.sp"
    kinds=$(awk 'tolower($1) == ".print" { for (i = 3; i <= NF; i++) printf "%s", $i ~ /^v\(m/ ? "u" : substr($i, 1, 1) }' "$WORK/e$s.cir")
    one_deck "random electromechanical circuit $s at reltol $r" "e$s" "$WORK/e$s.cir" "$WORK/e$s.sp" 2.5u "$kinds" strict "$r"
done

done_testing
