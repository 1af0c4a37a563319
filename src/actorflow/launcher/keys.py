"""Which cluster key a flowlaunch process uses, and how workers get it.

``sim``/``run``/SPMD make a key per run; ``sim`` and SPMD hand it to local processes as a
file only the user can read (a private directory named after the run, removed with the
run's other leftovers); ``run`` writes it into each remote worker's ssh stdin.  A
standalone ``flowlaunch worker`` reads ``--cluster-key FILE`` (``-``: one line on stdin)
or the file named by ``$ACTORFLOW_CLUSTER_KEY``.  ``--insecure`` turns authentication off
and says so on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from actorflow.errors import LaunchError
from actorflow.transport.auth import ClusterKey, use_key

ENV_KEY = "ACTORFLOW_CLUSTER_KEY"  # a key FILE's path (the key itself never goes in env)
ENV_INSECURE = "ACTORFLOW_INSECURE"
WARNING = ("flowlaunch: warning: --insecure: this run's sockets accept any peer that can "
           "reach them (no authentication); use it only to debug")


def add_key_options(p: argparse.ArgumentParser, *, reads_file: bool) -> None:
    if reads_file:
        p.add_argument("--cluster-key", metavar="FILE",
                       help="the run's key file (mode 600; `flowlaunch key new FILE` makes "
                            f"one; '-': one line on stdin); default ${ENV_KEY}")
    p.add_argument("--insecure", action="store_true",
                   help="no authentication on the run's sockets (debugging only; warns)")


def setup_key(args: argparse.Namespace, *, make: bool) -> ClusterKey | None:
    """The key this process (and the sockets it opens) uses; None with --insecure."""
    if getattr(args, "insecure", False):
        print(WARNING, file=sys.stderr, flush=True)
        use_key(None)
        return None
    if not make and os.environ.get(ENV_INSECURE) == "1" and not getattr(args, "cluster_key",
                                                                          None):
        use_key(None)  # started by an --insecure launcher, which warned once
        return None
    path = getattr(args, "cluster_key", None) or (None if make else os.environ.get(ENV_KEY))
    if path == "-":
        key = ClusterKey.from_bytes(bytes.fromhex(_read_line(0).strip() or "00"),
                                    "--cluster-key - (stdin)")
    elif path:
        key = ClusterKey.read(path)
    elif make:
        key = ClusterKey.generate()
    else:
        raise LaunchError(
            "this worker has no cluster key: pass --cluster-key FILE (the same file on every "
            f"machine; `flowlaunch key new FILE` makes one) or set ${ENV_KEY}, or --insecure "
            "to debug without authentication")
    use_key(key)
    return key


def _read_line(fd: int, limit: int = 4096) -> str:
    """One line from a raw fd, byte by byte, so nothing after it is consumed (stdin stays
    the launcher's liveness channel)."""
    out = bytearray()
    while len(out) < limit:
        b = os.read(fd, 1)
        if not b or b == b"\n":
            break
        out += b
    return out.decode("ascii", "replace")


def key_line(key: ClusterKey) -> bytes:
    """What ``run`` writes into a remote worker's stdin for ``--cluster-key -``."""
    return key.to_bytes().hex().encode() + b"\n"


def write_private(key: ClusterKey, run_id: str) -> Path:
    """The key in a new 0700 directory named after the run (removed with its leftovers)."""
    d = Path(tempfile.mkdtemp(prefix=f"actorflow-{run_id}-key-"))
    return key.write(d / "cluster.key")
