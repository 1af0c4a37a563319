"""What a run leaves on a host when one of its processes is killed, and removing it.

A worker and its node remove their own shared memory and ipc directories on every exit
they live through; a SIGKILL leaves them behind.  The names say whose they are:

- ``/dev/shm/actorflow<run>_m<machine>_d<desc>``: a regst desc's segment
  (``transport/shm.py`` ``segment_name``);
- ``$TMPDIR/actorflow-<run>-m<machine>-XXXX/``: a machine's ipc socket directory for its
  unit processes (``actors/process_hosting.py``);
- ``$TMPDIR/actorflow-<run>-key-XXXX/``: the launcher's key file for local workers
  (``keys.py``).

The launcher removes every machine's on its own host (``sim``, and ``run``'s first host);
on each host of ``flowlaunch run`` the reaper (``reaper.py``) removes its worker's machine
once that worker is gone.  Standard library only: the reaper imports this on every host.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

from actorflow.errors import LaunchError

SHM_DIR = "/dev/shm"
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9]{1,64}$")


def check_run_id(run_id: str) -> str:
    """A run id names files to delete: an empty or odd one would match others' files."""
    if not _RUN_ID_RE.match(run_id):
        raise LaunchError(f"run id {run_id!r}: expected 1 to 64 letters or digits")
    return run_id


def leftovers(run_id: str, machine: int | None = None, *, tmpdir: str | None = None,
              shm_dir: str = SHM_DIR) -> list[str]:
    """Paths of the run's segments and temp directories on this host (of one machine, or
    of all of them when ``machine`` is None)."""
    check_run_id(run_id)
    m = "" if machine is None else f"m{machine}"
    shm_prefix = f"actorflow{run_id}_{m}" + ("_" if m else "")
    tmp_prefix = f"actorflow-{run_id}-{m}" + ("-" if m else "")
    out = []
    for base, prefix in ((shm_dir, shm_prefix), (tmpdir or tempfile.gettempdir(), tmp_prefix)):
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        out += [os.path.join(base, n) for n in names if n.startswith(prefix)]
    return out


def remove_leftovers(run_id: str, machine: int | None = None, *, tmpdir: str | None = None,
                     shm_dir: str = SHM_DIR) -> list[str]:
    """Remove what ``leftovers`` finds; returns what was removed.  Best effort: a path
    that vanished meanwhile (its owner cleaned up after all) is not an error."""
    removed = []
    for path in leftovers(run_id, machine, tmpdir=tmpdir, shm_dir=shm_dir):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError:
            continue  # not ours to remove (another user's, read-only): leave it
        removed.append(path)
    return removed
