"""End-to-end speed of what a user runs: the echo chain through ``flowlaunch sim``.

    python bench/e2e.py            # 2 and 4 stages, 3 repeats, plus the hop table
    python bench/e2e.py --quick    # seconds: 2 stages, 200/1,200 pieces, no hop table
    python bench/e2e.py --json OUT.jsonl   # also one JSON line per row
    python bench/e2e.py --before /tmp/old   # also an older checkout's flowlaunch, same run

The chain (bench/_e2e_job.py): ``source(constant)`` of 104 bytes -> ``identity`` x S ->
``output``; source and output on one unit, one unit per stage, register_num 8, run as
``flowlaunch sim JOB --machines 1 --unit process --json``, outputs delivered to the
launcher.  Steady state: pieces/s = 10,000 / (wall(12,000 pieces) - wall(2,000 pieces)),
``wall`` being the master's start-to-end time, so process start and warm-up cancel.

Every row runs on each actor core, alternating in the same run (``core``: the compiled one
where it is built, and ``ACTORFLOW_CORE=python``).  Baselines measured in the same run
(a shared box's load hits all of them):
- the same plan with an ``identity`` actor in the output actor's place (same unit, same
  hops, nothing delivered), also through flowlaunch;
- the same plan in-process on thread units (``Session.run_to_end``), same steady method;
- Ray Compiled Graphs on the same chain (``bench/_ray_chain.py``; "-" where Ray is not
  installed): the issue's goals are 6x it at 2 stages, 8x at 4;
- the measured sketch's floor (its 3-process C actors on a shared-memory ring, no spin:
  ``bench_pipeline.py --variants c-shm0`` of the prototype, built once like
  bench/transport_floor.py does; "-" where the sketch is not found);
- the actor hop round trip against raw pyzmq ping-pong (bench/transport.py's hop table).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import Report, bench_args

import actorflow as af

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "_e2e_job.py")
SMALL, LARGE = 2000, 12000  # pieces of the two runs whose difference is the steady state
_CPU: dict[tuple, float] = {}  # (stages, pieces, deliver, src) -> CPU s of the last run


def flowlaunch_wall(stages: int, pieces: int, deliver: bool, src: str | None = None,
                    machines: int = 1, unit: str = "process") -> float:
    """The master's wall seconds of one ``flowlaunch sim`` run (``src``: run the actorflow
    of another checkout's ``src/`` instead, for before/after tables)."""
    env = dict(os.environ, E2E_STAGES=str(stages), E2E_DELIVER="1" if deliver else "0")
    if src is not None:
        env["PYTHONPATH"] = src
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "sim", JOB,
                        "--machines", str(machines), "--unit", unit, "--pieces", str(pieces),
                        "--json", "--quiet", "--heartbeat-timeout", "10"],
                       env=env, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # every process of the run (launcher, worker, unit processes) is reaped by its parent,
    # so its CPU time lands in this process's RUSAGE_CHILDREN
    _CPU[(stages, pieces, deliver, src, machines)] = (after.ru_utime + after.ru_stime
                                           - before.ru_utime - before.ru_stime)
    if r.returncode != 0:
        raise SystemExit(f"flowlaunch failed ({r.returncode}):\n{r.stderr}")
    summary = json.loads(r.stdout)
    want = pieces if deliver else 0
    if summary["pieces"] != want:
        raise SystemExit(f"flowlaunch delivered {summary['pieces']} pieces, expected {want}")
    return float(summary["wall_seconds"])


def median(vals: list) -> float:
    """The median of the repeats that measured something (NaN: none did)."""
    real = [v for v in vals if not math.isnan(v)]
    return statistics.median(real) if real else math.nan


def steady(fn, tries: int = 3) -> float:
    """Pieces per second from the runs of SMALL and LARGE pieces.  On a loaded box the
    larger run can finish sooner than the smaller one: that pair measured the load, not the
    chain, so it is run again (NaN, printed as such, when every try was like that)."""
    for _ in range(tries):
        extra = fn(LARGE) - fn(SMALL)
        if extra > 0:
            return (LARGE - SMALL) / extra
    return math.nan


