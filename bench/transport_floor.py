"""Transport floors between two processes: the compiled core's shared-memory ring and its
libzmq driver, against pyzmq from Python and the measured sketch's ring, in one run.

    python bench/transport_floor.py                  # ~1-2 min on 2 cores
    python bench/transport_floor.py --quick          # seconds: shows it works
    python bench/transport_floor.py --json OUT.jsonl --sketch DIR

Two tables, every variant measured in each of ``--repeats`` interleaved rounds (so all see
the same machine load), medians:

1. Round trip of one record between two processes (the hop floor: what a READY and its ACK
   cost below the actors), and each variant against ``sketch ring`` -- the issue's goal is
   our ring within 1.2x of it -- and against pyzmq from Python.
2. One-way stream rate: the sender pushes records back to back (one doorbell check each),
   the receiver takes what waits.
3. The actor hop round trip between two unit processes of one machine (a source and an
   identity, register_num 1, so one round trip per piece: an act, READY, an act, ACK),
   steady state ((run of warm + n pieces - run of warm) / n): on the compiled core each
   unit's whole loop runs in C over the rings (actors/native_process.py), on the Python
   core the Python loop over ipc sockets.  Against the sketch's ring floor of table 1 (the
   issue's goal: within 1.2x).

Variants (the other process is this script with ``--child``):
  ring          _core rings, futex doorbell, no spin: 64-byte records (the actor record)
  ring spin     the same with a 5 us adaptive spin (allowed: 2 processes, 2+ cores)
  sketch ring   the sketch's ring (``--sketch DIR``: prototypes/native-core, built once into
                ~/.cache/actorflow-bench), no spin, its 32-byte messages
  sketch spin   the sketch's ring with its 5 us spin
  zq ipc        pyzmq's PAIR/PUSH-PULL ipc sockets driven by _core's C driver, one call per
                message from Python (GIL released in each)
  pyzmq ipc     the same sockets from Python (the baseline of milestone 2's transport)
The sketch rows are left out (and the ratio to them is "-") when no sketch is found.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import Report, bench_args

HERE = os.path.abspath(__file__)
REPO = Path(HERE).parents[1]
RECORD = 64
SPIN_US = 5.0
TIMEOUT = 30.0  # s any single wait of a floor loop may take before it is an error
_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "actorflow-bench"


def _rings():
    from actorflow._core import _rings
    return _rings


def _zq():
    from actorflow._core import _zq
    from actorflow.transport.registry import libzmq_file
    _zq.load(libzmq_file())
    return _zq


# -- the sketch: found, built once into a cache, imported ---------------------------------
def find_sketch(given: str | None) -> Path | None:
    """The sketch's folder (holding zcore/): --sketch, $ACTORFLOW_SKETCH, or a shared/
    folder beside the checkout's parents (where the project keeps it)."""
    cands = [given, os.environ.get("ACTORFLOW_SKETCH")]
    cands += [str(p / "shared" / "prototypes" / "native-core") for p in REPO.parents[:3]]
    for c in cands:
        if c and (Path(c) / "zcore" / "src" / "zcore" / "_core.pyx").is_file():
            return Path(c)
    return None


def build_sketch(src: Path) -> Path:
    """Build the sketch's extension in a cache folder keyed by its sources; its src/ dir."""
    files = sorted((src / "zcore").rglob("*"))
    h = hashlib.sha256()
    for f in files:
        if f.is_file() and f.suffix in (".pyx", ".h", ".py", ".toml"):
            h.update(f.name.encode() + f.read_bytes())
    dest = _CACHE / f"sketch-{h.hexdigest()[:12]}"
    pkg = dest / "src" / "zcore"
    if not any(pkg.glob("_core*.so")):
        tmp = Path(tempfile.mkdtemp(prefix="sketch-", dir=_CACHE if _CACHE.exists() else None))
        shutil.copytree(src / "zcore", tmp, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("build", "*.so", "*.c", "*.egg-info"))
        r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SystemExit(f"building the sketch in {tmp} failed:\n{r.stderr[-3000:]}")
        _CACHE.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    return dest / "src"


def _sketch(path: str):
    if path not in sys.path:
        sys.path.insert(0, path)
    import zcore
    return zcore


# -- variants: what each side does ---------------------------------------------------------
class Variant:
    """Set up in the parent (``open``), the child's half (``child``), and the parent's
    timed half: ``lat(k)`` -> None, ``thr(n, skip)`` -> (ns at record skip, ns at the last)."""

    name = ""
    size = RECORD

    def __init__(self, tag: str, sketch: str | None) -> None:
        self.tag = tag
        self.sketch = sketch

    def open(self, mode: str) -> list[str]:
        """Make what the two sides share; the child's arguments."""
        raise NotImplementedError

    @classmethod
    def prepare(cls, args: list[str]) -> None:
        """Imports the child needs, done before its CPU time is counted."""

    def close(self) -> None: ...


