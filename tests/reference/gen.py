#!/usr/bin/python3
"""Reference solutions for the electromechanical validation suite.

For every netlist in netlists/ that tests/validate.sh checks, this script
derives the equations of motion independently of emnet (by hand from Newton
and Kirchhoff, or with SymPy from a Lagrangian written here), integrates them
with SciPy's Radau at rtol 1e-10, and writes tests/reference/<name>.tbl in the
exact format of emnet's `.print tran` table.  make check only reads the .tbl
files, so it needs neither Python nor SciPy.

Parameter values, the .tran grid and the printed signals are read from the
netlist itself, so the netlist and its reference cannot drift apart.  Every
reference is also checked here by a second means before it is written:
another integrator (DOP853), the energy balance of the trajectory, and where
they exist an analytic solution, an analytic static equilibrium or an
analytic small-oscillation frequency.

Usage: /usr/bin/python3 tests/reference/gen.py [name ...]   (from anywhere)
"""
import math
import os
import re
import sys

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp
from scipy.linalg import expm
from scipy.optimize import brentq

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
NETLISTS = os.path.join(TOP, "netlists")

RTOL = 1e-10

# ---------------------------------------------------------------- netlists

SCALE = {"f": 1e-15, "p": 1e-12, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3,
         "meg": 1e6, "g": 1e9, "t": 1e12, "mil": 25.4e-6}
NUM = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(meg|mil|[fpnumkgt])?([a-z]*)$")


def spice_number(text):
    """A SPICE number with scale suffix and unit letters, e.g. 0.6m, 1meg."""
    m = NUM.match(text.lower())
    if not m:
        raise ValueError("not a number: " + text)
    return float(m.group(1)) * SCALE.get(m.group(2) or "", 1.0)


def spice_eval(text, env):
    """Evaluate a .param value: a number or an expression over earlier params."""
    text = text.strip().strip("'{}").lower()
    try:
        return spice_number(text)
    except ValueError:
        pass
    py = re.sub(r"(?<![\w.])(\d+\.?\d*(?:e[+-]?\d+)?)(meg|mil|[fpnumkgt])(?![\w(])",
                lambda m: repr(float(m.group(1)) * SCALE[m.group(2)]), text)
    py = py.replace("^", "**")
    scope = {k: getattr(math, k) for k in ("sin", "cos", "tan", "sqrt", "exp", "atan",
                                           "sinh", "cosh", "tanh", "log10")}
    scope.update(pi=math.pi, ln=math.log, log=math.log, abs=abs, min=min, max=max)
    scope.update(env)
    return float(eval(py, {"__builtins__": {}}, scope))


class Netlist:
    """The parts of a netlist a reference needs: .param, .tran, .print tran."""

    def __init__(self, name, path=None):
        self.name = name
        self.path = path or os.path.join(NETLISTS, name + ".cir")
        with open(self.path) as f:
            raw = f.read().splitlines()[1:]          # line 1 is the title
        lines = []
        for ln in raw:
            ln = re.split(r";|\$ ", ln)[0].rstrip()
            if not ln.strip() or ln.lstrip().startswith("*"):
                continue
            if ln.startswith("+") and lines:
                lines[-1] += " " + ln[1:]
            else:
                lines.append(ln.strip())
        self.lines = lines
        self.p = {}
        self.prints = []
        for ln in lines:
            low = ln.lower()
            if low.startswith(".param"):
                for k, v in re.findall(r"(\w+)\s*=\s*('[^']*'|\{[^}]*\}|\S+)", ln[6:]):
                    self.p[k.lower()] = spice_eval(v, self.p)
            elif low.startswith(".tran"):
                f = low.split()[1:]
                nums = [spice_number(x) for x in f if x != "uic"]
                self.tstep, self.tstop = nums[0], nums[1]
                self.tstart = nums[2] if len(nums) > 2 else 0.0
                assert "uic" in f, name + ": the references start from rest (uic)"
            elif low.startswith(".print"):
                f = low.split()
                assert f[1] == "tran"
                self.prints += [re.sub(r"\s+", "", s) for s in f[2:]]

    def element(self, ename):
        """The netlist line of element ename (checked by the systems below so
        that a change of topology in the netlist is noticed here)."""
        for ln in self.lines:
            if ln.split()[0].lower() == ename.lower():
                return ln.lower()
        raise KeyError(self.name + ": no element " + ename)

    def times(self):
        n = int(math.floor((self.tstop - self.tstart) / self.tstep * (1 + 1e-12) + 1e-9))
        return self.tstart + self.tstep * np.arange(n + 1)


