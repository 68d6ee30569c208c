# energy.sh: the energy balance of spec formulations section 5 for every
# example system, in both formulations.  w() of C, L, M and S is the energy
# each stores, of R and D the energy dissipated since t = 0, of V, I and F
# the energy supplied since t = 0; moving coils and linkages store and
# dissipate nothing.  So at every output point
#     sum stored(t) - sum stored(0) + sum dissipated(t) - sum supplied(t) = 0
# to integration accuracy: checked to 1e-4 of the largest energy involved,
# at reltol 1e-6.  The reference is conservation of energy itself, not an
# earlier run.

. "$(dirname "$0")/lib.sh"

NETS="$top_srcdir/netlists"

for cir in "$NETS"/*.cir; do
    net=$(basename "$cir" .cir)
    [ "$net" = mems_pullin ] && continue        # stops at pull-in by design
    # every element that stores, dissipates or supplies energy
    sigs=$(awk 'NR > 1 && !/^[ \t]*[*.+]/ && NF > 0 { c = tolower(substr($1, 1, 1))
                   if (index("clmsrdvif", c)) printf " w(%s)", tolower($1) }' "$cir")
    { grep -iv '^[ \t]*\.print' "$cir" | grep -iv '^[ \t]*\.end[ \t]*$'; echo ".print tran$sigs"; echo ".end"; } >"$WORK/$net.cir"
    for form in charge flux; do
        run_emnet -q -form $form -reltol 1e-6 -tran "$net.cir"
        ok $rc "$net $form: runs with every w() printed (exit 0)" "exit status $rc" "$err"
        msg=$(printf '%s\n' "$out" | awk '
            function abs(a) { return a < 0 ? -a : a }
            NR == 1 { for (i = 2; i <= NF; i++) { c = substr($i, 3, 1)
                          kind[i] = index("clms", c) ? "s" : index("rd", c) ? "d" : "p" } next }
            { st = 0; di = 0; su = 0
              for (i = 2; i <= NF; i++) { if (kind[i] == "s") st += $i; else if (kind[i] == "d") di += $i; else su += $i
                                          if (abs($i) > big) big = abs($i) }
              if (NR == 2) st0 = st
              r = st - st0 + di - su; if (abs(r) > worst) { worst = abs(r); wt = $1 } }
            END { if (NR < 3) { print "no rows"; exit 1 }
                  printf "worst imbalance %.3g J at t=%s, largest energy %.3g J\n", worst, wt, big
                  exit !(worst <= 1e-4 * big) }')
        ok $? "$net $form: stored + dissipated - supplied stays constant to 1e-4" "$msg"
        printf '# %s\n' "$msg"
    done
done
done_testing