class Ring(Variant):
    name = "ring"
    spin = 0.0

    def open(self, mode: str) -> list[str]:
        r = _rings()
        self.a = r.RingSegment.create(f"actorflowbench{self.tag}a", 1, 1024, RECORD)
        self.b = r.RingSegment.create(f"actorflowbench{self.tag}b", 1, 1024, RECORD)
        self.inbox = self.a.inbox(spin_us=self.spin, procs=2)
        self.outlet = self.b.outlet(0, spin_us=self.spin, procs=2) if mode == "lat" else None
        return [self.a.name, self.b.name]

    @classmethod
    def prepare(cls, args: list[str]) -> None:
        _rings()

    @classmethod
    def child(cls, mode: str, total: int, args: list[str]) -> None:
        r = _rings()
        a, b = r.RingSegment.attach(args[0]), r.RingSegment.attach(args[1])
        out = a.outlet(0, spin_us=cls.spin, procs=2)
        if mode == "lat":
            r.pingpong(b.inbox(spin_us=cls.spin, procs=2), out, total, False, TIMEOUT)
        else:
            r.stream_send(out, total, 1, TIMEOUT)

    def lat(self, k: int) -> None:
        _rings().pingpong(self.inbox, self.outlet, k, True, TIMEOUT)

    def thr(self, n: int, skip: int) -> tuple[int, int]:
        return _rings().stream_recv(self.inbox, n, TIMEOUT, skip)

    def close(self) -> None:
        for s in (self.a, self.b):
            s.unlink()
        for e in (self.inbox, self.outlet):
            if e is not None:
                e.close()


class RingSpin(Ring):
    name = "ring spin"
    spin = SPIN_US


class SketchRing(Variant):
    name = "sketch ring"
    size = 32
    spin_ns = 0

    def open(self, mode: str) -> list[str]:
        z = _sketch(self.sketch)
        self.path = f"/dev/shm/actorflowbench{self.tag}s"
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, z.ring2_size())
            self.mm = mmap.mmap(fd, 0)
        finally:
            os.close(fd)
        z.ring2_init(self.mm)
        return [self.path, self.sketch]

    @classmethod
    def prepare(cls, args: list[str]) -> None:
        _sketch(args[1])

    @classmethod
    def child(cls, mode: str, total: int, args: list[str]) -> None:
        z = _sketch(args[1])
        with open(args[0], "r+b") as f:
            mm = mmap.mmap(f.fileno(), 0)
        if mode == "lat":
            z.ring_pingpong_run(mm, 1, total, cls.spin_ns)
        else:
            z.ring_send_run(mm, 1, total, cls.spin_ns)

    def lat(self, k: int) -> None:
        _sketch(self.sketch).ring_pingpong_run(self.mm, 0, k, self.spin_ns)

    def thr(self, n: int, skip: int) -> tuple[int, int]:
        z = _sketch(self.sketch)
        z.ring_recv_run(self.mm, 0, skip, self.spin_ns)
        return z.ring_recv_run(self.mm, 0, n - skip, self.spin_ns)

    def close(self) -> None:
        os.unlink(self.path)


class SketchSpin(SketchRing):
    name = "sketch spin"
    spin_ns = int(SPIN_US * 1000)


class PyZmq(Variant):
    name = "pyzmq ipc"

    def open(self, mode: str) -> list[str]:
        self.dir = tempfile.mkdtemp(prefix=f"actorflow-bench{self.tag}-")
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.PAIR if mode == "lat" else zmq.PULL)
        self.sock.linger = 0
        addr = f"ipc://{self.dir}/floor"
        self.sock.bind(addr)
        return [addr]

    @classmethod
    def child(cls, mode: str, total: int, args: list[str]) -> None:
        ctx = zmq.Context()
        s = ctx.socket(zmq.PAIR if mode == "lat" else zmq.PUSH)
        s.connect(args[0])
        try:
            cls.far_side(s, mode, total)
            # close only once the parent has everything: libzmq's linger does not cover
            # bytes still in the engine when the reader lags, so a close right after the
            # last send can lose the tail of a stream
            sys.stdin.readline()
        finally:
            s.close(linger=0)
            ctx.term()

    @staticmethod
    def far_side(s: zmq.Socket, mode: str, total: int) -> None:
        s.rcvtimeo = int(TIMEOUT * 1000)
        msg = b"x" * RECORD
        if mode == "lat":
            for _ in range(total):
                s.send(s.recv())
        else:
            for _ in range(total):
                s.send(msg)

    def lat(self, k: int) -> None:
        s, msg = self.sock, b"x" * RECORD
        s.rcvtimeo = int(TIMEOUT * 1000)
        for _ in range(k):
            s.send(msg)
            s.recv()

    def thr(self, n: int, skip: int) -> tuple[int, int]:
        s = self.sock
        s.rcvtimeo = int(TIMEOUT * 1000)
        for _ in range(skip + 1):
            s.recv()
        t0 = time.monotonic_ns()
        for _ in range(n - skip - 1):
            s.recv()
        return t0, time.monotonic_ns()

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()
        shutil.rmtree(self.dir, ignore_errors=True)


