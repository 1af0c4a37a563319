"""SBP changes of a global tensor's local parts at run time, executed as collectives.

A global tensor is a logical ``shape`` laid out on a placement's ranks by an SBP code
(``"S<axis>"``, ``"B"``, ``"P"``); each rank holds its local part.  ``rebox`` turns the
local part for one layout into the local part for another, moving only what the geometry
requires (the compiler's boxing in ``plan/compiler/boxing.py`` plans the same moves as
tasks):

    B -> S  local slice, no traffic        S -> B  all-gather
    P -> B  all-reduce                     P -> S  reduce-scatter
    S(i) -> S(j)  all-to-all               B/S -> P  keep the data on one rank / in place,
                                                     zeros elsewhere, no traffic

Between different placements the source ranks first make the tensor whole (B) among
themselves, then every destination rank receives just its region from one source rank (its
own copy when it is a source too) in one all-to-all over the union of the two placements.
Ranks outside the destination placement get ``None``.  Split pieces follow
``actorflow.sbp_geometry``, the rule the compiler's boxing uses too: piece ``i`` of ``p``
along an axis of ``n`` holds ``n // p`` elements, one more on the first ``n % p`` pieces.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from actorflow.collective.group import ProcessGroup
from actorflow.errors import UsageError
from actorflow.sbp_geometry import piece_box, split_axis, split_bounds

Layout = tuple[tuple[int, ...], str]  # (placement ranks, SBP code)


def region(shape: Sequence[int], layout: Layout, rank: int) -> tuple[slice, ...] | None:
    """The part of the logical tensor ``rank`` holds (None: not in the placement)."""
    ranks, code = layout
    if rank not in ranks:
        return None
    box = piece_box(tuple(shape), code, len(ranks), ranks.index(rank))
    return tuple(slice(b, e) for b, e in box)


def local_shape(shape: Sequence[int], layout: Layout, rank: int) -> tuple[int, ...] | None:
    box = region(shape, layout, rank)
    return None if box is None else tuple(s.stop - s.start for s in box)


def rebox(world: ProcessGroup, local: np.ndarray | None, shape: Sequence[int],
          src: Layout, dst: Layout) -> np.ndarray | None:
    """This rank's part of the tensor in layout ``dst``, from its part in layout ``src``.
    Every rank of either placement must call it (others may, and get None back)."""
    shape = tuple(int(n) for n in shape)
    for layout in (src, dst):
        _check_layout(shape, layout)
    me = world.global_rank
    if me not in src[0] and me not in dst[0]:
        return None
    if me in src[0] and local is None:
        raise UsageError(f"rank {me} is in the source placement {list(src[0])} but has no "
                         "local part")
    if src[0] == dst[0]:
        assert local is not None
        return _same_placement(world.subgroup(src[0]), local, shape, src[1], dst[1])
    return _across(world, local, shape, src, dst)


def _check_layout(shape: tuple[int, ...], layout: Layout) -> None:
    ranks, code = layout
    axis = split_axis(code)
    if code not in ("B", "P") and (axis is None or not 0 <= axis < len(shape)):
        raise UsageError(f"SBP {code!r} does not fit a tensor of shape {shape} (expected 'B', "
                         f"'P' or 'S<axis>' with axis < {len(shape)})")
    if not ranks or len(set(ranks)) != len(ranks):
        raise UsageError(f"placement ranks {list(ranks)} must be distinct and not empty")


def _same_placement(g: ProcessGroup, local: np.ndarray, shape: tuple[int, ...], src: str,
                    dst: str) -> np.ndarray:
    if src == dst:
        return local
    i, p = g.rank, g.size
    sa, da = split_axis(src), split_axis(dst)
    if dst == "P":
        out = np.zeros(shape, local.dtype)
        if src == "B":
            if i == 0:
                out[...] = local
        else:
            box = region(shape, (g.ranks, src), g.global_rank)
            assert box is not None
            out[box] = local
        return out
    if src == "B":
        box = region(shape, (g.ranks, dst), g.global_rank)
        assert box is not None
        return np.ascontiguousarray(local[box])
    if src == "P":
        return g.all_reduce(local) if dst == "B" else g.reduce_scatter(local, axis=da or 0)
    assert sa is not None
    if dst == "B":
        return g.all_gather(local, axis=sa)
    assert da is not None
    bounds = split_bounds(shape[da], p)  # S(sa) -> S(da): my block, cut along da per rank
    cut = [slice(None)] * len(shape)
    pieces = []
    for q in range(p):
        cut[da] = slice(bounds[q], bounds[q + 1])
        pieces.append(np.ascontiguousarray(local[tuple(cut)]))
    return np.concatenate(g.all_to_all(pieces), axis=sa)


def _across(world: ProcessGroup, local: np.ndarray | None, shape: tuple[int, ...],
            src: Layout, dst: Layout) -> np.ndarray | None:
    me = world.global_rank
    whole = None
    if me in src[0]:
        assert local is not None
        whole = _same_placement(world.subgroup(src[0]), local, shape, src[1], "B")
    union = tuple(sorted(set(src[0]) | set(dst[0])))
    dtype = whole.dtype if whole is not None else None
    pieces = []
    for q in union:
        if whole is not None and q in dst[0] and _source_of(q, src[0], dst[0]) == me:
            box = region(shape, (dst[0], "B" if dst[1] == "P" else dst[1]), q)
            assert box is not None
            if dst[1] == "P" and dst[0].index(q) != 0:
                pieces.append(np.zeros(0, whole.dtype))  # zeros are made on arrival
                continue
            pieces.append(np.ascontiguousarray(whole[box]))
        else:
            pieces.append(np.zeros(0, dtype or np.uint8))
    got = world.subgroup(union).all_to_all(pieces)
    if me not in dst[0]:
        return None
    mine = got[union.index(_source_of(me, src[0], dst[0]))]
    if dst[1] == "P" and dst[0].index(me) != 0:
        return np.zeros(shape, mine.dtype)
    return mine


def _source_of(q: int, src: tuple[int, ...], dst: tuple[int, ...]) -> int:
    """Which source rank sends destination rank ``q`` its region: itself if it is a source,
    else the sources in turn."""
    return q if q in src else src[dst.index(q) % len(src)]
