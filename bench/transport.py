"""Transport benchmark: actorflow's data plane vs raw pyzmq / memcpy, side by side in one run.

    python bench/transport.py            # full run (~2-3 min on 2 busy cores)
    python bench/transport.py --quick    # seconds: few pieces, 1 MiB instead of 64
    python bench/transport.py --json OUT.jsonl   # also one JSON line per row

Every actorflow run alternates with its baseline (both see the same machine load) and a
ratio is the median of the per-pair ratios.  What each table measures:

1. Hop round trip, register_num 1, so piece k+1 starts only after piece k's ACK is back:
   one round trip = producer act, READY, consumer act, ACK = two socket traversals.
   - ipc: producer and consumer are process units of one machine (slot numbers only).
   - tcp: producer on machine 0, consumer on machine 1.  The builder inserts a comm_net
     actor on machine 1; here it shares the consumer's process, so a round trip is still
     two tcp traversals (READY with the 1-byte blob as a frame, ACK after the copy).  With
     comm_net in a process of its own each piece would add an ipc READY/ACK pair.
   Baseline: a raw pyzmq PUSH/PULL ping-pong of 48 bytes between two processes over the
   same transport: also two traversals per round trip, but no acts and no protocol.
2. Pipelined pieces/s of 2- and 4-stage chains of empty kernels (1-byte regsts), one
   process per stage, register_num 1, 2, 4, 8.  Baseline for 2 stages: raw pyzmq
   messages/s with the same number in flight (a window of register_num echoes).
3. A 64 MiB regst per piece between two processes of one machine (shared memory).  The
   source is ``stamp`` (writes one element), so the only 64 MiB of work per piece is what
   the row names: "consumer copies" = one 64 MiB copy into the consumer's own regst, the
   apples-to-apples row for np.copyto of 64 MiB; "reads in place" = handing over the slot
   only.  A third row lets the source rewrite all 64 MiB too (producer and consumer then
   race for memory bandwidth).
   Times per piece are steady-state: (a run of 2+k pieces - a run of 2 pieces) / k, so
   process start and the first touch of each regst are left out, as np.copyto is timed
   on warm buffers.
4. The same 64 MiB regst between two simulated machines over tcp (producer's shared
   memory as zero-copy frames -> comm_net on machine 1 -> its regst) vs raw pyzmq tcp of a
   64 MiB message with the same window.  "reads in place" is the transfer itself (the
   apples-to-apples row); "consumer copies" adds the consumer's 64 MiB copy.
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
from _util import Report, bench_args, median_of

import actorflow as af
from actorflow.actors.cluster import NodeGroup
from actorflow.transport.registry import context, local_address

MIB64 = 64 << 20


# -- actorflow side ---------------------------------------------------------------------
def chain(stages: int, register_num: int, shape=(1,), machines: int = 1,
          peek: bool = False, source: str = "constant", comm_with_consumer: bool = False
          ) -> af.Plan:
    """source -> identity x (stages-1); stage k on machine k % machines; one unit per task.

    ``peek``: the stages read one element of the regst instead of copying all of it.
    ``comm_with_consumer``: each comm_net runs in its consumer's process (unit).
    """
    b = af.PlanBuilder(machines=machines, register_num=register_num, name=f"chain{stages}")
    attrs = {"shape": list(shape), "dtype": "uint8"}
    if source == "constant":
        attrs["value"] = 1
    x = b.source(source, attrs, name="src")
    for k in range(1, stages):
        m = k % machines
        x = (b.op("slice", x, axis=0, start=0, stop=1, machine=m, name=f"stage{k}") if peek
             else b.op("identity", x, machine=m, name=f"stage{k}"))
    plan = b.build()
    if comm_with_consumer:
        tasks = {t.task_id: t for t in plan.tasks}
        for t in plan.tasks:
            if t.task_type == "comm_net":
                out = next(iter(t.produced.values()))
                t.thrd_id = tasks[out.consumer_task_ids[0]].thrd_id
        plan.validate()
    return plan


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


def run_steady(plan: af.Plan, scheme: str, pieces: int, warm: int = 2) -> float:
    """Seconds per piece in steady state: (run of warm+pieces - run of warm) / pieces, so
    the first pieces' costs (first touch of every regst in each process) are left out."""
    return (run_plan(plan, "process", scheme, warm + pieces)
            - run_plan(plan, "process", scheme, warm)) / pieces


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


def raw_window_once(p: Peer, buf, count: int, window: int, copy: bool = True) -> float:
    """Seconds per message, streamed with ``window`` in flight (like register_num)."""
    t0 = time.perf_counter()
    inflight = 0
    for _ in range(count):
        if inflight == window:
            p.pull.recv()
            inflight -= 1
        p.push.send(buf, copy=copy)
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


def memcpy_time(size: int = MIB64) -> float:
    a, b = np.ones(size, np.uint8), np.zeros(size, np.uint8)

    def once() -> float:
        t0 = time.perf_counter()
        np.copyto(b, a)
        return time.perf_counter() - t0
    once()
    return median_of(once, 5)


