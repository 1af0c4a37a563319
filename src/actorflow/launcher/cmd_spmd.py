"""SPMD mode: ``flowlaunch --nproc-per-node K [--nnodes M --node-rank R ...] script.py args``.

Starts K copies of the script on this node and exports what OneFlow's and torch's
launchers export: ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` (M*K), ``RANK``
(R*K + local rank), ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``NODE_RANK``.  Supervision is the
same as for workers: rank-prefixed output, per-rank logs, the failure table, SIGTERM then
SIGKILL, signals forwarded.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time

from actorflow.errors import ActorflowError
from actorflow.launcher.keys import ENV_KEY, add_key_options, key_env
from actorflow.launcher.ports import check_port_free, free_port, resolve
from actorflow.launcher.rankenv import check_port
from actorflow.launcher.report import spmd_line
from actorflow.launcher.run_loop import RunLoop
from actorflow.launcher.supervisor import Supervisor

_FLAGS = ("--nproc-per-node", "--nproc_per_node")

EPILOG = """\
examples:
  flowlaunch --nproc-per-node 4 train.py --epochs 2
  # two nodes: run on each, with its own --node-rank
  flowlaunch --nnodes 2 --node-rank 0 --nproc-per-node 2 --master-addr node1 \\
             --master-port 29500 job.py
  # actorflow workers in SPMD form (each reads RANK/WORLD_SIZE/MASTER_*)
  flowlaunch --nproc-per-node 2 -m actorflow.launcher.cli worker examples/sample_pipeline.py
"""


def wants(argv: list[str]) -> bool:
    """True when argv is SPMD mode (options first, one of them --nproc-per-node)."""
    if not argv or not argv[0].startswith("--") or argv[0] in ("--help", "-h"):
        return False
    return any(a.split("=", 1)[0] in _FLAGS for a in argv)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="flowlaunch --nproc-per-node K",
        description="SPMD mode: run K copies of a script per node with rank variables set.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, required=True,
                   dest="nproc", help="processes on this node")
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes (default 1)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, dest="node_rank",
                   help="this node's index (default 0)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1", dest="master_addr")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   dest="master_port", help="0 picks a free port (single node)")
    p.add_argument("--log-dir", help="write rank<N>.log files here")
    p.add_argument("--grace", type=float, default=2.0,
                   help="seconds between SIGTERM and SIGKILL on teardown (default 2)")
    add_key_options(p, reads_file=True)
    p.add_argument("-m", dest="module", action="store_true",
                   help="run the script argument as a module (python -m)")
    p.add_argument("script", help="the Python script (or module with -m) to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except ActorflowError as e:
        print(f"flowlaunch: error: {e}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    from actorflow.errors import LaunchError

    if args.nproc < 1 or args.nnodes < 1:
        raise LaunchError("--nproc-per-node and --nnodes must be at least 1")
    if not 0 <= args.node_rank < args.nnodes:
        raise LaunchError(f"--node-rank {args.node_rank} out of range for --nnodes {args.nnodes}")
    port = check_port(args.master_port, "--master-port")
    if port == 0:
        port = free_port(resolve(args.master_addr))
    elif args.node_rank == 0 and resolve(args.master_addr).startswith("127."):
        check_port_free(args.master_addr, port)
    world = args.nnodes * args.nproc
    args.cluster_key = args.cluster_key or os.environ.get(ENV_KEY)
    if args.nnodes > 1 and not (args.cluster_key or args.insecure):
        raise LaunchError("several nodes need one key: pass --cluster-key FILE (the same file on "
                          "every node; `flowlaunch key new FILE`) or --insecure")
    t0 = time.monotonic()
    signalled: list[int] = []
    with key_env(args, secrets.token_hex(4)) as keys:  # every rank's sockets use the key
        cmd = [sys.executable, "-m", args.script] if args.module else [sys.executable,
                                                                         args.script]
        code = run_copies(cmd + list(args.args), args.nproc, nnodes=args.nnodes,
                          node_rank=args.node_rank, master_addr=args.master_addr, port=port,
                          log_dir=args.log_dir, grace=args.grace, extra_env=keys,
                          signalled=signalled)
    if not signalled:  # Ctrl-C already said its one line
        print(spmd_line(args.script, args.nproc, world, time.monotonic() - t0, code == 0),
              flush=True)
    return code


def run_copies(cmd: list[str], nproc: int, *, nnodes: int = 1, node_rank: int = 0,
               master_addr: str = "127.0.0.1", port: int, log_dir: str | None = None,
               grace: float = 2.0, extra_env: dict[str, str] | None = None,
               signalled: list[int] | None = None) -> int:
    """Start ``nproc`` copies of ``cmd`` with the rank variables (and ``extra_env``: the
    run's key file) set; supervise them.  A stopping signal is appended to ``signalled``."""
    world = nnodes * nproc
    sup = Supervisor(log_dir, sys.stdout, grace)
    for local in range(nproc):
        rank = node_rank * nproc + local
        env = dict(os.environ, MASTER_ADDR=master_addr, MASTER_PORT=str(port),
                   WORLD_SIZE=str(world), RANK=str(rank), LOCAL_RANK=str(local),
                   LOCAL_WORLD_SIZE=str(nproc), NODE_RANK=str(node_rank), **(extra_env or {}))
        sup.spawn(rank, "localhost", cmd, env)
    loop = RunLoop(sup, monitor=None)
    code = loop.run()
    if signalled is not None and loop.signum:
        signalled.append(loop.signum)
    return code
