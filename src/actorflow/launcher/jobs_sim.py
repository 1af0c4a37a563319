"""``flowlaunch sim`` of a multi-job file: ``build_jobs(machines)`` + ``drive(session)``.

The plan (every job, the model-IO jobs and the main job) is compiled here; every machine
is a MachineNode bound to its own loopback tcp address, so cross-machine regsts really go
through sockets and comm_net buffers, and ``--unit process`` makes every execution unit a
process.  ``drive`` gets a JobClient (``run``/``run_many``/``submit``/``save``/``load`` by job
name) and runs in this process; its return value goes to the file's ``check(result)``.
The summary gives pieces per job; ``--trace DIR`` records every machine, so the trace
shows each job's critical section (the main job's tick tracks).  What this does not do
(yet): one worker process per machine with the control plane, so ``flowlaunch run`` over
ssh does not drive multi-job files.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from actorflow.actors.cluster import NodeGroup
from actorflow.actors.job_client import JobClient
from actorflow.errors import ActorflowError, LaunchError
from actorflow.launcher.jobfile import job_check, load_target
from actorflow.launcher.outputs import run_check
from actorflow.trace.diagnostics import Diagnostics


def run_jobs_file(args: argparse.Namespace, drive: Callable[[Any], Any]) -> int:
    n = args.machines
    plan = load_target(args.plan, n)
    check = job_check(args.plan)
    timeout = args.timeout if args.timeout and args.timeout > 0 else 60.0
    diag = Diagnostics(plan, trace=getattr(args, "trace", None),
                       stall_timeout=getattr(args, "stall_timeout", None))
    client = JobClient(plan, timeout)
    group = NodeGroup(plan, client.on_deliver, args.unit, "tcp", timeout, diag.recorder)
    client.attach(group)
    diag.attach(group.actor_states, group.fail)
    error: BaseException | None = None
    result: Any = None
    t0 = time.monotonic()
    try:
        group.start()
        try:
            result = drive(client)
        except ActorflowError as e:
            error = e
        except Exception as e:  # the job file's own bug: name it, still drain the run
            error = LaunchError(f"{args.plan}: drive(session) failed: {type(e).__name__}: {e}")
        if group.error is None:
            client.close_ids()
            group.wait_exited(timeout)
    except ActorflowError as e:
        error = error or e
    finally:
        wall = time.monotonic() - t0
        client.fail_all(error)
        diag.close(error)
        group.join()
    pieces = {name: client.pieces(name) for name in sorted(client.jobs)}
    extra: dict[str, Any] = {"ok": error is None, "jobs": pieces, "machines_count": n,
                             "wall_seconds": round(wall, 4), "exit_code": 0}
    if error is not None:
        extra.update(ok=False, exit_code=1, error=str(error).splitlines()[0])
    elif check is not None:
        ok, line = run_check(check, {"result": result})  # check(result)
        extra["check"] = line
        if not ok:
            extra.update(ok=False, exit_code=1)
    if error is None and args.out:
        extra["out"] = _save(args.out, result)
    if args.json:
        print(json.dumps(extra, sort_keys=True))
    else:
        ran = ", ".join(f"{k} x{v}" for k, v in pieces.items() if v)
        line = (f"{plan.job.name}: jobs {ran or 'none'} on {n} machine{'s' * (n > 1)} in "
                f"{wall:.2f}s")
        if "check" in extra:
            line += f"; {extra['check']}"
        if "out" in extra:
            line += f"; result saved to {extra['out']}"
        if error is not None:
            print(f"flowlaunch: run failed: {error}", file=sys.stderr)
            line += "; FAILED"
        print(line)
    return int(extra["exit_code"])


def _save(path: str, result: Any) -> str:
    """``--out``: drive's result as .npz (a dict of arrays or lists of arrays; no pickle)."""
    arrays: dict[str, np.ndarray] = {}
    items = result.items() if isinstance(result, dict) else [("result", result)]
    for k, v in items:
        try:
            arrays[str(k)] = np.stack([np.asarray(x) for x in v]) if isinstance(
                v, (list, tuple)) else np.asarray(v)
        except (TypeError, ValueError) as e:
            raise LaunchError(f"--out: drive's result '{k}' is not arrays: {e}") from e
    with open(Path(path), "wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]
    return path
