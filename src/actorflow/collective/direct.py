"""Collectives where every rank talks to every other rank directly (one step).

Best for small tensors, where a ring's ``N-1`` steps of latency cost more than the bytes:
all-reduce of a small tensor (every rank reduces all copies in rank order, so every rank
gets bit-identical results), all-to-all, broadcast from a root, barrier, and the small
meta exchanges other collectives need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from actorflow.collective.ring import chunk_of, chunks
from actorflow.errors import CollectiveError

if TYPE_CHECKING:
    from actorflow.collective.group import Op


def array_meta(a: np.ndarray) -> list:
    return [a.dtype.str, list(a.shape)]


def parse_meta(meta: Any, what: str) -> tuple[np.dtype, tuple[int, ...]]:
    """``[dtype, shape]`` of a received array, checked: a numeric dtype, sizes >= 0."""
    try:
        dtype, shape = np.dtype(meta[0]), tuple(int(s) for s in meta[1])
    except (TypeError, ValueError, IndexError, KeyError, SyntaxError) as e:
        raise CollectiveError(f"{what}: received a malformed array {meta!r:.80}") from e
    if dtype.kind not in "biufc" or any(s < 0 for s in shape):
        raise CollectiveError(f"{what}: received a malformed array {meta!r:.80}")
    return dtype, shape


def from_frame(meta: Any, frames: list, what: str) -> np.ndarray:
    """A received array (a view on the frame's memory: copy before keeping it long)."""
    dtype, shape = parse_meta(meta, what)
    try:
        arr = np.frombuffer(frames[0].buffer, dtype=dtype) if frames else np.empty(0, dtype)
        return arr.reshape(shape)
    except (TypeError, ValueError, IndexError) as e:
        raise CollectiveError(f"{what}: received a malformed array {meta!r:.80}") from e


def exchange(op: Op, payload: Any, part: int = 0) -> list[Any]:
    """Every rank's small msgpack-able ``payload``, by group rank (``part`` tells several
    exchanges of one operation apart)."""
    g = op.group
    for p in range(g.size):
        if p != g.rank:
            op.send(p, part, (), payload)
    return [payload if p == g.rank else op.recv(p, part)[0] for p in range(g.size)]


def exchange_metas(op: Op, x: np.ndarray, part: int = 0) -> list[list]:
    """Every rank's ``[dtype, shape]`` of ``x``, each checked to be one (a rank that sent
    anything else is named, before any caller unpacks it)."""
    metas = exchange(op, [x.dtype.str, list(x.shape)], part)
    for p, m in enumerate(metas):
        if not (isinstance(m, list) and len(m) == 2 and isinstance(m[0], str)
                and isinstance(m[1], list) and len(m[1]) == x.ndim
                and all(isinstance(s, int) and s >= 0 for s in m[1])):
            raise CollectiveError(f"{op.what}: rank {op.group.ranks[p]} sent {m!r:.80} where "
                                  f"a [dtype, shape] of {x.ndim} dims is due")
    return metas


def all_reduce(op: Op, x: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
    g = op.group
    for p in range(g.size):
        if p != g.rank:
            op.send(p, 0, [x], array_meta(x))
    parts = []
    for p in range(g.size):
        if p == g.rank:
            parts.append(x)
            continue
        meta, frames = op.recv(p, 0)
        got = from_frame(meta, frames, op.what)
        if got.shape != x.shape or got.dtype != x.dtype:
            raise CollectiveError(f"{op.what}: rank {g.ranks[p]} has {got.shape} {got.dtype}, "
                                  f"rank {g.global_rank} has {x.shape} {x.dtype}")
        parts.append(got)
    acc = parts[0].copy()
    for other in parts[1:]:
        ufunc(acc, other, out=acc)
    return acc


def all_to_all(op: Op, pieces: list[np.ndarray]) -> list[np.ndarray]:
    g = op.group
    for p in range(g.size):
        if p != g.rank:
            piece = pieces[p] if pieces[p].flags.c_contiguous else pieces[p].copy()
            op.send(p, 0, [piece] if piece.size else [], array_meta(piece))
    out = []
    for p in range(g.size):
        if p == g.rank:
            out.append(np.array(pieces[p], copy=True))
        else:
            meta, frames = op.recv(p, 0)
            out.append(from_frame(meta, frames, op.what).copy())
    return out


def broadcast(op: Op, x: np.ndarray | None, root: int) -> np.ndarray:
    """A pipelined chain from the root: each rank forwards chunks to its right as they come.

    The receivers learn dtype and shape from the first chunk's meta, so only the root
    needs the tensor.
    """
    g = op.group
    n, r = g.size, g.rank
    right, left = (r + 1) % n, (r - 1) % n
    if r == root:
        if x is None:
            raise CollectiveError(f"{op.what}: the root (rank {g.global_rank}) passed no tensor")
        x = np.asarray(x)
        x = x if x.flags.c_contiguous else x.copy()
        flat, meta = x.reshape(-1), array_meta(x)
        pieces = chunks((0, flat.size), op.chunk_elems(x.itemsize)) or [(0, 0)]
        for c, (a, b) in enumerate(pieces):
            op.send(right, c, [flat[a:b]] if b > a else [], meta)
        return x.copy()
    meta, frames = op.recv(left, 0)
    head = from_frame(meta, frames, op.what) if not frames else None
    if head is not None:  # an empty tensor: one message without data
        if right != root:
            op.send(right, 0, [], meta)
        return head.copy()
    dtype, shape = parse_meta(meta, op.what)
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    for c, (a, b) in enumerate(chunks((0, flat.size), op.chunk_elems(dtype.itemsize))):
        if c:
            meta, frames = op.recv(left, c)
        flat[a:b] = chunk_of(op, left, frames, dtype, b - a)
        if right != root:
            op.send(right, c, frames, meta)
    return out


def barrier(op: Op) -> None:
    exchange(op, None)
