#!/bin/sh
# lagrangian.sh: the text `emnet -lagrangian` prints, against Lagrangians,
# dissipation functions and generalized forces derived by hand from the
# element table of spec formulations section 2 (derivations in the comments
# beside each case).
#
# emnet may order and group terms as it likes, so L, D and each Q are not
# compared as strings: both the printed expression and the hand-derived one
# have every name (element values, coordinates, velocities, sources) replaced
# by numbers, and awk evaluates the two at a few points.  Header and
# coordinate lines are canonical and compared exactly.  Invalid topologies
# must exit 1 with exactly the message in NAME.err.
. "$(dirname "$0")/lib.sh"

LC_ALL=C
export LC_ALL
FORMS=$TESTS_DIR/netlists/form

# subst EXPR "name=value ...": every name replaced by (value), longest
# names first so that i1(t) does not eat into int_i1(t).
subst() {
    printf '%s\n' "$1" | awk -v subs="$2" '
        BEGIN {
            n = split(subs, a, " ")
            for (i = 1; i <= n; i++) {
                k = index(a[i], "=")
                tok[i] = substr(a[i], 1, k - 1)
                val[i] = substr(a[i], k + 1)
            }
            for (i = 1; i <= n; i++)
                for (j = i + 1; j <= n; j++)
                    if (length(tok[j]) > length(tok[i])) {
                        t = tok[i]; tok[i] = tok[j]; tok[j] = t
                        t = val[i]; val[i] = val[j]; val[j] = t
                    }
        }
        {
            s = $0
            for (i = 1; i <= n; i++) {
                out = ""
                while ((p = index(s, tok[i])) > 0) {
                    out = out substr(s, 1, p - 1) "(" val[i] ")"
                    s = substr(s, p + length(tok[i]))
                }
                s = out s
            }
            print s
        }'
}