def expect(nl, ename, text):
    """Assert that element ename is written as `text` (blanks normalized)."""
    got = " ".join(nl.element(ename).split())
    want = " ".join(text.lower().split())
    assert got == want, "%s: %s is '%s', the reference models '%s'" % (nl.name, ename, got, want)


# ---------------------------------------------------------------- sources

def pwl(points):
    def f(t):
        ts, vs = points[0::2], points[1::2]
        return float(np.interp(t, ts, vs))
    return f


def pulse(v1, v2, td, tr, tf, pw, per):
    def f(t):
        if t < td:
            return v1
        t = (t - td) % per
        if t < tr:
            return v1 + (v2 - v1) * t / tr
        if t < tr + pw:
            return v2
        if t < tr + pw + tf:
            return v2 + (v1 - v2) * (t - tr - pw) / tf
        return v1
    return f


# ---------------------------------------------------------------- integration

def integrate(rhs, y0, t_end, breaks=(), method="Radau", rtol=RTOL, atol=None, events=None):
    """Integrate piecewise between source breakpoints (corners of PWL and
    PULSE), so that no step straddles a kink.  Returns (tfinal, evaluate(t))
    where evaluate uses each segment's dense output; tfinal < t_end when a
    terminal event stopped the run."""
    edges = sorted({0.0, t_end} | {b for b in breaks if 0 < b < t_end})
    segs = []
    y = np.array(y0, dtype=float)
    for a, b in zip(edges[:-1], edges[1:]):
        s = solve_ivp(rhs, (a, b), y, method=method, rtol=rtol, atol=atol,
                      dense_output=True, events=events)
        assert s.success, s.message
        segs.append((a, s.t[-1], s.sol))
        y = s.y[:, -1]
        if s.status == 1:
            break

    def evaluate(t):
        for a, b, sol in segs:
            if t <= b * (1 + 1e-14):
                return sol(min(t, b))
        raise ValueError("t beyond the integration")
    return segs[-1][1], evaluate


def table(nl, sigfun, evaluate, t_last=None):
    """Rows of the .print table: every signal named in the netlist must be
    known to sigfun(t, y) -> dict."""
    rows = []
    for t in nl.times():
        if t_last is not None and t > t_last:
            break
        s = sigfun(t, evaluate(t))
        missing = [n for n in nl.prints if n not in s]
        assert not missing, "%s: no reference for %s" % (nl.name, missing)
        rows.append([t] + [s[n] for n in nl.prints])
    return np.array(rows)


def write_table(nl, rows):
    path = os.path.join(HERE, nl.name + ".tbl")
    with open(path, "w") as f:
        f.write(" ".join(["time"] + nl.prints) + "\n")
        for r in rows:
            f.write(" ".join("%.9e" % v for v in r) + "\n")
    print("wrote %s: %d rows x %d signals" % (os.path.relpath(path, TOP), len(rows), len(nl.prints)))


def agree(name, a, b, tol=1e-6):
    """Two reference tables of the same system must agree column by column,
    relative to each column's peak."""
    pk = np.maximum(np.abs(a).max(axis=0), 1e-300)
    err = (np.abs(a - b) / pk).max()
    print("  %s: worst difference %.2e of peak" % (name, err))
    assert err < tol, name


def energy_check(name, t, stored, supplied, tol=1e-7):
    """stored(t) - stored(0) must equal the energy supplied by the sources
    minus the energy dissipated, integrated along the trajectory (carried as
    an extra state).  Sign errors in a coupling term break this at once."""
    bal = stored - stored[0] - supplied
    scale = max(np.abs(stored).max(), np.abs(supplied).max())
    err = np.abs(bal).max() / scale
    print("  %s: energy balance closes to %.2e of the largest energy" % (name, err))
    assert err < tol, name


# ---------------------------------------------------------------- 1. yoke
# Motor: la di/dt = vs - ra i - kt w  (KVL; back-emf kt w)
# Mechanics from the Lagrangian of the shaft and the cart, x = d cos(alpha):
#   T = jm w^2/2 + mc (d sin(alpha) w)^2/2,  V = kc (d cos(alpha))^2/2
#   D = bm w^2/2 + cc (d sin(alpha) w)^2/2,  Q_alpha = kt i
# gives (jm + mc d^2 s^2) w' + mc d^2 s c w^2 + (bm + cc d^2 s^2) w
#        - kc d^2 s c = kt i          (s = sin alpha, c = cos alpha)

