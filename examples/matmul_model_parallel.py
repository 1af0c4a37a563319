"""Model parallel matmul: the weight is split by rows over 2 machines, partial sums added.

    python examples/matmul_model_parallel.py
    ACTORFLOW_DEVICE=emulated flowlaunch sim examples/matmul_model_parallel.py --device cuda
    flowlaunch sim examples/matmul_model_parallel.py --machines 2 --out y.npz

``w`` (K x N) is split on axis 0, so machine i holds rows K*i/2 .. K*(i+1)/2.  The compiler
picks the matmul signature (x: S1, w: S0) -> partial_sum: each machine multiplies its
columns of ``x`` (sliced locally from the broadcast batch) by its rows of ``w``.  The partial
products are then added by boxing: the next op (bias_add, split by rows) is cheapest on
P -> S0 (each machine adds its half of the rows of both partials), and the output gathers
the halves (S0 -> B).
"""

from __future__ import annotations

import sys

import numpy as np

import actorflow as af
import actorflow.functional as F

PIECES = 4
BATCH, K, N = 8, 64, 16
SEEDS = {"x": 5, "w": 6, "b": 7}


def build_job(machines: int = 2, device: str = "cpu", devices_per_machine: int = 1
              ) -> af.Job:
    """The job on ``machines`` x ``devices_per_machine`` ranks of ``device`` (cpu | cuda)."""
    nranks = machines * devices_per_machine
    ranks = af.placement(device, ranks=list(range(nranks)))
    with af.Job("matmul_model_parallel", pieces=PIECES) as job:
        x = af.random_input("x", (BATCH, K), seed=SEEDS["x"], placement=ranks,
                            sbp=af.sbp.broadcast)
        w = af.variable("w", (K, N), init="normal", seed=SEEDS["w"], placement=ranks,
                        sbp=af.sbp.split(0))
        b = af.variable("b", (N,), init="normal", seed=SEEDS["b"],
                        placement=af.placement(device, ranks=[0]))
        y = F.bias_add(x @ w, b.to_global(ranks, af.sbp.broadcast))
        af.output("y", F.tanh(y))
    return job


def expected(piece: int) -> np.ndarray:
    x = np.random.default_rng([SEEDS["x"], piece]).standard_normal((BATCH, K)).astype("f4")
    w = np.random.default_rng(SEEDS["w"]).standard_normal((K, N)).astype("f4")
    b = np.random.default_rng(SEEDS["b"]).standard_normal((N,)).astype("f4")
    return np.tanh(x @ w + b)


def check(outputs: list[np.ndarray]) -> float:
    return max(float(np.abs(o - expected(i)).max()) for i, o in enumerate(outputs))


def main(machines: int = 2, device: str = "cpu", devices_per_machine: int = 1) -> int:
    plan = af.compile(build_job(machines, device, devices_per_machine), machines=machines,
                      devices_per_machine=devices_per_machine)
    with af.Session(plan) as s:
        out = s.run_to_end()["y"]
    err = check(out)
    print(f"matmul_model_parallel: {machines} machines, {len(plan.tasks)} tasks, sbp "
          f"{plan.ctrl['sbp']['matmul0']}, max |actorflow - numpy| = {err:.2e}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
