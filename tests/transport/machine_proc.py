"""One machine of a test run in its own OS process (a minimal stand-in for a worker).

    python machine_proc.py SUBPLAN_FILE MACHINE_ID UNIT RUN_ID OUT_NPZ

Line protocol with the test (JSON lines): prints {"addr", "pid"}; reads {machine: addr};
prints {"started", "unit_pids"}; reads "go"; starts the sources it hosts; prints
{"delivered": 0} at its first output piece; waits until its actors exited; saves output
pieces to OUT_NPZ as "<output>_<piece>"; prints {"done"}.  Errors go
to stderr with exit code 1.  No control plane: the test is the coordinator.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from actorflow.actors.node import MachineNode
from actorflow.plan.io import load_plan


def main() -> int:
    path, mid, unit, run_id, out_path = sys.argv[1:6]
    plan = load_plan(path, validate=False)  # a sub-plan: other machines' tasks are absent
    outs: dict[str, np.ndarray] = {}

    def deliver(task, piece, arrays):
        if task is not None:
            if not outs:  # the run is under way (a test waits for this before a kill)
                print(json.dumps({"delivered": piece}), flush=True)
            outs[f"{task.attrs['output_name']}_{piece}"] = next(iter(arrays.values()))

    node = MachineNode(plan, int(mid), unit=unit, run_id=run_id, on_deliver=deliver)
    try:
        print(json.dumps({"addr": node.bind("127.0.0.1"), "pid": None}), flush=True)
        node.connect({int(k): v for k, v in json.loads(sys.stdin.readline()).items()})
        node.start()
        pids = [p.pid for p in getattr(node.hosting, "procs", {}).values()]
        print(json.dumps({"started": True, "unit_pids": pids}), flush=True)
        if sys.stdin.readline().strip() != "go":
            return 1
        for t in plan.tasks:
            if t.machine_id == int(mid) and t.task_type == "source":
                node.command(t.task_id, "start", t.attrs.get("piece_num"))
        node.wait_exited(timeout=60)
        np.savez(out_path, **outs)
        print(json.dumps({"done": True}), flush=True)
        return 0
    except Exception as e:
        print(f"machine {mid}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        node.close()


if __name__ == "__main__":
    sys.exit(main())