# evaluate NUMERIC-EXPRESSION: its value; fails if a name is left over
# (awk would silently read an unknown name as 0).
evaluate() {
    rest=$(printf '%s\n' "$1" | sed -E 's/(sqrt|sin|cos|exp|log)\(/(/g
        s/([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?//g
        s/[-+*\/^(). ]//g')
    [ -z "$rest" ] || return 1
    awk "BEGIN { printf \"%.17g\\n\", $1 }"
}

# same_value NAME GOT WANT POINT...: GOT and WANT agree to 1e-9 at every
# point (a point is a list of name=value).
same_value() {
    sv_name=$1 sv_got=$2 sv_want=$3
    shift 3
    if [ -z "$sv_got" ]; then
        ok 1 "$sv_name" "emnet printed no such line" "want: $sv_want"
        return
    fi
    for pt in "$@"; do
        if ! g=$(evaluate "$(subst "$sv_got" "$pt")"); then
            ok 1 "$sv_name" "unknown names in: $sv_got" "point: $pt"
            return
        fi
        if ! w=$(evaluate "$(subst "$sv_want" "$pt")"); then
            ok 1 "$sv_name" "unknown names in the reference: $sv_want"
            return
        fi
        if ! awk -v g="$g" -v w="$w" 'BEGIN { d = g - w; if (d < 0) d = -d; s = w < 0 ? -w : w
                                              exit !(d <= 1e-9 * s || d <= 1e-300) }'; then
            ok 1 "$sv_name" "got:  $sv_got" "want: $sv_want" "at $pt:" "$g against $w"
            return
        fi
    done
    ok 0 "$sv_name"
}

# field PREFIX: the rest of the output line that starts with "PREFIX = "
field() {
    printf '%s\n' "$out" | awk -v p="$1 = " 'index($0, p) == 1 { print substr($0, length(p) + 1) }'
}

# check_form NAME CIR FORM POINT...: runs `emnet -lagrangian -form FORM`
# and checks it against the variables HEAD (header line), COORDS (the
# coordinate lines, newline separated), WANT_L, WANT_D and WANT_Q (lines
# "coordinate=expression", one per non-zero generalized force).
check_form() {
    cf_name=$1 cf_cir=$2 cf_form=$3
    shift 3
    run_emnet -lagrangian -form "$cf_form" "$FORMS/$cf_cir"
    if [ "$rc" -ne 0 ] || [ -n "$err" ]; then
        ok 1 "$cf_name: runs" "exit status $rc" "$err"
        return
    fi
    ok 0 "$cf_name: runs"
    got_head=$(printf '%s\n' "$out" | sed -n 1p)
    [ "$got_head" = "$HEAD" ]
    ok $? "$cf_name: header line" "got:  $got_head" "want: $HEAD"
    got_coords=$(printf '%s\n' "$out" | sed -n 's/^#   //p')
    [ "$got_coords" = "$COORDS" ]
    ok $? "$cf_name: coordinates" "got:" "$got_coords" "want:" "$COORDS"
    same_value "$cf_name: L" "$(field L)" "$WANT_L" "$@"
    same_value "$cf_name: D" "$(field D)" "$WANT_D" "$@"
    got_q=$(printf '%s\n' "$out" | sed -n 's/^Q(\(.*\)) = .*/\1/p' | tr '\n' ' ')
    want_q=$(printf '%s\n' "$WANT_Q" | sed -n 's/^\([^=]*\)=.*/\1/p' | tr '\n' ' ')
    [ "$got_q" = "$want_q" ]
    ok $? "$cf_name: generalized forces on ${want_q:-no coordinate}" "got forces on: ${got_q:-none}"
    # a here-document, not a pipe: the loop must run in this shell to count
    while IFS= read -r q; do
        [ -n "$q" ] || continue
        same_value "$cf_name: Q(${q%%=*})" "$(field "Q(${q%%=*})")" "${q#*=}" "$@"
    done <<EOF
$WANT_Q
EOF
}

# --------------------------------------------------- Preumont, Example 1
# Charge: no current source in the tree, and capacitors before resistors
# before inductors, so the tree is C1, C2 and R1 (grown from ground by R1
# to 3, C2 to 2, C1 to 1) and L1 closes the only loop: L1 (1->0), then
# R1 (0->3), C2 (3->2) and C1 (2->1), each against its sense.  The
# source's prescribed loop runs I1 (0->2), C2 and R1 with their senses:
#   Q(C1) = -q,  Q(C2) = Qs - q,  i(R1) = I - q',
#   L = l1 q'^2/2 - (-q)^2/(2 c1) - (Qs - q)^2/(2 c2),  D = r1 (I - q')^2/2.
# No generalized force (the current source is eliminated).
P1="l1=0.7 c1=0.45 c2=1.9 r1=1.3 q1=0.35 q1'=-0.8 int_i1(t)=0.6 i1(t)=-0.25"
P2="l1=1.6 c1=0.8 c2=0.3 r1=0.55 q1=-1.1 q1'=0.45 int_i1(t)=-0.2 i1(t)=0.9"
P3="l1=0.25 c1=2.2 c2=1.1 r1=3.1 q1=0.05 q1'=1.3 int_i1(t)=1.4 i1(t)=0.3"
HEAD="# charge formulation: 1 generalized coordinates (1 electrical, 0 mechanical)"
COORDS="q1: charge of the loop closed by l1"
WANT_L="l1*q1'^2/2 - (-q1)^2/(2*c1) - (int_i1(t)-q1)^2/(2*c2)"
WANT_D="r1*(i1(t)-q1')^2/2"
WANT_Q=""
check_form "preumont charge" preumont.cir charge "$P1" "$P2" "$P3"

# Flux: three node fluxes; I1 drives I into node 2, power -I e with
# e = lambda(0)' - lambda(2)', so Q(lambda(2)) = I.
#   L = c1 (l1' - l2')^2/2 + c2 (l2' - l3')^2/2 - l1^2/(2 L1),  D = l3'^2/(2 r1)
HEAD="# flux formulation: 3 generalized coordinates (3 electrical, 0 mechanical)"
COORDS="lambda(1): flux linkage of node 1
lambda(2): flux linkage of node 2
lambda(3): flux linkage of node 3"
WANT_L="c1*(lambda(1)'-lambda(2)')^2/2 + c2*(lambda(2)'-lambda(3)')^2/2 - lambda(1)^2/(2*l1)"
WANT_D="lambda(3)'^2/(2*r1)"
WANT_Q="lambda(2)=i1(t)"
F1="l1=0.7 c1=0.45 c2=1.9 r1=1.3 lambda(1)=0.3 lambda(2)=-0.6 lambda(3)=1.2 lambda(1)'=0.9 lambda(2)'=-0.4 lambda(3)'=0.15 i1(t)=-0.25 int_i1(t)=0.6"
F2="l1=1.6 c1=0.8 c2=0.3 r1=0.55 lambda(1)=-1.3 lambda(2)=0.2 lambda(3)=0.7 lambda(1)'=-0.35 lambda(2)'=1.1 lambda(3)'=-0.8 i1(t)=0.9 int_i1(t)=-0.2"
check_form "preumont flux" preumont.cir flux "$F1" "$F2"

# -form auto takes the formulation with fewer coordinates; -compare
# prints both, charge first.
run_emnet -lagrangian "$FORMS/preumont.cir"
got=$(printf '%s\n' "$out" | sed -n 1p)
[ "$got" = "# charge formulation: 1 generalized coordinates (1 electrical, 0 mechanical)" ]
ok $? "preumont auto: the charge formulation (1 coordinate against 3)" "got: $got"
run_emnet -lagrangian -compare "$FORMS/preumont.cir"
got=$(printf '%s\n' "$out" | grep '^# [a-z]* formulation:' | cut -d' ' -f2-4 | tr '\n' ' ')
[ "$rc" -eq 0 ] && [ "$got" = "charge formulation: 1 flux formulation: 3 " ]
ok $? "preumont -compare: both formulations, charge first" "exit $rc, headers: $got"

# ---------------------------------------------------------------- RC
# Charge: the tree from ground takes V1 and C1; R1 closes the loop
# R1 (in->out), C1, V1 backwards: i(V1) = -q', power -E i(V1) = E q'.
P1="c1=0.45 r1=1.3 q1=0.35 q1'=-0.8 v1(t)=0.6 int_v1(t)=-0.3"
P2="c1=1.7 r1=0.4 q1=-1.2 q1'=0.25 v1(t)=-1.1 int_v1(t)=0.9"
HEAD="# charge formulation: 1 generalized coordinates (1 electrical, 0 mechanical)"
COORDS="q1: charge of the loop closed by r1"
WANT_L="-q1^2/(2*c1)"
WANT_D="r1*q1'^2/2"
WANT_Q="q1=v1(t)"
check_form "rc charge" rc.cir charge "$P1" "$P2"

# Flux: lambda(in) is the source's flux; only lambda(out) is free.
F1="c1=0.45 r1=1.3 lambda(out)=0.35 lambda(out)'=-0.8 v1(t)=0.6 int_v1(t)=-0.3"
F2="c1=1.7 r1=0.4 lambda(out)=-1.2 lambda(out)'=0.25 v1(t)=-1.1 int_v1(t)=0.9"
HEAD="# flux formulation: 1 generalized coordinates (1 electrical, 0 mechanical)"
COORDS="lambda(out): flux linkage of node out"
WANT_L="c1*lambda(out)'^2/2"
WANT_D="(v1(t)-lambda(out)')^2/(2*r1)"
WANT_Q=""
check_form "rc flux" rc.cir flux "$F1" "$F2"

# ---------------------------------------------------------------- LC
# Charge: the tree takes C1 (preferred to L1), L1 closes the loop (1 to
# 0 through L1, back through C1 against its sense): i(L1) = q', Q(C1) =
# -q.  Flux: one node.  Lossless and unforced: D = 0, no Q.
P1="l1=0.7 c1=0.45 q1=0.35 q1'=-0.8"
P2="l1=1.9 c1=1.3 q1=-1.2 q1'=0.25"
HEAD="# charge formulation: 1 generalized coordinates (1 electrical, 0 mechanical)"
COORDS="q1: charge of the loop closed by l1"
WANT_L="l1*q1'^2/2 - (-q1)^2/(2*c1)"
WANT_D="0"
WANT_Q=""
check_form "lc charge" lc.cir charge "$P1" "$P2"

F1="l1=0.7 c1=0.45 lambda(1)=0.35 lambda(1)'=-0.8"
F2="l1=1.9 c1=1.3 lambda(1)=-1.2 lambda(1)'=0.25"
HEAD="# flux formulation: 1 generalized coordinates (1 electrical, 0 mechanical)"
COORDS="lambda(1): flux linkage of node 1"
WANT_L="c1*lambda(1)'^2/2 - lambda(1)^2/(2*l1)"
check_form "lc flux" lc.cir flux "$F1" "$F2"

# ---------------------------------------------------------- moving coil
# Charge: tree V1, T1 (from ground), R1; L1 closes the loop L1 (a->b),
# T1, V1 backwards, R1, so i(T1) = q' and i(V1) = -q'.  The coil adds the
# coenergy T i x(cone); the spring pulls towards X0 = 1m.
#   L = l1 q'^2/2 + t1 q' x + m1 x'^2/2 - s1 (x - 0.001)^2/2
#   D = r1 q'^2/2 + d1 x'^2/2,  Q(q1) = E
# Flux: lambda(in) = int E, lambda(b) = T x(cone) (T = 7 in the netlist),
# lambda(a) free:
#   L = -(lambda(a) - 7 x)^2/(2 l1) + m1 x'^2/2 - s1 (x - 0.001)^2/2
#   D = (E - lambda(a)')^2/(2 r1) + d1 x'^2/2,  no Q.
P1="l1=0.7 t1=7 m1=0.45 s1=1.9 r1=1.3 d1=0.6 q1=0.35 q1'=-0.8 x(cone)=0.02 x(cone)'=-0.9 v1(t)=0.6 int_v1(t)=-0.3"
P2="l1=1.6 t1=7 m1=2.1 s1=0.3 r1=0.4 d1=1.7 q1=-1.2 q1'=0.25 x(cone)=-0.3 x(cone)'=0.55 v1(t)=-1.1 int_v1(t)=0.9"
HEAD="# charge formulation: 2 generalized coordinates (1 electrical, 1 mechanical)"
COORDS="q1: charge of the loop closed by l1
x(cone): displacement of mechanical node cone"
WANT_L="l1*q1'^2/2 + t1*q1'*x(cone) + m1*x(cone)'^2/2 - s1*(x(cone)-0.001)^2/2"
WANT_D="r1*q1'^2/2 + d1*x(cone)'^2/2"
WANT_Q="q1=v1(t)"
check_form "coil charge" coil.cir charge "$P1" "$P2"

F1="l1=0.7 t1=7 m1=0.45 s1=1.9 r1=1.3 d1=0.6 lambda(a)=0.35 lambda(a)'=-0.8 x(cone)=0.02 x(cone)'=-0.9 v1(t)=0.6 int_v1(t)=-0.3"
F2="l1=1.6 t1=7 m1=2.1 s1=0.3 r1=0.4 d1=1.7 lambda(a)=-1.2 lambda(a)'=0.25 x(cone)=-0.3 x(cone)'=0.55 v1(t)=-1.1 int_v1(t)=0.9"
HEAD="# flux formulation: 2 generalized coordinates (1 electrical, 1 mechanical)"
COORDS="lambda(a): flux linkage of node a
x(cone): displacement of mechanical node cone"
WANT_L="-(lambda(a)-7*x(cone))^2/(2*l1) + m1*x(cone)'^2/2 - s1*(x(cone)-0.001)^2/2"
WANT_D="(v1(t)-lambda(a)')^2/(2*r1) + d1*x(cone)'^2/2"
WANT_Q=""
check_form "coil flux" coil.cir flux "$F1" "$F2"

# ---------------------------------------------------------------- C(x)
# C(x) = 1p/(1 - x/2u).  Charge: tree V1, C1; R1 closes the loop, so
# Q(C1) = q and i(V1) = -q'.
#   L = -q^2/(2 C(x)) + m1 x'^2/2 - s1 x^2/2,  D = r1 q'^2/2 + d1 x'^2/2,
#   Q(q1) = E.
# Flux: L = C(x) lambda(2)'^2/2 + m1 x'^2/2 - s1 x^2/2,
#   D = (E - lambda(2)')^2/(2 r1) + d1 x'^2/2, no Q.
P1="m1=0.45 s1=1.9 r1=1.3 d1=0.6 q1=3e-12 q1'=-0.8e-9 x(plate)=0.5e-6 x(plate)'=-0.9 v1(t)=0.6 int_v1(t)=-0.3"
P2="m1=2.1 s1=0.3 r1=0.4 d1=1.7 q1=-1.2e-12 q1'=2.5e-9 x(plate)=-0.7e-6 x(plate)'=0.55 v1(t)=-1.1 int_v1(t)=0.9"
HEAD="# charge formulation: 2 generalized coordinates (1 electrical, 1 mechanical)"
COORDS="q1: charge of the loop closed by r1
x(plate): displacement of mechanical node plate"
WANT_L="-q1^2/(2*(1e-12/(1-x(plate)/2e-6))) + m1*x(plate)'^2/2 - s1*x(plate)^2/2"
WANT_D="r1*q1'^2/2 + d1*x(plate)'^2/2"
WANT_Q="q1=v1(t)"
check_form "cx charge" cx.cir charge "$P1" "$P2"

F1="m1=0.45 s1=1.9 r1=1.3 d1=0.6 lambda(2)=0.35 lambda(2)'=-0.8 x(plate)=0.5e-6 x(plate)'=-0.9 v1(t)=0.6 int_v1(t)=-0.3"
F2="m1=2.1 s1=0.3 r1=0.4 d1=1.7 lambda(2)=-1.2 lambda(2)'=0.25 x(plate)=-0.7e-6 x(plate)'=0.55 v1(t)=-1.1 int_v1(t)=0.9"
HEAD="# flux formulation: 2 generalized coordinates (1 electrical, 1 mechanical)"
COORDS="lambda(2): flux linkage of node 2
x(plate): displacement of mechanical node plate"
WANT_L="(1e-12/(1-x(plate)/2e-6))*lambda(2)'^2/2 + m1*x(plate)'^2/2 - s1*x(plate)^2/2"
WANT_D="(v1(t)-lambda(2)')^2/(2*r1) + d1*x(plate)'^2/2"
WANT_Q=""
check_form "cx flux" cx.cir flux "$F1" "$F2"

# ------------------------------------------------------ invalid circuits
# In both formulations: exit status 1, nothing on standard output, and
# exactly the diagnostic in NAME.err (the message names the elements or
# the node; file:line:col points at one of them).
cd "$FORMS" || exit 1
for cir in bad_*.cir; do
    name=${cir%.cir}
    for form in charge flux; do
        "$EMNET" -lagrangian -form "$form" "$cir" >"$WORK/out" 2>"$WORK/err"
        check_invalid "$name $form" "$name.err" $?
    done
done
done_testing
