#!/bin/sh
# Run `make check` (or the tests named) of a configured build tree with
# every emnet process and every unit test under valgrind's memcheck.
#
#   tests/fuzz/valgrind.sh BUILDDIR [TESTS...]
#
# Each process writes its report to BUILDDIR/vg/PID.log; at the end the
# script counts the reports that hold an error (invalid access, use of an
# uninitialised value, a definite or indirect leak) and prints them.  It
# exits 0 only if the tests pass and there is no report.  The build should be
# a plain one (not --enable-sanitizers: ASan and valgrind do not mix).
set -u
b=$(cd "${1:?usage: valgrind.sh BUILDDIR [TESTS...]}" && pwd)
shift
top=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$b/vg"
mkdir -p "$b/vg"
vg="valgrind -q --suppressions=$top/tests/fuzz/valgrind.supp --error-exitcode=97 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect --track-origins=yes --log-file=$b/vg/%p.log"
cat >"$b/vg/emnet" <<EOS
#!/bin/sh
exec $vg "$b/emnet" "\$@"
EOS
chmod +x "$b/vg/emnet"
env_set="EMNET='$b/vg/emnet'; export EMNET; top_srcdir='$top'; export top_srcdir; top_builddir='$b'; export top_builddir;"
if [ $# -gt 0 ]; then
    make -C "$b" check LOG_COMPILER="$vg" AM_TESTS_ENVIRONMENT="$env_set" TESTS="$*"
else
    make -C "$b" check LOG_COMPILER="$vg" AM_TESTS_ENVIRONMENT="$env_set"
fi
rc=$?
n=0
for f in "$b"/vg/*.log; do
    [ -s "$f" ] || continue
    n=$((n + 1))
    echo "== $f"
    head -n 40 "$f"
done
echo "valgrind: $(ls "$b"/vg/*.log 2>/dev/null | wc -l) processes, $n with reports"
[ "$rc" -eq 0 ] && [ "$n" -eq 0 ]