class ZqIpc(PyZmq):
    name = "zq ipc"

    @classmethod
    def prepare(cls, args: list[str]) -> None:
        _zq()

    @staticmethod
    def far_side(s: zmq.Socket, mode: str, total: int) -> None:
        z = _zq().ZqSocket(s.underlying, s, "floor child")
        msg = [b"x" * RECORD]
        if mode == "lat":
            for _ in range(total):
                z.send(z.recv(TIMEOUT), TIMEOUT)
        else:
            for _ in range(total):
                z.send(msg, TIMEOUT)

    def lat(self, k: int) -> None:
        z = _zq().ZqSocket(self.sock.underlying, self.sock, "floor parent")
        msg = [b"x" * RECORD]
        for _ in range(k):
            z.send(msg, TIMEOUT)
            z.recv(TIMEOUT)

    def thr(self, n: int, skip: int) -> tuple[int, int]:
        z = _zq().ZqSocket(self.sock.underlying, self.sock, "floor parent")
        for _ in range(skip + 1):
            z.recv(TIMEOUT)
        t0 = time.monotonic_ns()
        for _ in range(n - skip - 1):
            z.recv(TIMEOUT)
        return t0, time.monotonic_ns()


VARIANTS: dict[str, type[Variant]] = {v.name: v for v in
                                      (Ring, RingSpin, SketchRing, SketchSpin, ZqIpc, PyZmq)}
# (round trips, stream records) of a full run: each ~0.3-1 s
SIZES = {"ring": (20_000, 2_000_000), "ring spin": (50_000, 2_000_000),
         "sketch ring": (20_000, 2_000_000), "sketch spin": (50_000, 2_000_000),
         "zq ipc": (5_000, 200_000), "pyzmq ipc": (5_000, 200_000)}


