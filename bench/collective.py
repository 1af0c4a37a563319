"""Collectives: actorflow's process group vs the transport's bound vs torch.distributed gloo.

    python bench/collective.py [--repeats 5] [--rounds 2] [--procs 2,4]
                               [--quick] [--json OUT.jsonl]

Each side runs as real processes under ``flowlaunch --nproc-per-node N`` (the path a user
runs): actorflow through ``af.env.process_group``, gloo through ``torch.distributed`` with
``init_method="env://"`` on the same exported variables (skipped if torch is missing).
Every rank times each call between barriers; a call's time is the slowest rank's, and a
cell is the median over repeats, then the median over ``--rounds`` alternating launches.

Two actorflow columns: the default (one host: shared memory; ``shared.py``) and the
socket ring forced with ``ACTORFLOW_COLLECTIVE_SHM=0`` (the path between hosts).
The bound: a ring all-reduce moves ``2(N-1)/N x bytes`` through each rank, all-gather and
reduce-scatter ``(N-1)/N x bytes``; dividing by the point-to-point bandwidth measured on
the same mesh in the same launch (one 64 MiB transfer between two ranks, in the chunks the
collectives use) gives the fastest time the socket transport allows.  ``x bound`` = bound
time / actorflow time (1.0 = at the bound; the shared-memory path does not go through
sockets, so it may pass it), ``ring x bound`` the same for the ring; ``x gloo`` = gloo time
/ actorflow time (> 1 = actorflow faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _util import Report, bench_args

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
QUICK = [4 << 10, 64 << 10]
OPS = ["all_reduce", "all_gather", "reduce_scatter"]
P2P_BYTES = 64 << 20


def _reps(nbytes: int, repeats: int) -> int:
    return repeats if nbytes >= 1 << 20 else repeats * 4


# -- workers (one per rank, under flowlaunch) ---------------------------------------------
def worker_actorflow(sizes: list[int], repeats: int, p2p_bytes: int = P2P_BYTES) -> dict:
    import actorflow as af

    g = af.env.process_group
    n = g.size
    calls = {
        "all_reduce": lambda x: g.all_reduce(x, out=x),  # in place, like torch's
        "all_gather": lambda x: g.all_gather(x[: x.size // n]),
        "reduce_scatter": lambda x: g.reduce_scatter(x),
    }
    out: dict = {"p2p_bytes_per_s": _p2p(g, p2p_bytes)}  # every rank takes part (barriers)
    for op in OPS:
        for nbytes in sizes:
            x = np.ones(nbytes // 4, np.float32)
            call = calls[op]
            out[f"{op} {nbytes}"] = _timed(lambda c=call, a=x: c(a), g.barrier, g.exchange,
                                           _reps(nbytes, repeats))
    return out


def _p2p(g, nbytes: int = P2P_BYTES) -> float:
    """Bytes/s of one ``nbytes`` (64 MiB) transfer rank 0 -> rank 1 on the collective mesh
    (median of 3)."""
    ch, chunk = g.channel, g.chunk_bytes
    buf = np.ones(nbytes, np.uint8)
    speeds = []
    for rep in range(4):
        g.barrier()
        t0 = time.perf_counter()
        if g.rank == 0:
            for c in range(0, nbytes, chunk):
                ch.send(1, ("p2p", rep, c), [buf[c:c + chunk]])
            ch.recv(1, ("p2p", rep, -1), watch=(1,), deadline=time.monotonic() + 60,
                    what="p2p bench ack")
        elif g.rank == 1:
            for c in range(0, nbytes, chunk):
                _, frames = ch.recv(0, ("p2p", rep, c), watch=(0,),
                                    deadline=time.monotonic() + 60, what="p2p bench")
                buf[c:c + chunk] = np.frombuffer(frames[0].buffer, np.uint8)
            ch.send(0, ("p2p", rep, -1))
        if rep:
            speeds.append(nbytes / (time.perf_counter() - t0))
    g.barrier()
    return statistics.median(speeds) if g.rank in (0, 1) else 0.0


def worker_gloo(sizes: list[int], repeats: int, p2p_bytes: int = P2P_BYTES) -> dict:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="env://")
    n, rank = dist.get_world_size(), dist.get_rank()

    def all_gather(t):
        piece = t[: t.numel() // n].clone()
        return dist.all_gather_into_tensor(torch.empty(piece.numel() * n), piece)

    def reduce_scatter(t):
        out = torch.empty(t.numel() // n)
        return dist.reduce_scatter_tensor(out, t)

    calls = {"all_reduce": dist.all_reduce, "all_gather": all_gather,
             "reduce_scatter": reduce_scatter}

    def exchange(v):
        got = [None] * n
        dist.all_gather_object(got, v)
        return got

    out: dict = {}
    for op in OPS:
        for nbytes in sizes:
            t = torch.ones(nbytes // 4, dtype=torch.float32)
            try:
                call = calls[op]
                out[f"{op} {nbytes}"] = _timed(lambda c=call, a=t: c(a), dist.barrier,
                                               exchange, _reps(nbytes, repeats))
            except RuntimeError as e:  # an op this gloo build does not support
                out[f"{op} {nbytes}"] = None
                if rank == 0:
                    print(f"gloo {op}: {str(e).splitlines()[0]}", file=sys.stderr)
    dist.destroy_process_group()
    return out


def _timed(fn, barrier, exchange, reps: int) -> float:
    fn()  # warm up (buffers, connections)
    mine = []
    for _ in range(reps):
        barrier()
        t0 = time.perf_counter()
        fn()
        mine.append(time.perf_counter() - t0)
    every = exchange(mine)
    return statistics.median(max(ts[i] for ts in every) for i in range(reps))


# -- driver -------------------------------------------------------------------------------
def launch(side: str, n: int, sizes: list[int], repeats: int,
           p2p_bytes: int = P2P_BYTES) -> dict:
    worker = "gloo" if side == "gloo" else "actorflow"
    cmd = [sys.executable, "-m", "actorflow.launcher.cli", "--nproc-per-node", str(n),
           "--master-port", "0", __file__, "--worker", worker, "--repeats", str(repeats),
           "--sizes", ",".join(map(str, sizes)), "--p2p-bytes", str(p2p_bytes)]
    env = dict(os.environ, OMP_NUM_THREADS="1",
               ACTORFLOW_COLLECTIVE_SHM="0" if side == "ring" else "1")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    for line in r.stdout.splitlines():
        if "RESULT " in line:
            return json.loads(line.split("RESULT ", 1)[1])
    raise RuntimeError(f"{side} on {n} processes failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")


def human(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2, help="alternating launches per side")
    p.add_argument("--procs", default="2,4")
    p.add_argument("--worker", choices=["actorflow", "gloo"], help=argparse.SUPPRESS)
    p.add_argument("--sizes", help=argparse.SUPPRESS)
    p.add_argument("--p2p-bytes", type=int, default=P2P_BYTES, help=argparse.SUPPRESS)
    args = bench_args(p, "2 processes, 4 and 64 KiB, 1 MiB point-to-point").parse_args()
    if args.worker:
        sizes = [int(s) for s in args.sizes.split(",")]
        fn = worker_actorflow if args.worker == "actorflow" else worker_gloo
        res = fn(sizes, args.repeats, args.p2p_bytes)
        if int(os.environ.get("RANK", "0")) == 0:
            print("RESULT " + json.dumps(res), flush=True)
        return
    sizes = SIZES
    if args.quick:
        sizes, args.procs, args.rounds, args.repeats, args.p2p_bytes = QUICK, "2", 1, 1, 1 << 20
    report = Report(__file__, args)
    try:
        import torch  # noqa: F401
        sides = ["actorflow", "ring", "gloo"]
    except ImportError:
        sides = ["actorflow", "ring"]
        print("torch is not installed: no gloo column")
    for n in (int(x) for x in args.procs.split(",")):
        runs: dict[str, list[dict]] = {s: [] for s in sides}
        for _ in range(args.rounds):
            for side in sides:
                runs[side].append(launch(side, n, sizes, args.repeats, args.p2p_bytes))
        bw = statistics.median(r["p2p_bytes_per_s"] for r in runs["actorflow"] + runs["ring"])
        rows = []
        for op in OPS:
            factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
            for nbytes in sizes:
                af_t = statistics.median(r[f"{op} {nbytes}"] for r in runs["actorflow"])
                ring_t = statistics.median(r[f"{op} {nbytes}"] for r in runs["ring"])
                bound = factor * nbytes / bw
                gl = [r[f"{op} {nbytes}"] for r in runs.get("gloo", [])]
                gl_t = statistics.median(gl) if gl and None not in gl else None
                nan = float("nan")
                rows.append([n, op, human(nbytes), af_t * 1e3, ring_t * 1e3, bound * 1e3,
                             bound / af_t, bound / ring_t, nan if gl_t is None else gl_t * 1e3,
                             nan if gl_t is None else gl_t / af_t,
                             nan if gl_t is None else gl_t / ring_t])
        report.table("collectives", f"{n} processes; point-to-point {bw / 1e9:.2f} GB/s on "
                     f"the mesh (median of {args.rounds} launches x {args.repeats} repeats)",
                     ["processes", "op", "bytes", "actorflow ms", "ring ms", "bound ms",
                      "x bound", "ring x bound", "gloo ms", "x gloo", "ring x gloo"], rows,
                     figure="actorflow ms", unit="ms", baseline="bound ms", ratio="x bound",
                     keys=["processes", "op", "bytes"])


if __name__ == "__main__":
    main()
