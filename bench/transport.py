"""Transport benchmark: actorflow's data plane vs raw pyzmq / memcpy, side by side in one run.

    python bench/transport.py            # full run (~1-2 min on 2 cores)
    python bench/transport.py --quick    # fewer pieces and repeats

Tables (medians of several repeats; actorflow and its baseline run alternately, so both see
the same machine load, and the ratio is the median of the per-pair ratios):
1. hop round trip between two actors in two processes (register_num 1: one READY + one ACK
   per piece) vs a raw pyzmq PUSH/PULL ping-pong between two processes, per transport;
2. pipelined pieces/s of 2- and 4-stage chains of empty kernels, one process per stage,
   for register_num 1, 2, 4, 8;
3. a 64 MiB regst handed between two processes of one machine (shared memory; the consumer
   copies it into its own regst) vs np.copyto of 64 MiB;
4. the same 64 MiB regst between two simulated machines over tcp (blobs as frames into the
   comm_net receive buffer, then into the comm_net regst) vs raw pyzmq tcp of 64 MiB.
The raw peers are this script run with ``--peer`` in a subprocess (no pickle, no multiprocessing).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import median_of, print_table

import actorflow as af
from actorflow.transport.cluster import NodeGroup
from actorflow.transport.registry import context, local_address

MIB64 = 64 << 20


# -- actorflow side ---------------------------------------------------------------------
def chain(stages: int, register_num: int, shape=(1,), machines: int = 1,
          peek: bool = False) -> af.Plan:
    """source -> identity x (stages-1); stage k on machine k % machines; one unit per task.

    ``peek``: the stages read one element of the regst instead of copying all of it.
    """
    b = af.PlanBuilder(machines=machines, register_num=register_num, name=f"chain{stages}")
    x = b.source("constant", {"shape": list(shape), "dtype": "uint8", "value": 1},
                 name="src")
    for k in range(1, stages):
        m = k % machines
        x = (b.op("slice", x, axis=0, start=0, stop=1, machine=m, name=f"stage{k}") if peek
             else b.op("identity", x, machine=m, name=f"stage{k}"))
    return b.build()


def run_plan(plan: af.Plan, unit: str, scheme: str, pieces: int) -> float:
    """Seconds from 'start' to every actor exited (units already spawned and connected)."""
    g = NodeGroup(plan, None, unit, scheme, 120.0)
    try:
        g.start()
        src = plan.tasks_by_type("source")[0].task_id
        t0 = time.perf_counter()
        g.command(src, "start", pieces)
        g.wait_exited(300.0)
        return time.perf_counter() - t0
    finally:
        g.join()


# -- raw pyzmq peers (run as subprocesses) ------------------------------------------------
def peer_main(kind: str, addr_in: str, addr_out: str) -> int:
    ctx = context()
    pull, push = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    pull.bind(addr_in)
    push.connect(addr_out)
    try:
        while True:
            m = pull.recv(copy=kind != "bulk")
            if kind == "bulk":
                if len(m) == 1:
                    break
                push.send(b"k")
            else:
                if m == b"q":
                    break
                push.send(m)
    finally:
        pull.close(0)
        push.close(1000)
    return 0


class Peer:
    def __init__(self, kind: str, scheme: str) -> None:
        self.ctx = context()
        self.pull, self.push = self.ctx.socket(zmq.PULL), self.ctx.socket(zmq.PUSH)
        back = local_address(scheme, "bench-back")
        self.pull.bind(back if scheme != "tcp" else "tcp://127.0.0.1:*")
        back = self.pull.getsockopt_string(zmq.LAST_ENDPOINT)
        fwd = local_address(scheme, "bench-fwd")
        if scheme == "tcp":
            s = self.ctx.socket(zmq.PULL)  # find a free port for the peer
            s.bind("tcp://127.0.0.1:*")
            fwd = s.getsockopt_string(zmq.LAST_ENDPOINT)
            s.close(0)
        self.proc = subprocess.Popen([sys.executable, __file__, "--peer", kind, fwd, back])
        self.push.connect(fwd)
        self.kind = kind

    def close(self) -> None:
        self.push.send(b"q" if self.kind != "bulk" else b"x")
        self.proc.wait(30)
        self.pull.close(0)
        self.push.close(0)


def raw_rtt_once(p: Peer, n: int) -> float:
    """Seconds per round trip of a 48-byte message (about an encoded actor header)."""
    msg = b"x" * 48
    t0 = time.perf_counter()
    for _ in range(n):
        p.push.send(msg)
        p.pull.recv()
    return (time.perf_counter() - t0) / n


def raw_bulk_once(p: Peer, buf: np.ndarray, count: int, window: int = 2) -> float:
    """Seconds per 64 MiB message, streamed with ``window`` in flight (like register_num)."""
    t0 = time.perf_counter()
    inflight = 0
    for _ in range(count):
        if inflight == window:
            p.pull.recv()
            inflight -= 1
        p.push.send(buf, copy=False)
        inflight += 1
    for _ in range(inflight):
        p.pull.recv()
    return (time.perf_counter() - t0) / count


def paired(ours, base, reps: int) -> tuple[float, float, float]:
    """Alternate ours/baseline runs so both see the same machine load; medians and the
    median of the per-pair ratios ours/base."""
    o, b, r = [], [], []
    for _ in range(reps):
        b.append(base())
        o.append(ours())
        r.append(o[-1] / b[-1])
    return statistics.median(o), statistics.median(b), statistics.median(r)


def memcpy_time() -> float:
    a, b = np.ones(MIB64, np.uint8), np.zeros(MIB64, np.uint8)

    def once() -> float:
        t0 = time.perf_counter()
        np.copyto(b, a)
        return time.perf_counter() - t0
    once()
    return median_of(once, 5)


# -- tables -------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--peer", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        sys.exit(peer_main(*args.peer))
    n = 2000 if args.quick else 4000
    reps = 3 if args.quick else 5

    rows = []
    for scheme, unit, machines in (("ipc", "process", 1), ("tcp", "process", 2)):
        peer = Peer("pingpong", scheme)
        try:
            raw_rtt_once(peer, 500)
            plan = chain(2, 1, machines=machines)
            ours, raw, ratio = paired(lambda p=plan, s=scheme: run_plan(p, "process", s, n) / n,
                                      lambda p=peer: raw_rtt_once(p, n), reps)
        finally:
            peer.close()
        rows.append([f"{scheme}://", f"{unit} units, {machines} machine(s)", ours * 1e6,
                     raw * 1e6, ratio])
    print_table("Hop round trip (register_num 1, READY+ACK per piece, two processes)",
                ["transport", "actorflow setup", "actorflow us", "raw pyzmq us",
                 "ratio (goal <= 1.3)"], rows)

    rows = []
    for stages in (2, 4):
        for rn in (1, 2, 4, 8):
            dt = median_of(lambda s=stages, r=rn: run_plan(chain(s, r), "process", "ipc", n),
                           reps)
            rows.append([stages, rn, n / dt])
    print_table("Pipelined chain of empty kernels, one process per stage (ipc + shm)",
                ["stages", "register_num", "pieces/s (goal >= 20,000 at 2 stages, rn >= 4)"],
                rows)

    k = 6 if args.quick else 12
    gb = MIB64 / 1e9
    buf = np.ones(MIB64, np.uint8)
    peer = Peer("bulk", "tcp")
    raw_bulk_once(peer, buf, 2)
    rows = []
    try:
        for label, machines, scheme, peek, base, base_fn in (
                ("2 processes, 1 machine (shm), consumer copies", 1, "ipc", False,
                 "np.copyto 64 MiB", memcpy_time),
                ("2 processes, 1 machine (shm), consumer reads in place", 1, "ipc", True,
                 "np.copyto 64 MiB", memcpy_time),
                ("2 machines over tcp, consumer copies", 2, "tcp", False,
                 "raw pyzmq tcp 64 MiB", lambda: raw_bulk_once(peer, buf, k)),
                ("2 machines over tcp, consumer reads in place", 2, "tcp", True,
                 "raw pyzmq tcp 64 MiB", lambda: raw_bulk_once(peer, buf, k))):
            plan = chain(2, 2, (MIB64,), machines=machines, peek=peek)
            t, base_t, ratio = paired(
                lambda p=plan, s=scheme: run_plan(p, "process", s, k) / k, base_fn, reps)
            rows.append([label, t * 1e3, base, base_t * 1e3, gb / t, 1 / ratio])
    finally:
        peer.close()
    print_table("64 MiB regst per piece, process units (register_num 2, streamed; the source "
                "writes all 64 MiB every piece)", ["path", "actorflow ms", "baseline",
                                                   "baseline ms", "actorflow GB/s",
                                                   "speed ratio (goal >= 0.85 / 0.9)"], rows)


if __name__ == "__main__":
    main()
