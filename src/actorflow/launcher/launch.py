"""Run a plan on a cluster of workers: what ``flowlaunch sim`` and ``flowlaunch run`` share.

The launcher compiles and validates the plan once (so a bad plan fails here, in one line,
before any process starts) and hands it to rank 0's master as bytes through its Monitor;
it starts one ``flowlaunch worker`` per machine through a *spawner* (a local process, or
ssh), watches them with a RunLoop, takes output pieces straight from the workers in an
OutputSink (``--out`` is written as they arrive; without it none are kept), then runs the
job's ``check(outputs)`` and prints the summary (or ``--json``).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from actorflow.errors import LaunchError
from actorflow.launcher.jobfile import job_check, load_target, runnable_check
from actorflow.launcher.keys import (
    ENV_INSECURE,
    add_key_options,
    key_line,
    setup_key,
    write_private,
)
from actorflow.launcher.leftovers import remove_leftovers
from actorflow.launcher.monitor import Monitor
from actorflow.launcher.outputs import run_check
from actorflow.launcher.ports import local_address_towards
from actorflow.launcher.report import summary_json, summary_line
from actorflow.launcher.run_loop import RunLoop
from actorflow.launcher.sink import OutputSink
from actorflow.launcher.supervisor import Supervisor
from actorflow.launcher.trace_options import add_trace_options, check_trace_dir, trace_worker_args
from actorflow.plan.io import plan_to_bytes
from actorflow.plan.memory import bytes_per_machine, check_fits
from actorflow.plan.model import Plan
from actorflow.trace.recorder import default_dump_dir, prune_dumps

# spawner(rank, host, worker_args, env) -> (argv, env) of the local process to start
Spawner = Callable[[int, str, list[str], dict[str, str]], tuple[list[str], dict[str, str]]]


@dataclass
class Cluster:
    hosts: list[str]        # one per rank
    master_host: str
    master_port: int
    spawner: Spawner
    stdin_link: bool = False  # workers stop when their stdin closes (ssh: the launcher died)
    fork: bool = False  # local workers forked from this warm process (forked.py), not exec'd


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``sim`` and ``run``."""
    p.add_argument("plan", help="a .plan file, or a Python job file defining build_plan(machines)")
    p.add_argument("--unit", choices=["thread", "process"], default="thread",
                   help="execution unit per thrd_id inside each machine (default: thread)")
    p.add_argument("--pieces", type=int, help="override the sources' piece count")
    p.add_argument("--devices-per-machine", type=int, metavar="N",
                   help="devices per machine to compile a job file for (rank r runs on "
                        "machine r // N, device r %% N); default: the job file's own")
    p.add_argument("--device", choices=["cpu", "cuda"],
                   help="device type for a job file whose build_job takes 'device'; cuda "
                        "runs on CuPy, or on the emulated device with "
                        "ACTORFLOW_DEVICE=emulated")
    p.add_argument("--out", help="save output pieces to this .npz (np.savez, no pickle)")
    p.add_argument("--log-dir", help="write one log file per rank here (rank<N>.log)")
    p.add_argument("--json", action="store_true",
                   help="print the summary as ONE JSON object on stdout (logs go to stderr)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--grace", type=float, default=2.0,
                   help="seconds between SIGTERM and SIGKILL on teardown (default 2)")
    p.add_argument("--timeout", type=float, default=0.0,
                   help="fail the run after this many seconds (default: no limit)")
    p.add_argument("--heartbeat-timeout", type=float, default=2.0,
                   help="seconds without heartbeat before a machine is declared lost "
                        "(default 2)")
    p.add_argument("--join-timeout", type=float, default=60.0,
                   help="seconds for every worker to join the master (default 60)")
    add_trace_options(p)
    add_key_options(p, reads_file=False)


def load_checked(target: str, machines: int, devices_per_machine: int | None = None,
                 device: str | None = None) -> Plan:
    if devices_per_machine is not None and devices_per_machine < 1:
        raise LaunchError(f"--devices-per-machine must be at least 1, got {devices_per_machine}")
    plan = load_target(target, machines, devices_per_machine, device)
    if plan.machines.count > machines:
        raise LaunchError(f"{target}: the plan is for {plan.machines.count} machines but only "
                          f"{machines} were given (use {plan.machines.count} machines)")
    runnable_check(plan, target)
    return plan


