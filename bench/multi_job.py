"""Several jobs in one plan: what the main job costs, and what running jobs side by side buys.

    python bench/multi_job.py [--requests 40] [--repeats 3] [--size 192] [--quick]
                              [--json OUT.jsonl]

1. **Job switch overhead**: the latency of one request of a lone job (``relu(x) + 1`` on a
   small array, and four ``tanh(x @ w)`` layers; one machine) through the main job
   (wait_and_send_ids -> lock -> case -> ticks -> job -> sink/callback ticks -> esac)
   against the same job compiled alone and run with ``Session.run`` (no main job), both
   measured here; with push and pull jobs (3 critical sections per request) and with
   ``push_pull=False`` (1).  Goal <= 1.2x.
2. **Two non-conflicting jobs concurrently**: jobs A and B (each ``tanh(x @ w)`` with its
   own read-only weight, A on machine 0 and B on machine 1) requested by two client threads
   at once, against the same requests made one job after the other.  Throughput ratio
   (serial time / concurrent time); goal >= 1.8x.  Thread units (``af.Session``) and process
   units (machines as nodes over tcp, one process per unit) are both measured.

Requests are synchronous (``run`` waits for its result), as a user calling from a thread
would make them.  Both tables run on each actor core in the same run (``core``: the
compiled one where it is built, and ``ACTORFLOW_CORE=python``).  Medians of ``--repeats``;
nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core per job, not BLAS threads
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _util import Report, bench_args, median_of

import actorflow as af
from actorflow import _core


def lone_job(name: str = "lone", size: int = 0) -> af.Job:
    """``relu(x) + 1`` on 64 numbers, or (size > 0) four ``tanh(x @ w)`` layers."""
    with af.Job(name) as j:
        if size:
            x = af.input("x", (size, size))
            w = af.variable("w", (size, size), init="normal", seed=1, std=0.05)
            h = x
            for _ in range(4):
                h = af.functional.tanh(h @ w)
            af.output("y", h.sum())
        else:
            x = af.input("x", (64,))
            af.output("y", af.functional.relu(x) + 1.0)
    return j


def side_jobs(size: int) -> list[af.Job]:
    jobs = []
    for name, rank in (("A", 0), ("B", 1)):
        P = af.placement("cpu", ranks=[rank])
        with af.Job(name, placement=P) as j:
            x = af.input("x", (size, size), placement=P)
            w = af.variable(f"w{name}", (size, size), init="normal", seed=rank, std=0.05,
                            placement=P)
            h = x
            for _ in range(4):
                h = af.functional.tanh(h @ w)
            af.output("y", h.sum())
        jobs.append(j)
    return jobs


def latency(run, n: int) -> float:
    """Median seconds per request of ``n`` sequential requests."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def switch_overhead(requests: int, repeats: int, size: int) -> list[list]:
    rows = []
    for what, n in (("relu(x)+1 on 64 floats", 0), (f"4 x tanh(x @ w), {size}x{size}", size)):
        feeds = {"x": np.ones((n, n) if n else 64, np.float32)}
        with af.Session(af.compile(lone_job(size=n), machines=1)) as s:
            s.run(feeds)
            single = median_of(lambda s=s, f=feeds: latency(lambda: s.run(f), requests),
                               repeats)
        multi = []
        for push_pull in (True, False):
            plan = af.compile([lone_job(size=n), lone_job("other", size=n)], machines=1,
                              push_pull=push_pull)
            with af.Session(plan) as s:
                s.run("lone", feeds)
                multi.append(median_of(
                    lambda s=s, f=feeds: latency(lambda: s.run("lone", f), requests), repeats))
        rows.append([what, single * 1e6, multi[0] * 1e6, multi[0] / single, multi[1] * 1e6,
                     multi[1] / single])
    return rows


def concurrency(unit: str, size: int, requests: int, repeats: int) -> list:
    plan = af.compile(side_jobs(size), machines=2)
    feeds = {"x": np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)}
    s = af.Session(plan) if unit == "thread" else af.ClusterSession(plan, unit="process")
    with s:
        for job in ("A", "B"):
            s.run(job, feeds)

        def serial() -> float:
            t0 = time.perf_counter()
            for job in ("A", "B"):
                for _ in range(requests):
                    s.run(job, feeds)
            return time.perf_counter() - t0

        def concurrent() -> float:
            def client(job: str) -> None:
                for _ in range(requests):
                    s.run(job, feeds)

            ts = [threading.Thread(target=client, args=(j,)) for j in ("A", "B")]
            t0 = time.perf_counter()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return time.perf_counter() - t0

        t_serial = median_of(serial, repeats)
        t_conc = median_of(concurrent, repeats)
    n = 2 * requests
    return [unit, n, n / t_serial, n / t_conc, t_serial / t_conc]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", type=int, default=192, help="side of the A/B matrices")
    args = bench_args(ap, "3 requests, 32x32 matrices").parse_args()
    if args.quick:
        args.requests, args.repeats, args.size = 3, 1, 32
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    report = Report(__file__, args)
    cores = ["python"] + (["native"] if _core.native_error() is None else [])
    switch, conc = [], []
    for core in cores:  # the same tables on each core, one after the other in this run
        os.environ["ACTORFLOW_CORE"] = core  # read when a runtime is built (and by units)
        switch += [[core, *r] for r in switch_overhead(args.requests, args.repeats, args.size)]
        conc += [[core, *concurrency(u, args.size, args.requests, args.repeats)]
                 for u in ("thread", "process")]
    os.environ.pop("ACTORFLOW_CORE", None)
    report.table("switch", "Job switch overhead (latency of one request, median)",
                 ["core", "lone job", "single-job plan us", "main job + push/pull us", "ratio",
                  "main job, push_pull=False us", "ratio (goal <= 1.2)"], switch,
                 figure="main job + push/pull us", unit="us", baseline="single-job plan us",
                 ratio="ratio", keys=["core", "lone job"])
    report.table("concurrent", "Two non-conflicting jobs (A on machine 0, B on machine 1), "
                 "synchronous requests",
                 ["core", "units", "requests", "serial req/s", "concurrent req/s",
                  "ratio (goal >= 1.8)"], conc, figure="concurrent req/s", unit="requests/s",
                 baseline="serial req/s", ratio="ratio (goal >= 1.8)", keys=["core", "units"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
