"""A two-layer MLP, data parallel: the batch is split over the machines, weights broadcast.

    python examples/mlp_data_parallel.py                       # compile for 2 machines, run here
    flowlaunch sim examples/mlp_data_parallel.py --machines 2 --out y.npz
    flowlaunch plan show examples/mlp_data_parallel.py --machines 2

Each machine holds every weight (SBP broadcast) and one half of each batch (split(0)); the
compiler picks the data-parallel matmul signature (S0, B) -> S0 for both layers, so no
bytes move between the layers; the output is concatenated (S0 -> B) on machine 0.
"""

from __future__ import annotations

import sys

import numpy as np

import actorflow as af
import actorflow.functional as F

PIECES = 4
BATCH, IN, HIDDEN, OUT = 16, 32, 24, 8
SEEDS = {"x": 11, "w1": 1, "w2": 2}


def build_job(machines: int = 2, device: str = "cpu", devices_per_machine: int = 1
              ) -> af.Job:
    """The job on ``machines`` x ``devices_per_machine`` ranks of ``device`` (cpu | cuda)."""
    nranks = machines * devices_per_machine
    ranks = af.placement(device, ranks=list(range(nranks)))
    with af.Job("mlp_data_parallel", pieces=PIECES) as job:
        x = af.random_input("x", (BATCH, IN), seed=SEEDS["x"], placement=ranks,
                            sbp=af.sbp.split(0))
        w1 = af.variable("w1", (IN, HIDDEN), init="normal", seed=SEEDS["w1"], std=0.2,
                         placement=ranks, sbp=af.sbp.broadcast)
        w2 = af.variable("w2", (HIDDEN, OUT), init="normal", seed=SEEDS["w2"], std=0.2,
                         placement=ranks, sbp=af.sbp.broadcast)
        h = F.relu(x @ w1)
        y = F.softmax(h @ w2, dim=1)
        af.output("y", y)
    return job


def expected(piece: int) -> np.ndarray:
    x = np.random.default_rng([SEEDS["x"], piece]).standard_normal((BATCH, IN)).astype("f4")
    w1 = (np.random.default_rng(SEEDS["w1"]).standard_normal((IN, HIDDEN)) * 0.2).astype("f4")
    w2 = (np.random.default_rng(SEEDS["w2"]).standard_normal((HIDDEN, OUT)) * 0.2).astype("f4")
    z = np.maximum(x @ w1, 0) @ w2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check(outputs: list[np.ndarray]) -> float:
    """Max |actorflow - numpy| over the pieces (flowlaunch calls this after a run)."""
    return max(float(np.abs(o - expected(i)).max()) for i, o in enumerate(outputs))


def main(machines: int = 2, device: str = "cpu", devices_per_machine: int = 1) -> int:
    plan = af.compile(build_job(machines, device, devices_per_machine), machines=machines,
                      devices_per_machine=devices_per_machine)
    with af.Session(plan) as s:
        out = s.run_to_end()["y"]
    err = check(out)
    print(f"mlp_data_parallel: {machines} machines, {len(plan.tasks)} tasks, {len(out)} pieces, "
          f"max |actorflow - numpy| = {err:.2e}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