def mech_equations(coords, T, V, D):
    """Lagrange's equations of a mechanical system, by SymPy: returns
    functions M(q) and h(q, qd, Q0, Q1, ...) with M qdd = h, for the
    coordinates coords (sympy Functions of t), the kinetic energy T(q, qd),
    potential V(q), dissipation D(q, qd) and generalized forces Q0...
    given numerically at each call."""
    t = sp.Symbol("t")
    Q = sp.symbols("Q0:%d" % len(coords))
    q = [c(t) for c in coords]
    qd = [sp.diff(x, t) for x in q]
    qdd = [sp.diff(x, t, 2) for x in q]
    Lag = T(q, qd) - V(q)
    Dis = D(q, qd)
    eqs = [sp.diff(sp.diff(Lag, qd[k]), t) - sp.diff(Lag, q[k]) + sp.diff(Dis, qd[k]) - Q[k]
           for k in range(len(q))]
    M = sp.Matrix([[sp.diff(e, a) for a in qdd] for e in eqs])
    h = sp.Matrix([-e.subs({a: 0 for a in qdd}) for e in eqs])
    qs = sp.symbols("q0:%d" % len(q))
    vs = sp.symbols("v0:%d" % len(q))
    sub = {}
    for k in range(len(q)):
        sub[qd[k]] = vs[k]
    for k in range(len(q)):
        sub[q[k]] = qs[k]
    M = sp.simplify(M.subs(sub))
    h = h.subs(sub)
    return sp.lambdify([qs], M, "numpy"), sp.lambdify([qs, vs] + list(Q), h, "numpy")


def yoke():
    nl = Netlist("yoke")
    P = nl.p
    expect(nl, "Tm", "Tm b 0 alpha 0 kt")
    expect(nl, "Jyoke", "Jyoke cart 'd*cos(x(alpha))'")
    expect(nl, "Scart", "Scart cart 0 kc")
    vs, ra, la, kt, jm, bm = (P[k] for k in ("vs", "ra", "la", "kt", "jm", "bm"))
    d, mc, kc, cc = (P[k] for k in ("d", "mc", "kc", "cc"))

    def rhs(t, y):
        i, al, w, _ = y
        s, c = math.sin(al), math.cos(al)
        di = (vs - ra * i - kt * w) / la
        dw = (kt * i - bm * w - cc * d * d * s * s * w - mc * d * d * s * c * w * w
              + kc * d * d * s * c) / (jm + mc * d * d * s * s)
        pin = vs * i - ra * i * i - bm * w * w - cc * (d * s * w) ** 2
        return [di, w, dw, pin]

    def sig(t, y):
        i, al, w, _ = y
        xc, vc = d * math.cos(al), -d * math.sin(al) * w
        return {"i(la)": i, "v(alpha)": w, "x(alpha)": al, "x(cart)": xc, "v(cart)": vc,
                "v(b)": kt * w, "phi(la)": la * i, "w(la)": la * i * i / 2, "f(tm)": kt * i,
                "f(scart)": -kc * xc, "f(dcart)": -cc * vc, "w(mcart)": mc * vc * vc / 2,
                "i(vs)": -i,
                "stored": la * i * i / 2 + jm * w * w / 2 + mc * vc * vc / 2 + kc * xc * xc / 2,
                "supplied": y[3]}

    _, ev = integrate(rhs, [0, 0, 0, 0], nl.tstop, atol=1e-12)
    rows = table(nl, sig, ev)
    # second derivation: the same system from SymPy's Lagrange equations
    Mf, hf = mech_equations(
        [sp.Function("alpha")],
        lambda q, v: jm * v[0] ** 2 / 2 + mc * (sp.diff(d * sp.cos(q[0]), q[0]) * v[0]) ** 2 / 2,
        lambda q: kc * (d * sp.cos(q[0])) ** 2 / 2,
        lambda q, v: bm * v[0] ** 2 / 2 + cc * (d * sp.sin(q[0]) * v[0]) ** 2 / 2)

    def rhs2(t, y):
        i, al, w = y
        acc = np.linalg.solve(np.atleast_2d(Mf([al])), np.ravel(hf([al], [w], kt * i)))
        return [(vs - ra * i - kt * w) / la, w, acc[0]]
    _, ev2 = integrate(rhs2, [0, 0, 0], nl.tstop, method="DOP853", rtol=1e-12, atol=1e-14)
    agree("yoke: hand equations (Radau) vs SymPy Lagrangian (DOP853)", rows,
          table(nl, lambda t, y: sig(t, list(y) + [0]), ev2))
    energy_check("yoke", rows[:, 0], *[np.array([sig(t, ev(t))[k] for t in rows[:, 0]])
                                       for k in ("stored", "supplied")])
    # starting torque: the cart sits at a turning point, so at t=0+ the
    # shaft sees jm alone and the current rises as vs t / la
    write_table(nl, rows)


