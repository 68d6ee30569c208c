#!/bin/sh
# output.sh: ngspice, an independent reader, loads the raw files emnet's
# writers produce, binary and ASCII, and must see the rows that went in.
#
# The shell cannot call the writers, so tests/unit/test_output writes the
# files (11 rows: time = k*1e-3, v(a) = 1.5k - 2, i(r1) = 1e-3 k^2,
# x(cone) = -0.25k) into $EMN_OUTPUT_DIR; ngspice loads each one and writes
# the vectors back out with wrdata, and awk checks them against the formulas.
# Skipped when ngspice is not installed.

. "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
: "${top_builddir:=$(pwd)}"
prog="$top_builddir/tests/unit/test_output"

if ! command -v ngspice >/dev/null 2>&1; then
    skip "ngspice loads the binary raw file" "ngspice not installed"
    skip "ngspice loads the ASCII raw file" "ngspice not installed"
    done_testing
    exit
fi

EMN_OUTPUT_DIR="$WORK" "$prog" >"$WORK/unit.log" 2>&1
rc=$?
ok $rc "test_output writes the raw files" "exit status $rc" "$(grep -v '^ok' "$WORK/unit.log")"

for kind in bin ascii; do
    raw="$WORK/emn_$kind.raw"
    data="$WORK/$kind.data"
    cat >"$WORK/$kind.sp" <<EOF
* load a raw file written by emnet and write its vectors back out
.control
load $raw
set wr_singlescale
set wr_vecnames
wrdata $data v(a) i(r1) x(cone)
.endc
.end
EOF
    (cd "$WORK" && ngspice -b "$kind.sp" >"$WORK/$kind.log" 2>&1)
    if [ ! -s "$data" ]; then
        ok 1 "ngspice loads the $kind raw file" "$(cat "$WORK/$kind.log")"
        continue
    fi
    msg=$(awk '
        function bad(s) { print s; failed = 1 }
        function near(got, want) { d = got - want; if (d < 0) d = -d
                                   s = want < 0 ? -want : want; if (s < 1) s = 1
                                   return d <= 1e-12 * s }
        NR == 1 { if ($1 != "time" || $2 != "v(a)" || $3 != "i(r1)" || $4 != "x(cone)")
                      bad("header: " $0)
                  next }
        { k = NR - 2
          if (!near($1, k * 1e-3)) bad("row " k " time " $1)
          if (!near($2, 1.5 * k - 2)) bad("row " k " v(a) " $2)
          if (!near($3, 1e-3 * k * k)) bad("row " k " i(r1) " $3)
          if (!near($4, -0.25 * k)) bad("row " k " x(cone) " $4) }
        END { if (NR != 12) bad("rows: " NR - 1 ", want 11"); exit failed }' "$data" 2>&1)
    ok $? "ngspice loads the $kind raw file and sees the 11 rows written" "$msg"
done

# The table runs t = tstart, tstart + tstep, ... and ends at tstop, also
# when tstep does not divide the span (netlist.md, section 6).  v(a) is
# a ramp of 1000 V/s, which the interpolation meets exactly.
for tran in "0.3m 1m:0 3e-4 6e-4 9e-4 1e-3" "1m 0.5m:0 5e-4" "1m 10m 9.5m:9.5e-3 1e-2" \
            "0.25m 1m:0 2.5e-4 5e-4 7.5e-4 1e-3"; do
    args=${tran%%:*} want=${tran#*:}
    printf 'ramp\nV1 a 0 PWL(0 0 20m 20)\nR1 a 0 1k\n.tran %s\n.print tran v(a)\n.end\n' "$args" >"$WORK/span.cir"
    run_emnet -q -tran span.cir
    msg=$(printf '%s\n' "$out" | awk -v want="$want" '
        BEGIN { n = split(want, W, " ") }
        function bad(s) { print s; failed = 1 }
        NR == 1 { next }
        { k = NR - 1; t = W[k] + 0
          if (k > n) { bad("extra row " $0); next }
          if ($1 + 0 != t && ($1 - t) * ($1 - t) > 1e-30 * t * t) bad("row " k " time " $1 ", want " t)
          d = $2 - 1000 * t; if (d < 0) d = -d
          if (d > 1e-9) bad("row " k " v(a) " $2 ", want " 1000 * t) }
        END { if (NR - 1 != n) bad("rows: " NR - 1 ", want " n); exit failed }' 2>&1)
    ok $? ".tran $args: rows at $want" "$msg"
done

done_testing