# -- one measurement: the child started, warmed up, timed ----------------------------------
def measure(name: str, mode: str, n: int, sketch: str | None) -> tuple[float, float]:
    """(seconds per round trip or per record, CPU seconds of both processes per op)."""
    warm = max(200, n // 10)
    v = VARIANTS[name](f"{os.getpid()}x{time.monotonic_ns() % 10**9}", sketch)
    args = v.open(mode)
    child = subprocess.Popen([sys.executable, HERE, "--child", name, mode, str(warm + n),
                              *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        c0 = time.process_time()
        if mode == "lat":
            v.lat(warm)
            t0, c1 = time.perf_counter(), time.process_time()
            v.lat(n)
            per = (time.perf_counter() - t0) / n
            cpu = time.process_time() - c1
        else:
            t_first, t_last = v.thr(warm + n, warm)
            per = (t_last - t_first) / 1e9 / (n - 1)
            cpu = (time.process_time() - c0) * n / (warm + n)
        out, _ = child.communicate("done\n", timeout=TIMEOUT)
        if child.returncode != 0:
            raise SystemExit(f"floor child {name}/{mode} failed ({child.returncode})")
        child_cpu = json.loads(out.strip().splitlines()[-1])["cpu"] * n / (warm + n)
        return per, (cpu + child_cpu) / n
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(TIMEOUT)
        v.close()


def child_main(name: str, mode: str, total: int, args: list[str]) -> int:
    VARIANTS[name].prepare(args)
    c0 = time.process_time()
    VARIANTS[name].child(mode, total, args)
    print(json.dumps({"cpu": time.process_time() - c0}), flush=True)
    return 0


# -- tables --------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> None:
    report = Report(__file__, args)
    sketch_dir = find_sketch(args.sketch)
    sketch = str(build_sketch(sketch_dir)) if sketch_dir else None
    names = [n for n in VARIANTS if sketch or not n.startswith("sketch")]
    if sketch is None:
        print("(no sketch found: --sketch DIR or ACTORFLOW_SKETCH; its rows are left out)")
    scale = 0.05 if args.quick else 1.0
    repeats = 1 if args.quick else args.repeats
    load0 = os.getloadavg()
    res: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in range(repeats):
        for name in names:
            for mode, n in zip(("lat", "thr"), SIZES[name]):
                n = max(500, int(n * scale))
                res.setdefault((name, mode), []).append(measure(name, mode, n, sketch))
        print(f"# round {r + 1}/{repeats}, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for k, v in res.items()}
    nan = float("nan")
    sk_l = med.get(("sketch ring", "lat"), (nan, nan))[0]
    sk_t = med.get(("sketch ring", "thr"), (nan, nan))[0]
    py_l, py_t = med[("pyzmq ipc", "lat")][0], med[("pyzmq ipc", "thr")][0]
    load = f"load {load0[0]:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus"
    rows = [[n, VARIANTS[n].size, med[(n, "lat")][0] * 1e6, sk_l * 1e6,
             med[(n, "lat")][0] / sk_l, py_l / med[(n, "lat")][0], med[(n, "lat")][1] * 1e6]
            for n in names]
    report.table("rtt", f"Round trip of one record between two processes (medians of "
                 f"{repeats}; {load}; goal: ring <= 1.2x sketch ring)",
                 ["variant", "record B", "RTT us", "sketch ring RTT us", "x sketch ring",
                  "speedup vs pyzmq", "CPU us per RTT"],
                 rows, figure="RTT us", unit="us", baseline="sketch ring RTT us",
                 ratio="x sketch ring", keys=["variant"])
    rows = [[n, VARIANTS[n].size, 1 / med[(n, "thr")][0], 1 / sk_t, sk_t / med[(n, "thr")][0],
             py_t / med[(n, "thr")][0], med[(n, "thr")][1] * 1e9] for n in names]
    report.table("stream", f"One-way stream between two processes (medians of {repeats}; "
                 f"{load})",
                 ["variant", "record B", "records/s", "sketch ring records/s",
                  "x sketch ring", "x pyzmq", "CPU ns per record"],
                 rows, figure="records/s", unit="records/s", baseline="sketch ring records/s",
                 ratio="x sketch ring", keys=["variant"])
    if not args.no_hop:
        floor = sk_l if sk_l == sk_l else med[("ring", "lat")][0]  # no sketch: our ring
        hop_table(report, 500 if args.quick else 20000, repeats, floor, load)


def hop_plan():
    import actorflow as af

    b = af.PlanBuilder(machines=1, register_num=1, name="hop")
    x = b.source("constant", {"shape": [1], "dtype": "uint8", "value": 1}, name="src")
    b.op("identity", x, name="stage1")
    return b.build()


def hop_run(core: str, pieces: int) -> float:
    """Seconds from 'start' to every actor exited (units already spawned, connected)."""
    from actorflow.actors.cluster import NodeGroup

    os.environ["ACTORFLOW_CORE"] = core  # the node's choice of rings, and its units' core
    plan = hop_plan()
    g = NodeGroup(plan, None, "process", "ipc", 120.0)
    try:
        g.start()
        src = plan.tasks_by_type("source")[0].task_id
        t0 = time.perf_counter()
        g.command(src, "start", pieces)
        g.wait_exited(300.0)
        return time.perf_counter() - t0
    finally:
        g.join()


HOP_CORES = {"native loops on rings (compiled core)": "native",
             "Python loops on ipc (Python core)": "python"}


def hop_table(report: Report, n: int, repeats: int, sketch_rtt: float, load: str) -> None:
    from actorflow import _core

    before = os.environ.get("ACTORFLOW_CORE")
    cores = {k: v for k, v in HOP_CORES.items() if v == "python" or _core.native_error() is None}
    warm = max(20, n // 10)
    res: dict[str, list[float]] = {k: [] for k in cores}
    try:
        for _ in range(repeats):
            for name, core in cores.items():
                res[name].append((hop_run(core, warm + n) - hop_run(core, warm)) / n)
    finally:
        if before is None:
            os.environ.pop("ACTORFLOW_CORE", None)
        else:
            os.environ["ACTORFLOW_CORE"] = before
    rows = [[name, statistics.median(v) * 1e6, sketch_rtt * 1e6,
             statistics.median(v) / sketch_rtt] for name, v in res.items()]
    report.table("hop", f"Actor hop round trip between two unit processes (register_num 1, "
                 f"steady state, medians of {repeats}; {load})",
                 ["setup", "hop RTT us", "sketch ring RTT us", "x sketch ring"], rows,
                 figure="hop RTT us", unit="us", baseline="sketch ring RTT us",
                 ratio="x sketch ring", keys=["setup"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench_args(ap, "about 500 round trips and records per variant")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sketch", help="the sketch's folder (prototypes/native-core)")
    ap.add_argument("--no-hop", action="store_true", help="only the floors (tables 1-2)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        name, mode, total, *rest = args.child
        return child_main(name, mode, int(total), rest)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
