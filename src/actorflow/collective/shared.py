"""Collectives through shared memory, for groups whose ranks all live on one host.

Sockets move every byte through the kernel twice (sender to kernel, kernel to receiver)
and the ring then copies or adds it once more.  On one host each rank can instead write
its input once into its own shared buffer and read the others' directly:

- all-reduce: write ``x``; sync; reduce segment ``r`` of every buffer into my buffer; sync;
  copy every reduced segment out.  About ``3 x bytes`` of memory traffic per rank.
- reduce-scatter: write; sync; reduce my segment of every buffer.
- all-gather: write my piece; sync; copy every piece out.

The syncs are small messages of the group's mesh (so a dead rank still fails the wait,
naming it), and the first one of every call carries each rank's dtype and shape, checked
before any byte is read.  It also tells everyone that the previous call's readers are done,
so a buffer is only rewritten when nobody reads it.  Buffers grow to the largest call seen
(a power of two), decided from those metas, so every rank decides the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from actorflow.collective import direct
from actorflow.collective.ring import Segment
from actorflow.errors import CollectiveError
from actorflow.transport.shared_buffer import PREFIX, SharedBuffer, unlink_segment

if TYPE_CHECKING:
    from actorflow.collective.group import Op

META, NAMES, ATTACHED, WRITTEN, REDUCED = 101, 102, 103, 104, 105
MIN_BYTES = 1 << 20


class Arena:
    """Every member's shared buffer for one group (created on the first large call).

    Segment names are derived from ``key`` (the run and the group, the same on every
    member), the growth generation and the rank, so when a member dies while buffers are
    being set up the others can still unlink its segment: nothing is left in /dev/shm.
    """

    def __init__(self, key: str = "") -> None:
        self.key = key
        self.buffers: list[SharedBuffer] = []
        self.capacity = 0
        self._generation = 0

    def ensure(self, op: Op, nbytes: int) -> None:
        """Grow every member's buffer to hold ``nbytes`` (the same decision everywhere)."""
        if nbytes <= self.capacity:
            return
        self.close()
        capacity = max(MIN_BYTES, 1 << (nbytes - 1).bit_length())
        self._generation += 1
        g = op.group
        names = [f"{PREFIX}-coll-{self.key}-{self._generation}-r{p}" for p in range(g.size)]
        mine = SharedBuffer.create(capacity, names[g.rank])
        ok = False
        try:
            direct.exchange(op, None, part=NAMES)  # every member created its buffer
            self.buffers = [mine if p == g.rank else SharedBuffer.attach(n)
                            for p, n in enumerate(names)]
            direct.exchange(op, None, part=ATTACHED)  # every peer mapped mine: drop its name
            ok = True
        finally:
            mine.unlink()
            if not ok:  # a member failed or died here: its segment may still have a name
                for n in names:
                    unlink_segment(n)
        self.capacity = capacity

    def view(self, p: int, dtype: np.dtype, count: int) -> np.ndarray:
        return self.buffers[p].view(dtype, count)

    def close(self) -> None:
        for b in self.buffers:
            b.close()
        self.buffers, self.capacity = [], 0


def _metas(op: Op, x: np.ndarray, same_shape: bool) -> list[list]:
    metas = direct.exchange_metas(op, x, part=META)
    g = op.group
    for p, (dt, shape) in enumerate(metas):
        if dt != x.dtype.str or (same_shape and list(shape) != list(x.shape)) or (
                list(shape[1:]) != list(x.shape[1:])):
            raise CollectiveError(
                f"{op.what}: rank {g.ranks[p]} has dtype {dt} shape {shape}, rank "
                f"{g.global_rank} has {x.dtype.str} {list(x.shape)}: the ranks called it "
                "with different tensors")
    return metas


def _write(op: Op, arena: Arena, flat: np.ndarray, need: int) -> None:
    arena.ensure(op, need)
    arena.view(op.group.rank, flat.dtype, flat.size)[:] = flat
    direct.exchange(op, None, part=WRITTEN)


def all_reduce(op: Op, arena: Arena, x: np.ndarray, ufunc: np.ufunc,
               segs: list[Segment], out: np.ndarray | None = None) -> np.ndarray:
    g = op.group
    _metas(op, x, same_shape=True)
    flat = x.reshape(-1)
    _write(op, arena, flat, x.nbytes)
    bufs = [arena.view(p, x.dtype, flat.size) for p in range(g.size)]
    a, b = segs[g.rank]
    acc = bufs[g.rank][a:b]
    for p in range(g.size):
        if p != g.rank:
            ufunc(acc, bufs[p][a:b], out=acc)
    direct.exchange(op, None, part=REDUCED)
    if out is None:
        out = np.empty_like(x)
    out_flat = out.reshape(-1)
    for p, (a, b) in enumerate(segs):
        out_flat[a:b] = bufs[p][a:b]
    return out


def reduce_scatter(op: Op, arena: Arena, front: np.ndarray, ufunc: np.ufunc,
                   segs: list[Segment]) -> np.ndarray:
    """``front``: the input with the scattered axis first (contiguous); returns my rows."""
    g = op.group
    _metas(op, front, same_shape=True)
    flat = front.reshape(-1)
    _write(op, arena, flat, front.nbytes)
    a, b = segs[g.rank]
    mine = arena.view(g.rank, front.dtype, flat.size)[a:b].copy()
    for p in range(g.size):
        if p != g.rank:
            ufunc(mine, arena.view(p, front.dtype, flat.size)[a:b], out=mine)
    return mine


def all_gather(op: Op, arena: Arena, front: np.ndarray, metas: list[list]) -> np.ndarray:
    """``front``: my piece with the gathered axis first; ``metas``: every rank's
    ``[dtype, shape]`` (already exchanged and checked, which is also the first sync);
    returns the pieces concatenated."""
    sizes = [int(np.prod(shape, dtype=np.int64)) for _, shape in metas]
    _write(op, arena, front.reshape(-1), max(sizes) * front.itemsize)
    rows = sum(int(shape[0]) for _, shape in metas)
    out = np.empty((rows, *front.shape[1:]), front.dtype)
    out_flat = out.reshape(-1)
    at = 0
    for p, n in enumerate(sizes):
        out_flat[at:at + n] = arena.view(p, front.dtype, n)
        at += n
    return out
