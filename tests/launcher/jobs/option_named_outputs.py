"""Outputs named like np.savez's own keyword ('allow_pickle') and a plain one."""

import actorflow as af


def build_plan(machines: int = 1) -> af.Plan:
    b = af.PlanBuilder(machines=1, name="option_named_outputs")
    x = b.source("arange", {"stop": 3, "dtype": "float32", "piece_scale": 10}, piece_num=3)
    b.output("allow_pickle", b.op("scalar_mul", x, scalar=2.0))
    b.output("file", b.op("relu", x))
    return b.build()
