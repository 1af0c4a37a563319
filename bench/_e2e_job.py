"""The echo chain of bench/e2e.py as a job file for ``flowlaunch sim``.

``source(constant, 13 float64 = 104 bytes)`` -> ``identity`` x E2E_STAGES -> ``output``;
source and output share unit 0, each stage has a unit of its own, register_num 8.
E2E_DELIVER=0 puts an ``identity`` actor where the output actor was (same unit, same
hops): the same chain, nothing delivered to the launcher.  On N > 1 machines
(``flowlaunch sim --machines N``) stage k runs on machine k mod N (source and output stay on
machine 0), so every hop crosses machines over tcp.
"""

from __future__ import annotations

import os

import actorflow as af


def build_plan(machines: int = 1) -> af.Plan:
    stages = int(os.environ.get("E2E_STAGES", "2"))
    deliver = os.environ.get("E2E_DELIVER", "1") == "1"
    b = af.PlanBuilder(machines=machines, register_num=8, name=f"echo{stages}")
    x = b.source("constant", {"shape": [13], "dtype": "float64", "value": 1.0},
                 piece_num=1000, thrd=0, name="src")
    for k in range(1, stages + 1):
        x = b.op("identity", x, thrd=k, machine=k % machines, name=f"stage{k}")
    if deliver:
        b.output("y", x, thrd=0)
    else:
        b.op("identity", x, thrd=0, name="sink")
    return b.build()
