"""The numerical oracle: random jobs on random placements and SBP hints equal numpy.

Hypothesis draws a job (elementwise ops, matmul chains, reductions, softmax, reshape,
transpose, SBP/placement hints), a cluster of 1-4 machines x 1-2 devices and the compile
options (merging on/off, one execution unit per task or per device, a fan width of 2 or 3
that sends most boxings of several pieces through trees, or the default 16); the plan is
run with Session and must match plain numpy on one device.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorflow as af
from tests.plan.compile_oracle import BINARY, SCALAR, UNARY, build, max_error

TOL = 1e-4


@st.composite
def descriptions(draw) -> dict:
    machines = draw(st.integers(1, 4))
    dpm = draw(st.integers(1, 2))
    nranks = machines * dpm

    def ranks():
        return draw(st.lists(st.integers(0, nranks - 1), min_size=1, max_size=nranks,
                             unique=True))

    def sbp(shape, rs):
        codes = ["B"] + [f"S{a}" for a in range(2) if shape[a] >= len(rs)]
        return draw(st.sampled_from(codes))

    shape = (draw(st.integers(2, 6)), draw(st.integers(2, 6)))
    inputs = []
    for i in range(draw(st.integers(1, 2))):
        rs = ranks()
        inputs.append({"shape": list(shape), "seed": 10 + i, "ranks": rs, "sbp": sbp(shape, rs)})
    steps = []
    for k in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["unary", "scalar", "var_binary", "matmul", "reduce",
                                     "softmax", "transpose", "reshape", "hint"]))
        if kind == "unary":
            steps.append(["unary", draw(st.sampled_from(sorted(UNARY)))])
        elif kind == "scalar":
            v = draw(st.sampled_from([0.5, 2, -1.5, 3]))
            steps.append(["scalar", draw(st.sampled_from(sorted(SCALAR))), v])
        elif kind == "var_binary":
            row = draw(st.booleans())
            vshape = (shape[1],) if row else shape
            rs = ranks()
            code = sbp((*vshape, 1), rs) if row else sbp(vshape, rs)
            code = "B" if row and code == "S1" else code
            steps.append(["var_binary", draw(st.sampled_from(sorted(BINARY))), row, 100 + k,
                          rs, code])
        elif kind == "matmul":
            n = draw(st.integers(2, 6))
            rs = ranks()
            steps.append(["matmul", n, 200 + k, rs, sbp((shape[1], n), rs)])
            shape = (shape[0], n)
        elif kind == "reduce":
            axis = draw(st.integers(0, 1))
            steps.append(["reduce", draw(st.sampled_from(["sum", "mean"])), axis])
            shape = (1, shape[1]) if axis == 0 else (shape[0], 1)
        elif kind == "softmax":
            steps.append(["softmax", draw(st.integers(0, 1))])
        elif kind in ("transpose", "reshape"):
            steps.append([kind])
            shape = (shape[1], shape[0])
        else:
            rs = ranks()
            steps.append(["hint", rs, sbp(shape, rs)])
    return {"machines": machines, "dpm": dpm, "pieces": 2, "inputs": inputs, "steps": steps,
            "combine": draw(st.sampled_from(sorted(BINARY))),
            "options": {"merge": draw(st.booleans()), "unit_per_task": draw(st.booleans()),
                        "fan_width": draw(st.sampled_from([2, 3, 16]))}}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(descriptions())
def test_random_jobs_on_random_placements_equal_numpy(desc):
    plan = af.compile(build(desc), machines=desc["machines"], devices_per_machine=desc["dpm"],
                      **desc["options"])
    with af.Session(plan, timeout=30) as s:
        out = s.run_to_end()["y"]
    assert len(out) == desc["pieces"]
    err = max_error(desc, out)
    assert err < TOL, f"max relative error {err:.2e} for {desc}"


def test_oracle_reference_is_not_trivial():
    """The numpy mirror really computes: a changed step changes the answer."""
    desc = {"machines": 1, "dpm": 1, "pieces": 1, "combine": "add",
            "inputs": [{"shape": [3, 4], "seed": 1, "ranks": [0], "sbp": "B"}],
            "steps": [["matmul", 2, 5, [0], "B"], ["softmax", 1]]}
    plan = af.compile(build(desc))
    with af.Session(plan) as s:
        out = s.run_to_end()["y"]
    assert max_error(desc, out) < TOL
    desc["steps"][1] = ["softmax", 0]
    assert max_error(desc, out) > 1e-2
    np.testing.assert_allclose(out[0].sum(axis=1), 1.0, rtol=1e-6)
