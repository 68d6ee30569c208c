# validate.sh: the electromechanical validation suite (issue 6).
#
# Every example netlist in netlists/ is run in both formulations and each
# printed signal is compared with a reference that does not come from emnet:
# tests/reference/<name>.tbl, written by tests/reference/gen.py from
# equations derived independently and integrated with SciPy's Radau at
# rtol 1e-10 (or from the exact solution, for the linear loudspeaker).  A
# signal passes when it stays within 1e-3 of its peak everywhere, at
# reltol 1e-6.  The loudspeaker is also compared with ngspice running the
# impedance-analogy circuit, and the MEMS actuator above pull-in must stop
# with exit status 3, name the capacitor and the time, and keep its rows.
# See netlists/VALIDATION.md for the systems and their derivations.

. "$(dirname "$0")/lib.sh"

NETS="$top_srcdir/netlists"
REF="$TESTS_DIR/reference"
RELTOL=1e-3         # of each column's peak
ABSTOL=1e-30        # every column has a nonzero peak; this only guards 0/0

# check_times GOT WANT NAME: the time columns agree to print precision
# (check_table's own tolerance on time is absolute and too loose for the
# microsecond grids of the MEMS cases).
check_times() {
    local msg
    msg=$(awk 'NR == FNR { if (FNR > 1) T[FNR] = $1; next }
        FNR > 1 && (FNR in T) { d = $1 - T[FNR]; if (d < 0) d = -d; a = T[FNR] < 0 ? -T[FNR] : T[FNR]
                                if (d > 1e-8 * a + 1e-300) { print "row " FNR ": time " $1 ", want " T[FNR]; bad = 1; exit 1 } }
        END { if (FNR < 2) { print "no rows"; bad = 1 } exit bad }' "$2" "$1" 2>&1)
    ok $? "$3" "$msg"
}


# ---------------------------------------------------------------- systems that run to tstop
for sys in speaker mems yoke crank lagrange_maxwell solenoid; do
    for form in charge flux; do
        run_emnet -q -form $form -reltol 1e-6 -tran "$NETS/$sys.cir"
        cp "$WORK/stdout" "$WORK/$sys.$form.tbl"
        ok $rc "$sys $form: runs to tstop (exit 0)" "exit status $rc" "$err"
        check_table "$WORK/$sys.$form.tbl" "$REF/$sys.tbl" $RELTOL $ABSTOL \
            "$sys $form: every signal within 1e-3 of its peak of the reference"
        check_times "$WORK/$sys.$form.tbl" "$REF/$sys.tbl" "$sys $form: output times"
    done
    run_emnet -q -compare -reltol 1e-6 -tran "$NETS/$sys.cir"
    ok $rc "$sys: -compare finds the formulations in agreement (exit 0)" "exit status $rc" "$out" "$err"
done

# ---------------------------------------------------------------- MEMS static equilibrium
# Below pull-in the plate must settle on the smaller root of
# k x = eps A V^2 / (2 (g0 - x)^2), computed analytically by gen.py.
xs=$(awk '$1 == "x(plate)" { print $2 }' "$REF/mems.static")
for form in charge flux; do
    msg=$(select_cols "$WORK/mems.$form.tbl" "x(plate)" |
          awk -v xs="$xs" 'END { d = $2 - xs; if (d < 0) d = -d
                                 if (NR < 2 || $2 == "nan" || d > 1e-3 * xs) { print "x(plate) at tstop " $2 ", static root " xs; exit 1 } }')
    ok $? "mems $form: plate settles on the analytic static deflection (1e-3)" "$msg"
done

# ---------------------------------------------------------------- MEMS pull-in
# Above pull-in the gap closes at t_pi (reference: the event where x reaches
# g0).  emnet must stop with exit 3, name Cact and a time within the window
# around t_pi, and keep the rows computed before; those rows must match the
# reference's rows, which end at t_pi.
set -- $(awk '!/^#/ { print $1, $2 }' "$REF/mems_pullin.window")
tlo=$1 thi=$2
nref=$(($(wc -l <"$REF/mems_pullin.tbl") - 1))
for form in charge flux; do
    run_emnet -q -form $form -reltol 1e-6 -tran "$NETS/mems_pullin.cir"
    ok $([ $rc -eq 3 ]; echo $?) "mems_pullin $form: pull-in stops the run with exit 3" "exit status $rc" "$err"
    # the message names the capacitor and gives a time inside the window
    # (a plain number, or one with a SPICE scale suffix: 24.6u, 24.6us)
    msg=$(printf '%s\n' "$err" | awk -v lo="$tlo" -v hi="$thi" '
        BEGIN { S["f"] = 1e-15; S["p"] = 1e-12; S["n"] = 1e-9; S["u"] = 1e-6; S["m"] = 1e-3 }
        tolower($0) ~ /cact/ { named = 1; s = $0
            while (match(s, /[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?[fpnum]?/)) {
                tok = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
                sc = 1; c = substr(tok, length(tok)); if (c in S) { sc = S[c]; tok = substr(tok, 1, length(tok) - 1) }
                v = tok * sc; if (v >= lo && v <= hi) found = 1 } }
        END { if (!named) { print "no line of standard error names cact"; exit 1 }
              if (!found) { print "no time in [" lo ", " hi "] on the line naming cact"; exit 1 } }')
    ok $? "mems_pullin $form: the error names Cact and the time the gap closes" "$msg" "$err"
    # rows written before the failure: all output points up to the closing
    # (give or take the last steps before contact), none lost
    ngot=$(($(wc -l <"$WORK/stdout") - 1))
    [ $ngot -lt 0 ] && ngot=0
    ok $([ $ngot -ge $((nref - 3)) ] && [ $ngot -le $((nref + 1)) ]; echo $?) \
        "mems_pullin $form: rows up to the failure are kept" "got $ngot rows, the gap closes after row $nref"
    ncmp=$ngot
    [ $ncmp -gt $nref ] && ncmp=$nref
    head -n $((ncmp + 1)) "$WORK/stdout" >"$WORK/pullin.got"
    head -n $((ncmp + 1)) "$REF/mems_pullin.tbl" >"$WORK/pullin.want"
    if [ $ncmp -gt 0 ]; then
        check_table "$WORK/pullin.got" "$WORK/pullin.want" $RELTOL $ABSTOL \
            "mems_pullin $form: rows before the failure match the reference (1e-3 of peak)"
    else
        ok 1 "mems_pullin $form: rows before the failure match the reference (1e-3 of peak)" "no rows printed"
    fi
done

# ---------------------------------------------------------------- loudspeaker against ngspice
# The impedance-analogy circuit (mass as inductor, compliance as capacitor,
# the voice coil as a gyrator of two CCVS) gives the cone velocity as
# i(vu) and the coil current as i(vsense).
if command -v ngspice >/dev/null 2>&1; then
    (cd "$WORK" && ngspice -b "$REF/speaker_ngspice.cir" >ngspice.log 2>&1)
    awk 'NR == 1 { print "time v(cone) i(lvc)"; next } { printf "%.9e %.9e %.9e\n", $1, $2, $3 }' \
        "$WORK/speaker_ngspice.out" >"$WORK/speaker.ngspice.tbl" 2>/dev/null
    select_cols "$REF/speaker.tbl" "v(cone)" "i(lvc)" >"$WORK/speaker.ref.vi"
    check_table "$WORK/speaker.ngspice.tbl" "$WORK/speaker.ref.vi" $RELTOL $ABSTOL \
        "speaker: ngspice agrees with the analytic reference (sanity of the equivalent circuit)"
    for form in charge flux; do
        select_cols "$WORK/speaker.$form.tbl" "v(cone)" "i(lvc)" >"$WORK/speaker.$form.vi"
        check_table "$WORK/speaker.$form.vi" "$WORK/speaker.ngspice.tbl" $RELTOL $ABSTOL \
            "speaker $form: cone velocity and coil current agree with ngspice (1e-3 of peak)"
    done
else
    skip "speaker: ngspice agrees with the analytic reference" "ngspice not installed"
    skip "speaker charge: cone velocity and coil current agree with ngspice" "ngspice not installed"
    skip "speaker flux: cone velocity and coil current agree with ngspice" "ngspice not installed"
fi

done_testing
