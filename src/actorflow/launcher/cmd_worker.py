"""``flowlaunch worker``: one machine of a run, for process managers that start workers.

Rank and world size come from flags or the environment (``rankenv.py``); rank 0 also runs
the master and therefore needs PLAN.
"""

from __future__ import annotations

import argparse
import os

from actorflow.launcher.keys import add_key_options, setup_key
from actorflow.launcher.rankenv import resolve_rank_env
from actorflow.launcher.trace_options import add_trace_options, check_trace_dir
from actorflow.launcher.worker import WorkerConfig, run_worker

EPILOG = """\
examples:
  # by hand, two machines on this host
  flowlaunch worker job.py --rank 0 --world-size 2 --master 127.0.0.1:29500 &
  flowlaunch worker --rank 1 --world-size 2 --master 127.0.0.1:29500

  # Slurm: every task reads SLURM_PROCID/SLURM_NTASKS
  export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)
  export MASTER_PORT=29500
  srun flowlaunch worker job.py

  # Open MPI: OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE
  mpirun -np 4 -x MASTER_ADDR=node1 -x MASTER_PORT=29500 flowlaunch worker job.py

exit codes: 0 done, 1 this machine failed, 3 aborted (another machine failed),
128+N stopped by signal N.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "worker", help="run one machine of a plan (rank from flags or RANK/SLURM/OMPI env)",
        description="Run one machine of a plan; rank 0 also hosts the control-plane master.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("plan", nargs="?", help="a .plan file or a Python job file (rank 0 only)")
    p.add_argument("--rank", type=int, help="this worker's rank = machine id")
    p.add_argument("--world-size", type=int, help="number of machines")
    p.add_argument("--master", help="HOST:PORT of rank 0 (default: MASTER_ADDR:MASTER_PORT)")
    p.add_argument("--unit", choices=["thread", "process"], default="thread",
                   help="execution unit per thrd_id (default: thread)")
    p.add_argument("--pieces", type=int, help="override the sources' piece count")
    p.add_argument("--host", help="address for this machine's data-plane socket "
                                  "(default: the interface that reaches the master)")
    p.add_argument("--run-id", default="", help="id naming this run's shared memory")
    p.add_argument("--out", help="rank 0: save output pieces to this .npz file")
    p.add_argument("--connect-timeout", type=float, default=30.0,
                   help="seconds to wait for the master to answer (default: 30)")
    p.add_argument("--join-timeout", type=float, default=60.0,
                   help="seconds for every rank to join / set up (default: 60)")
    p.add_argument("--heartbeat-timeout", type=float, default=2.0,
                   help="rank 0: seconds without heartbeat before a machine is lost (default: 2)")
    add_trace_options(p)
    add_key_options(p, reads_file=True)
    p.add_argument("--master-bind-all", action="store_true",
                   help="rank 0: the master listens on every interface (default: only the "
                        "address in --master / MASTER_ADDR)")
    p.add_argument("--exit-on-stdin-eof", action="store_true",
                   help="stop (cleanly) when stdin closes: set by `flowlaunch run`, whose ssh "
                        "channel is this worker's stdin")
    p.add_argument("--monitor", action="store_true",
                   help="rank 0: wait for flowlaunch's monitor before starting, and take the "
                        "compiled plan from it when PLAN is not given (set by sim/run)")
    p.add_argument("--deliver", metavar="ADDRESS",
                   help="send output pieces straight to this listener (flowlaunch's output "
                        "sink; set by sim/run) instead of through the master")
    p.add_argument("--drive", help="rank 0 of a multi-job plan: the job file whose "
                   "drive(session) runs the jobs by name (set by sim/run)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    env = resolve_rank_env(args.rank, args.world_size, args.master, os.environ)
    check_trace_dir(args, own=f"machine-{env.rank}")
    setup_key(args, make=False)  # before stdin becomes the launcher's liveness channel
    cfg = WorkerConfig(
        rank=env.rank, world_size=env.world_size, master_host=env.master_host,
        master_port=env.master_port, target=args.plan, unit=args.unit, pieces=args.pieces,
        run_id=args.run_id or os.environ.get("ACTORFLOW_RUN_ID", ""), host=args.host,
        out=args.out, connect_timeout=args.connect_timeout, join_timeout=args.join_timeout,
        heartbeat_timeout=args.heartbeat_timeout, trace=args.trace,
        stall_timeout=args.stall_timeout, monitor=args.monitor,
        exit_on_stdin_eof=args.exit_on_stdin_eof, master_bind_all=args.master_bind_all,
        deliver=args.deliver, drive=args.drive)
    return run_worker(cfg)
