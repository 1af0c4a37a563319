"""A million tiny pieces: piece p is arange(16) + p (128 bytes), straight to the output."""

import actorflow as af


def build_plan(machines: int = 1) -> af.Plan:
    b = af.PlanBuilder(machines=machines, register_num=16, name="tiny_pieces")
    x = b.source("arange", {"stop": 16, "dtype": "int64", "piece_scale": 1},
                 piece_num=100, name="src")
    b.output("y", x)
    return b.build()
