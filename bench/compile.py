"""Compile speed: tasks compiled per second for jobs of 100, 1,000 and 10,000 ops.

    python bench/compile.py            # medians of 3 repeats
    python bench/compile.py --quick    # 1 repeat, sizes 100 and 1,000

A job of N ops is a stack of data-parallel layers on 2 machines x 2 devices (input split
over 4 ranks, weights broadcast, matmul + bias + activation), with an SBP hint every 8
layers that forces an all-to-all and back: it exercises SBP choice, boxing, comm_net and
merging.  Phases timed separately: tracing (Python API -> job), compiling (job -> Plan),
validating (rules, then the dry run of the actor protocol).  Goal: 10,000 ops compiled
and validated in <= 5 s.
"""

from __future__ import annotations

import argparse
import sys
import time

import actorflow as af
import actorflow.functional as F
from actorflow.plan.validate import validate_plan

MACHINES, DEVICES = 2, 2
WIDTH, BATCH = 8, 16


def build_job(n_ops: int) -> af.Job:
    """About ``n_ops`` logical ops (each layer is 4 ops, a hint layer 6)."""
    ranks = af.placement("cpu", ranks=list(range(MACHINES * DEVICES)))
    with af.Job(f"bench{n_ops}", pieces=2) as job:
        h = af.random_input("x", (BATCH, WIDTH), seed=1, placement=ranks, sbp=af.sbp.split(0))
        k = 0
        while len(job.spec.ops) < n_ops - 1:
            w = af.variable(f"w{k}", (WIDTH, WIDTH), init="normal", seed=k, std=0.3,
                            placement=ranks)
            h = F.tanh(h @ w) + 0.1
            if k % 8 == 7:
                h = h.to_global(ranks, af.sbp.split(1)).to_global(ranks, af.sbp.split(0))
            k += 1
        af.output("y", h)
    return job


def measure(n_ops: int) -> dict:
    t0 = time.perf_counter()
    job = build_job(n_ops)
    t1 = time.perf_counter()
    plan = af.compile(job, machines=MACHINES, devices_per_machine=DEVICES, validate=False)
    t2 = time.perf_counter()
    validate_plan(plan, progress=False)
    t3 = time.perf_counter()
    validate_plan(plan)  # rules again + the dry run
    t4 = time.perf_counter()
    af.compile(job, machines=MACHINES, devices_per_machine=DEVICES)  # end to end, validated
    t5 = time.perf_counter()
    return {"ops": len(job.spec.ops), "tasks": len(plan.tasks), "trace": t1 - t0,
            "compile": t2 - t1, "rules": t3 - t2, "dry_run": (t4 - t3) - (t3 - t2),
            "total": t5 - t4}


def _median(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 repeat, up to 1,000 ops")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    sizes = [100, 1000] if args.quick else [100, 1000, 10000]
    repeats = 1 if args.quick else args.repeats
    rows = []
    for n in sizes:
        runs = [measure(n) for _ in range(repeats)]
        med = {k: _median([r[k] for r in runs]) for k in runs[0]}
        total = med["total"]
        rows.append([f"{n:,}", f"{int(med['tasks']):,}", f"{med['trace']:.3f}",
                     f"{med['compile']:.3f}", f"{med['rules']:.3f}", f"{med['dry_run']:.3f}",
                     f"{total:.3f}", f"{med['tasks'] / med['compile']:,.0f}",
                     f"{med['tasks'] / total:,.0f}", f"{5.0 / total:.1f}x"])
    head = ["ops", "tasks", "trace s", "compile s", "validate rules s", "dry run s",
            "af.compile (validated) s", "tasks/s (compile)", "tasks/s (compile+validate)",
            "vs 5 s goal"]
    print(f"compile bench: {MACHINES} machines x {DEVICES} devices, medians of {repeats}")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
