"""``flowlaunch sim``: the whole cluster as local worker processes over loopback tcp."""

from __future__ import annotations

import argparse
import os
import secrets
import sys

from actorflow.errors import LaunchError
from actorflow.launcher.cmd_spmd import run_copies
from actorflow.launcher.jobfile import is_spmd_script
from actorflow.launcher.keys import key_env
from actorflow.launcher.launch import Cluster, add_run_options, run_cluster
from actorflow.launcher.ports import check_port_free, free_port
from actorflow.launcher.rankenv import check_port
from actorflow.plan.memory import available_bytes, fmt_bytes

EPILOG = """\
examples:
  flowlaunch sim examples/sample_pipeline.py --machines 2
  flowlaunch sim job.plan --machines 3 --unit process --pieces 100 --out out.npz
  flowlaunch sim examples/sample_pipeline.py --machines 2 --json --log-dir logs/
  flowlaunch sim examples/update_and_eval.py --machines 2      # build_jobs + drive

Each machine is one `flowlaunch worker` process (rank 0 hosts the master); machines talk
over tcp on 127.0.0.1.  Output pieces stream to flowlaunch (kept only for --out); a job
file's check(outputs) hook, when present, compares them with numpy.  A file with
build_jobs(machines) and drive(session) runs several jobs by name instead: rank 0 runs
drive, and check(result) reads what it returned.

A Python file that defines no build_plan/build_job/build_jobs/job is an SPMD script: N
copies run with MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK/LOCAL_RANK set (as with
--nproc-per-node N):
  flowlaunch sim examples/global_tensors.py --machines 4
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sim", help="simulate N machines as local processes over loopback tcp",
                       description="Run a plan on N simulated machines on this host.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--machines", type=int, default=1, help="number of machines (default 1)")
    p.add_argument("--allow-many-machines", action="store_true",
                   help="simulate more machines than this host's limit (see the error)")
    p.add_argument("--master-port", type=int, default=0,
                   help="the master's port on 127.0.0.1 (default 0: a free port)")
    p.add_argument("--start-method", choices=["fork", "exec"], default="fork",
                   help="fork: workers are forked from this process after it imported the "
                        "worker once (fast start-up); exec: each worker is a fresh "
                        "interpreter (default: fork)")
    add_run_options(p)
    p.set_defaults(func=main)


MIN_LIMIT = 16  # always allowed: small hosts still simulate a 16-machine cluster
PER_CORE = 8  # worker processes per CPU core
WORKER_BYTES = 150 << 20  # a worker process (interpreter, numpy, zmq, threads)


def machine_limit() -> tuple[int, str]:
    """How many machines ``sim`` starts without ``--allow-many-machines``, and why."""
    cores = os.cpu_count() or 1
    by_cpu = PER_CORE * cores
    avail = available_bytes()
    by_mem = by_cpu if avail is None else avail // WORKER_BYTES
    limit = max(MIN_LIMIT, min(by_cpu, by_mem))
    mem = "" if avail is None else (f", about {WORKER_BYTES >> 20} MiB per worker of "
                                    f"{fmt_bytes(avail)} available")
    return limit, f"{PER_CORE} workers per CPU core x {cores} cores{mem}, at least {MIN_LIMIT}"


def main(args: argparse.Namespace) -> int:
    if args.machines < 1:
        raise LaunchError(f"--machines must be at least 1, got {args.machines}")
    limit, why = machine_limit()
    if args.machines > limit and not args.allow_many_machines:
        raise LaunchError(f"--machines {args.machines} is more than this host can simulate "
                          f"(limit {limit}: {why}); pass --allow-many-machines to try anyway")
    port = check_port(args.master_port, "--master-port")
    if port == 0:
        port = free_port("127.0.0.1")
    else:
        check_port_free("127.0.0.1", port)

    if is_spmd_script(args.plan):
        with key_env(args, secrets.token_hex(4)) as keys:  # the ranks' sockets use the key
            return run_copies([sys.executable, args.plan], args.machines, port=port,
                              log_dir=args.log_dir, grace=args.grace, extra_env=keys)

    def local(rank: int, host: str, wargs: list[str], env: dict) -> tuple[list[str], dict]:
        return [sys.executable, "-m", "actorflow.launcher.cli", *wargs], env

    cluster = Cluster(["127.0.0.1"] * args.machines, "127.0.0.1", port, local,
                      fork=args.start_method == "fork")
    return run_cluster(args, cluster)
