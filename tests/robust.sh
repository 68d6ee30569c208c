#!/bin/sh
# robust.sh: how emnet fails.  Three parts:
#  1. the regression corpus tests/netlists/robust: inputs the fuzzer (or a
#     reviewer) found to crash, leak or hang emnet, each with the exit status
#     and messages it must give now (NAME.exp: "args:", "exit:", then lines
#     that must appear verbatim on standard error);
#  2. the hard limits of the front end, on netlists generated here (include
#     depth, subcircuit nesting, expression depth, line length, node and
#     element counts, unreadable inputs);
#  3. the numerical failure paths and SIGINT: exit status 3, a message that
#     names what failed, and table, raw and CSV files that hold every row
#     up to the failure and are well-formed.
# Under a sanitizer build any report also fails the check it occurs in.
. "$(dirname "$0")/lib.sh"

R="$TESTS_DIR/netlists/robust"

# no_reports NAME: standard error holds no sanitizer or crash report
no_reports() {
    ! grep -Eq 'Sanitizer|runtime error:|Segmentation|Aborted|core dumped' "$WORK/stderr"
}

# expect NAME RC TEXT...: the last run_emnet exited RC and said every TEXT
expect() {
    local name=$1 want=$2 t miss=""
    shift 2
    for t in "$@"; do
        grep -Fq -- "$t" "$WORK/stderr" || miss="$miss[$t] "
    done
    if [ "$rc" -ne "$want" ]; then
        ok 1 "$name: exit $want" "got exit $rc" "$(head -c 2000 "$WORK/stderr")"
    elif [ -n "$miss" ]; then
        ok 1 "$name: exit $want with its message" "missing: $miss" "$(head -c 2000 "$WORK/stderr")"
    elif ! no_reports; then
        ok 1 "$name: no sanitizer report" "$(head -c 3000 "$WORK/stderr")"
    else
        ok 0 "$name: exit $want with its message"
    fi
}

