"""Wide pieces made slowly on machine 0, output on machine 1: piece p is arange(2048) + p.

Machine 1 only lands and delivers pieces, so it finishes moments after machine 0 does
(``test_output_stream``'s paused-node case relies on that)."""

import actorflow as af

WIDTH = 2048
PIECES = 600


def build_plan(machines: int = 2) -> af.Plan:
    b = af.PlanBuilder(machines=machines, register_num=4, name="paused_sink")
    x = b.source("arange", {"stop": WIDTH, "dtype": "float64", "piece_scale": 1},
                 piece_num=PIECES, name="src")
    x = b.op("sleep", x, ms=5.0, name="slow")
    b.output("y", x, machine=machines - 1)
    b.num_pieces = PIECES
    return b.build()