def set_sizes(small: int, large: int) -> None:
    global SMALL, LARGE
    SMALL, LARGE = small, large


def cpu_per_piece(stages: int, deliver: bool, src: str | None = None) -> float:
    """Steady-state CPU microseconds per piece, all processes together, of the last pair
    of runs (CPU time is much less stretched by a loaded box than wall time)."""
    key = (stages, LARGE, deliver, src, 1), (stages, SMALL, deliver, src, 1)
    return 1e6 * (_CPU[key[0]] - _CPU[key[1]]) / (LARGE - SMALL)


def session_wall(stages: int, pieces: int) -> float:
    os.environ["E2E_STAGES"], os.environ["E2E_DELIVER"] = str(stages), "1"
    sys.path.insert(0, HERE)
    import _e2e_job

    plan = _e2e_job.build_plan()
    with af.Session(plan) as s:
        t0 = time.perf_counter()
        out = s.run_to_end(pieces=pieces)
        t = time.perf_counter() - t0
    assert len(out["y"]) == pieces
    return t


def cores() -> list[str]:
    from actorflow import _core

    return ["python"] + (["native"] if _core.native_error() is None else [])


def ray_chain(stages: int) -> float | None:
    """Ray Compiled Graphs' pieces/s on the chain (None: Ray is not installed here)."""
    for _ in range(2):  # Ray's compiled graph can time out on a loaded box: once more
        r = subprocess.run([sys.executable, os.path.join(HERE, "_ray_chain.py"), str(stages),
                            str(SMALL), str(LARGE)], capture_output=True, text=True,
                            timeout=900)
        try:
            return json.loads(r.stdout.strip().splitlines()[-1]).get("pieces_per_second")
        except (IndexError, ValueError):
            last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
            print(f"bench/_ray_chain.py failed ({r.returncode}): {last}", file=sys.stderr)
    return math.nan  # the Ray columns say nan; our rows still stand