# ---------------------------------------------------------------- 1. regressions
for cir in "$R"/*.cir; do
    name=$(basename "$cir" .cir)
    exp="$R/$name.exp"
    if [ ! -f "$exp" ]; then
        ok 1 "robust/$name" "missing $name.exp"
        continue
    fi
    args=$(sed -n 's/^args: //p' "$exp")
    want=$(sed -n 's/^exit: //p' "$exp")
    (cd "$R" && "$EMNET" $args "$name.cir" >"$WORK/stdout" 2>"$WORK/stderr")
    rc=$?
    miss=""
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        grep -Fq -- "$line" "$WORK/stderr" || miss="$miss[$line] "
    done <<EOF
$(sed -n '/^args: /d; /^exit: /d; p' "$exp")
EOF
    if [ "$rc" -ne "$want" ] || [ -n "$miss" ] || ! no_reports; then
        ok 1 "robust/$name: exit $want and its messages" "exit $rc; missing: $miss" \
            "$(head -c 3000 "$WORK/stderr")"
    else
        ok 0 "robust/$name: exit $want and its messages"
    fi
done

# The fuzzer's findings as it wrote them (tests/fuzz/corpus): each must now
# be read, rejected or accepted, and taken through both formulations
# without a crash or a sanitizer report.
for f in "$TESTS_DIR"/fuzz/corpus/*; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    (cd "$WORK" && "$EMNET" -q -lagrangian -compare "$f" >"$WORK/stdout" 2>"$WORK/stderr")
    rc=$?
    if { [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; } && no_reports; then
        ok 0 "fuzz/corpus/$name: exit 0 or 1, no report"
    else
        ok 1 "fuzz/corpus/$name: exit 0 or 1, no report" "exit $rc" "$(head -c 3000 "$WORK/stderr")"
    fi
done

# ---------------------------------------------------------------- 2. limits
tail_ok='R1 a 0 1k
V1 a 0 1
.tran 1u 10u'

# .include nested 70 deep: refused at the 64th level, not a stack overflow
for i in $(seq 1 70); do
    printf '* level %d\n.include inc%d.inc\n' "$i" $((i + 1)) >"$WORK/inc$i.inc"
done
printf 'deep includes\n.include inc1.inc\n%s\n' "$tail_ok" >"$WORK/incdeep.cir"
run_emnet --check incdeep.cir
expect "include nested 70 deep" 1 ".include nested more than 64 deep"
# ... while 10 levels are fine
for i in $(seq 1 10); do
    printf '* level %d\n.include ten%d.inc\n' "$i" $((i + 1)) >"$WORK/ten$i.inc"
done
printf '* the end\n' >"$WORK/ten11.inc"
printf 'ten includes\n.include ten1.inc\n%s\n' "$tail_ok" >"$WORK/incten.cir"
run_emnet --check incten.cir
expect "include nested 10 deep" 0

# an include cycle through two files
printf '.include cyc_b.inc\n' >"$WORK/cyc_a.inc"
printf '.include cyc_a.inc\n' >"$WORK/cyc_b.inc"
printf 'include cycle\n.include cyc_a.inc\n%s\n' "$tail_ok" >"$WORK/cyc.cir"
run_emnet --check cyc.cir
expect "include cycle through two files" 1 "cyc_a.inc"
grep -qi 'cycle\|includes itself\|recursive' "$WORK/stderr"
ok $? "include cycle: the message says it is a cycle" "$(cat "$WORK/stderr")"

# subcircuits nested 101 deep (each level one instance of the next)
{
    echo "deep subcircuits"
    echo ".subckt s0 a"
    echo "R1 a 0 1k"
    echo ".ends"
    for i in $(seq 1 101); do
        printf '.subckt s%d a\nX1 a s%d\n.ends\n' "$i" $((i - 1))
    done
    echo "X1 top s101"
    echo "V1 top 0 1"
    echo ".tran 1u 10u"
} >"$WORK/subdeep.cir"
run_emnet --check subdeep.cir
expect "subcircuits nested 101 deep" 1 "subcircuits nested more than 100 deep"
sed 's/^X1 top s101/X1 top s90/' "$WORK/subdeep.cir" >"$WORK/sub90.cir"
run_emnet --check sub90.cir
expect "subcircuits nested 90 deep" 0

# subcircuits that double at every level: 2^30 resistors are refused by the
# element limit (lowered through the environment so the test stays small)
{
    echo "exponential expansion"
    echo ".subckt s0 a"
    echo "R1 a 0 1k"
    echo ".ends"
    for i in $(seq 1 30); do
        printf '.subckt s%d a\nX1 a s%d\nX2 a s%d\n.ends\n' "$i" $((i - 1)) $((i - 1))
    done
    echo "X1 top s30"
    echo "V1 top 0 1"
    echo ".tran 1u 10u"
} >"$WORK/expo.cir"
EMNET_MAX_ELEMENTS=20000 run_emnet --check expo.cir
expect "2^30 elements from doubling subcircuits" 1 \
    "too many elements after subcircuit expansion (the limit is 20000)"

# node count (limit lowered the same way): 1500 nodes against 1000
awk 'BEGIN { print "many nodes"; for (i = 1; i <= 1500; i++) printf "R%d n%d n%d 1k\n", i, i, i + 1;
             print "V1 n1 0 1"; print ".tran 1u 10u" }' >"$WORK/nodes.cir"
EMNET_MAX_NODES=1000 run_emnet --check nodes.cir
expect "1500 nodes against a limit of 1000" 1 "too many nodes (the limit is 1000)"
run_emnet --check nodes.cir
expect "1500 nodes under the default limit" 0

# expression depth: long chains, unary operators, parentheses, calls
gen_expr() {     # gen_expr FILE EXPRESSION-GENERATOR-AWK
    awk "BEGIN { printf \"deep expression\\nV1 a 0 {\"; $2; print \"}\"; print \"R1 a 0 1k\"; print \".tran 1u 10u\" }" >"$WORK/$1"
}
gen_expr chain.cir 'for (i = 0; i < 100000; i++) printf "time+"; printf "time"'
run_emnet --check chain.cir
expect "a sum of 100001 terms" 1 "expression nested more than 1000 deep"
gen_expr chain300.cir 'for (i = 0; i < 300; i++) printf "time+"; printf "time"'
run_emnet --check chain300.cir
expect "a sum of 301 terms" 0
gen_expr unary.cir 'for (i = 0; i < 50000; i++) printf "-"; printf "time"'
run_emnet --check unary.cir
expect "50000 unary minus signs" 1 "expression nested too deeply"
gen_expr parens.cir 'for (i = 0; i < 50000; i++) printf "("; printf "time"; for (i = 0; i < 50000; i++) printf ")"'
run_emnet --check parens.cir
expect "50000 nested parentheses" 1 "expression nested too deeply"
gen_expr calls.cir 'for (i = 0; i < 2000; i++) printf "sin("; printf "time"; for (i = 0; i < 2000; i++) printf ")"'
run_emnet --check calls.cir
expect "2000 nested calls" 1 "expression nested more than 1000 deep"
# a deep C(x) is differentiated twice by the formulations
awk 'BEGIN { print "deep C(x)"; print "V1 a 0 1"; print "R1 a b 1k"; printf "C1 b 0 C={1n";
             for (i = 0; i < 900; i++) printf "+1p*x(m)"; print "}";
             print "M1 m 1m"; print "S1 m 0 1"; print ".tran 1u 10u" }' >"$WORK/cx.cir"
run_emnet -lagrangian cx.cir
expect "a C(x) 900 deep through both formulations" 0

# a 1.2 MiB card (continuation lines): refused, not a quadratic crawl
awk 'BEGIN { print "long card"; print "V1 a 0 1"; printf "R1 a 0"; for (i = 0; i < 600000; i++) printf "\n+ ";
             print "1k"; print ".tran 1u 10u" }' >"$WORK/longcard.cir"
run_emnet --check longcard.cir
expect "a card of 1.2 MiB" 1 "line too long"

# inputs that are not netlists
run_emnet -tran nonexistent.cir
expect "missing netlist" 1 "cannot read 'nonexistent.cir': No such file or directory"
mkdir "$WORK/adir.cir"
run_emnet -tran adir.cir
expect "a directory as the netlist" 1 "cannot read 'adir.cir': is a directory"
printf 'device include\n.include /dev/zero\n%s\n' "$tail_ok" >"$WORK/devzero.cir"
run_emnet --check devzero.cir
expect ".include /dev/zero" 1 "cannot read '/dev/zero': not a regular file"
# A netlist read from a pipe, not a regular file, and long enough (300 kB
# of comments before the cards) that its buffer grows several times: the
# same divider as when read from a file: 2 V over 1k and 3k, v(b) = 1.5 V.
awk 'BEGIN { print "divider through a pipe"
             for (i = 0; i < 6000; i++) printf "* padding %044d\n", i
             print "V1 a 0 2"; print "R1 a b 1k"; print "R2 b 0 3k"; print ".op" }' >"$WORK/piped.cir"
(cd "$WORK" && cat piped.cir | "$EMNET" /dev/stdin >"$WORK/stdout" 2>"$WORK/stderr")
rc=$?
got=$(awk '$1 == "v(b)" { print $2 }' "$WORK/stdout")
if [ "$rc" -eq 0 ] && awk -v g="$got" 'BEGIN { exit !(g != "" && g - 1.5 < 1e-12 && 1.5 - g < 1e-12) }'; then
    ok 0 "a 300 kB netlist through a pipe: v(b) = 1.5 V"
else
    ok 1 "a 300 kB netlist through a pipe: v(b) = 1.5 V" "exit $rc, v(b) '$got'" "$(head -c 2000 "$WORK/stderr")"
fi
run_emnet piped.cir
if [ "$rc" -eq 0 ] && [ "$(awk '$1 == "v(b)" { print $2 }' "$WORK/stdout")" = "$got" ]; then
    ok 0 "the same netlist from its file: the same v(b)"
else
    ok 1 "the same netlist from its file: the same v(b)" "exit $rc" "$(head -c 2000 "$WORK/stdout")"
fi
: >"$WORK/empty.cir"
run_emnet --check empty.cir
expect "an empty netlist file" 0
printf 'nul\nR1 a 0 1k\000\nV1 a 0 1\n' >"$WORK/nul.cir"
run_emnet --check nul.cir
expect "a NUL byte" 1 "file is not text (NUL byte)"
printf "$tail_ok\n" >"$WORK/unreadable.cir"
chmod 000 "$WORK/unreadable.cir"
if [ -r "$WORK/unreadable.cir" ]; then
    skip "unreadable netlist" "running as root: permissions do not apply"
else
    run_emnet -tran unreadable.cir
    expect "unreadable netlist" 1 "cannot read 'unreadable.cir': Permission denied"
fi
chmod 644 "$WORK/unreadable.cir"

# ---------------------------------------------------------------- 3. failure paths
# table_ok FILE NCOL: a header and rows of NCOL numbers, times increasing
table_ok() {
    awk -v n="$2" 'NR == 1 { if ($1 != "time" || NF != n) exit 1; next }
        { if (NF != n) exit 1; for (i = 1; i <= NF; i++) if ($i !~ /^[-+]?[0-9]/) exit 1;
          if (NR > 2 && $1 + 0 <= last) exit 1; last = $1 + 0; rows++ }
        END { if (rows < 1) exit 1 }' "$1"
}
csv_ok() {       # csv_ok FILE: as wide as its header, every row
    awk -F, 'NR == 1 { n = NF; if ($1 != "time" || n < 2) exit 1; next }
        { if (NF != n) exit 1; for (i = 1; i <= NF; i++) if ($i !~ /^[-+]?[0-9]/) exit 1;
          if (NR > 2 && $1 + 0 <= last) exit 1; last = $1 + 0; rows++ }
        END { if (rows < 1) exit 1 }' "$1"
}
rows() { echo $(($(wc -l <"$1") - 1)); }
# raw_ok FILE: binary raw file whose "No. Points" matches its data
raw_points() { sed -n 's/^No\. Points: *\([0-9]*\).*/\1/p' "$1" | head -n 1; }
raw_ok() {
    local f=$1 np nv hdr size
    np=$(raw_points "$f")
    nv=$(sed -n 's/^No\. Variables: *\([0-9]*\).*/\1/p' "$f" | head -n 1)
    hdr=$(grep -abo '^Binary:' "$f" | head -n 1 | cut -d: -f1)
    [ -n "$np" ] && [ -n "$nv" ] && [ -n "$hdr" ] || return 1
    size=$(wc -c <"$f")
    [ "$size" -eq $((hdr + 8 + np * nv * 8)) ]
}

