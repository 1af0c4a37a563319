"""``flowlaunch plan show|dot|validate|save FILE``: inspect what a plan or job file will run.

FILE is a saved plan (``.plan``/``.json``) or a Python job file (``build_plan`` or a traced
job, compiled for ``--machines``).  Loading validates the plan, dry run included.
"""

from __future__ import annotations

import argparse
import sys

from actorflow.errors import LaunchError
from actorflow.launcher.jobfile import load_target
from actorflow.plan.describe import show, to_dot
from actorflow.plan.io import plan_to_json, save_plan

EPILOG = """examples:
  flowlaunch plan show examples/mlp_data_parallel.py --machines 2
  flowlaunch plan dot examples/pipeline_4_stages.py --machines 4 | dot -Tsvg > plan.svg
  flowlaunch plan validate job.plan
  flowlaunch plan save examples/matmul_model_parallel.py mm.plan --machines 2
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="show, draw, validate or save a plan",
                       description="Inspect the plan of a .plan file or a Python job file.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="plan_command", metavar="ACTION")
    for name, helptext in (("show", "tasks per machine/thread, regsts, bytes per piece"),
                           ("dot", "Graphviz DOT of the task graph (machines as clusters)"),
                           ("validate", "check every plan rule and dry-run the protocol"),
                           ("save", "write the (compiled) plan to a .plan or .json file")):
        a = actions.add_parser(name, help=helptext, description=helptext)
        a.add_argument("file", help="a .plan/.json plan or a Python job file")
        if name == "save":
            a.add_argument("out", help="output path (.plan: msgpack, .json: JSON)")
        a.add_argument("--machines", type=int, default=1,
                       help="machines to compile a job file for (default 1)")
        if name == "show":
            a.add_argument("--json", action="store_true", help="print the plan as JSON")
        a.set_defaults(func=main, plan_action=name)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def main(args: argparse.Namespace) -> int:
    if args.machines < 1:
        raise LaunchError(f"--machines must be at least 1, got {args.machines}")
    plan = load_target(args.file, args.machines)
    action = args.plan_action
    if action == "show":
        print(plan_to_json(plan) if args.json else show(plan))
    elif action == "dot":
        sys.stdout.write(to_dot(plan))
    elif action == "validate":
        descs = len(plan.regst_descs())
        print(f"ok: {args.file}: {len(plan.tasks)} tasks, {descs} regst descs on "
              f"{plan.machines.count} machines; every rule and the dry run pass")
    else:
        if str(args.out).endswith(".json"):
            with open(args.out, "w") as f:
                f.write(plan_to_json(plan))
        else:
            save_plan(plan, args.out)
        print(f"saved {args.out}: {len(plan.tasks)} tasks on {plan.machines.count} machines")
    return 0
