"""Fits erf(x) ~ x * P(x^2) / Q(x^2) on [0, c] (Q(0) = 1) by iterated, reweighted linear
least squares (Sanathanan-Koerner), then reports the max abs error evaluated in float32
with Horner's rule, as the Rust code does. Prints coefficients for src/math.rs."""
import numpy as np
from scipy.special import erf

C = 4.0
def fit(np_, nq, iters=30):
    x = np.linspace(0, C, 20001)[1:]
    y = erf(x)
    t = x * x
    w = np.ones_like(x)
    for _ in range(iters):
        # x*P(t) - y*(Q(t)-1) = y  with Q = 1 + q1 t + ...
        A = np.hstack([np.stack([x * t**i for i in range(np_ + 1)], 1),
                       np.stack([-y * t**j for j in range(1, nq + 1)], 1)])
        sol, *_ = np.linalg.lstsq(A * w[:, None], y * w, rcond=None)
        p, q = sol[:np_ + 1], np.concatenate([[1.0], sol[np_ + 1:]])
        qv = np.polyval(q[::-1], t)
        err = x * np.polyval(p[::-1], t) / qv - y
        w = 1 / np.abs(qv) * (1 + 50 * np.abs(err) / np.abs(err).max())
    return p, q

def eval32(p, q, x):
    x = x.astype(np.float32); xc = np.clip(x, -C, C).astype(np.float32); t = (xc * xc).astype(np.float32)
    P = np.float32(p[-1]) * np.ones_like(t)
    for c in p[-2::-1]: P = (P * t + np.float32(c)).astype(np.float32)
    Q = np.float32(q[-1]) * np.ones_like(t)
    for c in q[-2::-1]: Q = (Q * t + np.float32(c)).astype(np.float32)
    return (xc * P / Q).astype(np.float32)

for np_, nq in [(4, 5), (5, 5), (5, 6), (6, 6)]:
    p, q = fit(np_, nq)
    xs = np.linspace(-6, 6, 2000001)
    e = np.abs(eval32(p, q, xs).astype(np.float64) - erf(xs.astype(np.float32).astype(np.float64)))
    print(np_, nq, "max abs err (f32 eval):", e.max(), "at", xs[e.argmax()])
    if np_ == 5 and nq == 5:
        print("P =", [float(np.float32(c)) for c in p]); print("Q =", [float(np.float32(c)) for c in q])

# exp(r) ~ 1 + r + r^2 * E(r) on |r| <= ln2/2 (range-reduced softmax exp).
h = np.log(2) / 2
r = np.cos(np.linspace(0, np.pi, 4001)) * h
from math import factorial
target = sum(r**k / factorial(k + 2) for k in range(20))
for deg in (4, 5):
    c = np.polynomial.polynomial.polyfit(r, target, deg, w=np.exp(-r))
    rr = np.linspace(-h, h, 200001).astype(np.float32)
    E = np.float32(c[-1]) * np.ones_like(rr)
    for k in c[-2::-1]: E = (E * rr + np.float32(k)).astype(np.float32)
    approx = (np.float32(1) + rr + rr * rr * E).astype(np.float32)
    rel = np.abs(approx / np.exp(rr.astype(np.float64)) - 1).max()
    print("exp deg", deg, "max rel err", rel, [float(np.float32(k)) for k in c])
