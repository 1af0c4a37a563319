"""Ring reduce-scatter and all-gather on a flat buffer, chunked and pipelined.

The buffer is cut into one segment per rank.  Reduce-scatter runs ``N-1`` steps: at step
``t`` rank ``r`` receives segment ``r-t-2`` from its left neighbour chunk by chunk, reduces
each chunk into its own copy and sends it on to the right at once, so every link carries
data while the next chunk is being added.  Afterwards rank ``r`` holds the reduction of
segment ``r``.  All-gather then passes the final segments around the ring, forwarding each
received frame untouched.  Each rank sends and receives ``2(N-1)/N`` of the buffer in
total, the bandwidth-optimal amount for an all-reduce.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from actorflow.errors import CollectiveError
from actorflow.sbp_geometry import split_bounds

if TYPE_CHECKING:
    from actorflow.collective.group import Op

Segment = tuple[int, int]  # [begin, end) in elements of the flat buffer


def even_segments(n: int, parts: int) -> list[Segment]:
    """``parts`` contiguous segments of ``n`` elements, the same split rule as boxing
    (``sbp_geometry``: extra elements to the first segments)."""
    b = split_bounds(n, parts)
    return [(b[i], b[i + 1]) for i in range(parts)]


def chunks(seg: Segment, chunk_elems: int) -> list[Segment]:
    a, b = seg
    return [(s, min(b, s + chunk_elems)) for s in range(a, b, chunk_elems)]


def part(phase: int, step: int, chunk: int) -> int:
    return (phase << 48) | (step << 24) | chunk


def _check(op: Op, src: int, meta: Any, want: list) -> None:
    if not isinstance(meta, list) or meta != want:
        raise CollectiveError(
            f"{op.what}: rank {op.group.ranks[src]} sent {meta} (dtype, elements) but rank "
            f"{op.group.global_rank} has {want}: the ranks called it with different tensors")


def chunk_of(op: Op, src: int, frames: list, dtype: np.dtype, elems: int) -> np.ndarray:
    """The one frame of a chunk as ``elems`` items of ``dtype``, or an error naming the
    sender (a chunk of another size would be added to the wrong elements)."""
    have = len(frames[0].buffer) if len(frames) == 1 else -1
    if have != elems * dtype.itemsize:
        raise CollectiveError(
            f"{op.what}: rank {op.group.ranks[src]} sent a chunk of {len(frames)} frames and "
            f"{max(have, 0)} bytes where rank {op.group.global_rank} expects one frame of "
            f"{elems} x {dtype} ({elems * dtype.itemsize} bytes)")
    return np.frombuffer(frames[0].buffer, dtype=dtype)


def reduce_scatter(op: Op, flat: np.ndarray, segs: list[Segment], ufunc: np.ufunc) -> None:
    """In place: afterwards ``flat[segs[r]]`` holds the reduction over all ranks."""
    g = op.group
    n, r = g.size, g.rank
    right, left = (r + 1) % n, (r - 1) % n
    ce = op.chunk_elems(flat.itemsize)
    meta = [flat.dtype.str, int(flat.size)]
    for c, (a, b) in enumerate(chunks(segs[(r - 1) % n], ce)):
        op.send(right, part(0, 0, c), [flat[a:b]], meta)
    for t in range(n - 1):
        for c, (a, b) in enumerate(chunks(segs[(r - t - 2) % n], ce)):
            got, frames = op.recv(left, part(0, t, c))
            _check(op, left, got, meta)
            dst = flat[a:b]
            ufunc(dst, chunk_of(op, left, frames, flat.dtype, b - a), out=dst)
            if t < n - 2:
                op.send(right, part(0, t + 1, c), [dst], meta)


def all_gather(op: Op, flat: np.ndarray, segs: list[Segment]) -> None:
    """In place: rank ``r`` provides ``flat[segs[r]]``; afterwards every segment is filled."""
    g = op.group
    n, r = g.size, g.rank
    right, left = (r + 1) % n, (r - 1) % n
    ce = op.chunk_elems(flat.itemsize)
    meta = [flat.dtype.str, int(flat.size)]
    for c, (a, b) in enumerate(chunks(segs[r], ce)):
        op.send(right, part(1, 0, c), [flat[a:b]], meta)
    for t in range(n - 1):
        for c, (a, b) in enumerate(chunks(segs[(r - t - 1) % n], ce)):
            got, frames = op.recv(left, part(1, t, c))
            _check(op, left, got, meta)
            flat[a:b] = chunk_of(op, left, frames, flat.dtype, b - a)
            if t < n - 2:
                op.send(right, part(1, t + 1, c), frames, meta)  # forwarded as received
