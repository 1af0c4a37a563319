"""Eager mode: what an op costs through the VM, side by side with numpy (and torch's CPU
eager mode when it is installed), for both schedulers (``thread``: seed 000's scheduler
thread; ``inline``: dependencies linked by the issuing thread).

1. tiny ops: ``y = y + 1.0`` on a 4-element float32 tensor, N times, then ``af.sync()``:
   amortized wall and process-CPU time per op (goal <= 5 us/op);
2. round trip: one op + ``.numpy()`` (goal <= 50 us);
3. overlap: issuing M matmuls of 1024x1024 (``x = x @ w``) returns long before they are
   computed (goal: issue < 10% of compute); the final result is compared with numpy's.

    python bench/eager.py [--ops 10000] [--roundtrips 300] [--matmuls 100] [--repeats 5]
                          [--quick] [--json OUT.jsonl]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
from _util import Report, bench_args

import actorflow as af
from actorflow import eager

SCHEDULERS = ("thread", "inline")


def _timed(fn, repeats: int) -> tuple[float, float]:
    """Median wall and process-CPU seconds of ``fn()`` over ``repeats`` runs (1 warmup)."""
    fn()
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def tiny_ops(n: int, repeats: int) -> list[list]:
    rows = []

    def numpy_loop():
        y = np.ones(4, np.float32)
        for _ in range(n):
            y = y + 1.0

    w, c = _timed(numpy_loop, repeats)
    base = w
    rows.append(["numpy direct", w / n * 1e6, c / n * 1e6, 1.0])
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        def torch_loop():
            y = torch.ones(4)
            for _ in range(n):
                y = y + 1.0
        w, c = _timed(torch_loop, repeats)
        rows.append(["torch CPU eager", w / n * 1e6, c / n * 1e6, w / base])
    for sched in SCHEDULERS:
        eager.shutdown(scheduler=sched)
        w, c = _timed(lambda: _eager_loop(n), repeats)
        assert float(_eager_loop(n).numpy()[0]) == n + 1.0
        rows.append([f"actorflow eager ({sched})", w / n * 1e6, c / n * 1e6, w / base])
        eager.shutdown()
    return rows


def _eager_loop(n: int) -> af.EagerTensor:
    y = af.ones(4)
    for _ in range(n):
        y = y + 1.0
    af.sync()
    return y


def round_trip(n: int, repeats: int) -> list[list]:
    rows = []
    a = np.ones(4, np.float32)
    w, _ = _timed(lambda: [(a + 1.0).copy() for _ in range(n)], repeats)
    base = w / n
    rows.append(["numpy direct (op + copy)", base * 1e6, 1.0])
    for sched in SCHEDULERS:
        eager.shutdown(scheduler=sched)
        w, _ = _timed(lambda: _round_trips(af.ones(4), n), repeats)
        rows.append([f"actorflow eager ({sched})", w / n * 1e6, w / n / base])
        eager.shutdown()
    return rows


def _round_trips(x: af.EagerTensor, n: int) -> None:
    for _ in range(n):
        (x + 1.0).numpy()


def overlap(m: int, repeats: int, size: int = 1024) -> list[list]:
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((size, size)).astype(np.float32)
    w0 = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)

    def numpy_chain():
        y = x0
        for _ in range(m):
            y = y @ w0
        return y

    want = numpy_chain()
    compute, _ = _timed(numpy_chain, repeats)
    rows = [["numpy direct", 0.0, compute, 0.0, "-"]]
    for sched in SCHEDULERS:
        eager.shutdown(scheduler=sched)
        x, w = af.tensor(x0), af.tensor(w0)
        issues, totals = [], []
        got = None
        for _ in range(repeats):
            t0 = time.perf_counter()
            y = x
            for _ in range(m):
                y = y @ w
            t1 = time.perf_counter()
            got = y.numpy()
            t2 = time.perf_counter()
            issues.append(t1 - t0)
            totals.append(t2 - t0)
        issue, total = statistics.median(issues), statistics.median(totals)
        same = "bit-identical" if np.array_equal(got, want) else (
            f"max |diff| {np.abs(got - want).max():.2e}")
        rows.append([f"actorflow eager ({sched})", issue, total, issue / total * 100, same])
        del x, w, y
        eager.shutdown()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", type=int, default=10_000)
    p.add_argument("--roundtrips", type=int, default=300)
    p.add_argument("--matmuls", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    a = bench_args(p, "200 ops, 20 round trips, 2 matmuls").parse_args(argv)
    if a.quick:
        a.ops, a.roundtrips, a.matmuls, a.repeats = 200, 20, 2, 1
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    report = Report(__file__, a)
    report.table("tiny_ops", f"Tiny ops: {a.ops:,} x (y = y + 1.0) on 4 floats, then sync; "
                 f"medians of {a.repeats}", ["who", "wall us/op", "cpu us/op", "wall vs numpy"],
                 tiny_ops(a.ops, a.repeats), figure="wall us/op", unit="us/op",
                 ratio="wall vs numpy")
    report.table("round_trip", f"Round trip: one op + .numpy(), {a.roundtrips:,} times; "
                 f"medians of {a.repeats}", ["who", "us per round trip", "vs numpy"],
                 round_trip(a.roundtrips, a.repeats), figure="us per round trip", unit="us",
                 ratio="vs numpy")
    report.table("overlap", f"Overlap: {a.matmuls} matmuls 1024x1024 (x = x @ w); medians of "
                 f"{a.repeats}",
                 ["who", "issue s", "issue + compute s", "issue % of total", "result vs numpy"],
                 overlap(a.matmuls, a.repeats), figure="issue s", unit="s",
                 baseline="issue + compute s", ratio="issue % of total", keys=["who"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
