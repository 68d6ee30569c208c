#!/bin/sh
# random.sh: random RLC circuits through emnet and through ngspice.
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

# Known to fail: 266, whose reference is wrong: its operating point has a
# node that only a capacitor meets, ngspice starts from its
# pseudo-transient's end (0.42 V off the 1 V steady state), and with
# rshunt its run at reltol 1e-6 stops at 5 ns.  Of the first 300
# (RANDOM_DECKS=300) none other fails; 106 and 228 stopped the flux
# formulation (integ.c, kernel_setup) and 138 erred there by 1.6 of an
# inductor's current (the inductors a K couples had no branch test:
# form.c, term_reads) until 2026-11-28.
KNOWN="266:charge 266:flux"
KNOWN_WHY="ngspice's reference does not start from the operating point"

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
        BEGIN { pk["v"] = 1e-6; pk["i"] = 1e-9 }
        NR == FNR { if ($1 !~ /^[-+0-9.]/) next; k = sprintf("%.6e", $1); for (i = 2; i <= NF; i++) R[k, i] = $i
                    for (i = 2; i <= NF; i++) { c = substr(kinds, i - 1, 1); if (abs($i) > pk[c]) pk[c] = abs($i) } next }
        $1 !~ /^[-+0-9.]/ { next }
        { k = sprintf("%.6e", $1); if (!((k, 2) in R)) next; rows++
          for (i = 2; i <= NF; i++) { c = substr(kinds, i - 1, 1); d = abs($i - R[k, i]); if (pk[c] > 0 && d / pk[c] > w) w = d / pk[c] } }
        END { if (rows < 100) print "rows"; else printf "%.3g\n", w }' "$2" "$1"
}

# circuits 1 to N, and beyond N those that found faults
for s in $(awk -v n="$N" -v also="$ALSO" 'BEGIN { for (i = 1; i <= n; i++) print i
                                                  k = split(also, a, " "); for (i = 1; i <= k; i++) if (a[i] > n) print a[i] }'); do
    deck="$WORK/r$s.cir"
    gen "$s" >"$deck"
    sigs=$(awk 'tolower($1) == ".print" { for (i = 3; i <= NF; i++) printf "%s ", $i }' "$deck")
    kinds=$(for x in $sigs; do printf '%s' "${x%%(*}"; done)
    # Where ngspice finds no operating point (a node that only a
    # capacitor meets leaves its matrix singular), it starts from the end
    # of a pseudo-transient, which need not be a steady state: both its
    # runs are then made again with 1e12 ohm from every node to ground
    # (rshunt), and where those fail too (an inductor loop's current
    # stays singular; at reltol 1e-6 a shunted run can stop), the
    # pseudo-transient's start stands.
    opt="reltol=1e-6 abstol=1e-15 vntol=1e-12 chgtol=1e-20"
    shunt=
    ngspice_run "$deck" "$WORK/ref" "$opt" 50n $sigs
    ng=$?
    if [ $ng -eq 2 ]; then
        if ngspice_run "$deck" "$WORK/ref" "$opt rshunt=1e12" 50n $sigs; then
            shunt=rshunt=1e12
        else
            ngspice_run "$deck" "$WORK/ref" "$opt" 50n $sigs
        fi
        ng=0
    fi
    if [ $ng -ne 0 ]; then
        skip "random circuit $s: emnet agrees with ngspice" "ngspice does not run it"
        continue
    fi
    ngspice_run "$deck" "$WORK/def" "$shunt" "" $sigs
    [ $? -ne 1 ] || : >"$WORK/def"
    eng=$(deck_error "$WORK/def" "$WORK/ref" "$kinds")
    case $eng in *[!0-9.e+-]*|'') eng=1 ;; esac
    for form in charge flux; do
        name="random circuit $s, $form"
        run_emnet -q -form $form -tran "$deck"
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
        awk -v e="$e" -v n="$eng" 'BEGIN { exit !(e != "rows" && (e <= 2 * n || (n < 1e-3 && e <= 2e-3))) }'
        st=$?
        why=
        case " $KNOWN " in *" $s:$form "*) why=$KNOWN_WHY ;; esac
        check_or_todo $st "$name: within twice ngspice's own default error of the reference" \
            "$(printf 'error %s of the largest of its kind; ngspice default run: %s\n%s' "$e" "$eng" "$(cat "$deck")")" "$why"
    done
done

done_testing
