"""Control plane and flowlaunch costs, each against a baseline measured in the same run.

    python bench/launcher.py [--quick]

1. Control-plane round trip: a ``kv_get`` through ControlClient -> ControlMaster (its own
   thread, tcp on loopback) vs a raw pyzmq DEALER/ROUTER msgpack ping-pong on a thread.
2. Launch overhead: ``flowlaunch sim`` of a 1-piece plan on N machines (start, rendezvous,
   plan distribution, run, shutdown, reap) vs starting N bare ``python -c 'import
   actorflow.launcher.worker'`` processes in parallel (the interpreter + import floor);
   goals: <= 1 s for 4 machines, <= 2 s for 16.  Then the sample job and the 4-stage
   example on 4 and 16 machines: start to exit, the run itself (the master's wall clock
   from the start signal to the last piece), and the difference (start-up + shutdown).
3. Failure detection: time from a machine's last heartbeat until another machine is told to
   abort, vs the configured heartbeat timeout (the goal is detection within 3 s).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgpack
import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from _util import median_of, median_time, print_table

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


def control_round_trip(n: int) -> tuple[float, float]:
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

        t_ours = median_of(ours, repeats=5, warmup=1)
    finally:
        c.close()
        master.close()
    return t_ours, raw_round_trip(n)


def raw_round_trip(n: int) -> float:
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
        return median_of(raw, repeats=5, warmup=1)
    finally:
        stop.set()
        t.join()
        dealer.close(0)
        router.close(0)
        ctx.term()


def launch_overhead(machines: int, repeats: int, job: Path) -> tuple[float, float]:
    def sim() -> None:
        r = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "sim", str(job),
                            "--machines", str(machines), "--quiet"], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"flowlaunch sim failed:\n{r.stdout}\n{r.stderr}")

    def bare() -> None:
        ps = [subprocess.Popen([sys.executable, "-c", "import actorflow.launcher.worker"])
              for _ in range(machines)]
        for p in ps:
            p.wait(60)

    return median_time(sim, repeats, warmup=1), median_time(bare, repeats, warmup=1)


def example_launch(path: Path, machines: int, repeats: int) -> tuple[float, float]:
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

    total = median_of(once, repeats=repeats, warmup=1)
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
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args()
    n = 500 if args.quick else 2000
    repeats = 2 if args.quick else 3

    ours, raw = control_round_trip(n)
    print_table("Control-plane round trip (kv_get, tcp loopback), median of 5 x "
                f"{n} round trips",
                ["path", "us per round trip", "vs raw pyzmq"],
                [["ControlClient -> ControlMaster", ours * 1e6, ours / raw],
                 ["raw pyzmq DEALER/ROUTER + msgpack", raw * 1e6, 1.0]])

    rows = []
    with tempfile.TemporaryDirectory() as d:
        job = Path(d) / "tiny_job.py"
        job.write_text(TINY_JOB)
        for m in (1, 2, 3, 4, 16):
            t_sim, t_bare = launch_overhead(m, repeats, job)
            goal = {4: 1.0, 16: 2.0}.get(m)
            rows.append([m, t_sim, t_bare, t_sim / t_bare,
                         "-" if goal is None else f"<= {goal:.0f} s: "
                         + ("yes" if t_sim <= goal else "NO")])
    print_table(f"flowlaunch sim of a 1-piece plan, start to exit, median of {repeats}",
                ["machines", "flowlaunch sim s", "bare python+import s", "ratio", "goal"], rows)

    rows = []
    examples = Path(__file__).resolve().parents[1] / "examples"
    for name in ("sample_pipeline", "pipeline_4_stages"):
        for m in (4, 16):
            total, run = example_launch(examples / f"{name}.py", m, repeats)
            rows.append([name, m, total, run, total - run])
    print_table(f"flowlaunch sim of the examples, median of {repeats}",
                ["job", "machines", "start to exit s", "run s", "start-up + shutdown s"],
                rows)

    rows = []
    for hb in (1.0, 2.0):
        t = median_of(lambda hb=hb: detection_time(hb), repeats=repeats)
        rows.append([hb, t, t / hb, "yes" if t <= 3.0 else "NO"])
    print_table(f"Dead-machine detection (last heartbeat -> abort at a peer), median of "
                f"{repeats}", ["heartbeat timeout s", "detected after s", "vs timeout",
                               "within 3 s"], rows)


if __name__ == "__main__":
    main()
