"""``flowlaunch run``: one worker per machine over ssh; rank 0 (the master) on the first host."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from actorflow.errors import LaunchError
from actorflow.launcher.hosts import expand, parse_hostfile, parse_hosts
from actorflow.launcher.launch import Cluster, add_run_options, run_cluster
from actorflow.launcher.ports import free_port, resolve
from actorflow.launcher.rankenv import check_port

EPILOG = """\
examples:
  flowlaunch run job.py --hosts node1,node2
  flowlaunch run job.py --hostfile hosts.txt --ssh-port 2222 -i ~/.ssh/cluster_key
  flowlaunch run job.plan --hosts node1:2,node2:2 --env PYTHONPATH --env OMP_NUM_THREADS

hostfile (MPI/DeepSpeed form; slots = workers on that host, default 1):
  node1 slots=2
  node2 slots=2   # comments are fine

Rank 0 runs on the first host and hosts the master at FIRST_HOST:--master-port.  Every
host needs actorflow installed (same version) and the job file at the same path; the
remote command is `cd $PWD && env ... PYTHON -m actorflow.launcher.reaper ... -- PYTHON -m
actorflow.launcher.cli worker ...`: the reaper runs the worker and, however it ends
(even SIGKILLed), removes that host's shared memory and ipc directories of the run.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a plan on real hosts, one worker per machine via ssh",
                       description="Run a plan over ssh: one worker per machine.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--hosts", help="comma-separated hosts, HOST or HOST:SLOTS")
    g.add_argument("--hostfile", help="MPI/DeepSpeed hostfile: lines 'host slots=N'")
    p.add_argument("--master-port", type=int, default=29500,
                   help="the master's port on the first host (default 29500; 0 = a port free "
                        "on this machine, for hosts that share it)")
    p.add_argument("--ssh", default="ssh", help="ssh program (default: ssh from PATH)")
    p.add_argument("--ssh-port", "-p", type=int, help="ssh port on every host")
    p.add_argument("--identity", "-i", help="ssh identity file")
    p.add_argument("--ssh-option", "-o", action="append", default=[],
                   help="extra ssh -o option (repeatable)")
    p.add_argument("--env", action="append", default=[], metavar="NAME",
                   help="forward this environment variable to every worker (repeatable; "
                        "ACTORFLOW_* variables are always forwarded)")
    p.add_argument("--python", default=sys.executable,
                   help="python on the hosts (default: this interpreter's path)")
    p.add_argument("--remote-dir", default=os.getcwd(),
                   help="working directory on the hosts (default: the current one)")
    add_run_options(p)
    p.set_defaults(func=main)


def ssh_command(args: argparse.Namespace, host: str, rank: int, wargs: list[str],
                env: dict[str, str]) -> list[str]:
    """The local argv that starts rank ``rank``'s worker on ``host`` under the reaper
    (``reaper.py``: it cleans that host after the worker, however the worker ends).
    Pure: tested without ssh."""
    names = sorted({*args.env, *(k for k in env if k.startswith("ACTORFLOW_"))})
    missing = [n for n in args.env if n not in env]
    if missing:
        raise LaunchError(f"--env {missing[0]}: not set in this environment, cannot forward it")
    assigns = [f"{n}={env[n]}" for n in names]
    reaper = [args.python, "-m", "actorflow.launcher.reaper", "--run-id",
              env["ACTORFLOW_RUN_ID"], "--machine", str(rank), "--grace", str(args.grace), "--"]
    remote = " ".join(shlex.quote(a) for a in
                      ["env", *assigns, *reaper, args.python, "-m", "actorflow.launcher.cli",
                       *wargs])
    remote = f"cd {shlex.quote(args.remote_dir)} && exec {remote}"
    argv = [args.ssh, "-o", "BatchMode=yes"]
    if args.ssh_port is not None:
        argv += ["-p", str(args.ssh_port)]
    if args.identity:
        argv += ["-i", args.identity]
    for opt in args.ssh_option:
        argv += ["-o", opt]
    return [*argv, host, remote]


def main(args: argparse.Namespace) -> int:
    slots = parse_hosts(args.hosts) if args.hosts is not None else parse_hostfile(args.hostfile)
    for s in slots:  # one clear line now instead of an ssh failure per rank later
        resolve(s.host)
    hosts = expand(slots)
    port = check_port(args.master_port, "--master-port")
    if port == 0:
        port = free_port("0.0.0.0")

    def over_ssh(rank: int, host: str, wargs: list[str], env: dict) -> tuple[list[str], dict]:
        return ssh_command(args, host, rank, wargs, env), env

    # ssh does not pass signals on: a remote worker stops when its stdin (the ssh channel)
    # closes, i.e. when the launcher tears down or dies; its reaper then cleans that host
    return run_cluster(args, Cluster(hosts, hosts[0], port, over_ssh, stdin_link=True))