# ---------------------------------------------------------------- 2. crank
# Coordinates alpha (crank) and theta (pendulum from the downward vertical);
# Lagrangian written in Cartesian positions of the cart and the bob:
#   xc = rc cos a + sqrt(lr^2 - rc^2 sin^2 a),  xb = xc + lp sin th,  yb = -lp cos th
#   T = jm ad^2/2 + mc xc'^2/2 + mp (xb'^2 + yb'^2)/2
#   V = kc (xc - lr)^2/2 + mp grav yb
#   D = bm ad^2/2 + cc xc'^2/2 + bp thd^2/2,   Q_alpha = kt i
# The motor current obeys la di/dt = vs - ra i - kt ad.

def crank():
    nl = Netlist("crank")
    P = nl.p
    expect(nl, "Jslide", "Jslide cart 'rc*cos(x(alpha)) + sqrt(lr^2 - (rc*sin(x(alpha)))^2)'")
    expect(nl, "Jbobx", "Jbobx bobx 'x(cart) + lp*sin(x(theta))'")
    expect(nl, "Jboby", "Jboby boby '-lp*cos(x(theta))'")
    expect(nl, "Scart", "Scart cart 0 kc X0=lr")
    expect(nl, "Fg", "Fg boby 0 DC '-mp*grav'")
    vs, ra, la, kt, jm, bm = (P[k] for k in ("vs", "ra", "la", "kt", "jm", "bm"))
    rc, lr, mc, kc, cc = (P[k] for k in ("rc", "lr", "mc", "kc", "cc"))
    lp, mp, grav, bp = (P[k] for k in ("lp", "mp", "grav", "bp"))

    def pos(q):
        xc = rc * sp.cos(q[0]) + sp.sqrt(lr ** 2 - (rc * sp.sin(q[0])) ** 2)
        return xc, xc + lp * sp.sin(q[1]), -lp * sp.cos(q[1])

    def vel(e, q, v):
        return sum(sp.diff(e, q[k]) * v[k] for k in range(2))

    def T(q, v):
        xc, xb, yb = pos(q)
        return (jm * v[0] ** 2 / 2 + mc * vel(xc, q, v) ** 2 / 2
                + mp * (vel(xb, q, v) ** 2 + vel(yb, q, v) ** 2) / 2)

    def V(q):
        xc, xb, yb = pos(q)
        return kc * (xc - lr) ** 2 / 2 + mp * grav * yb

    def D(q, v):
        xc, _, _ = pos(q)
        return bm * v[0] ** 2 / 2 + cc * vel(xc, q, v) ** 2 / 2 + bp * v[1] ** 2 / 2

    Mf, hf = mech_equations([sp.Function("alpha"), sp.Function("theta")], T, V, D)
    qs, vsym = sp.symbols("q0:2"), sp.symbols("v0:2")
    xc_e, xb_e, yb_e = pos(qs)
    posf = sp.lambdify([qs], [xc_e, xb_e, yb_e], "numpy")
    velf = sp.lambdify([qs, vsym], [vel(e, qs, vsym) for e in (xc_e, xb_e, yb_e)], "numpy")
    Tf = sp.lambdify([qs, vsym], T(qs, vsym), "numpy")
    Vf = sp.lambdify([qs], V(qs), "numpy")
    Df = sp.lambdify([qs, vsym], D(qs, vsym), "numpy")

    def rhs(t, y):
        i, al, th, wa, wt, _ = y
        acc = np.linalg.solve(np.asarray(Mf([al, th]), dtype=float),
                              np.ravel(np.asarray(hf([al, th], [wa, wt], kt * i, 0), dtype=float)))
        pin = vs * i - ra * i * i - 2 * Df([al, th], [wa, wt])
        return [(vs - ra * i - kt * wa) / la, wa, wt, acc[0], acc[1], pin]

    def sig(t, y):
        i, al, th, wa, wt = y[:5]
        xc, xb, yb = posf([al, th])
        vc, vb, vyb = velf([al, th], [wa, wt])
        return {"i(la)": i, "x(alpha)": al, "v(alpha)": wa, "x(theta)": th, "v(theta)": wt,
                "x(cart)": xc, "v(cart)": vc, "x(bobx)": xb, "x(boby)": yb, "v(bobx)": vb,
                "f(tm)": kt * i, "f(scart)": -kc * (xc - lr), "w(mby)": mp * vyb * vyb / 2,
                "v(b)": kt * wa,
                "stored": la * i * i / 2 + Tf([al, th], [wa, wt]) + Vf([al, th]),
                "supplied": y[5]}

    y0 = [0, 0, 0, 0, 0, 0]
    _, ev = integrate(rhs, y0, nl.tstop, atol=1e-12)
    rows = table(nl, sig, ev)
    _, ev2 = integrate(rhs, y0, nl.tstop, method="DOP853", rtol=1e-12, atol=1e-14)
    agree("crank: Radau vs DOP853", rows, table(nl, sig, ev2))
    energy_check("crank", rows[:, 0], *[np.array([sig(t, ev(t))[k] for t in rows[:, 0]])
                                        for k in ("stored", "supplied")])
    # small oscillations of the pendulum on a clamped cart: the linearized
    # equations must give sqrt(grav/lp), a check of the SymPy derivation
    M0 = np.asarray(Mf([0.0, 0.0]), dtype=float)
    eps = 1e-7
    K = -(np.ravel(hf([0.0, eps], [0, 0], 0, 0)) - np.ravel(hf([0.0, -eps], [0, 0], 0, 0))) / (2 * eps)
    w2 = K[1] / M0[1, 1]
    print("  crank: pendulum small-oscillation frequency %.9f rad/s, sqrt(g/l) = %.9f"
          % (math.sqrt(w2), math.sqrt(grav / lp)))
    assert abs(math.sqrt(w2) / math.sqrt(grav / lp) - 1) < 1e-8
    write_table(nl, rows)


