"""``flowlaunch key new FILE``: make a cluster key file for workers started by others.

`flowlaunch sim` and `run` make a key per run by themselves; Slurm/MPI/Kubernetes jobs
that start `flowlaunch worker` directly need one file, readable only by the user, on every
machine (`--cluster-key FILE`).
"""

from __future__ import annotations

import argparse

from actorflow.errors import LaunchError
from actorflow.transport.auth import ClusterKey


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("key", help="make a cluster key file (authentication of a run)",
                       description=__doc__.split("\n\n")[1])
    actions = p.add_subparsers(dest="key_command", metavar="ACTION")
    a = actions.add_parser("new", help="write a new key to FILE (mode 600; FILE must not exist)")
    a.add_argument("file")
    a.set_defaults(func=main)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def main(args: argparse.Namespace) -> int:
    try:
        path = ClusterKey.generate().write(args.file)
    except FileExistsError as e:
        raise LaunchError(f"{args.file} exists; a key file is never overwritten") from e
    except OSError as e:
        raise LaunchError(f"cannot write {args.file}: {e.strerror or e}") from e
    print(f"wrote {path} (mode 600): pass --cluster-key {path} to every worker")
    return 0
