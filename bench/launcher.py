"""Control plane and flowlaunch costs, each against a baseline measured in the same run.

    python bench/launcher.py [--startup-only] [--machines 4 16] [--before DIR]
                             [--quick] [--json OUT.jsonl]

1. Control-plane round trip: a ``kv_get`` through ControlClient -> ControlMaster (its own
   thread, tcp on loopback) vs a raw pyzmq DEALER/ROUTER msgpack ping-pong on a thread.
2. Launch overhead: ``flowlaunch sim`` of a 1-piece plan on N machines (start, rendezvous,
   plan distribution, run, shutdown, reap) vs starting N bare ``python -c pass`` and N
   ``python -c 'import numpy, zmq'`` processes in parallel (the interpreter and the
   imports a worker cannot avoid); ``--before DIR`` also times an older ``src/`` in the
   same run.  Goals: <= 1 s for 4 machines, <= 2 s for 16.  Then the sample job and the 4-stage
   example on 4 and 16 machines: start to exit, the run itself (the master's wall clock
   from the start signal to the last piece), and the difference (start-up + shutdown).
3. Failure detection: time from a machine's last heartbeat until another machine is told to
   abort, vs the configured heartbeat timeout (the goal is detection within 3 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgpack
import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from _util import Report, bench_args, median_of

from actorflow.launcher.client import Aborted, ControlClient
from actorflow.launcher.master import ControlMaster
from actorflow.launcher.ports import free_port

TINY_JOB = '''
import actorflow as af

def build_plan(machines=1):
    b = af.PlanBuilder(machines=machines)
    x = b.source("arange", {"stop": 4, "dtype": "float32"}, piece_num=1)
    for m in range(machines):
        x = b.op("relu", x, machine=m)
    b.output("y", x)
    return b.build()
'''


def _joined_client(master: ControlMaster) -> ControlClient:
    c = ControlClient("127.0.0.1", master.port, 0, 1, connect_timeout=5)
    c.sync_clock()
    c.hello("bench", 1, 10)
    return c


def control_round_trip(n: int, repeats: int = 5) -> tuple[float, float]:
    import sample_pipeline

    master = ControlMaster(1, sample_pipeline.build_plan, "127.0.0.1", free_port())
    master.start()
    c = _joined_client(master)
    try:
        c.kv_set("k", 1)

        def ours() -> float:
            t0 = time.perf_counter()
            for _ in range(n):
                c.kv_get("k")
            return (time.perf_counter() - t0) / n

        t_ours = median_of(ours, repeats=repeats, warmup=1)
    finally:
        c.close()
        master.close()
    return t_ours, raw_round_trip(n, repeats)


def raw_round_trip(n: int, repeats: int = 5) -> float:
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    stop = threading.Event()

    def echo() -> None:
        while not stop.is_set():
            if router.poll(100):
                ident, data = router.recv_multipart()
                msg = msgpack.unpackb(data)
                router.send_multipart([ident, msgpack.packb({"t": "kv_val", "v": msg["v"]})])

    t = threading.Thread(target=echo, daemon=True)
    t.start()
    dealer = ctx.socket(zmq.DEALER)
    dealer.connect(f"tcp://127.0.0.1:{port}")

    def raw() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            dealer.send(msgpack.packb({"t": "kv_get", "v": 1, "key": "k"}))
            dealer.poll(1000)
            msgpack.unpackb(dealer.recv())
        return (time.perf_counter() - t0) / n

    try:
        return median_of(raw, repeats=repeats, warmup=1)
    finally:
        stop.set()
        t.join()
        dealer.close(0)
        router.close(0)
        ctx.term()


def _run_ok(argv: list[str], env: dict | None, what: str) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{what} failed:\n{r.stdout}\n{r.stderr}")


def _parallel(argv: list[str], n: int) -> None:
    ps = [subprocess.Popen(argv) for _ in range(n)]
    for p in ps:
        p.wait(60)


def launch_overhead(machines: int, repeats: int, job: Path,
                    before: Path | None, warmup: bool = True) -> dict[str, float]:
    """Median start-to-exit seconds of ``flowlaunch sim`` (this checkout and, with
    ``before``, an older ``src/`` on PYTHONPATH) and of N bare interpreters started in
    parallel: ``python -c pass`` and ``python -c 'import numpy, zmq'`` (what a worker
    cannot avoid), all in this run, interleaved so load swings hit each alike."""
    argv = [sys.executable, "-m", "actorflow.launcher.cli", "sim", str(job),
            "--machines", str(machines), "--quiet"]
    cases: dict[str, Callable[[], None]] = {
        "sim": lambda: _run_ok(argv, None, "flowlaunch sim"),
        "pass": lambda: _parallel([sys.executable, "-c", "pass"], machines),
        "numpy_zmq": lambda: _parallel([sys.executable, "-c", "import numpy, zmq"], machines),
    }
    if before is not None:
        env = dict(os.environ, PYTHONPATH=str(before))
        cases["before"] = lambda: _run_ok(argv, env, f"flowlaunch sim from {before}")
    for fn in cases.values() if warmup else ():  # warm-up: page cache, .pyc files
        fn()
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(repeats):
        for k, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def example_launch(path: Path, machines: int, repeats: int,
                   warmup: int = 1) -> tuple[float, float]:
    """Median (start to exit, run wall) seconds of ``flowlaunch sim`` of an example."""
    runs = []

    def once() -> float:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "sim", str(path),
                            "--machines", str(machines), "--quiet", "--json"],
                           capture_output=True, text=True, timeout=180)
        total = time.perf_counter() - t0
        if r.returncode != 0:
            raise SystemExit(f"flowlaunch sim {path.name} failed:\n{r.stdout}\n{r.stderr}")
        runs.append(float(json.loads(r.stdout)["wall_seconds"]))
        return total

    total = median_of(once, repeats=repeats, warmup=warmup)
    return total, sorted(runs)[len(runs) // 2]


def detection_time(hb_timeout: float) -> float:
    """Seconds from a machine's last heartbeat until another machine receives abort."""
    import sample_pipeline

    master = ControlMaster(2, sample_pipeline.build_plan, "127.0.0.1", free_port(),
                           heartbeat_timeout=hb_timeout)
    master.start()
    joined = threading.Barrier(2)
    out: dict = {}

    def silent() -> None:
        c = ControlClient("127.0.0.1", master.port, 1, 2, connect_timeout=5)
        c.sync_clock()
        c.hello("b", 2, 10)
        c.poll(0)  # one last heartbeat
        out["t_last"] = time.monotonic()
        joined.wait()
        out["done"].wait(15)
        c.close()

    out["done"] = threading.Event()
    t = threading.Thread(target=silent)
    t.start()
    c = ControlClient("127.0.0.1", master.port, 0, 2, connect_timeout=5)
    try:
        c.sync_clock()
        c.hello("a", 1, 10)
        joined.wait()
        try:
            while True:
                c.poll(0.02)
        except Aborted:
            return time.monotonic() - out["t_last"]
    finally:
        out["done"].set()
        t.join()
        c.close()
        master.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, help="repeats per measurement (default 3)")
    ap.add_argument("--startup-only", action="store_true",
                    help="only the flowlaunch sim start-up table")
    ap.add_argument("--machines", type=int, nargs="+", default=[1, 2, 4, 16],
                    help="machine counts of the start-up table (default 1 2 4 16)")
    ap.add_argument("--before", type=Path,
                    help="an older checkout's src/ directory, timed in the same run "
                         "(e.g. git archive main src | tar -x -C /tmp/before)")
    args = bench_args(ap, "1 machine, one example on 2, one heartbeat timeout").parse_args()
    quick = args.quick
    n = 100 if quick else 2000
    repeats = args.repeats or (1 if quick else 3)
    if quick:
        args.machines = [1]
    report = Report(__file__, args)

    if not args.startup_only:
        rt_repeats = 1 if quick else 5
        ours, raw = control_round_trip(n, rt_repeats)
        report.table("control_rtt", "Control-plane round trip (kv_get, tcp loopback), median "
                     f"of {rt_repeats} x {n} round trips",
                     ["path", "us per round trip", "raw pyzmq us", "vs raw pyzmq"],
                     [["ControlClient -> ControlMaster", ours * 1e6, raw * 1e6, ours / raw],
                      ["raw pyzmq DEALER/ROUTER + msgpack", raw * 1e6, raw * 1e6, 1.0]],
                     figure="us per round trip", unit="us", baseline="raw pyzmq us",
                     ratio="vs raw pyzmq", keys=["path"])

    rows = []
    with tempfile.TemporaryDirectory() as d:
        job = Path(d) / "tiny_job.py"
        job.write_text(TINY_JOB)
        for m in args.machines:
            t = launch_overhead(m, repeats, job, args.before, warmup=not quick)
            goal = {4: 1.0, 16: 2.0}.get(m)
            row = [m, t["sim"]]
            if args.before is not None:
                row += [t["before"], t["before"] / t["sim"]]
            rows.append([*row, t["pass"], t["numpy_zmq"], t["sim"] / t["numpy_zmq"],
                         "-" if goal is None else f"<= {goal:.0f} s: "
                         + ("yes" if t["sim"] <= goal else "NO")])
    headers = ["machines", "flowlaunch sim s"]
    if args.before is not None:
        headers += ["before s", "speed-up"]
    report.table("startup", f"flowlaunch sim of a 1-piece plan, start to exit, median of "
                 f"{repeats} (N bare interpreters started in parallel as the floor)",
                 [*headers, "N x python -c pass s", "N x import numpy, zmq s",
                  "sim / numpy+zmq floor", "goal"], rows,
                 figure="flowlaunch sim s", unit="s", baseline="N x import numpy, zmq s",
                 ratio="sim / numpy+zmq floor", keys=["machines"])
    if args.startup_only:
        return

    rows = []
    examples = Path(__file__).resolve().parents[1] / "examples"
    examples_runs = [("sample_pipeline", 2)] if quick else [
        (name, m) for name in ("sample_pipeline", "pipeline_4_stages") for m in (4, 16)]
    for name, m in examples_runs:
        total, run = example_launch(examples / f"{name}.py", m, repeats, warmup=0 if quick else 1)
        rows.append([name, m, total, run, total - run])
    report.table("examples", f"flowlaunch sim of the examples, median of {repeats}",
                 ["job", "machines", "start to exit s", "run s", "start-up + shutdown s"],
                 rows, figure="start to exit s", unit="s", keys=["job", "machines"])

    rows = []
    for hb in (1.0,) if quick else (1.0, 2.0):
        t = median_of(lambda hb=hb: detection_time(hb), repeats=repeats)
        rows.append([hb, t, t / hb, "yes" if t <= 3.0 else "NO"])
    report.table("detection", f"Dead-machine detection (last heartbeat -> abort at a peer), "
                 f"median of {repeats}", ["heartbeat timeout s", "detected after s",
                                          "vs timeout", "within 3 s"], rows,
                 figure="detected after s", unit="s", baseline="heartbeat timeout s",
                 ratio="vs timeout", keys=["heartbeat timeout s"])


if __name__ == "__main__":
    main()