# ---------------------------------------------------------------- 3. Lagrange-Maxwell
# L = mk v^2/2 + H(x) i^2/2 - kk x^2/2 - q^2/(2 c1),  D = r1 i^2/2 + bk v^2/2,
# Q_q = vs sin(2 pi f0 t):
#   H i' + H'(x) v i + r1 i + q/c1 = e(t)
#   mk v' = H'(x) i^2/2 - kk x - bk v

def lagrange_maxwell():
    nl = Netlist("lagrange_maxwell")
    P = nl.p
    expect(nl, "L1", "L1 a b L='l0 + l1*tanh(x(core)/a)'")
    expect(nl, "V1", "V1 in 0 SIN(0 vs f0)")
    vs, f0, r1, c1 = P["vs"], P["f0"], P["r1"], P["c1"]
    l0, l1, a = P["l0"], P["l1"], P["a"]
    mk, kk, bk = P["mk"], P["kk"], P["bk"]

    def H(x):
        return l0 + l1 * math.tanh(x / a)

    def Hp(x):
        return l1 / a / math.cosh(x / a) ** 2

    def e(t):
        return vs * math.sin(2 * math.pi * f0 * t)

    def rhs(t, y):
        q, i, x, v, _ = y
        di = (e(t) - Hp(x) * v * i - r1 * i - q / c1) / H(x)
        dv = (Hp(x) * i * i / 2 - kk * x - bk * v) / mk
        return [i, di, v, dv, e(t) * i - r1 * i * i - bk * v * v]

    def sig(t, y):
        q, i, x, v = y[:4]
        return {"i(l1)": i, "q(c1)": q, "v(b)": q / c1, "phi(l1)": H(x) * i, "x(core)": x,
                "v(core)": v, "f(l1,core)": Hp(x) * i * i / 2, "w(l1)": H(x) * i * i / 2,
                "w(c1)": q * q / (2 * c1), "f(score)": -kk * x,
                "stored": H(x) * i * i / 2 + q * q / (2 * c1) + mk * v * v / 2 + kk * x * x / 2,
                "supplied": y[4]}

    y0 = [0, 0, 0, 0, 0]
    _, ev = integrate(rhs, y0, nl.tstop, atol=1e-13)
    rows = table(nl, sig, ev)
    _, ev2 = integrate(rhs, y0, nl.tstop, method="DOP853", rtol=1e-12, atol=1e-15)
    agree("lagrange_maxwell: Radau vs DOP853", rows, table(nl, sig, ev2))
    energy_check("lagrange_maxwell", rows[:, 0],
                 *[np.array([sig(t, ev(t))[k] for t in rows[:, 0]]) for k in ("stored", "supplied")])
    write_table(nl, rows)


