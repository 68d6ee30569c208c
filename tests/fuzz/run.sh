#!/bin/sh
# Run the libFuzzer build for a while, seeded with every netlist in the
# repository and the regression corpus.
#
#   tests/fuzz/run.sh [seconds] [fuzzer binary]
#
# New inputs go to tests/fuzz/work/corpus (not committed); crashes, leaks
# and timeouts to tests/fuzz/work/ as crash-*, leak-*, timeout-*.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-600}
bin=${2:-$top/tests/fuzz/build-libfuzzer/fuzz_netlist}
work=$top/tests/fuzz/work
mkdir -p "$work/corpus" "$work/seeds"
# The seeds: every netlist and include file in the repository (not the
# copies a run before this one left in $work: their names grow with each
# run, past what the file system takes).
find "$top/netlists" "$top/tests" -path "$work" -prune -o -type f \( -name '*.cir' -o -name '*.inc' -o -name '*.sp' \) -print |
while read -r f; do
    cp "$f" "$work/seeds/$(echo "$f" | sed "s|$top/||; s|/|_|g")"
done
cd "$work"
# One child process at a time (-fork=1: the machine is shared), which
# keeps going after a finding so a long unattended run reports them all.
# 2 s per input is a hang; 2 GB is more memory than any front-end input
# deserves.
exec "$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$secs" -timeout=2 -rss_limit_mb=2048 \
    -max_len=65536 -dict="$top/tests/fuzz/fuzz.dict" -print_final_stats=1 \
    "$work/corpus" "$work/seeds" "$top/tests/fuzz/corpus"
