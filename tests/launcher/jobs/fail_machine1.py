"""A pipeline whose kernel on machine 1 raises on piece 2 (op 'fail', task 'boom_m1')."""

import actorflow as af


def build_plan(machines: int = 2) -> af.Plan:
    b = af.PlanBuilder(machines=machines, register_num=2, name="fail_machine1")
    x = b.source("arange", {"stop": 4, "dtype": "float32"}, piece_num=8, name="src")
    x = b.op("relu", x, machine=0, name="relu_m0")
    x = b.op("fail", x, piece=2, message="injected failure", machine=1, name="boom_m1")
    b.output("y", x)
    b.num_pieces = 8
    return b.build()
