# lib.sh: shared helpers for the netlist test scripts.  Each script sources
# this file, calls the check functions below (each prints one TAP line), and
# ends with `done_testing`.
#
# Environment (set by `make check`): EMNET (the binary), top_srcdir.
: "${EMNET:=$(pwd)/emnet}"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
TESTS_DIR="$top_srcdir/tests"
tap_n=0
tap_failed=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/emnet-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

ok() {          # ok STATUS NAME [DIAGNOSTIC...]
    local status=$1 name=$2
    shift 2
    tap_n=$((tap_n + 1))
    if [ "$status" -eq 0 ]; then
        echo "ok $tap_n - $name"
    else
        tap_failed=$((tap_failed + 1))
        echo "not ok $tap_n - $name"
        for line in "$@"; do printf '%s\n' "$line" | sed 's/^/# /'; done
    fi
}

# todo STATUS NAME REASON: a TAP line for a check known to fail because of
# an engine bug; it does not count as a failure (a pass shows as XPASS so
# the TODO gets removed).
todo() {
    tap_n=$((tap_n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2 # TODO $3"; else echo "not ok $tap_n - $2 # TODO $3"; fi
}

# check_or_todo STATUS NAME MSG REASON: ok when REASON is empty, else todo.
check_or_todo() {
    if [ -z "$4" ]; then ok "$1" "$2" "$3"; else todo "$1" "$2" "$4"; fi
}

skip() {        # skip NAME REASON
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - $1 # SKIP $2"
}

# run_emnet ARGS...: runs emnet in $WORK, sets $rc, $out (stdout), $err (stderr)
run_emnet() {
    (cd "$WORK" && "$EMNET" "$@" >"$WORK/stdout" 2>"$WORK/stderr")
    rc=$?
    out=$(cat "$WORK/stdout")
    err=$(cat "$WORK/stderr")
}

# check_table GOT WANT RELTOL ABSTOL NAME [TODO-REASON]: compare two table
# files column by column (same header, same rows); passes if every
# |got-want| <= abstol + reltol*max|want column| (a TODO when REASON is set).
# (Each field is made a number with + 0 before it is compared: mawk takes
# a subnormal field, 1e-317 as ngspice writes a decayed signal, for a
# string, and compares it as one.)
check_table() {
    local got=$1 want=$2 reltol=$3 abstol=$4 name=$5 todo_reason=${6:-} msg
    msg=$(awk -v rt="$reltol" -v at="$abstol" '
        NR == FNR { if (FNR == 1) { hw = $0; next } for (i = 1; i <= NF; i++) W[FNR, i] = $i; nw = FNR;
                    for (i = 2; i <= NF; i++) { a = $i + 0; a = a < 0 ? -a : a; if (a > pk[i]) pk[i] = a } next }
        FNR == 1 { if ($0 != hw) { print "header differs: " $0 " vs " hw; bad = 1 } next }
        { ng = FNR; for (i = 1; i <= NF; i++) { d = $i - W[FNR, i]; if (d < 0) d = -d;
            tol = at + rt * (i == 1 ? 1 : pk[i]); if (d > tol && d > worst[i]) { worst[i] = d; wrow[i] = FNR } } }
        END { if (ng != nw) { print "rows: got " ng ", want " nw; bad = 1 }
              for (i in worst) { print "column " i " off by " worst[i] " at row " wrow[i]; bad = 1 }
              exit bad }' "$want" "$got" 2>&1)
    check_or_todo $? "$name" "$msg" "$todo_reason"
}

# select_cols FILE NAME...: print FILE's columns NAME... (by header) in that
# order, time first; a missing column prints a header that will not match.
select_cols() {
    local file=$1
    shift
    awk -v want="$*" 'BEGIN { n = split(want, W, " ") }
        NR == 1 { for (i = 1; i <= NF; i++) H[$i] = i
                  line = "time"; for (k = 1; k <= n; k++) line = line " " ((W[k] in H) ? W[k] : "missing:" W[k])
                  print line; next }
        { line = $1; for (k = 1; k <= n; k++) line = line " " ((W[k] in H) ? $(H[W[k]]) : "nan"); print line }' "$file"
}

# check_invalid NAME EXPECTED RC: an invalid input must exit 1 with nothing
# on standard output and exactly the EXPECTED text on standard error (the
# run's outputs in $WORK/out and $WORK/err, its status in RC).
check_invalid() {
    if [ "$3" -ne 1 ]; then
        ok 1 "$1: exit status" "got $3, want 1" "$(cat "$WORK/err")"
    elif [ -s "$WORK/out" ]; then
        ok 1 "$1: standard output is empty" "$(cat "$WORK/out")"
    elif ! cmp -s "$WORK/err" "$2"; then
        ok 1 "$1: message" "$(diff "$2" "$WORK/err")"
    else
        ok 0 "$1"
    fi
}

done_testing() {
    echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ]
}
