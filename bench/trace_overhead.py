"""What recording costs: pieces/s of the 2-stage chain with tracing off, with the always-on
flight recorder, and with full tracing to files.

Plan: ``source(constant) -> stage -> stage``, register_num 4, on one thread (``--threads 3``:
one per actor; on a loaded 2-core box GIL hand-offs then swamp what is measured);
the stages are empty 1-element ``identity`` kernels (the worst case: no work to hide the
hooks) or ``busy`` kernels doing a few tens of microseconds of numpy per act.

* off:    ``Session(plan, flight=False)`` - the runtime holds no recorder and makes no
          recorder calls at all;
* flight: ``Session(plan)`` - the default: one ``deque.append`` of the runtime's own
          ``Msg`` per message handled (or sent to another unit), last 1024 kept;
* full:   ``Session(plan, trace=DIR)`` - every event kept and flushed to a msgpack file
          per machine (the final flush is inside the timed region).

The three modes run interleaved in each repeat; the table shows medians and the slowdown
against "off" measured in the same run, plus two steadier CPU ratios for a shared, loaded
box: "paired" is the median over repeats of (this mode / off) within one repeat (adjacent
runs share the load of the moment), "min" compares the least disturbed runs.
Every workload runs on each actor core (``core``: ``ACTORFLOW_CORE=python`` and the compiled
one where it is built; on the compiled core the native loop keeps the flight ring and the
packed events in C).  Goals: flight <= 3% slower, full <= 10% slower (milestone 3).

    python bench/trace_overhead.py [--pieces 20000] [--repeats 7] [--threads 3]
                                   [--quick] [--json OUT.jsonl]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import Report, bench_args

import actorflow as af
from actorflow import _core

WORKLOADS = {  # name -> (op, attrs) of each of the two stages
    "empty": ("identity", {}),
    "busy-4k": ("busy", {"size": 4096, "iters": 2}),  # a few tens of us of numpy per act
}


def chain_plan(pieces: int, threads: int, register_num: int = 4,
               workload: str = "empty") -> af.Plan:
    op, attrs = WORKLOADS[workload]
    b = af.PlanBuilder(register_num=register_num, name=f"trace_overhead_{workload}")
    h = b.source("constant", {"shape": [1], "dtype": "float32"}, piece_num=pieces, thrd=0)
    for i in range(2):
        h = b.op(op, h, thrd=min(i + 1, threads - 1), **attrs)
    return b.build()


def run(plan: af.Plan, pieces: int, mode: str) -> tuple[float, float]:
    """(pieces/s, CPU us/piece) from start to the last actor's exit (setup excluded).

    CPU time of the whole process (every unit thread) is reported next to wall time: on a
    shared, loaded machine it is the steadier of the two."""
    with tempfile.TemporaryDirectory(prefix="af-trace-bench-") as d:
        kw = {"off": {"flight": False}, "flight": {}, "full": {"trace": d}}[mode]
        s = af.Session(plan, validate=False, timeout=600, **kw)
        try:
            c0, t0 = time.process_time(), time.perf_counter()
            s.run_to_end(pieces=pieces)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            return pieces / wall, cpu * 1e6 / pieces
        finally:
            s.close()


def measure(plan: af.Plan, pieces: int, repeats: int) -> dict[str, list[tuple[float, float]]]:
    modes = ("off", "flight", "full")
    runs: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    run(plan, min(pieces, 2000), "full")  # warm-up
    for r in range(repeats):
        order = modes if r % 2 == 0 else tuple(reversed(modes))  # no mode always goes first
        for m in order:
            runs[m].append(run(plan, pieces, m))
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1,
                    help="units: 1 = every actor on one thread (the steadiest measure)")
    ap.add_argument("--workload", choices=[*WORKLOADS, "all"], default="all")
    args = bench_args(ap, "500 pieces, 1 repeat").parse_args(argv)
    if args.quick:
        args.pieces, args.repeats = 500, 1
    rows = []
    cores = ["python"] + (["native"] if _core.native_error() is None else [])
    for w, core in [(w, c) for w in (WORKLOADS if args.workload == "all" else [args.workload])
                    for c in cores]:
        os.environ["ACTORFLOW_CORE"] = core
        pieces = args.pieces if w == "empty" else max(args.pieces // 4, min(args.pieces, 1000))
        runs = measure(chain_plan(pieces, args.threads, workload=w), pieces, args.repeats)
        base = statistics.median(r[0] for r in runs["off"])
        base_cpu = statistics.median(r[1] for r in runs["off"])
        min_cpu = min(r[1] for r in runs["off"])
        for m, v in runs.items():
            med = statistics.median(r[0] for r in v)
            cpu = statistics.median(r[1] for r in v)
            paired = statistics.median(a[1] / b[1] for a, b in zip(v, runs["off"]))
            low = min(r[1] for r in v)
            rows.append([w, core, pieces, m, med, f"{(base / med - 1) * 100:+.1f}%", cpu, base_cpu,
                         f"{(cpu / base_cpu - 1) * 100:+.1f}%", paired,
                         f"{(paired - 1) * 100:+.1f}%", low,
                         f"{(low / min_cpu - 1) * 100:+.1f}%"])
    Report(__file__, args).table(
        "overhead", f"Trace overhead: 2-stage chain, {args.threads} thread(s), median of "
        f"{args.repeats} interleaved runs (cpus: {os.cpu_count()}, load: "
        f"{os.getloadavg()[0]:.1f})",
        ["workload", "core", "pieces", "mode", "pieces/s", "slower (wall)", "CPU us/piece",
         "off CPU us/piece", "more CPU", "CPU / off (paired)", "more CPU (paired)",
         "min CPU us", "more CPU (min)"], rows,
        figure="CPU us/piece", unit="us/piece", baseline="off CPU us/piece",
        ratio="CPU / off (paired)", keys=["workload", "core", "pieces", "mode"])
    os.environ.pop("ACTORFLOW_CORE", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
