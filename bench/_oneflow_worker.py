"""The workload of ``bench/oneflow.py``, one source for both frameworks: ``BENCH_FRAMEWORK``
(``actorflow`` or ``oneflow``) picks what ``flow`` is; the eager parts are the same code.
Prints one JSON line ``RESULT {...}`` (on rank 0) with medians in microseconds."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import numpy as np

# bench/oneflow.py would shadow the oneflow package: import without this script's folder
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

FRAMEWORK = os.environ["BENCH_FRAMEWORK"]
if FRAMEWORK == "oneflow":
    import oneflow as flow
else:
    import actorflow as flow

PART = sys.argv[1]  # "eager", "graph" or "global"
N, REPEATS = int(sys.argv[2]), int(sys.argv[3])


def timed(fn, per: int) -> tuple[float, float]:
    """Median wall and process-CPU microseconds per unit of ``fn()`` (1 warmup)."""
    fn()
    walls, cpus = [], []
    for _ in range(REPEATS):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls) / per * 1e6, statistics.median(cpus) / per * 1e6


def tiny_ops() -> None:
    y = flow.ones(4, dtype=flow.float32)
    for _ in range(N):
        y = y + 1.0
    y.numpy()


def mixed_ops() -> None:  # a few op kinds on small tensors, as a model's step has
    x = flow.ones(16, 16, dtype=flow.float32)
    w = flow.ones(16, 16, dtype=flow.float32) * 0.01
    for _ in range(N // 4):
        x = flow.relu(flow.matmul(x, w) + 1.0).sum(dim=1, keepdim=True) * x
    x.numpy()


def round_trips() -> None:
    x = flow.ones(4, dtype=flow.float32)
    for _ in range(N // 10):
        (x + 1.0).numpy()


def eager() -> dict:
    return {"tiny_op": timed(tiny_ops, N), "mixed_op": timed(mixed_ops, N // 4 * 4),
            "round_trip": timed(round_trips, N // 10)}


def graph_calls() -> tuple[float, float]:
    """One relu + add layer as a compiled graph, called with a fresh input, synced."""
    x0 = np.ones((8, 16), np.float32)
    calls = min(max(N // 40, 10), 100)  # OneFlow 0.9.0's CPU graph crashes after ~2,000 calls
    if FRAMEWORK == "oneflow":
        class Layer(flow.nn.Graph):
            def build(self, x):
                return flow.relu(x) + x

        g = Layer()
        xs = flow.tensor(x0)

        def run():
            for _ in range(calls):
                g(xs).numpy()
        return timed(run, calls)
    with flow.Job("layer") as job:
        x = flow.input("x", (8, 16), "float32")
        flow.output("y", flow.relu(x) + x)
    with flow.Session(flow.compile(job)) as s:
        def run():
            for _ in range(calls):
                s.run({"x": x0})
        return timed(run, calls)


def global_creation() -> dict:
    """``flow.tensor(data, placement=, sbp=)`` on every rank (the ring data check), per
    call; then a to_global S0 -> B (an all-gather) per call."""
    world = flow.env.get_world_size()
    P = flow.placement("cpu", ranks=list(range(world)))
    data = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    calls = max(N // 20, 5)

    def make():
        for _ in range(calls):
            flow.tensor(data, placement=P, sbp=flow.sbp.split(0)).to_local().numpy()

    t = flow.tensor(data, placement=P, sbp=flow.sbp.split(0))

    def rebox():
        for _ in range(calls):
            t.to_global(sbp=flow.sbp.broadcast).to_local().numpy()
    return {"from_data": timed(make, calls), "s0_to_b": timed(rebox, calls), "world": world}


result = {"eager": eager, "graph": lambda: {"graph_call": graph_calls()},
          "global": global_creation}[PART]()
if flow.env.get_rank() == 0:
    print("RESULT " + json.dumps(result), flush=True)
if FRAMEWORK == "oneflow":  # its CUDA build on a CPU box may crash in teardown: skip it
    sys.stdout.flush()
    os._exit(0)