# check_partial NAME NCOL: the table, raw and CSV of the last run agree on
# the rows they hold, are well-formed, and no temporary file is left
check_partial() {
    local name=$1 n=$2 tr cr rp
    printf '%s\n' "$out" >"$WORK/p.tbl"
    table_ok "$WORK/p.tbl" "$n"
    ok $? "$name: the table is well-formed up to the failure" "$(tail -n 3 "$WORK/p.tbl")"
    csv_ok "$WORK/p.csv"
    ok $? "$name: the CSV is well-formed up to the failure" "$(tail -n 3 "$WORK/p.csv" 2>&1)"
    raw_ok "$WORK/p.raw"
    ok $? "$name: the raw file's point count matches its data" "$(head -n 8 "$WORK/p.raw" 2>&1)"
    tr=$(rows "$WORK/p.tbl"); cr=$(rows "$WORK/p.csv"); rp=$(raw_points "$WORK/p.raw")
    [ "$tr" -eq "$cr" ] && [ "$cr" = "$rp" ]
    ok $? "$name: table, CSV and raw hold the same $tr rows" "table $tr, csv $cr, raw $rp"
    ! ls "$WORK" | grep -q '\.tmp\.'
    ok $? "$name: no temporary file left behind" "$(ls "$WORK")"
    rm -f "$WORK/p.csv" "$WORK/p.raw"
}

