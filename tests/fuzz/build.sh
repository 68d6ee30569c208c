#!/bin/sh
# Build the front-end fuzzer outside the autotools tree.
#
#   tests/fuzz/build.sh [libfuzzer|afl|replay] [outdir]
#
# libfuzzer: clang -fsanitize=fuzzer,address,undefined (the default)
# afl:       afl-clang-fast with ASan+UBSan, reading the file named by @@
# replay:    gcc with ASan+UBSan, reading the files named on the command
#            line (the regression run of tests/robust.sh uses this kind of
#            build through the normal emnet binary instead)
set -eu
mode=${1:-libfuzzer}
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${2:-$top/tests/fuzz/build-$mode}
mkdir -p "$out/grammar"
: > "$out/config.h"
if [ -f /usr/include/suitesparse/klu.h ]; then
    echo '#define HAVE_SUITESPARSE_KLU_H 1' > "$out/config.h"
fi
# CHOLMOD's partition module (configure checks the same): the chain split
if [ -f /usr/include/suitesparse/cholmod_partition.h ]; then
    printf '#define HAVE_CHOLMOD_BISECT 1\n#define HAVE_CHOLMOD_CAMD 1\n' >> "$out/config.h"
fi
bison -o "$out/grammar/parser.c" --defines="$out/grammar/parser.h" "$top/grammar/parser.y"
flex -o "$out/grammar/lexer.c" --header-file="$out/grammar/lexer.h" "$top/grammar/lexer.l"

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
case $mode in
libfuzzer) cc=${CC:-clang}; cflags="-fsanitize=fuzzer $san"; extra= ;;
afl)       cc=${CC:-afl-clang-fast}; cflags="$san"; extra=-DEMN_FUZZ_MAIN ;;
replay)    cc=${CC:-gcc}; cflags="$san"; extra=-DEMN_FUZZ_MAIN ;;
*) echo "usage: $0 [libfuzzer|afl|replay] [outdir]" >&2; exit 2 ;;
esac
srcs=""
for f in util diag expr netlist wave sparse par topo elem form integ sim op output; do
    srcs="$srcs $top/src/$f.c"
done
# shellcheck disable=SC2086
$cc -std=gnu11 -g -O1 $cflags $extra -I"$out" -I"$out/grammar" -I"$top/src" -I"$top/grammar" \
    -w $srcs "$out/grammar/parser.c" "$out/grammar/lexer.c" "$top/tests/fuzz/fuzz_netlist.c" \
    -o "$out/fuzz_netlist" -lklu -lcholmod -lpthread -lm
echo "$out/fuzz_netlist"