# ---------------------------------------------------------------- 4. MEMS
# Charge q on the plates, displacement x toward the electrode:
#   rs q' = e(t) - q (g0 - x)/(eps0 area)          (KVL)
#   mp v' = q^2/(2 eps0 area) - km x - bp v          (force at constant charge)

def mems_system(nl):
    P = nl.p
    expect(nl, "Cact", "Cact top 0 C='eps0*area/(g0 - x(plate))'")
    expect(nl, "Vd", "Vd in 0 PWL(0 0 tr vdc)")
    ea, g0, km, mp, bp, rs = P["eps0"] * P["area"], P["g0"], P["km"], P["mp"], P["bp"], P["rs"]
    e = pwl([0, 0, P["tr"], P["vdc"]])

    def rhs(t, y):
        q, x, v, _ = y
        i = (e(t) - q * (g0 - x) / ea) / rs
        return [i, v, (q * q / (2 * ea) - km * x - bp * v) / mp, e(t) * i - rs * i * i - bp * v * v]

    def sig(t, y):
        q, x, v = y[:3]
        vc = q * (g0 - x) / ea
        i = (e(t) - vc) / rs
        return {"x(plate)": x, "v(plate)": v, "q(cact)": q, "i(cact)": i, "i(rs)": i, "v(top)": vc,
                "f(cact,plate)": q * q / (2 * ea), "f(splate)": -km * x,
                "w(cact)": q * vc / 2,
                "stored": q * vc / 2 + mp * v * v / 2 + km * x * x / 2, "supplied": y[3]}
    return rhs, sig, [P["tr"]]


def mems():
    nl = Netlist("mems")
    P = nl.p
    rhs, sig, br = mems_system(nl)
    ea, g0, km, v = P["eps0"] * P["area"], P["g0"], P["km"], P["vdc"]
    vpi = math.sqrt(8 * km * g0 ** 3 / (27 * ea))
    assert abs(vpi / P["vpi"] - 1) < 1e-12 and v < vpi
    atol = [1e-24, 1e-18, 1e-12, 1e-30]
    _, ev = integrate(rhs, [0, 0, 0, 0], nl.tstop, br, atol=atol)
    rows = table(nl, sig, ev)
    _, ev2 = integrate(rhs, [0, 0, 0, 0], nl.tstop, br, method="DOP853", rtol=1e-12,
                       atol=[1e-26, 1e-20, 1e-14, 1e-32])
    agree("mems: Radau vs DOP853", rows, table(nl, sig, ev2))
    energy_check("mems", rows[:, 0], *[np.array([sig(t, ev(t))[k] for t in rows[:, 0]])
                                       for k in ("stored", "supplied")])
    # static equilibrium: smaller root of km x = ea v^2 / (2 (g0 - x)^2),
    # below the pull-in point g0/3
    xs = brentq(lambda x: km * x - ea * v * v / (2 * (g0 - x) ** 2), 0, g0 / 3, xtol=1e-20, rtol=1e-15)
    xend = rows[-1, 1 + nl.prints.index("x(plate)")]
    print("  mems: static x = %.9e m, reference at tstop %.9e (rel. diff %.1e)"
          % (xs, xend, abs(xend / xs - 1)))
    assert abs(xend / xs - 1) < 1e-4
    # ring-down frequency at the equilibrium: the electrostatic spring
    # softening km_eff = km - ea v^2/(g0 - xs)^3 (at constant voltage; rs C
    # is 1e-3 of the period) predicts the spacing of the last zero crossings
    # of x - xs, with the damping correction
    keff = km - ea * v * v / (g0 - xs) ** 3
    mp, bp = P["mp"], P["bp"]
    wd = math.sqrt(keff / mp - (bp / (2 * mp)) ** 2)
    tt = np.linspace(100e-6, nl.tstop, 200001)
    dx = np.array([ev(t)[1] for t in tt]) - xs
    zc = tt[:-1][np.sign(dx[:-1]) != np.sign(dx[1:])]
    half = np.mean(np.diff(zc))
    print("  mems: ring-down half period %.6e s, linearized pi/wd = %.6e s" % (half, math.pi / wd))
    assert abs(half * wd / math.pi - 1) < 2e-3
    with open(os.path.join(HERE, "mems.static"), "w") as f:
        f.write("# static equilibrium of netlists/mems.cir: smaller root of\n"
                "# km x = eps0 area vdc^2 / (2 (g0 - x)^2)\n")
        f.write("x(plate) %.9e\n" % xs)
    write_table(nl, rows)