# A source that goes to infinity at t = 1 us: the step size underflows there
cat >"$WORK/blowup.cir" <<'EOF'
source blows up to infinity at t = 1 us
V1 in 0 {1/(1u-time)}
R1 in out 1k
C1 out 0 1n
.print tran v(out)
.tran 10n 2u
EOF
run_emnet -q -tran -form flux -r p.raw -o p.csv blowup.cir
expect "step underflow (flux)" 3 "time step too small" "coordinate lambda(out)" "dominated by r1"
check_partial "step underflow" 2
last=$(printf '%s\n' "$out" | tail -n 1 | awk '{ print $1 }')
awk -v t="$last" 'BEGIN { exit !(t >= 0.9e-6 && t <= 1e-6) }'
ok $? "step underflow: the table reaches t = 1 us and stops there" "last row at $last"

# A source that becomes NaN after t = 1 us: the run stops, names it, keeps
# what came before
cat >"$WORK/nan.cir" <<'EOF'
source NaN after t = 1 us
V1 in 0 {sqrt(1u-time)}
R1 in out 1k
C1 out 0 1n
.print tran v(out)
.tran 10n 2u
EOF
for form in charge flux; do
    run_emnet -q -tran -form $form -r p.raw -o p.csv nan.cir
    expect "NaN source ($form)" 3
    check_partial "NaN source ($form)" 2
    # NaN named as such, with its coordinate and element (spec)
    grep -Eqi 'nan|not finite|non-finite' "$WORK/stderr" && grep -q 'coordinate' "$WORK/stderr"
    ok $? "NaN source ($form): the message says NaN and names the coordinate" "$(cat "$WORK/stderr")"
done

