#!/bin/sh
# errors.sh: every bad netlist in tests/errors must be rejected with exit
# status 1 and exactly the messages in its .err file (the user interface:
# GCC-style line, quoted source line, caret).  Runs inside tests/errors so
# that paths print as NAME.cir.
. "$(dirname "$0")/lib.sh"

cd "$TESTS_DIR/errors" || exit 1
for cir in *.cir; do
    name=${cir%.cir}
    if [ ! -f "$name.err" ]; then
        ok 1 "$name" "missing $name.err"
        continue
    fi
    "$EMNET" --check "$cir" >"$WORK/out" 2>"$WORK/err"
    check_invalid "$name" "$name.err" $?
done
done_testing
