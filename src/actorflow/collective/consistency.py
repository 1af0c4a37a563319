"""The data-consistency check of seed 003: do all ranks mean the same global tensor?

Every rank of a placement runs the same script, so a tensor built from data (not from a
random generator) should have the same meta — shape, dtype, placement, SBP — everywhere,
and a broadcast tensor the same data.  The ranks form a ring; each sends its meta (and,
when asked, its data) to the next and compares what arrives from the previous one.  Then
every rank learns every verdict, so all of them raise the same ``ConsistencyError``, which
names each pair of neighbours that disagree and how (the field and both values, or where
the data first differs and by how much).  Data is equal when dtype, shape and every byte
are: a NaN equals a NaN with the same bits, and -0.0 is not 0.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from actorflow.collective.direct import array_meta, exchange, from_frame
from actorflow.errors import CollectiveError, ConsistencyError

if TYPE_CHECKING:
    from actorflow.collective.group import ProcessGroup

META_PART, DATA_PART, VERDICT_PART = 1, 2, 3


def check_consistent(group: ProcessGroup, meta: Mapping[str, Any],
                     data: np.ndarray | None = None, what: str = "tensor") -> None:
    """Raise ``ConsistencyError`` on every rank unless all ranks passed equal ``meta``
    (msgpack-able values) and, if given, equal ``data``."""
    if group.size == 1:
        return
    op = group._op(f"consistency check of {what}")
    n, r = group.size, group.rank
    right, left = (r + 1) % n, (r - 1) % n
    mine = {k: _plain(v) for k, v in meta.items()}
    op.send(right, META_PART, (), mine)
    if data is not None:
        data = np.asarray(data)  # (the codec sends a strided array contiguous)
        op.send(right, DATA_PART, [data] if data.size else [], array_meta(data))
    theirs, _ = op.recv(left, META_PART)
    if not isinstance(theirs, dict):
        raise CollectiveError(f"{op.what}: rank {group.ranks[left]} sent {theirs!r:.60} where "
                              "its meta (a map) is due")
    problems = [f"{k}: {theirs.get(k)!r} on rank {group.ranks[left]} but {mine.get(k)!r} on "
                f"rank {group.global_rank}"
                for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]
    if data is not None:
        dmeta, frames = op.recv(left, DATA_PART)
        problems += _compare(from_frame(dmeta, frames, op.what), data, group.ranks[left],
                             group.global_rank)
    verdicts = exchange(op, problems, part=VERDICT_PART)
    for rank, v in zip(group.ranks, verdicts):
        if not (isinstance(v, list) and all(isinstance(p, str) for p in v)):
            raise CollectiveError(f"{op.what}: rank {rank} sent {v!r:.60} where its verdict "
                                  "(a list of problems) is due")
    found = [p for v in verdicts for p in v]
    if found:
        raise ConsistencyError(f"ranks disagree on {what}: " + "; ".join(found))


def _compare(left: np.ndarray, mine: np.ndarray, lrank: int, rank: int) -> list[str]:
    """Equal means the same dtype, shape and bytes: NaN equals NaN of the same bits, -0.0
    differs from 0.0 (what a tensor built from the data would hold, bit for bit)."""
    if left.shape != mine.shape or left.dtype != mine.dtype:
        return [f"data: {left.shape} {left.dtype} on rank {lrank} but {mine.shape} "
                f"{mine.dtype} on rank {rank}"]
    differ = np.flatnonzero(_element_bytes(left) != _element_bytes(mine))
    if not differ.size:
        return []
    i = np.unravel_index(int(differ[0]), mine.shape) if mine.ndim else ()
    return [f"data: {differ.size} of {mine.size} elements differ (bitwise) between rank "
            f"{lrank} and rank {rank}, first at index {tuple(int(k) for k in i)} "
            f"({_show(left[i], mine[i])}), max |difference| "
            f"{_max_gap(left.reshape(-1)[differ], mine.reshape(-1)[differ])}"]


def _element_bytes(a: np.ndarray) -> np.ndarray:
    """One row of raw bytes per element (row-major), comparable with ``!=``."""
    flat = np.ascontiguousarray(a).reshape(-1)
    rows = flat.view(np.uint8).reshape(flat.size, a.dtype.itemsize)
    return rows.view([("", np.uint8, (a.dtype.itemsize,))]).reshape(flat.size)


def _show(a: np.generic, b: np.generic) -> str:
    """``a vs b``; with their bits when the values compare or print alike (-0.0 and 0.0,
    NaNs)."""
    x, y = a.item(), b.item()
    if repr(x) != repr(y) and x != y:
        return f"{x!r} vs {y!r}"
    return f"{x!r} (0x{a.tobytes()[::-1].hex()}) vs {y!r} (0x{b.tobytes()[::-1].hex()})"


def _max_gap(left: np.ndarray, mine: np.ndarray) -> str:
    """The largest |difference| of the differing elements, NaNs aside (``nan`` if none)."""
    wide = np.complex128 if np.iscomplexobj(mine) else np.float64
    gaps = np.abs(left.astype(wide) - mine.astype(wide))
    gaps = gaps[~np.isnan(gaps)]
    return f"{gaps.max():g}" if gaps.size else "nan"


def _plain(v: Any) -> Any:
    """Tuples as lists, so a value compares equal after a msgpack round trip."""
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, np.dtype):
        return v.str
    return v
