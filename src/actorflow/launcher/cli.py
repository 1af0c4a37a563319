"""``flowlaunch``: the command line.  Subcommands live in ``cmd_<name>.py`` modules.

Each module defines ``register(subparsers)``, adding its parser with ``set_defaults(func=...)``
where ``func(args) -> int`` is the exit code.  Adding a subcommand = one new module + its
name in ``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from actorflow.errors import ActorflowError

SUBCOMMANDS = ["sim", "run", "worker", "plan", "trace", "key"]
RUNS_ACTORS = {"sim", "run", "worker"}  # commands whose processes choose an actor core

EPILOG = """\
examples:
  flowlaunch sim examples/sample_pipeline.py --machines 2
  flowlaunch run job.py --hostfile hosts.txt
  srun flowlaunch worker job.py                      # Slurm starts the workers
  flowlaunch --nproc-per-node 4 script.py args...    # SPMD mode (torchrun-style env)
  flowlaunch COMMAND --help                          # each command's options and examples
"""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that subcommand's module is imported and registered
    (a worker process then skips the imports of ``plan``/``trace``/``run``: start-up time)."""
    p = argparse.ArgumentParser(
        prog="flowlaunch",
        description="Run actorflow plans on a simulated or real cluster, and inspect them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only in SUBCOMMANDS else SUBCOMMANDS:
        importlib.import_module(f"actorflow.launcher.cmd_{name}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    from actorflow.launcher import cmd_spmd

    argv = sys.argv[1:] if argv is None else argv
    if cmd_spmd.wants(argv):
        return _check_core() or cmd_spmd.main(argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if args.command in RUNS_ACTORS and _check_core():
        return 1
    try:
        return int(args.func(args) or 0)
    except ActorflowError as e:
        print(f"flowlaunch: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("flowlaunch: interrupted", file=sys.stderr)
        return 130


def _check_core() -> int:
    """With ``ACTORFLOW_CORE`` set, refuse up front a core that cannot run (``native`` when
    the compiled core is not built or stale; an unknown name): 1 after saying why, else 0.
    Unset, the workers fall back to Python with a warning banner, as the package does."""
    if not os.environ.get("ACTORFLOW_CORE", "").strip():
        return 0
    try:
        from actorflow import _core

        _core.core_name()
    except ActorflowError as e:
        print(f"flowlaunch: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
