"""A 4-stage pipeline on 4 machines with register_num 2: stage k runs on machine k % N.

    python examples/pipeline_4_stages.py
    ACTORFLOW_DEVICE=emulated flowlaunch sim examples/pipeline_4_stages.py --device cuda
    flowlaunch sim examples/pipeline_4_stages.py --machines 4 --out y.npz

Each stage is a dense layer whose weight lives on its stage's machine; ``to_global`` moves
the activations to the next stage (a comm_net task on the receiving machine).  With
register_num 2 every stage may run one piece ahead of the next, so the 4 machines work on
4 different pieces at once.
"""

from __future__ import annotations

import sys

import numpy as np

import actorflow as af
import actorflow.functional as F

PIECES = 8
BATCH, WIDTH, STAGES = 8, 32, 4


def build_job(machines: int = 4, device: str = "cpu", devices_per_machine: int = 1
              ) -> af.Job:
    """The job on ``machines`` x ``devices_per_machine`` ranks of ``device`` (cpu | cuda)."""
    nranks = machines * devices_per_machine
    with af.Job("pipeline_4_stages", pieces=PIECES, register_num=2) as job:
        h = af.random_input("x", (BATCH, WIDTH), seed=3)
        for k in range(STAGES):
            stage = af.placement(device, ranks=[k % nranks])
            h = h.to_global(stage)
            w = af.variable(f"w{k}", (WIDTH, WIDTH), init="normal", seed=100 + k, std=0.3,
                            placement=stage)
            h = F.tanh(h @ w)
        af.output("y", h.sum(dim=1))
    return job


def expected(piece: int) -> np.ndarray:
    h = np.random.default_rng([3, piece]).standard_normal((BATCH, WIDTH)).astype("f4")
    for k in range(STAGES):
        w = (np.random.default_rng(100 + k).standard_normal((WIDTH, WIDTH)) * 0.3).astype("f4")
        h = np.tanh(h @ w)
    return h.sum(axis=1)


def check(outputs: list[np.ndarray]) -> float:
    return max(float(np.abs(o - expected(i)).max()) for i, o in enumerate(outputs))


def main(machines: int = 4, device: str = "cpu", devices_per_machine: int = 1) -> int:
    plan = af.compile(build_job(machines, device, devices_per_machine), machines=machines,
                      devices_per_machine=devices_per_machine)
    with af.Session(plan) as s:
        out = s.run_to_end()["y"]
    err = check(out)
    print(f"pipeline_4_stages: {machines} machines, {len(plan.tasks)} tasks, {len(out)} pieces, "
          f"max |actorflow - numpy| = {err:.2e}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
