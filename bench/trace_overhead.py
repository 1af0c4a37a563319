"""What recording costs: pieces/s of the 2-stage chain with tracing off, with the always-on
flight recorder, and with full tracing to files.

Plan: ``source(constant) -> identity -> identity`` on empty 1-element kernels (the worst
case: no real work to hide the hooks), every stage on its own thread, register_num 4.

* off:    ``Session(plan, flight=False)`` - the runtime holds no recorder and makes no
          recorder calls at all;
* flight: ``Session(plan)`` - the default: one deque append per event;
* full:   ``Session(plan, trace=DIR)`` - every event kept and flushed to a msgpack file
          per machine (the final flush is inside the timed region).

The three modes run interleaved in each repeat; the table shows medians and the slowdown
against "off" measured in the same run.  Goals: flight <= 3% slower, full <= 15% slower.

    python bench/trace_overhead.py [--pieces 20000] [--repeats 7] [--threads 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import print_table

import actorflow as af


def chain_plan(pieces: int, threads: int, register_num: int = 4) -> af.Plan:
    b = af.PlanBuilder(register_num=register_num, name="trace_overhead_chain")
    h = b.source("constant", {"shape": [1], "dtype": "float32"}, piece_num=pieces, thrd=0)
    for i in range(2):
        h = b.op("identity", h, thrd=min(i + 1, threads - 1))
    return b.build()


def run(plan: af.Plan, pieces: int, mode: str) -> float:
    """Pieces/s from start to the last actor's exit (session setup excluded)."""
    with tempfile.TemporaryDirectory(prefix="af-trace-bench-") as d:
        kw = {"off": {"flight": False}, "flight": {}, "full": {"trace": d}}[mode]
        s = af.Session(plan, validate=False, timeout=600, **kw)
        try:
            t0 = time.perf_counter()
            s.run_to_end(pieces=pieces)
            return pieces / (time.perf_counter() - t0)
        finally:
            s.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=3, help="1: every actor on one thread")
    args = ap.parse_args(argv)
    plan = chain_plan(args.pieces, args.threads)
    modes = ("off", "flight", "full")
    runs: dict[str, list[float]] = {m: [] for m in modes}
    run(plan, min(args.pieces, 2000), "full")  # warm-up
    for r in range(args.repeats):
        order = modes if r % 2 == 0 else tuple(reversed(modes))  # no mode always goes first
        for m in order:
            runs[m].append(run(plan, args.pieces, m))
    base = statistics.median(runs["off"])
    rows = []
    for m in modes:
        med = statistics.median(runs[m])
        rows.append([m, med, f"{(base / med - 1) * 100:+.1f}%", min(runs[m]), max(runs[m])])
    print_table(f"Trace overhead: 2-stage chain of empty kernels, {args.threads} thread(s), "
                f"{args.pieces} pieces, median of {args.repeats} (cpus: {os.cpu_count()})",
                ["mode", "pieces/s", "slower than off", "min", "max"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
