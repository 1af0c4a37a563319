"""A plan that always wants three machines, whatever it is asked for."""

import actorflow as af


def build_plan(machines: int = 3) -> af.Plan:
    b = af.PlanBuilder(machines=3, register_num=2, name="three_machines")
    x = b.source("arange", {"stop": 4, "dtype": "float32"}, piece_num=4, name="src")
    for m in range(3):
        x = b.op("relu", x, machine=m, name=f"relu_m{m}")
    b.output("y", x)
    b.num_pieces = 4
    return b.build()
