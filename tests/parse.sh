#!/bin/sh
# parse.sh: every netlist in tests/netlists/parse is valid: `emnet --check`
# exits 0, prints nothing on standard output, and on standard error exactly
# the warnings in NAME.warn (nothing if there is no such file).
. "$(dirname "$0")/lib.sh"

cd "$TESTS_DIR/netlists/parse" || exit 1
for cir in *.cir; do
    name=${cir%.cir}
    "$EMNET" --check "$cir" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    want=/dev/null
    [ -f "$name.warn" ] && want=$name.warn
    if [ "$rc" -ne 0 ]; then
        ok 1 "$name: exit status" "got $rc, want 0" "$(cat "$WORK/err")"
    elif [ -s "$WORK/out" ]; then
        ok 1 "$name: standard output is empty" "$(cat "$WORK/out")"
    elif ! cmp -s "$WORK/err" "$want"; then
        ok 1 "$name: standard error" "$(diff "$want" "$WORK/err")"
    else
        ok 0 "$name"
    fi
done
done_testing
