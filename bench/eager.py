"""Eager mode: what an op costs through the VM, side by side with numpy and torch's CPU
eager mode (when installed), on both cores (``native``: the compiled issue path,
``actorflow._core._eager``; ``python``: the reference, with its two schedulers), all in
one process and one run.  Contenders alternate within every repeat (the box is shared:
a load spike hits all of them), and each figure is the median over the repeats.

1. tiny ops: ``y = y + 1.0`` on a 4-element float32 tensor, N times, then sync: process
   CPU per op (all threads) and wall (goal: native <= 2 us of CPU, no slower than torch);
2. round trip: one op + ``.numpy()`` (goal: native <= 10 us);
3. overlap: issuing M matmuls of 1024x1024 (``x = x @ w``) returns long before they are
   computed (goal: issue < 10% of compute); the final result is compared with numpy's;
4. MLP forward: batch 32, 256 wide, 4 layers of ``relu(h @ w + b)``, F forwards then sync
   (goal: native within 1.2x of the same forward in plain numpy); results compared.

BLAS and torch run on one thread (``OPENBLAS_NUM_THREADS`` etc. default to 1 here): on a
shared 2-core box the thread pools' spinning otherwise decides every number.

    python bench/eager.py [--ops 10000] [--roundtrips 2000] [--matmuls 20] [--forwards 200]
                          [--repeats 7] [--quick] [--json OUT.jsonl]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# one BLAS / OpenMP thread for everyone (numpy, torch, actorflow's kernels): on a shared
# 2-core box the pools' spinning threads otherwise decide every number
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402  (after the thread settings)
from _util import Report, bench_args  # noqa: E402  (after the thread settings)

import actorflow as af  # noqa: E402  (after the thread settings)
import actorflow.functional as F  # noqa: E402  (after the thread settings)
from actorflow import eager  # noqa: E402  (after the thread settings)
from actorflow.eager.core import NATIVE  # noqa: E402  (after the thread settings)

try:
    import torch

    torch.set_num_threads(1)
except ImportError:
    torch = None

# (label, core, scheduler, fuse)
VMS = [("actorflow native", "native", "inline", True),
       ("actorflow native, fusion off", "native", "inline", False),
       ("actorflow python (inline)", "python", "inline", True),
       ("actorflow python (thread)", "python", "thread", False)]
if NATIVE is None:
    VMS = [v for v in VMS if v[1] != "native"]


def _vm(core: str, sched: str, fuse: bool) -> None:
    eager.shutdown(scheduler=sched, fuse=fuse, core=core)


def _interleaved(contenders: dict[str, tuple[Callable[[], Any], Callable[[], None]]],
                 repeats: int) -> dict[str, tuple[float, float]]:
    """Median (wall s, process CPU s) of each contender's ``run``, run after its ``setup``,
    the contenders alternating within every repeat (one warm-up round first)."""
    walls: dict[str, list[float]] = {k: [] for k in contenders}
    cpus: dict[str, list[float]] = {k: [] for k in contenders}
    for rnd in range(repeats + 1):
        for name, (run, setup) in contenders.items():
            setup()
            c0, t0 = time.process_time(), time.perf_counter()
            run()
            w, c = time.perf_counter() - t0, time.process_time() - c0
            if rnd:
                walls[name].append(w)
                cpus[name].append(c)
    return {k: (statistics.median(walls[k]), statistics.median(cpus[k])) for k in contenders}


def _nothing() -> None:
    pass


def tiny_ops(n: int, repeats: int) -> list[list]:
    a = np.ones(4, np.float32)

    def numpy_loop() -> None:
        y = a
        for _ in range(n):
            y = y + 1.0

    def af_loop() -> None:
        y = af.ones(4)
        for _ in range(n):
            y = y + 1.0
        af.sync()
        assert float(y.numpy()[0]) == n + 1.0

    runs: dict[str, Any] = {"numpy": (numpy_loop, _nothing)}
    if torch is not None:
        def torch_loop() -> None:
            y = torch.ones(4)
            for _ in range(n):
                y = y + 1.0
        runs["torch 2 CPU eager"] = (torch_loop, _nothing)
    for label, core, sched, fuse in VMS:
        runs[label] = (af_loop, lambda c=core, s=sched, f=fuse: _vm(c, s, f))
    got = _interleaved(runs, repeats)
    base_cpu = got["numpy"][1]
    torch_cpu = got.get("torch 2 CPU eager", (None, None))[1]
    return [[k, w / n * 1e6, c / n * 1e6, c / base_cpu,
             c / torch_cpu if torch_cpu else float("nan")] for k, (w, c) in got.items()]


def round_trip(n: int, repeats: int) -> list[list]:
    a = np.ones(4, np.float32)
    runs: dict[str, Any] = {"numpy (op + copy)": (lambda: [(a + 1.0).copy() for _ in range(n)],
                                                 _nothing)}
    if torch is not None:
        t = torch.ones(4)
        runs["torch 2 CPU eager"] = (lambda: [(t + 1.0).numpy() for _ in range(n)], _nothing)
    box: dict[str, Any] = {}

    def af_rt() -> None:
        x = box["x"]
        for _ in range(n):
            (x + 1.0).numpy()

    def setup(core: str, sched: str, fuse: bool) -> None:
        _vm(core, sched, fuse)
        box["x"] = af.ones(4)

    for label, core, sched, fuse in VMS:
        runs[label] = (af_rt, lambda c=core, s=sched, f=fuse: setup(c, s, f))
    got = _interleaved(runs, repeats)
    base = got["numpy (op + copy)"][0]
    tw = got.get("torch 2 CPU eager", (None, None))[0]
    return [[k, w / n * 1e6, w / base, w / tw if tw else float("nan")]
            for k, (w, _c) in got.items()]


def overlap(m: int, repeats: int, size: int = 1024) -> list[list]:
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((size, size)).astype(np.float32)
    w0 = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
    want = x0
    for _ in range(m):
        want = want @ w0
    rows = []
    for label, core, sched, fuse in VMS[:1] + VMS[2:3]:
        _vm(core, sched, fuse)
        x, w = af.tensor(x0), af.tensor(w0)
        issues, totals, got = [], [], None
        for _ in range(repeats):
            t0 = time.perf_counter()
            y = x
            for _ in range(m):
                y = y @ w
            t1 = time.perf_counter()
            got = y.numpy()
            issues.append(t1 - t0)
            totals.append(time.perf_counter() - t0)
        issue, total = statistics.median(issues), statistics.median(totals)
        same = "bit-identical" if np.array_equal(got, want) else (
            f"max |diff| {np.abs(got - want).max():.2e}")
        rows.append([label, issue, total, issue / total * 100, same])
        del x, w, y
    return rows


def mlp(forwards: int, repeats: int, batch: int = 32, width: int = 256,
        layers: int = 4) -> list[list]:
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((batch, width)).astype(np.float32)
    ws = [(rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
          for _ in range(layers)]
    bs = [rng.standard_normal(width).astype(np.float32) for _ in range(layers)]

    def np_forward() -> np.ndarray:
        h = xs
        for w, b in zip(ws, bs):
            h = np.maximum(h @ w + b, 0)
        return h

    want = np_forward()
    out: dict[str, Any] = {}
    runs: dict[str, Any] = {"numpy": (lambda: [np_forward() for _ in range(forwards)],
                                      _nothing)}
    if torch is not None:
        tx, tw, tb = torch.from_numpy(xs), [torch.from_numpy(w) for w in ws], \
            [torch.from_numpy(b) for b in bs]

        def torch_forwards() -> None:
            for _ in range(forwards):
                h = tx
                for w, b in zip(tw, tb):
                    h = torch.relu(h @ w + b)
            out["torch 2 CPU eager"] = h.numpy()
        runs["torch 2 CPU eager"] = (torch_forwards, _nothing)
    box: dict[str, Any] = {}

    def setup(core: str, sched: str, fuse: bool) -> None:
        _vm(core, sched, fuse)
        box["x"], box["w"], box["b"] = af.tensor(xs), [af.tensor(w) for w in ws], \
            [af.tensor(b) for b in bs]
        af.sync()

    def af_forwards(label: str) -> None:
        x, aw, ab = box["x"], box["w"], box["b"]
        for _ in range(forwards):
            h = x
            for w, b in zip(aw, ab):
                h = F.relu(h @ w + b)
        out[label] = h.numpy()

    for label, core, sched, fuse in VMS:
        runs[label] = (lambda k=label: af_forwards(k),
                       lambda c=core, s=sched, f=fuse: setup(c, s, f))
    got = _interleaved(runs, repeats)
    base = got["numpy"][0]
    rows = []
    for k, (w, c) in got.items():
        res = out.get(k, want)
        same = "bit-identical" if np.array_equal(res, want) else (
            f"max |diff| {np.abs(res - want).max():.2e}")
        rows.append([k, w / forwards * 1e6, c / forwards * 1e6, w / base, same])
    return rows


def main(argv: list[str] | None = None) -> int:
    p = bench_args(argparse.ArgumentParser(description=__doc__,
                                           formatter_class=argparse.RawDescriptionHelpFormatter))
    p.add_argument("--ops", type=int, default=10_000)
    p.add_argument("--roundtrips", type=int, default=2_000)
    p.add_argument("--matmuls", type=int, default=20)
    p.add_argument("--forwards", type=int, default=200)
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args(argv)
    if a.quick:
        a.ops, a.roundtrips, a.matmuls, a.forwards, a.repeats = 300, 50, 2, 5, 1
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; torch "
          f"{torch.__version__ if torch is not None else 'not installed'}; compiled core "
          f"{'built' if NATIVE is not None else 'not in use'}")
    report = Report(__file__, a)
    report.table("tiny_ops", f"Tiny ops: {a.ops:,} x (y = y + 1.0) on 4 floats, then sync; "
                 f"medians of {a.repeats}, interleaved",
                 ["who", "wall us/op", "cpu us/op", "cpu vs numpy", "cpu vs torch"],
                 tiny_ops(a.ops, a.repeats), figure="cpu us/op", unit="us/op",
                 ratio="cpu vs torch", keys=["who"])
    report.table("round_trip", f"Round trip: one op + .numpy(), {a.roundtrips:,} times; "
                 f"medians of {a.repeats}, interleaved",
                 ["who", "us per round trip", "vs numpy", "vs torch"],
                 round_trip(a.roundtrips, a.repeats), figure="us per round trip", unit="us",
                 ratio="vs torch", keys=["who"])
    report.table("overlap", f"Overlap: {a.matmuls} matmuls 1024x1024 (x = x @ w); medians of "
                 f"{a.repeats}",
                 ["who", "issue s", "issue + compute s", "issue % of total", "result vs numpy"],
                 overlap(a.matmuls, a.repeats), figure="issue s", unit="s",
                 baseline="issue + compute s", ratio="issue % of total", keys=["who"])
    report.table("mlp", f"MLP forward: batch 32, 256 wide, 4 layers of relu(h @ w + b), "
                 f"{a.forwards} forwards then sync; medians of {a.repeats}, interleaved",
                 ["who", "wall us/forward", "cpu us/forward", "wall vs numpy",
                  "result vs numpy"],
                 mlp(a.forwards, a.repeats), figure="wall us/forward", unit="us",
                 ratio="wall vs numpy", keys=["who"])
    eager.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