def run_cluster(args: argparse.Namespace, cluster: Cluster) -> int:
    n = len(cluster.hosts)
    if args.pieces is not None and args.pieces < 1:
        raise LaunchError(f"--pieces must be at least 1, got {args.pieces}")
    if args.out and not Path(args.out).resolve().parent.is_dir():
        raise LaunchError(f"--out {args.out}: directory {Path(args.out).parent} does not exist")
    check_trace_dir(args)
    plan = load_checked(args.plan, n, args.devices_per_machine, args.device)
    if all(h == "127.0.0.1" for h in cluster.hosts):  # every machine's regsts on this host
        check_fits(sum(bytes_per_machine(plan).values()),
                   f"{args.plan} on {n} simulated machines")
    check = job_check(args.plan)
    run_id = secrets.token_hex(4)
    prune_dumps()  # flight dumps of old runs: keep the newest $ACTORFLOW_KEEP_DUMPS
    key = setup_key(args, make=True)  # this run's CURVE key (the monitor uses it too)
    console = sys.stderr if args.json else sys.stdout
    sup = Supervisor(args.log_dir, console, args.grace)
    master = f"{cluster.master_host}:{cluster.master_port}"
    sink_host = ("127.0.0.1" if all(h in ("127.0.0.1", "localhost") for h in cluster.hosts)
                 else local_address_towards(cluster.hosts[0]))
    if cluster.fork:  # fork before the sink exists: no zmq context in the parent yet
        from actorflow.launcher.ports import free_port
        from actorflow.transport.registry import tcp_address

        sink_port = free_port(sink_host)
        deliver = tcp_address(sink_host, sink_port)
        sink: OutputSink | None = None
    else:
        sink = OutputSink(sink_host, args.out, keep=check is not None)
        deliver = sink.address
    monitor = None
    code = 1
    try:
        key_args, stdin_data = [], None
        if key is not None and cluster.stdin_link:  # remote: the ssh session's stdin
            key_args, stdin_data = ["--cluster-key", "-"], key_line(key)
        elif key is not None:  # local: a file only this user can read
            key_args = ["--cluster-key", str(write_private(key, run_id))]
        for rank, host in enumerate(cluster.hosts):
            wargs = ["worker", "--rank", str(rank), "--world-size", str(n), "--master", master,
                     "--unit", args.unit, "--run-id", run_id,
                     "--heartbeat-timeout", str(args.heartbeat_timeout),
                     "--join-timeout", str(args.join_timeout),
                     "--connect-timeout", str(args.join_timeout), "--deliver", deliver]
            if rank == 0:
                wargs.append("--monitor")  # the plan comes compiled, through the monitor
                if plan.is_multi_job:  # rank 0 drives the jobs with the file's drive()
                    wargs += ["--drive", str(Path(args.plan).resolve())]
            if args.pieces is not None:
                wargs += ["--pieces", str(args.pieces)]
            if cluster.stdin_link:
                wargs.append("--exit-on-stdin-eof")
            wargs += trace_worker_args(args)
            wargs += key_args
            env = dict(os.environ, ACTORFLOW_RUN_ID=run_id, PYTHONUNBUFFERED="1",
                       ACTORFLOW_DUMP_DIR=str(default_dump_dir(os.getpid())),
                       ACTORFLOW_DEVICES_PER_MACHINE=str(plan.machines.devices_per_machine))
            if args.device:
                env["ACTORFLOW_JOB_DEVICE"] = args.device
            if key is None:
                env[ENV_INSECURE] = "1"
            if cluster.fork:
                if rank == 0:
                    from actorflow.launcher.forked import warm_up

                    warm_up()
                sup.fork_worker(rank, host, wargs, env)
                continue
            argv, env = cluster.spawner(rank, host, wargs, env)
            sup.spawn(rank, host, argv, env, stdin_link=cluster.stdin_link,
                      stdin_data=stdin_data)
        sup.start_readers()
        if sink is None:
            sink = OutputSink(sink_host, args.out, keep=check is not None, port=sink_port)
        monitor = Monitor(cluster.master_host, cluster.master_port, n, sys.stderr,
                          show_progress=not args.quiet, plan=plan_to_bytes(plan))
        dump_dirs = [default_dump_dir(os.getpid())] + (
            [Path(args.trace).resolve()] if getattr(args, "trace", None) else [])
        loop = RunLoop(sup, monitor, timeout=args.timeout, sink=sink, dump_dirs=dump_dirs)
        code = loop.run()
        final = monitor.final
        if code == 0 and final is not None:
            _drain(sink, final["summary"])
    finally:
        sup.teardown()
        remove_leftovers(run_id)  # this host's, every machine's (the key directory too)
        if sink is not None:
            sink.close(ok=code == 0 and monitor is not None and monitor.final is not None)
    if code == 0 and final is None:
        print("flowlaunch: run failed: rank 0 exited without sending the final summary",
              file=sys.stderr)
        code = 1
    summary = dict(final["summary"]) if final else {}
    extra: dict = {"ok": code == 0, "job": plan.job.name, "machines_count": n,
                   "run_id": run_id, "exit_code": code}
    if code == 0 and final is not None:
        extra["outputs"] = dict(sink.counts)
        if args.out:
            extra["out"] = str(args.out)
        if check is not None:
            ok, line = run_check(check[0], sink.outputs(), tolerance=check[1])
            extra["check"] = line
            if not ok:
                code = 1
                extra.update(ok=False, exit_code=1)
    if args.json:
        print(summary_json(summary, sup.children, extra))
    elif code == 0 or final is not None:
        print(summary_line(plan.job.name, n, summary, extra), file=sys.stdout)
    return code


def _drain(sink: OutputSink, summary: dict, wait: float = 5.0) -> None:
    """Take the pieces still in flight: every output the workers counted must arrive."""
    want = int(summary.get("pieces", 0))
    deadline = time.monotonic() + wait
    sink.poll(0)
    while max(sink.counts.values(), default=0) < want and time.monotonic() < deadline:
        sink.poll(0.05)
    got = max(sink.counts.values(), default=0)
    if got < want:
        raise LaunchError(f"the workers delivered {want} output pieces but the launcher "
                          f"received {got} within {wait:.0f}s")