def mems_pullin():
    nl = Netlist("mems_pullin")
    P = nl.p
    rhs, sig, br = mems_system(nl)
    g0 = P["g0"]
    assert P["vdc"] > P["vpi"]

    def closed(t, y):
        return y[1] - g0
    closed.terminal = True
    closed.direction = 1
    atol = [1e-24, 1e-18, 1e-12, 1e-30]
    tpi, ev = integrate(rhs, [0, 0, 0, 0], nl.tstop, br, atol=atol, events=closed)
    assert tpi < nl.tstop, "the plate must close the gap within .tran"
    rows = table(nl, sig, ev, t_last=tpi)
    tpi2, ev2 = integrate(rhs, [0, 0, 0, 0], nl.tstop, br, method="DOP853", rtol=1e-12,
                          atol=[1e-26, 1e-20, 1e-14, 1e-32], events=closed)
    print("  mems_pullin: gap closes at %.9e s (DOP853: %.9e s)" % (tpi, tpi2))
    assert abs(tpi2 / tpi - 1) < 1e-8
    agree("mems_pullin: Radau vs DOP853", rows, table(nl, sig, ev2, t_last=tpi))
    energy_check("mems_pullin", rows[:, 0], *[np.array([sig(t, ev(t))[k] for t in rows[:, 0]])
                                              for k in ("stored", "supplied")])
    # the window in which emnet must report the failure: the closing
    # instant, give or take one output step or 1 %
    slack = max(nl.tstep, 0.01 * tpi)
    with open(os.path.join(HERE, "mems_pullin.window"), "w") as f:
        f.write("# netlists/mems_pullin.cir: the gap closes at t = %.9e s in the reference;\n"
                "# emnet's failure time must fall in [t_lo, t_hi]\n" % tpi)
        f.write("%.9e %.9e\n" % (tpi - slack, tpi + slack))
    write_table(nl, rows)


# ---------------------------------------------------------------- 5. speaker
# Linear: le i' = e(t) - re i - bl v,  mms v' = bl i - rms v - x/cms,  x' = v.
# The reference is the exact solution (matrix exponential for the
# homogeneous part, phasors for the steady sine); Radau checks it.

def speaker():
    nl = Netlist("speaker")
    P = nl.p
    expect(nl, "Tvc", "Tvc b 0 cone 0 bl")
    expect(nl, "V1", "V1 in 0 SIN(0 vpk fdrv)")
    re_, le, bl, mms, cms, rms = (P[k] for k in ("re", "le", "bl", "mms", "cms", "rms"))
    vpk, w = P["vpk"], 2 * math.pi * P["fdrv"]
    ng = Netlist("speaker_ngspice", os.path.join(HERE, "speaker_ngspice.cir"))
    assert ng.p == P, "tests/reference/speaker_ngspice.cir: .param differs from the netlist's"
    A = np.array([[-re_ / le, 0, -bl / le],
                  [0, 0, 1],
                  [bl / mms, -1 / (cms * mms), -rms / mms]])
    B = np.array([1 / le, 0, 0])
    # steady state of y' = A y + B vpk sin(wt): y = Im(Y e^{jwt}), Y = (jw - A)^-1 B vpk
    Y = np.linalg.solve(1j * w * np.eye(3) - A, B * vpk)

    def exact(t):
        ys = np.imag(Y * np.exp(1j * w * t))
        y0s = np.imag(Y)
        return ys - expm(A * t) @ y0s

    def sig(t, y):
        i, x, v = y[:3]
        return {"i(lvc)": i, "v(cone)": v, "x(cone)": x, "v(b)": bl * v,
                "phi(lvc)": le * i, "f(tvc)": bl * i, "f(scone)": -x / cms, "f(dcone)": -rms * v,
                "w(mcone)": mms * v * v / 2, "w(scone)": x * x / (2 * cms), "w(lvc)": le * i * i / 2,
                "i(v1)": -i}

    def sig_full(t, y):
        s = sig(t, y)
        e = vpk * math.sin(w * t)
        s["v(a)"] = e - re_ * y[0]            # node a: source minus the drop in re
        return s

    rows = table(nl, sig_full, exact)

    def rhs(t, y):
        return A @ y[:3] + B * vpk * math.sin(w * t)
    _, ev = integrate(rhs, [0, 0, 0], nl.tstop, atol=1e-14)
    agree("speaker: analytic vs Radau", rows, table(nl, sig_full, ev))
    # the free-air resonance from the Thiele-Small parameters
    fs = 1 / (2 * math.pi * math.sqrt(mms * cms))
    print("  speaker: fs = %.2f Hz, Qms = %.2f, Qes = %.2f" %
          (fs, 2 * math.pi * fs * mms / rms, 2 * math.pi * fs * mms * re_ / bl ** 2))
    write_table(nl, rows)