# A singular Newton matrix: a yoke whose only inertia is on the cart has none
# at alpha = 0 (dx/dalpha = 0 there); the zero pivot's coordinate is named
cp "$top_srcdir/tests/netlists/robust/singular_yoke.cir" "$WORK/sing.cir"
for form in charge flux; do
    rm -f "$WORK/p.raw" "$WORK/p.csv"
    run_emnet -q -tran -form $form -r p.raw -o p.csv sing.cir
    expect "singular Newton matrix ($form)" 3 "singular" "zero pivot" "coordinate x(a)"
    # GCC style, at the element that dominates the coordinate's equation
    grep -Eq '^sing\.cir:[0-9]+:[0-9]+: error: .*dominated by ' "$WORK/stderr"
    ok $? "singular Newton matrix ($form): the error is at its element's line" "$(cat "$WORK/stderr")"
    # it fails at the start: nothing is written, not even a table's header
    # or an empty raw file
    ok $([ ! -s "$WORK/stdout" ] && [ ! -e "$WORK/p.raw" ] && [ ! -e "$WORK/p.csv" ]; echo $?) \
        "singular Newton matrix ($form): a run that cannot start writes nothing" \
        "stdout: $(head -c 200 "$WORK/stdout")" "$(ls "$WORK")"
done

# Pull-in: C(x) leaves its range; the capacitor is named (exit 3 with output)
run_emnet -q -tran -form flux -r p.raw -o p.csv "$top_srcdir/netlists/mems_pullin.cir"
expect "C(x) out of range" 3 "Cact" "pull-in"
check_partial "C(x) out of range" 7

# A coupling k(x) that reaches 1 (x = 5 t^2 from rest, k = 0.5 + x: at
# t = sqrt(0.1) = 0.3162 s): the run stops naming K1, the time and the
# value, before a singular inductance matrix stops it unnamed
cat >"$WORK/kx.cir" <<'EOF'
coupling reaches 1 during the run
V1 in 0 1
R1 in a 1
L1 a 0 1m
L2 c 0 1m
R2 c 0 1
K1 L1 L2 '0.5+x(p)'
M1 p 1
F1 p 0 10
.tran 0.1 1 uic
.print tran x(p)
.end
EOF
for form in charge flux; do
    run_emnet -q -tran -form $form -r p.raw -o p.csv kx.cir
    expect "k(x) reaches 1 ($form)" 3 "the coupling of k1 reached"
    t=$(sed -n 's/.*reached \([0-9.e+-]*\) at t = \([0-9.e+-]*\) s.*/\2/p' "$WORK/stderr")
    awk -v t="$t" 'BEGIN { exit !(t >= 0.3162 && t <= 0.34) }'
    ok $? "k(x) reaches 1 ($form): at t = $t, within 0.3162 to 0.34 s" "$(cat "$WORK/stderr")"
    check_partial "k(x) reaches 1 ($form)" 2
done

# SIGINT: the run stops cleanly, exit 3, and the files hold what was computed
cat >"$WORK/long.cir" <<'EOF'
an RC filter driven for far longer than any test waits
V1 in 0 SIN(0 1 1.3meg)
R1 in out 1k
C1 out 0 1n
.print tran v(out)
.tran 1u 10
EOF
(cd "$WORK" && exec "$EMNET" -q -tran -r p.raw -o p.csv long.cir >"$WORK/stdout" 2>"$WORK/stderr") &
pid=$!
# while it runs, only temporary names exist: nothing looks complete
# (wait for rows in the temporary CSV: under valgrind start-up takes seconds)
n=0
while [ $n -lt 600 ]; do
    for f in "$WORK"/p.csv.tmp.*; do [ -s "$f" ] && n=600; done
    sleep 0.1
    n=$((n + 1))
done
sleep 0.5
[ ! -e "$WORK/p.raw" ] && [ ! -e "$WORK/p.csv" ] && ls "$WORK" | grep -q 'p\.raw\.tmp\.'
ok $? "running: the raw and CSV files exist only under temporary names" "$(ls "$WORK")"
kill -INT $pid
wait $pid
rc=$?
out=$(cat "$WORK/stdout")
expect "SIGINT" 3 "interrupted at t ="
check_partial "SIGINT" 2

# SIGKILL cannot be caught: the final names must never appear
(cd "$WORK" && exec "$EMNET" -q -tran -r k.raw -o k.csv long.cir >/dev/null 2>&1) &
pid=$!
n=0
while [ $n -lt 600 ]; do
    for f in "$WORK"/k.csv.tmp.*; do [ -s "$f" ] && n=600; done
    sleep 0.1
    n=$((n + 1))
done
kill -KILL $pid
wait $pid 2>/dev/null
[ ! -e "$WORK/k.raw" ] && [ ! -e "$WORK/k.csv" ] && ls "$WORK" | grep -q 'k\.csv\.tmp\.'
ok $? "SIGKILL mid-run: only the temporary files exist, no final name" "$(ls "$WORK")"

done_testing
