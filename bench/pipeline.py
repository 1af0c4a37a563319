"""Pipeline efficiency: S stages of ``sleep`` kernels on S threads as register_num grows.

``source -> sleep(ms) x S``, one thread per stage, ``N`` pieces.  A perfect pipeline takes
``ideal = (N + S - 1) * ms``; efficiency is ``ideal / measured``.  The baseline measured in
the same run is the sequential time (the same sleeps one after another, ``N * S * ms``),
so ``speedup`` shows what the overlap buys.  register_num 1 is lock-step (a stage waits
for its consumer's ACK before the next piece): expect about half the ideal throughput.

    python bench/pipeline.py [--ms 20] [--pieces 24] [--repeats 3] [--quick] [--json OUT.jsonl]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import Report, bench_args, median_of

import actorflow as af
from actorflow.kernels import KernelContext, get_op


def sleep_plan(stages: int, register_num: int, ms: float, pieces: int) -> af.Plan:
    b = af.PlanBuilder(register_num=register_num, name=f"pipeline_s{stages}_r{register_num}")
    h = b.source("constant", {"shape": [1], "dtype": "float32"}, piece_num=pieces, thrd=0)
    for k in range(stages):
        h = b.op("sleep", h, ms=ms, thrd=k + 1, name=f"stage{k}")
    return b.build()


def run_plan(plan: af.Plan, pieces: int) -> float:
    s = af.Session(plan, validate=False, timeout=600)
    try:
        t0 = time.perf_counter()
        s.run_to_end(pieces=pieces)
        return time.perf_counter() - t0
    finally:
        s.close()


def run_sequential(stages: int, ms: float, pieces: int) -> float:
    """The same sleep kernels called one after another: no pipelining at all."""
    import numpy as np

    kernel = get_op("sleep").kernel
    ctx = KernelContext(np)
    a, b = np.zeros(1, np.float32), np.zeros(1, np.float32)
    t0 = time.perf_counter()
    for _ in range(pieces * stages):
        kernel(ctx, {"in": a}, {"out": b}, {"ms": ms})
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", type=float, default=20.0)
    ap.add_argument("--pieces", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stages", type=int, nargs="*", default=[3, 4])
    args = bench_args(ap, "2 ms stages, 6 pieces, 3 stages, register_num 1 and 2").parse_args(argv)
    register_nums = (1, 2, 3, 4)
    if args.quick:
        args.ms, args.pieces, args.repeats, args.stages, register_nums = 2.0, 6, 1, [3], (1, 2)
    n, ms = args.pieces, args.ms
    rows = []
    for stages in args.stages:
        seq = median_of(lambda s=stages: run_sequential(s, ms, n), args.repeats)
        ideal = (n + stages - 1) * ms / 1000.0
        for rn in register_nums:
            plan = sleep_plan(stages, rn, ms, n)
            t = median_of(lambda plan=plan: run_plan(plan, n), args.repeats)
            rows.append([stages, rn, n, ideal, t, ideal / t, seq, seq / t])
    Report(__file__, args).table(
        "efficiency",
        f"Pipeline efficiency: sleep({ms:g} ms) stages, one thread each, {n} pieces, "
        f"median of {args.repeats}",
        ["stages", "register_num", "pieces", "ideal s", "measured s", "efficiency",
         "sequential s (baseline)", "speedup vs sequential"], rows,
        figure="measured s", unit="s", baseline="sequential s (baseline)",
        ratio="speedup vs sequential", keys=["stages", "register_num", "pieces"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
