"""GPU bench: actorflow jobs on the device against hand-written loops of the same array module.

Three comparisons, each against a baseline measured in the same run (medians of repeats):

1. compute-bound: 4 layers of (N x N fp32 matmul + relu) per piece, inputs made on the
   device (variables), one scalar sum per piece back to the host; baseline: the same loop
   written by hand with the array module.  Goal on a GPU: >= 0.95x the hand loop.
2. host input: each piece's input drawn by numpy on the host, copied to the device, the
   same 4 layers, summed and copied back; baseline: the plain serial loop (draw, copy,
   compute, copy back, next).  The actors overlap draws, copies and device work.
   Goal on a GPU: >= 1.5x the serial loop.
3. per-act overhead: a chain of K tiny kernels (scalar add on 16 floats), one act per
   kernel (merging off), time per act; baseline: the array module's own cost per tiny op
   in a loop.  Goal on a GPU: <= 2x.

    python bench/gpu.py [--size 4096] [--pieces 40] [--repeats 3] [--chain 32]
                        [--chain-pieces 200] [--quick] [--json OUT.jsonl]

Runs on CuPy when a GPU is there, else on the emulated device (numpy under CuPy's rules);
``ACTORFLOW_DEVICE`` set by the caller wins.  The table says which device it used.  On the
emulated device the numbers only show that the path works: the "device" is the host.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import Report, bench_args, median_of

import actorflow as af
import actorflow.functional as F

LAYERS = 4


def pick_device() -> str:
    if os.environ.get("ACTORFLOW_DEVICE"):
        return os.environ["ACTORFLOW_DEVICE"]
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "cuda"
    except Exception:  # no CuPy / no driver / no device
        pass
    return "emulated"


def weights(n: int) -> list[np.ndarray]:
    return [(np.random.default_rng(10 + k).standard_normal((n, n)) / math.sqrt(n))
            .astype(np.float32) for k in range(LAYERS)]


# -- 1. compute-bound --------------------------------------------------------------------
def compute_job(n: int, pieces: int) -> af.Plan:
    place = af.placement("cuda", ranks=[0])
    with af.Job("gpu_compute", pieces=pieces, register_num=2) as job:
        af.random_input("tick", (1,), seed=0)  # a tiny host source paces the device work
        h = af.variable("x", (n, n), init="normal", seed=1, placement=place)
        for k in range(LAYERS):
            w = af.variable(f"w{k}", (n, n), init="normal", seed=10 + k, std=1 / math.sqrt(n),
                            placement=place)
            h = F.relu(h @ w)
        af.output("s", F.sum(h))
    return af.compile(job)


def run_job(plan: af.Plan, name: str) -> tuple[float, list]:
    with af.Session(plan, timeout=600) as s:
        t0 = time.perf_counter()
        out = s.run_to_end()[name]
        return time.perf_counter() - t0, out


def hand_compute(xp, n: int, pieces: int) -> float:
    x = xp.asarray(np.random.default_rng(1).standard_normal((n, n)).astype(np.float32))
    ws = [xp.asarray(w) for w in weights(n)]
    xp.cuda.Device(0).synchronize()
    t0 = time.perf_counter()
    sums = []
    for _ in range(pieces):
        h = x
        for w in ws:
            h = xp.maximum(h @ w, 0)
        sums.append(xp.sum(h))
    host = [s.item() for s in sums]  # one sync at the end
    assert len(host) == pieces
    return time.perf_counter() - t0


# -- 2. host input -----------------------------------------------------------------------
def host_input_job(n: int, pieces: int) -> af.Plan:
    place = af.placement("cuda", ranks=[0])
    with af.Job("gpu_host_input", pieces=pieces, register_num=3) as job:
        h = af.random_input("x", (n, n), seed=5)  # drawn by numpy on the host per piece
        h = h.to_global(place)
        for k in range(LAYERS):
            w = af.variable(f"w{k}", (n, n), init="normal", seed=10 + k, std=1 / math.sqrt(n),
                            placement=place)
            h = F.relu(h @ w)
        af.output("s", F.sum(h))
    return af.compile(job)


def hand_host_input(xp, n: int, pieces: int) -> float:
    ws = [xp.asarray(w) for w in weights(n)]
    xp.cuda.Device(0).synchronize()
    t0 = time.perf_counter()
    for p in range(pieces):
        x = np.random.default_rng([5, p]).standard_normal((n, n)).astype(np.float32)
        h = xp.asarray(x)
        for w in ws:
            h = xp.maximum(h @ w, 0)
        xp.sum(h).item()  # copied back before the next piece: the serial loop
    return time.perf_counter() - t0


# -- 3. per-act overhead -----------------------------------------------------------------
def chain_job(k: int, pieces: int) -> af.Plan:
    place = af.placement("cuda", ranks=[0])
    with af.Job("gpu_chain", pieces=pieces, register_num=2) as job:
        h = af.random_input("x", (16,), seed=3).to_global(place)
        for _ in range(k):
            h = h + 1.0
        af.output("y", h)
    return af.compile(job, merge=False)


def launch_cost(xp, ops: int) -> float:
    a = xp.zeros(16, np.float32)
    out = xp.empty_like(a)
    xp.cuda.Device(0).synchronize()
    t0 = time.perf_counter()
    for _ in range(ops):
        xp.add(a, 1.0, out=out)
    xp.cuda.Device(0).synchronize()
    return (time.perf_counter() - t0) / ops


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=0, help="N (default 4096 on a GPU, 256 "
                                                        "emulated)")
    ap.add_argument("--pieces", type=int, default=0, help="pieces per run (default 40)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chain", type=int, default=32, help="tiny kernels in the chain")
    ap.add_argument("--chain-pieces", type=int, default=200, help="pieces through the chain")
    args = bench_args(ap, "N=32, 4 pieces, a chain of 4").parse_args(argv)
    launches = 2000
    if args.quick:
        args.size, args.pieces, args.repeats, args.chain, args.chain_pieces = 32, 4, 1, 4, 10
        launches = 200
    device = pick_device()
    os.environ["ACTORFLOW_DEVICE"] = device
    emulated = device == "emulated"
    n = args.size or (256 if emulated else 4096)
    pieces = args.pieces or 40
    from actorflow.streams.device import device_backend

    xp = device_backend().xp
    what = ("the EMULATED device (numpy under CuPy's rules on this CPU; ratios only show "
            "that the path works)" if emulated else f"CuPy {xp.__version__} on "
            f"{xp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print(f"bench/gpu.py on {what}; N={n}, {pieces} pieces, {args.repeats} repeats (medians)")

    plan_c = compute_job(n, pieces)
    job_c = median_of(lambda: run_job(plan_c, "s")[0], args.repeats, warmup=1)
    hand_c = median_of(lambda: hand_compute(xp, n, pieces), args.repeats, warmup=1)
    plan_h = host_input_job(n, pieces)
    job_h = median_of(lambda: run_job(plan_h, "s")[0], args.repeats, warmup=1)
    hand_h = median_of(lambda: hand_host_input(xp, n, pieces), args.repeats, warmup=1)
    k = args.chain
    plan_k = chain_job(k, args.chain_pieces)
    per_act = median_of(lambda: run_job(plan_k, "y")[0] / (args.chain_pieces * k),
                        args.repeats, warmup=1)
    launch = median_of(lambda: launch_cost(xp, launches), args.repeats, warmup=1)
    rows = [
        ["compute-bound (inputs on device)", "pieces/s", pieces / job_c, pieces / hand_c,
         hand_c / job_c, ">= 0.95x"],
        ["host input (draw, copy, compute, copy back)", "pieces/s", pieces / job_h,
         pieces / hand_h, hand_h / job_h, ">= 1.5x"],
        [f"chain of {k} tiny kernels, one act each", "us per act", per_act * 1e6,
         launch * 1e6, per_act / launch, "<= 2x"],
    ]
    on = "the emulated device" if emulated else "the GPU"
    Report(__file__, args).table(
        "vs_hand", f"actorflow vs hand-written loops on {on}",
        ["job", "device", "unit", "actorflow", "hand loop", "ratio", "goal (GPU)"],
        [[r[0], device, *r[1:]] for r in rows], figure="actorflow", unit="",
        unit_column="unit", baseline="hand loop", ratio="ratio", keys=["job", "device"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
