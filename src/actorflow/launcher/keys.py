"""Which cluster key a flowlaunch process uses, and how workers get it.

``sim``/``run``/SPMD make a key per run; ``sim`` and SPMD hand it to local processes as a
file only the user can read (a private directory named after the run, removed with the
run's other leftovers); ``run`` writes it into each remote worker's ssh stdin.  A
standalone ``flowlaunch worker`` reads ``--cluster-key FILE`` (``-``: one line on stdin)
or the file named by ``$ACTORFLOW_CLUSTER_KEY``; an SPMD script's process reads the same
variable (``env_key``) before its process group opens a socket.  ``--insecure`` turns
authentication off and says so on stderr; the launcher then exports
``ACTORFLOW_INSECURE=1`` so the processes it starts know (and do not warn again).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from actorflow.errors import LaunchError
from actorflow.transport.auth import ClusterKey, current_key, key_decided, use_key

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


def env_key(environ: Mapping[str, str] | None = None, who: str = "this process"
            ) -> ClusterKey | None:
    """Decide this process's key from the environment its launcher set, once, before any
    socket opens: ``$ACTORFLOW_CLUSTER_KEY`` (a 0600 file) or ``ACTORFLOW_INSECURE=1``.
    A process that already decided (``use_key``: a worker, a test) keeps its choice; one
    with neither variable is refused rather than left open to anyone."""
    if key_decided():
        return current_key()
    environ = os.environ if environ is None else environ
    path = environ.get(ENV_KEY, "")
    if path:
        key: ClusterKey | None = ClusterKey.read(path, f"${ENV_KEY}")
    elif environ.get(ENV_INSECURE) == "1":
        key = None  # the launcher that set it warned once (a user setting it chose it)
    else:
        raise LaunchError(
            f"{who} has no cluster key, so its sockets would accept anyone: set "
            f"{ENV_KEY}=FILE (the same mode-600 file for every rank; `flowlaunch key new "
            f"FILE` makes one), or {ENV_INSECURE}=1 to run without authentication "
            "(flowlaunch --nproc-per-node sets one of them itself)")
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


@contextmanager
def key_env(args: argparse.Namespace, run_id: str) -> Iterator[dict[str, str]]:
    """The environment that hands this run's key to the local processes it starts (SPMD
    ranks read it before their process group opens a socket): the path of the user's
    ``--cluster-key`` file, or of a new private file removed when the block ends, or
    ``ACTORFLOW_INSECURE=1`` after ``--insecure`` warned."""
    key = setup_key(args, make=True)
    given = getattr(args, "cluster_key", None)
    # both variables, always: one inherited from the user's shell must not override this run
    if key is None:
        yield {ENV_INSECURE: "1", ENV_KEY: ""}
    elif given:
        yield {ENV_KEY: str(Path(given).resolve()), ENV_INSECURE: ""}  # a path, never the key
    else:
        path = write_private(key, run_id)
        try:
            yield {ENV_KEY: str(path), ENV_INSECURE: ""}
        finally:
            shutil.rmtree(path.parent, ignore_errors=True)


def write_private(key: ClusterKey, run_id: str) -> Path:
    """The key in a new 0700 directory named after the run (removed with its leftovers)."""
    d = Path(tempfile.mkdtemp(prefix=f"actorflow-{run_id}-key-"))
    return key.write(d / "cluster.key")
