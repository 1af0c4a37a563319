"""The oracle: random programs of 1-30 ops over random shapes give the same numbers run
eagerly, lazily (the same program traced in a job, compiled, run by actors) and in plain
numpy.  Eager and lazy run the same kernels, so they agree bit for bit on every op; numpy
agrees bit for bit on element-wise programs, and to float32 rounding where a program has
a reduction (matmul, sum, softmax), whose summation order numpy does not promise."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorflow as af
import actorflow.functional as F

UNARY = {"relu": (F.relu, lambda a: np.maximum(a, np.float32(0))),
         "neg": (F.neg, np.negative), "tanh": (F.tanh, np.tanh), "exp": (F.exp, np.exp)}
BINARY = {"add": (F.add, np.add), "sub": (F.sub, np.subtract), "mul": (F.mul, np.multiply),
          "maximum": (F.maximum, np.maximum), "minimum": (F.minimum, np.minimum)}
SCALAR = {"add": (lambda x, s: x + s, lambda a, s: a + np.float32(s)),
          "rsub": (lambda x, s: s - x, lambda a, s: np.float32(s) - a),
          "mul": (lambda x, s: x * s, lambda a, s: a * np.float32(s)),
          "div": (lambda x, s: x / s, lambda a, s: a / np.float32(s))}
REDUCING = {"matmul", "sum", "softmax"}


@st.composite
def programs(draw):
    """(input shapes, steps); a step is (kind, name, operand indices, param)."""
    m, n, k = (draw(st.integers(1, 4)) for _ in range(3))
    pool = [(m, n), (n,), (1, n), (m, 1), (n, k), (k, m)]
    shapes = [draw(st.sampled_from(pool)) for _ in range(draw(st.integers(1, 3)))]
    avail = list(shapes)
    steps = []
    for _ in range(draw(st.integers(1, 30))):
        i = draw(st.integers(0, len(avail) - 1))
        a = avail[i]
        kind = draw(st.sampled_from(["unary", "scalar", "binary", "binary", "matmul",
                                     "transpose", "sum", "softmax", "reshape"]))
        out = None
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(sorted(UNARY))), (i,), None))
            out = a
        elif kind == "scalar":
            s = draw(st.sampled_from([-1.5, -0.5, 0.25, 2.0, 3.0]))
            steps.append(("scalar", draw(st.sampled_from(sorted(SCALAR))), (i,), s))
            out = a
        elif kind == "binary":
            fits = [j for j, b in enumerate(avail) if _broadcasts(a, b)]
            j = draw(st.sampled_from(fits))
            steps.append(("binary", draw(st.sampled_from(sorted(BINARY))), (i, j), None))
            out = tuple(np.broadcast_shapes(a, avail[j]))
        elif kind == "matmul" and len(a) == 2:
            fits = [j for j, b in enumerate(avail) if len(b) == 2 and b[0] == a[1]]
            if fits:
                j = draw(st.sampled_from(fits))
                steps.append(("matmul", "matmul", (i, j), None))
                out = (a[0], avail[j][1])
        elif kind == "transpose" and len(a) == 2:
            steps.append(("transpose", "transpose", (i,), None))
            out = (a[1], a[0])
        elif kind == "sum":
            dim = draw(st.integers(0, len(a) - 1))
            steps.append(("sum", "sum", (i,), dim))
            out = tuple(s for d, s in enumerate(a) if d != dim)
        elif kind == "softmax":
            steps.append(("softmax", "softmax", (i,), None))
            out = a
        elif kind == "reshape":
            steps.append(("reshape", "reshape", (i,), None))
            out = (int(np.prod(a)),)
        if out is not None and out != ():
            avail.append(out)
        elif out == ():
            steps.pop()
    return shapes, steps


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def run(steps, inputs, api: bool):
    """Run the steps over ``inputs`` with actorflow ops (api) or with numpy."""
    vals = list(inputs)
    for kind, name, ix, p in steps:
        a = vals[ix[0]]
        if kind == "unary":
            v = UNARY[name][0 if api else 1](a)
        elif kind == "scalar":
            v = SCALAR[name][0 if api else 1](a, p)
        elif kind == "binary":
            v = BINARY[name][0 if api else 1](a, vals[ix[1]])
        elif kind == "matmul":
            v = a @ vals[ix[1]] if api else np.matmul(a, vals[ix[1]])
        elif kind == "transpose":
            v = a.T
        elif kind == "sum":
            v = a.sum(dim=p) if api else a.sum(axis=p)
        elif kind == "softmax":
            if api:
                v = a.softmax(-1)
            else:
                e = np.exp(a - a.max(axis=-1, keepdims=True))
                v = e / e.sum(axis=-1, keepdims=True)
        else:
            v = a.reshape(-1)
        vals.append(v)
    return vals


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs(), st.integers(0, 2**31 - 1))
def test_eager_lazy_and_numpy_agree(program, seed):
    shapes, steps = program
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = run(steps, inputs, api=False)
    eager = [t.numpy() for t in run(steps, [af.tensor(a) for a in inputs], api=True)]
    with af.Job("oracle") as job:
        xs = [af.input(f"x{i}", s) for i, s in enumerate(shapes)]
        lazy = run(steps, xs, api=True)
        picks = sorted({len(lazy) - 1, min(len(lazy) - 1, len(inputs) + len(steps) // 2)})
        for i in picks:
            af.output(f"v{i}", lazy[i])
    with af.Session(af.compile(job)) as s:
        got = s.run({f"x{i}": a for i, a in enumerate(inputs)})
    got = got if isinstance(got, dict) else {f"v{picks[0]}": got}
    exact = not any(kind in REDUCING for kind, *_ in steps)
    for i in picks:
        np.testing.assert_array_equal(got[f"v{i}"], eager[i])  # same kernels: bit for bit
    for e, w in zip(eager, want):
        assert e.shape == w.shape and e.dtype == w.dtype
        if exact:
            np.testing.assert_array_equal(e, w)
        else:
            np.testing.assert_allclose(e, w, rtol=2e-5, atol=1e-5)