def sketch_floor(quick: bool) -> float | None:
    """The sketch's C actors on its ring (2 stages, no spin), pieces/s; None: no sketch."""
    from transport_floor import build_sketch, find_sketch

    src = find_sketch(None)
    if src is None:
        return None
    path = build_sketch(src)
    r = subprocess.run([sys.executable, str(src / "bench_pipeline.py"), "--variants", "c-shm0",
                        "--repeats", "1", *(["--quick"] if quick else [])],
                       env=dict(os.environ, PYTHONPATH=str(path)), capture_output=True,
                       text=True, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("| c-shm0 |"):
            return float(line.split("|")[2].replace(",", ""))
    raise SystemExit(f"the sketch's bench_pipeline.py failed ({r.returncode}):\n"
                     f"{r.stderr[-2000:]}")


def e2e_table(report: Report, reps: int, before: str | None,
              stage_counts: tuple[int, ...] = (2, 4), undelivered: bool = True,
              quick: bool = False) -> None:
    """``undelivered=False`` (quick mode) skips the not-delivered baseline's launches."""
    rows: list[list] = []
    cpu_rows: list[list] = []
    floor = sketch_floor(quick)
    for stages in stage_counts:
        deliv: dict[str, list] = {c: [] for c in cores()}
        plain: dict[str, list] = {c: [] for c in cores()}
        threads: dict[str, list] = {c: [] for c in cores()}
        ratios: dict[str, list] = {c: [] for c in cores()}
        old, rays = [], []
        for rep in range(reps):
            if before is not None:
                old.append(steady(lambda n, s=stages: flowlaunch_wall(s, n, True, before)))
                cpu_rows.append(["before", stages, rep, old[-1],
                                 cpu_per_piece(stages, True, before)])
            rays.append(ray_chain(stages))
            for core in cores():  # alternating: the load hits every core alike
                os.environ["ACTORFLOW_CORE"] = core
                deliv[core].append(steady(lambda n, s=stages: flowlaunch_wall(s, n, True)))
                cpu_rows.append([f"{core} core", stages, rep, deliv[core][-1],
                                 cpu_per_piece(stages, True)])
                plain[core].append(steady(lambda n, s=stages: flowlaunch_wall(s, n, False))
                                   if undelivered else float("nan"))
                threads[core].append(steady(lambda n, s=stages: session_wall(s, n)))
                ratios[core].append(deliv[core][-1] / plain[core][-1])
        os.environ.pop("ACTORFLOW_CORE", None)
        ray = median(rays) if None not in rays else None
        goal = {2: ">= 100,000, >= 6x Ray", 4: ">= 50,000, >= 8x Ray"}[stages]
        for core in cores():
            d = median(deliv[core])
            row = [core, stages, d, goal, ray if ray is not None else "-",
                   d / ray if ray else "-", floor if floor else "-",
                   d / floor if floor else "-", median(plain[core]),
                   median(ratios[core]), median(threads[core]),
                   d / median(deliv["python"])]
            if before is not None:
                row += [median(old), d / median(old)]
            rows.append(row)
    cols = ["core", "stages", "pieces/s delivered", "goal", "Ray CG pieces/s", "vs Ray",
            "sketch floor pieces/s", "vs sketch", "pieces/s, not delivered",
            "delivered / not (goal >= 0.9)", "threads in-process pieces/s (goal >= 200,000)",
            "vs python core"]
    if before is not None:
        cols += ["before: pieces/s delivered", "after / before"]
    report.table("echo", "Echo chain through flowlaunch sim --unit process, outputs delivered "
                 f"(steady state, median of {reps})", cols, rows,
                 figure="pieces/s delivered", unit="pieces/s",
                 baseline="pieces/s, not delivered", ratio="delivered / not (goal >= 0.9)",
                 keys=["core", "stages"])
    report.table("cpu", "CPU per piece, all processes of the run together (every repeat; the "
                 "main number on a shared box)", ["code", "stages", "repeat",
                                                  "pieces/s delivered", "us CPU per piece"],
                 cpu_rows, figure="us CPU per piece", unit="us/piece",
                 keys=["code", "stages", "repeat"])


def machines_table(report: Report, reps: int, before: str | None) -> None:
    """The 2-stage chain with each stage on its own simulated machine (3 machines, thread
    units, tcp between them): each core, and ``--before``'s checkout, in the same run."""
    rows, vals = [], {}
    codes = [(c, None) for c in cores()] + ([("before", before)] if before else [])
    for _ in range(reps):
        for code, src in codes:
            if src is None:
                os.environ["ACTORFLOW_CORE"] = code
            vals.setdefault(code, []).append(steady(
                lambda n, src=src: flowlaunch_wall(2, n, True, src, machines=3, unit="thread")))
    os.environ.pop("ACTORFLOW_CORE", None)
    ref = median(vals["before" if before else "python"])
    for code, _src in codes:
        v = median(vals[code])
        rows.append([code, v, ref, v / ref])
    report.table("machines", "Echo chain, 2 stages, each stage on its own machine (flowlaunch sim "
                 f"--machines 3 --unit thread, tcp), median of {reps}",
                 ["code", "pieces/s delivered", "reference pieces/s",
                  "ratio (goal >= 3 vs before)"], rows, figure="pieces/s delivered",
                 unit="pieces/s", baseline="reference pieces/s",
                 ratio="ratio (goal >= 3 vs before)", keys=["code"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int)
    ap.add_argument("--no-hop", action="store_true")
    ap.add_argument("--before", metavar="CHECKOUT",
                    help="also time another checkout's flowlaunch (its src/ on PYTHONPATH)")
    args = bench_args(ap, "2 stages, 200 and 1,200 pieces, no not-delivered baseline, no "
                          "hop table").parse_args()
    reps = args.reps or (1 if args.quick else 3)
    if args.quick:
        set_sizes(200, 1200)
    report = Report(__file__, args)
    e2e_table(report, reps, os.path.join(args.before, "src") if args.before else None,
              (2,) if args.quick else (2, 4), undelivered=not args.quick, quick=args.quick)
    machines_table(report, reps, os.path.join(args.before, "src") if args.before else None)
    if not (args.quick or args.no_hop):
        import transport

        transport.hop_table(report, 4000, 5)


if __name__ == "__main__":
    main()