# -- tables -------------------------------------------------------------------------------
def hop_table(report: Report, n: int, reps: int, schemes=("ipc", "tcp")) -> None:
    rows = []
    for scheme, machines, setup in (
            ("ipc", 1, "2 process units, 1 machine"),
            ("tcp", 2, "2 machines; comm_net in the consumer's process")):
        if scheme not in schemes:
            continue
        peer = Peer("pingpong", scheme)
        try:
            raw_rtt_once(peer, 500)
            plan = chain(2, 1, machines=machines, comm_with_consumer=True)
            ours, raw, ratio = paired(lambda p=plan, s=scheme: run_plan(p, "process", s, n) / n,
                                      lambda p=peer: raw_rtt_once(p, n), reps)
        finally:
            peer.close()
        rows.append([f"{scheme}://", setup, ours * 1e6, raw * 1e6, ratio])
    report.table("hop", "Hop round trip (register_num 1: READY + ACK = 2 socket traversals "
                 "per piece; baseline: raw pyzmq ping-pong, 2 traversals)",
                 ["transport", "actorflow setup", "actorflow us", "raw pyzmq us",
                  "ratio (goal <= 1.3)"], rows, figure="actorflow us", unit="us",
                 baseline="raw pyzmq us", ratio="ratio (goal <= 1.3)")


def chain_table(report: Report, n: int, reps: int, stage_counts=(2, 4),
                register_nums=(1, 2, 4, 8)) -> None:
    rows = []
    peer = Peer("pingpong", "ipc")
    try:
        raw_window_once(peer, b"x" * 48, 500, 1)
        for stages in stage_counts:
            for rn in register_nums:
                plan = chain(stages, rn)
                if stages == 2:
                    t, base, ratio = paired(
                        lambda p=plan: run_plan(p, "process", "ipc", n) / n,
                        lambda r=rn: raw_window_once(peer, b"x" * 48, n, r), reps)
                    rows.append([stages, rn, 1 / t, 1 / base, 1 / ratio])
                else:
                    t = median_of(lambda p=plan: run_plan(p, "process", "ipc", n) / n, reps)
                    rows.append([stages, rn, 1 / t, float("nan"), float("nan")])
    finally:
        peer.close()
    report.table("chain", "Pipelined chain of empty kernels, one process per stage (ipc + shm)",
                 ["stages", "register_num", "pieces/s (goal >= 20,000 at 2 stages, rn >= 4)",
                  "raw pyzmq msgs/s, same window", "ratio"], rows,
                 figure="pieces/s (goal >= 20,000 at 2 stages, rn >= 4)", unit="pieces/s",
                 baseline="raw pyzmq msgs/s, same window", ratio="ratio")


def bulk_table(report: Report, k: int, reps: int, size: int = MIB64,
               quick: bool = False) -> None:
    gb = size / 1e9
    mib = f"{size >> 20} MiB"
    buf = np.ones(size, np.uint8)
    peer = Peer("bulk", "tcp")
    raw_window_once(peer, buf, 2, 2, copy=False)
    rows = []
    copyto = (f"np.copyto {mib}", lambda: memcpy_time(size))
    raw_tcp = (f"raw pyzmq tcp {mib}", lambda: raw_window_once(peer, buf, k, 2, copy=False))
    cases = [
        ("shm, 1 machine: consumer copies (goal >= 0.85)", 1, "ipc", False, "stamp", copyto),
        ("shm, 1 machine: consumer reads in place", 1, "ipc", True, "stamp", copyto),
        (f"shm, 1 machine: producer rewrites {mib}, consumer copies", 1, "ipc", False,
         "constant", copyto),
        ("tcp, 2 machines: consumer reads in place (goal >= 0.9)", 2, "tcp", True, "stamp",
         raw_tcp),
        ("tcp, 2 machines: consumer copies", 2, "tcp", False, "stamp", raw_tcp)]
    try:
        for label, machines, scheme, peek, source, (base, base_fn) in (
                cases[:1] if quick else cases):
            plan = chain(2, 2, (size,), machines=machines, peek=peek, source=source)
            t, base_t, ratio = paired(lambda p=plan, s=scheme: run_steady(p, s, k),
                                      base_fn, reps)
            rows.append([label, t * 1e3, base, base_t * 1e3, gb / t, 1 / ratio])
    finally:
        peer.close()
    report.table("bulk", f"{mib} regst per piece, process units (register_num 2, streamed, "
                 "steady state)",
                 ["path", "actorflow ms", "baseline", "baseline ms", "actorflow GB/s",
                  "speed ratio"], rows, figure="actorflow ms", unit="ms",
                 baseline="baseline ms", ratio="speed ratio", keys=["path", "baseline"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("hop", "chain", "bulk"), help="run one table")
    ap.add_argument("--peer", nargs=3, help=argparse.SUPPRESS)
    args = bench_args(ap, "100 pieces, ipc only, 2 stages, 1 MiB regsts").parse_args()
    if args.peer:
        sys.exit(peer_main(*args.peer))
    quick = args.quick
    n = 100 if quick else 4000
    reps = 1 if quick else 5
    report = Report(__file__, args)
    if args.only in (None, "hop"):
        hop_table(report, n, reps, ("ipc",) if quick else ("ipc", "tcp"))
    if args.only in (None, "chain"):
        if quick:
            chain_table(report, n, reps, (2,), (4,))
        else:
            chain_table(report, n, reps)
    if args.only in (None, "bulk"):
        bulk_table(report, 2 if quick else 12, reps, 1 << 20 if quick else MIB64, quick)


if __name__ == "__main__":
    main()
