"""A plan fed by a client (an input task): flowlaunch cannot drive it and must say so."""

import actorflow as af


def build_plan(machines: int = 1) -> af.Plan:
    b = af.PlanBuilder(machines=machines)
    x = b.input("x", (4,), "float32")
    b.output("y", b.op("relu", x))
    return b.build()
