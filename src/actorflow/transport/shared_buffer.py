"""A byte buffer in shared memory that ranks on one host map into each other's reach.

``SharedBuffer.create(nbytes)`` makes ``/dev/shm/actorflow-coll-<random>`` and maps it;
peers ``SharedBuffer.attach(name)``; the creator ``unlink()``s the name as soon as every
peer has attached, so the memory lives exactly as long as some process maps it and a
crash later leaves no file behind.  Same mapping code as the process units' slots
(``shm._open``: pages faulted in at creation).
"""

from __future__ import annotations

import mmap
import os
import secrets

import numpy as np

from actorflow.transport.shm import PREFIX, SHM_DIR, _open


def unlink_segment(name: str) -> None:
    """Remove a segment's name if it still has one (cleanup after a peer died)."""
    try:
        os.unlink(os.path.join(SHM_DIR, name))
    except FileNotFoundError:
        pass


class SharedBuffer:
    def __init__(self, name: str, mm: mmap.mmap, owner: bool) -> None:
        self.name = name
        self.nbytes = len(mm)
        self._mm = mm
        self._owner = owner
        self._linked = owner

    @classmethod
    def create(cls, nbytes: int, name: str | None = None) -> SharedBuffer:
        """A new segment (``name``: a name every peer can derive; default: a random one)."""
        name = name or f"{PREFIX}-coll-{os.getpid()}-{secrets.token_hex(4)}"
        return cls(name, _open(name, True, max(64, nbytes)), True)

    @classmethod
    def attach(cls, name: str) -> SharedBuffer:
        return cls(name, _open(name, False), False)

    def view(self, dtype: np.dtype | str, count: int) -> np.ndarray:
        """The first ``count`` items of the buffer as a flat array of ``dtype``."""
        return np.frombuffer(self._mm, dtype=dtype, count=count)

    def unlink(self) -> None:
        """Remove the name (mappings stay valid); only the creator unlinks."""
        if self._linked:
            self._linked = False
            unlink_segment(self.name)

    def close(self) -> None:
        self.unlink()
        try:
            self._mm.close()
        except BufferError:  # arrays still view it: the mapping goes when they do
            pass
