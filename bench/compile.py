"""Compile speed along two axes: job size (ops) and cluster size (ranks).

    python bench/compile.py                 # both tables, medians of 3 repeats
    python bench/compile.py --quick         # seconds: 1 repeat, small sizes
    python bench/compile.py --only ranks    # one table (ops | ranks)
    python bench/compile.py --json OUT.jsonl   # also one JSON line per row

Ops axis: a job of N ops is a stack of data-parallel layers on 2 machines x 2 devices
(input split over 4 ranks, weights broadcast, matmul + bias + activation), with an SBP
hint every 8 layers that forces an all-to-all and back: it exercises SBP choice, boxing,
comm_net and merging.  Goal: 10,000 ops compiled and validated in <= 5 s.

Ranks axis: one data-parallel layer (``random_input`` split by rows over every rank ->
``x @ w``, ``w`` broadcast -> ``relu`` -> ``output``) on 100, 300 and 1,000 machines x 8
devices: the input is scattered from one device and the output gathered to one, through
the compiler's fan-in/fan-out trees.  Goals: 1,000 x 8 compiled and validated in <= 10 s;
time per task at 8,000 ranks within 2x of that at 800 (the baseline, same run).

Phases timed separately: tracing (Python API -> job), compiling (job -> Plan), validating
(rules, then the dry run of the actor protocol), then the whole validated ``af.compile``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import Report, bench_args

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


def build_layer(machines: int, devices: int = 8) -> af.Job:
    """The data-parallel layer of issue 14 on ``machines`` x ``devices`` ranks."""
    n = machines * devices
    ranks = af.placement("cpu", ranks=list(range(n)))
    with af.Job(f"layer{n}", pieces=2) as job:
        x = af.random_input("x", (4 * n, 16), seed=1, placement=ranks, sbp=af.sbp.split(0))
        w = af.variable("w", (16, 16), init="normal", seed=2, placement=ranks)
        af.output("y", F.relu(x @ w))
    return job


def measure(build, machines: int, devices: int) -> dict:
    t0 = time.perf_counter()
    job = build()
    t1 = time.perf_counter()
    plan = af.compile(job, machines=machines, devices_per_machine=devices, validate=False)
    t2 = time.perf_counter()
    validate_plan(plan, progress=False)
    t3 = time.perf_counter()
    validate_plan(plan)  # rules again + the dry run
    t4, c4 = time.perf_counter(), time.process_time()
    af.compile(job, machines=machines, devices_per_machine=devices)  # end to end, validated
    t5, c5 = time.perf_counter(), time.process_time()
    return {"ops": len(job.spec.ops), "tasks": len(plan.tasks), "trace": t1 - t0,
            "compile": t2 - t1, "rules": t3 - t2, "dry_run": (t4 - t3) - (t3 - t2),
            "total": t5 - t4, "cpu": c5 - c4}


def _median(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2]


def _medians(build, machines: int, devices: int, repeats: int) -> dict:
    runs = [measure(build, machines, devices) for _ in range(repeats)]
    return {k: _median([r[k] for r in runs]) for k in runs[0]}


def ops_table(report: Report, sizes: list[int], repeats: int) -> None:
    rows = []
    for n in sizes:
        med = _medians(lambda n=n: build_job(n), MACHINES, DEVICES, repeats)
        total = med["total"]
        rows.append([n, int(med["tasks"]), med["trace"], med["compile"], med["rules"],
                     med["dry_run"], total, med["tasks"] / med["compile"],
                     med["tasks"] / total, 5.0 / total])
    report.table("ops", f"ops axis: {MACHINES} machines x {DEVICES} devices, medians of "
                 f"{repeats}",
                 ["ops", "tasks", "trace s", "compile s", "validate rules s", "dry run s",
                  "af.compile (validated) s", "tasks/s (compile)",
                  "tasks/s (compile+validate)", "vs 5 s goal (x)"], rows,
                 figure="af.compile (validated) s", unit="s", ratio="vs 5 s goal (x)",
                 keys=["ops", "tasks"])


def ranks_table(report: Report, machine_counts: list[int], repeats: int,
                devices: int = 8) -> None:
    rows = []
    base = base_cpu = None  # seconds per task of the smallest cluster: the baseline
    for m in machine_counts:
        med = _medians(lambda m=m: build_layer(m, devices), m, devices, repeats)
        total = med["total"]
        per_task, per_task_cpu = total / med["tasks"], med["cpu"] / med["tasks"]
        base, base_cpu = base or per_task, base_cpu or per_task_cpu
        rows.append([f"{m:,} x {devices}", m * devices, int(med["tasks"]), med["compile"],
                     med["rules"], med["dry_run"], total, med["cpu"], per_task * 1e6,
                     base * 1e6, per_task / base, per_task_cpu / base_cpu, 10.0 / total])
    report.table("ranks", f"ranks axis: the data-parallel layer, medians of {repeats}; "
                 f"baseline: time per task at {machine_counts[0] * devices:,} ranks",
                 ["machines", "ranks", "tasks", "compile s", "validate rules s", "dry run s",
                  "af.compile (validated) s", "its CPU s", "us per task",
                  "baseline us per task", "per task vs baseline (goal <= 2)",
                  "same, CPU time", "vs 10 s goal (x)"], rows,
                 figure="us per task", unit="us/task", baseline="baseline us per task",
                 ratio="per task vs baseline (goal <= 2)", keys=["machines", "ranks", "tasks"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["ops", "ranks"], help="one table only")
    args = bench_args(ap, "100 and 300 ops, 4 and 8 machines").parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    report = Report(__file__, args)
    if args.only in (None, "ops"):
        ops_table(report, [100, 300] if args.quick else [100, 1000, 10000], repeats)
    if args.only in (None, "ranks"):
        ranks_table(report, [4, 8] if args.quick else [100, 300, 1000], repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
