"""Many distinct 16 KiB pieces through a 2-stage chain: piece p is arange(2048) + p."""

import actorflow as af

WIDTH = 2048


def build_plan(machines: int = 1) -> af.Plan:
    b = af.PlanBuilder(machines=machines, register_num=8, name="stream_pieces")
    x = b.source("arange", {"stop": WIDTH, "dtype": "float64", "piece_scale": 1},
                 piece_num=100, name="src")
    x = b.op("identity", x, machine=machines - 1, name="stage")
    b.output("y", x)
    return b.build()
