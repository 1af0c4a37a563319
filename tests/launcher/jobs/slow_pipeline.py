"""A long pipeline (sleep kernels on every machine) for kill/cut tests and progress lines."""

import actorflow as af

PIECES = 400


def build_plan(machines: int = 2) -> af.Plan:
    b = af.PlanBuilder(machines=machines, register_num=2, name="slow_pipeline")
    x = b.source("arange", {"stop": 8, "dtype": "float32", "piece_scale": 1.0},
                 piece_num=PIECES, name="src")
    for m in range(machines):
        x = b.op("sleep", x, ms=20.0, machine=m, name=f"sleep_m{m}")
    b.output("y", x)
    b.num_pieces = PIECES
    return b.build()
