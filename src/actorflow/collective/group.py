"""A process group: an ordered set of ranks that run collectives together.

Every member calls the same collectives in the same order (SPMD), so each call gets the
next sequence number of the group and its messages are tagged with it.  Subgroups share
the world's mesh and need no setup (``group.subgroup([0, 2])``).  Results are new arrays;
inputs are never changed.

Algorithm choice by size: tensors up to ``small_bytes`` go directly rank to rank (one step
of latency); larger ones go through shared memory when every member is on this host
(``shared.py``), else around a ring in chunks of ``chunk_bytes`` (bandwidth-optimal).
Every wait is bounded by ``timeout`` seconds, and a member that dies or leaves fails the
collective on every other member within a fraction of a second, naming it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from actorflow.collective import direct, ring, shared
from actorflow.collective.channel import Channel
from actorflow.collective.reduce_ops import reduce_op
from actorflow.errors import CollectiveError, UsageError

DEFAULT_TIMEOUT = float(os.environ.get("ACTORFLOW_COLLECTIVE_TIMEOUT", "120"))
# "0" keeps one-host groups on the socket ring (to compare the two, or to rule shm out)
SHARED_MEMORY = os.environ.get("ACTORFLOW_COLLECTIVE_SHM", "1") != "0"
SMALL_BYTES = 64 * 1024
CHUNK_BYTES = 1 << 20


class Op:
    """One collective call in flight: its tag, deadline and name for errors."""

    def __init__(self, group: ProcessGroup, name: str, seq: int) -> None:
        self.group = group
        self.seq = seq
        self.tag = f"{group.gid}:{name}"  # a rank that called something else is told so
        self.what = f"{name} #{seq} of group {list(group.ranks)}"
        self.deadline = time.monotonic() + group.timeout
        self.small_bytes = group.small_bytes
        self._chunk_bytes = group.chunk_bytes

    def chunk_elems(self, itemsize: int) -> int:
        return max(1, self._chunk_bytes // itemsize)

    def send(self, peer: int, part: int, frames: Sequence[Any] = (), meta: Any = None) -> None:
        g = self.group
        g.channel.send(g.ranks[peer], (self.tag, self.seq, part), frames, meta)

    def recv(self, peer: int, part: int) -> tuple[Any, list]:
        g = self.group
        return g.channel.recv(g.ranks[peer], (self.tag, self.seq, part), watch=g.ranks,
                              deadline=self.deadline, what=self.what)


class ProcessGroup:
    """Collectives among ``ranks`` (global ranks; group rank = position in the list)."""

    def __init__(self, channel: Channel, ranks: Sequence[int], *,
                 timeout: float = DEFAULT_TIMEOUT, small_bytes: int = SMALL_BYTES,
                 chunk_bytes: int = CHUNK_BYTES, shared_memory: bool | None = None) -> None:
        self.channel = channel
        self.ranks = tuple(int(r) for r in ranks)
        if len(set(self.ranks)) != len(self.ranks):
            raise UsageError(f"process group ranks {list(self.ranks)} repeat a rank")
        if channel.rank not in self.ranks:
            raise UsageError(f"rank {channel.rank} is not in the process group "
                             f"{list(self.ranks)}")
        self.global_rank = channel.rank
        self.rank = self.ranks.index(channel.rank)
        self.size = len(self.ranks)
        self.gid = ",".join(map(str, self.ranks))
        self.timeout = timeout
        self.small_bytes = small_bytes
        self.chunk_bytes = max(1, chunk_bytes)
        self._seq = 0
        self._subgroups: dict[tuple[int, ...], ProcessGroup] = {}
        self._want_shm = SHARED_MEMORY if shared_memory is None else shared_memory
        self.shared = self._want_shm and self.size > 1 and channel.mesh.same_host(self.ranks)
        # segment names: this run (rank 0's inbox address) and this group, alike everywhere
        run = channel.mesh.addresses.get(self.ranks[0], "").rpartition(":")[2]
        self._arena = shared.Arena(f"{run}-{self.gid.replace(',', '_')}")

    def __repr__(self) -> str:
        return f"ProcessGroup(ranks={list(self.ranks)}, rank={self.rank})"

    def subgroup(self, ranks: Sequence[int]) -> ProcessGroup:
        """The group of ``ranks`` (global ranks, this rank among them) on the same mesh."""
        key = tuple(int(r) for r in ranks)
        if key == self.ranks:
            return self
        g = self._subgroups.get(key)
        if g is None:
            g = ProcessGroup(self.channel, key, timeout=self.timeout,
                             small_bytes=self.small_bytes, chunk_bytes=self.chunk_bytes,
                             shared_memory=self._want_shm)
            self._subgroups[key] = g
        return g

    # -- collectives -----------------------------------------------------------------------
    def all_reduce(self, x: np.ndarray, op: str = "sum", *,
                   out: np.ndarray | None = None) -> np.ndarray:
        """The element-wise reduction of every member's ``x`` (same shape and dtype).

        ``out`` (C-contiguous, ``x``'s shape and dtype; may be ``x`` itself, like torch's
        in-place all-reduce) receives the result instead of a new array."""
        ufunc = reduce_op(op)
        x = _contiguous(x)
        if out is not None and (out.shape != x.shape or out.dtype != x.dtype
                                or not out.flags.c_contiguous or not out.flags.writeable):
            raise UsageError(f"all_reduce: out must be a writeable C-contiguous {x.shape} "
                             f"{x.dtype} array, got {out.shape} {out.dtype}")
        small = x.nbytes <= self.small_bytes or x.size < self.size
        algo = "direct" if small else "shm" if self.shared else "ring"
        call = self._op(f"all_reduce[{algo}]")  # sizes that disagree fail by name, not wait
        if self.size == 1 or small:
            res = x if self.size == 1 else direct.all_reduce(call, x, ufunc)
            if out is None:
                return res.copy() if res is x else res
            out[...] = res
            return out
        segs = ring.even_segments(x.size, self.size)
        if self.shared:
            return shared.all_reduce(call, self._arena, x, ufunc, segs, out)
        if out is None:
            out = x.copy()
        elif out is not x:
            out[...] = x
        flat = out.reshape(-1)
        ring.reduce_scatter(call, flat, segs, ufunc)
        ring.all_gather(call, flat, segs)
        return out

    def reduce_scatter(self, x: np.ndarray, op: str = "sum", axis: int = 0) -> np.ndarray:
        """This rank's part along ``axis`` (boxing's split rule) of the reduction of all ``x``."""
        ufunc = reduce_op(op)
        x = np.asarray(x)
        axis = _axis(x, axis, "reduce_scatter")
        small = x.nbytes <= self.small_bytes
        algo = "direct" if small else "shm" if self.shared else "ring"
        call = self._op(f"reduce_scatter[{algo}]")
        bounds = ring.even_segments(x.shape[axis], self.size)
        if self.size == 1:
            return x.copy()
        front = np.moveaxis(x, axis, 0)
        # the ring reduces in place, so it gets a copy; the other paths only read x
        front = front.copy() if not (self.shared or small) else np.ascontiguousarray(front)
        row = int(np.prod(front.shape[1:], dtype=np.int64))
        if self.shared and not small:
            rows = shared.reduce_scatter(call, self._arena, front, ufunc,
                                         [(a * row, b * row) for a, b in bounds])
            a, b = bounds[self.rank]
            mine = rows.reshape((b - a, *front.shape[1:]))
        elif small:
            pieces = [front[a:b] for a, b in bounds]
            got = direct.all_to_all(call, pieces)
            want = pieces[self.rank]
            for p, other in enumerate(got):
                if other.shape != want.shape or other.dtype != want.dtype:
                    raise CollectiveError(  # numpy would broadcast (1, k) into (m, k)
                        f"{call.what}: rank {self.ranks[p]} sent {other.shape} {other.dtype} "
                        f"for rank {self.global_rank}'s part, which is {want.shape} "
                        f"{want.dtype}: the ranks called it with different tensors")
            mine = got[0].copy()
            for other in got[1:]:
                ufunc(mine, other, out=mine)
        else:
            flat = front.reshape(-1)
            ring.reduce_scatter(call, flat, [(a * row, b * row) for a, b in bounds], ufunc)
            a, b = bounds[self.rank]
            mine = front[a:b]
        return np.ascontiguousarray(np.moveaxis(mine, 0, axis))

    def all_gather(self, x: np.ndarray, axis: int = 0) -> np.ndarray:
        """Every member's ``x`` concatenated along ``axis`` in rank order (sizes may differ
        along ``axis``; the other dimensions and the dtype must agree)."""
        x = np.asarray(x)
        axis = _axis(x, axis, "all_gather")
        call = self._op("all_gather")
        if self.size == 1:
            return x.copy()
        front = np.ascontiguousarray(np.moveaxis(x, axis, 0))
        metas = direct.exchange_metas(call, front)
        for p, (dt, shape) in enumerate(metas):
            if dt != x.dtype.str or list(shape[1:]) != list(front.shape[1:]):
                raise CollectiveError(
                    f"{call.what}: rank {self.ranks[p]} has dtype {dt} shape {shape} (axis "
                    f"{axis} first), rank {self.global_rank} has {x.dtype.str} "
                    f"{list(front.shape)}: only the size along axis {axis} may differ")
        rows = [int(m[1][0]) for m in metas]
        if self.shared and sum(rows) * x.itemsize * int(np.prod(front.shape[1:])) > \
                self.small_bytes:  # the same choice on every rank: from everyone's sizes
            out = shared.all_gather(call, self._arena, front, metas)
            return np.ascontiguousarray(np.moveaxis(out, 0, axis))
        out = np.empty((sum(rows), *front.shape[1:]), x.dtype)
        row = int(np.prod(front.shape[1:], dtype=np.int64))
        starts = np.cumsum([0, *rows])
        segs = [(int(starts[p]) * row, int(starts[p + 1]) * row) for p in range(self.size)]
        flat = out.reshape(-1)
        a, b = segs[self.rank]
        flat[a:b] = front.reshape(-1)
        ring.all_gather(call, flat, segs)
        return np.ascontiguousarray(np.moveaxis(out, 0, axis))

    def all_to_all(self, pieces: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Send ``pieces[j]`` to member ``j``; returns what each member sent to this one."""
        if len(pieces) != self.size:
            raise UsageError(f"all_to_all: {len(pieces)} pieces for a group of {self.size}")
        call = self._op("all_to_all")
        return direct.all_to_all(call, [np.asarray(p) for p in pieces])

    def broadcast(self, x: np.ndarray | None, root: int = 0) -> np.ndarray:
        """The root member's ``x`` on every member (others may pass None)."""
        if not 0 <= root < self.size:
            raise UsageError(f"broadcast: root {root} out of range for a group of {self.size}")
        call = self._op("broadcast")
        if self.size == 1:
            if x is None:
                raise UsageError("broadcast: the root passed no tensor")
            return np.array(x, copy=True)
        return direct.broadcast(call, x, root)

    def exchange(self, payload: Any) -> list[Any]:
        """Every member's small msgpack-able ``payload``, by group rank."""
        call = self._op("exchange")
        return [payload] if self.size == 1 else direct.exchange(call, payload)

    def barrier(self) -> None:
        """Return once every member has entered the barrier."""
        call = self._op("barrier")
        if self.size > 1:
            direct.barrier(call)

    def close(self) -> None:
        """Unmap the shared buffers of this group and its subgroups."""
        for g in self._subgroups.values():
            g.close()
        self._arena.close()

    def _op(self, name: str) -> Op:
        self._seq += 1
        return Op(self, name, self._seq)


def _contiguous(x: np.ndarray) -> np.ndarray:
    """``x`` as a C-contiguous array of the same shape (0-d stays 0-d, unlike numpy's)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy()


def _axis(x: np.ndarray, axis: int, what: str) -> int:
    if not -x.ndim <= axis < x.ndim:
        raise UsageError(f"{what}: axis {axis} out of range for a tensor of shape {x.shape}")
    return axis % x.ndim
