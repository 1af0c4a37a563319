"""Runtime overhead per act: acts/s for empty kernels, against calling the kernels directly.

A plan ``source(constant) -> K x (identity | test_nop)`` (no output task: nothing leaves the
runtime) runs ``PIECES`` pieces with every actor on one thread, and with the chain split
over two threads, on both actor cores in the same run (``ACTORFLOW_CORE=python`` and the
compiled one).  ``identity`` is a kind with no Python kernel on the compiled core (a memcpy
in its loop, no GIL); ``test_nop`` is an empty Python kernel (registered here).  The
baseline calls the very same kernel functions in a plain Python loop, so ``overhead/act =
(runtime time - baseline time) / acts`` is what the actor machinery costs.

    python bench/actor_overhead.py [--pieces 20000] [--repeats 5] [--profile]
                                   [--quick] [--json OUT.jsonl]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
from _util import Report, bench_args, median_of

import actorflow as af
from actorflow import _core
from actorflow.kernels import KernelContext, get_op
from actorflow.kernels.registry import OpDef, register_op


def _nothing(ctx: KernelContext, ins: dict, outs: dict, attrs: dict) -> None:
    """An empty Python kernel: what an act costs when its kernel does nothing."""


register_op(OpDef("test_nop", ("in",), lambda ins, attrs: {"out": ins["in"]}, _nothing))


def chain_plan(k: int, threads: int, register_num: int, pieces: int,
               op: str = "identity") -> af.Plan:
    b = af.PlanBuilder(register_num=register_num, name=f"overhead_k{k}_t{threads}")
    h = b.source("constant", {"shape": [1], "dtype": "float32"}, piece_num=pieces, thrd=0)
    for i in range(k):
        h = b.op(op, h, thrd=(i * threads) // k)
    return b.build()


def run_plan(plan: af.Plan, pieces: int) -> tuple[float, float]:
    """(wall s, process CPU s) from start to the last actor's exit (setup excluded).

    CPU time is the steadier number on a shared machine: other processes stretch the wall
    time but not the CPU this process burns (all its threads together)."""
    s = af.Session(plan, validate=False, timeout=600)
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        s.run_to_end(pieces=pieces)
        return time.perf_counter() - t0, time.process_time() - c0
    finally:
        s.close()


def run_direct(k: int, pieces: int, op: str = "identity") -> float:
    """The same kernels called in a plain loop: the work with no runtime around it."""
    const, ident = get_op("constant").kernel, get_op(op).kernel
    ctx = KernelContext(np)
    bufs = [np.zeros(1, np.float32) for _ in range(k + 1)]
    cattrs = {"shape": [1], "dtype": "float32"}
    pairs = [({"in": bufs[i]}, {"out": bufs[i + 1]}) for i in range(k)]
    t0 = time.perf_counter()
    for piece in range(pieces):
        ctx.piece_id = piece
        const(ctx, {}, {"out": bufs[0]}, cattrs)
        for ins, outs in pairs:
            ident(ctx, ins, outs, {})
    return time.perf_counter() - t0


def profile_one_unit(pieces: int) -> None:
    """cProfile the unit loop itself, run on this thread (cProfile sees one thread only)."""
    from actorflow.actors.runtime import MachineRuntime

    plan = chain_plan(4, 1, 2, pieces)
    rt = MachineRuntime(plan)
    (unit,) = rt.units.values()
    rt.command(plan.tasks_by_type("source")[0].task_id, "start", pieces)
    prof = cProfile.Profile()
    prof.enable()
    unit._loop()
    prof.disable()
    rt.join()
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--chain", type=int, nargs="*", default=[1, 4, 16])
    ap.add_argument("--profile", action="store_true", help="cProfile one 1-thread run")
    args = bench_args(ap, "500 pieces, chains of 1 and 4").parse_args(argv)
    if args.quick:
        args.pieces, args.repeats, args.chain = 500, 1, [1, 4]
    n = args.pieces
    if args.profile:
        profile_one_unit(n)
        return 0
    rows = []
    cores = ["python"] + (["native"] if _core.native_error() is None else [])
    for op in ("identity", "test_nop"):
        for k in args.chain:
            acts = n * (k + 1)
            base = median_of(lambda k=k, op=op: run_direct(k, n, op), args.repeats)
            for threads in (1, 2):
                if threads > k:
                    continue
                for rn in (1, 2):
                    plan = chain_plan(k, threads, rn, n, op)
                    by_core = {}
                    for core in cores:  # alternating, so load hits both alike
                        os.environ["ACTORFLOW_CORE"] = core
                        by_core[core] = [run_plan(plan, n) for _ in range(args.repeats)]
                    for core in cores:
                        runs = by_core[core]
                        t = statistics.median(r[0] for r in runs)
                        cpu = statistics.median(r[1] for r in runs)
                        py = statistics.median(r[0] for r in by_core["python"])
                        rows.append([op, core, k + 1, threads, rn, acts, acts / t, acts / cpu,
                                     py / t, acts / base, t / base,
                                     (t - base) / acts * 1e6, (cpu - base) / acts * 1e6])
    os.environ.pop("ACTORFLOW_CORE", None)
    Report(__file__, args).table(
        "overhead",
        f"Actor overhead: {n} pieces, empty kernels on a (1,) float32 (identity: no Python "
        f"kernel on the compiled core; test_nop: an empty Python kernel), median of {args.repeats}",
        ["kernel", "core", "actors", "threads", "register_num", "acts", "acts/s (wall)",
         "acts per CPU s", "speedup vs python core", "direct calls/s",
         "time ratio (runtime/direct)", "overhead us/act (wall)",
         "overhead us/act (CPU)"], rows,
        figure="acts/s (wall)", unit="acts/s", baseline="direct calls/s",
        ratio="speedup vs python core",
        keys=["kernel", "core", "actors", "threads", "register_num"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
