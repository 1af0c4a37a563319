"""The sample job: a 4-stage pipeline of numpy kernels, spread over N machines.

    python examples/sample_pipeline.py            # run in this process, check vs numpy
    flowlaunch sim examples/sample_pipeline.py --machines 2

Stage k runs on machine ``k % machines``; every piece is a seeded random batch, so the
result can be checked against plain numpy.
"""

from __future__ import annotations

import sys

import numpy as np

import actorflow as af

PIECES = 16
SHAPE = (64, 32)
SEED = 7


def build_plan(machines: int = 1, pieces: int = PIECES, register_num: int = 2,
               device: str = "cpu") -> af.Plan:
    """``device="cuda"``: the four stages run on each machine's cuda:0."""
    b = af.PlanBuilder(machines=machines, register_num=register_num, name="sample_pipeline")
    dev = 0 if device == "cuda" else None
    x = b.source("random_normal", {"shape": list(SHAPE), "dtype": "float32", "seed": SEED},
                 piece_num=pieces, name="batches")
    h = b.op("relu", x, machine=0, name="stage0_relu", device=dev)
    h = b.op("scalar_mul", h, scalar=0.5, machine=1 % machines, name="stage1_scale", device=dev)
    h = b.op("softmax", h, axis=1, machine=2 % machines, name="stage2_softmax", device=dev)
    h = b.op("reduce_sum", h, axis=0, machine=3 % machines, name="stage3_colsum", device=dev)
    b.output("colsum", h)
    b.num_pieces = pieces
    return b.build()


def expected(piece: int) -> np.ndarray:
    """The same computation in plain numpy, for one piece."""
    rng = np.random.default_rng([SEED, piece])
    x = rng.standard_normal(SHAPE).astype(np.float32)
    h = np.maximum(x, 0) * np.float32(0.5)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).sum(axis=0)


def check(outputs: list[np.ndarray]) -> float:
    return max(float(np.abs(o - expected(i)).max()) for i, o in enumerate(outputs))


def main() -> int:
    plan = build_plan()
    with af.Session(plan) as s:
        out = s.run_to_end()["colsum"]
    err = check(out)
    print(f"sample_pipeline: {len(out)} pieces, {len(plan.tasks)} tasks, "
          f"max |actorflow - numpy| = {err:.2e}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
