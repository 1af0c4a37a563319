"""The sample pipeline paced by a sleep kernel (~2 s on 2 machines), for attacks on a live
run: ``check`` fails unless every piece arrived and matches numpy."""

import sys
from pathlib import Path

import numpy as np

import actorflow as af

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
import sample_pipeline as sp

PIECES = 60


def build_plan(machines: int = 2) -> af.Plan:
    b = af.PlanBuilder(machines=machines, register_num=2, name="paced_sample")
    x = b.source("random_normal", {"shape": list(sp.SHAPE), "dtype": "float32",
                                   "seed": sp.SEED}, piece_num=PIECES, name="batches")
    h = b.op("relu", x, machine=0, name="stage0_relu")
    h = b.op("sleep", h, ms=30.0, machine=machines - 1, name="pace")
    h = b.op("scalar_mul", h, scalar=0.5, machine=machines - 1, name="stage1_scale")
    h = b.op("softmax", h, axis=1, machine=0, name="stage2_softmax")
    b.output("colsum", b.op("reduce_sum", h, axis=0, machine=machines - 1, name="colsum"))
    b.num_pieces = PIECES
    return b.build()


def check(outputs: list[np.ndarray]) -> float:
    if len(outputs) != PIECES:
        raise AssertionError(f"{len(outputs)} pieces arrived, expected {PIECES}")
    return max(float(np.abs(o - sp.expected(i)).max()) for i, o in enumerate(outputs))