# ---------------------------------------------------------------- 6. solenoid
# Flux linkage psi of the coil, plunger travel x:
#   psi' = e(t) - rcoil i,  i = psi / L(x)       (Faraday + KVL)
#   mpl v' = L'(x) i^2/2 - kpl x - bpl v          (force from the coenergy)

def solenoid():
    nl = Netlist("solenoid")
    P = nl.p
    expect(nl, "Lsol", "Lsol a 0 L='nt^2*mu0*ap/(g0 - x(plunger) + lfe/mur)'")
    expect(nl, "V1", "V1 in 0 PULSE(0 vs ton trise trise pw 1)")
    n2ma = P["nt"] ** 2 * P["mu0"] * P["ap"]
    geff = P["g0"] + P["lfe"] / P["mur"]
    rcoil, vs, mpl, kpl, bpl = (P[k] for k in ("rcoil", "vs", "mpl", "kpl", "bpl"))
    e = pulse(0, vs, P["ton"], P["trise"], P["trise"], P["pw"], 1.0)
    br = [P["ton"], P["ton"] + P["trise"], P["ton"] + P["trise"] + P["pw"],
          P["ton"] + 2 * P["trise"] + P["pw"]]

    def L(x):
        return n2ma / (geff - x)

    def Lp(x):
        return n2ma / (geff - x) ** 2

    def rhs(t, y):
        psi, x, v, _ = y
        i = psi / L(x)
        return [e(t) - rcoil * i, v, (Lp(x) * i * i / 2 - kpl * x - bpl * v) / mpl,
                e(t) * i - rcoil * i * i - bpl * v * v]

    def sig(t, y):
        psi, x, v = y[:3]
        i = psi / L(x)
        return {"i(lsol)": i, "phi(lsol)": psi, "v(a)": e(t) - rcoil * i, "x(plunger)": x,
                "v(plunger)": v, "f(lsol,plunger)": Lp(x) * i * i / 2, "f(spl)": -kpl * x,
                "w(lsol)": psi * i / 2, "w(mpl)": mpl * v * v / 2,
                "stored": psi * i / 2 + mpl * v * v / 2 + kpl * x * x / 2, "supplied": y[3]}

    y0 = [0, 0, 0, 0]
    _, ev = integrate(rhs, y0, nl.tstop, br, atol=1e-14)
    rows = table(nl, sig, ev)
    _, ev2 = integrate(rhs, y0, nl.tstop, br, method="DOP853", rtol=1e-12, atol=1e-16)
    agree("solenoid: Radau vs DOP853", rows, table(nl, sig, ev2))
    energy_check("solenoid", rows[:, 0], *[np.array([sig(t, ev(t))[k] for t in rows[:, 0]])
                                           for k in ("stored", "supplied")])
    # held position: smaller root of kpl x = L'(x) i^2/2 with i = vs/rcoil
    i0 = vs / rcoil
    xs = brentq(lambda x: kpl * x - n2ma * i0 * i0 / (2 * (geff - x) ** 2), 0, geff / 3)
    th = P["ton"] + P["trise"] + P["pw"]
    xh = ev(th)[1]
    print("  solenoid: held x = %.6e m, static root %.6e m (rel. diff %.1e)" % (xh, xs, abs(xh / xs - 1)))
    assert abs(xh / xs - 1) < 1e-4
    write_table(nl, rows)


SYSTEMS = {"yoke": yoke, "crank": crank, "lagrange_maxwell": lagrange_maxwell,
           "mems": mems, "mems_pullin": mems_pullin, "speaker": speaker, "solenoid": solenoid}

if __name__ == "__main__":
    for name in sys.argv[1:] or SYSTEMS:
        print(name)
        SYSTEMS[name]()
