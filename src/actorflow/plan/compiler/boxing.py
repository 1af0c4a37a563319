"""Boxing geometry: which parts of which source pieces each destination piece needs.

Pure arithmetic on shapes, SBP codes and device lists; no tasks.  A destination piece
covers a region of the logical tensor (its split range, or everything).  From an ``S``
source it takes the overlap with every source piece and concatenates; from a ``B``
source it slices one copy (preferring its own device, then its machine); from a ``P``
source it slices its region out of every partial and adds them.  That one rule covers
B->S (slice), S->B (concat), P->B (add), P->S (add of slices) and S(i)->S(j) (all-to-all).
The cost of a boxing is the bytes that cross devices, then the number of tasks it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

Box = tuple[tuple[int, int], ...]  # (begin, end) per axis
Device = tuple[int, int]  # (machine_id, device index)


def split_axis(code: str) -> int | None:
    return int(code[1:]) if code[0] == "S" else None


def piece_box(shape: tuple[int, ...], code: str, p: int, i: int) -> Box:
    """The region of the logical tensor that piece ``i`` of ``p`` holds (all of it for B/P)."""
    box = [(0, n) for n in shape]
    axis = split_axis(code)
    if axis is not None:
        n = shape[axis]
        box[axis] = (n * i // p, n * (i + 1) // p)
    return tuple(box)


def valid_code(shape: tuple[int, ...], code: str, p: int) -> bool:
    """A split needs the axis to exist and to have at least one element per device."""
    axis = split_axis(code)
    return axis is None or (axis < len(shape) and shape[axis] >= p)


@dataclass(frozen=True)
class Fragment:
    src: int  # index of the source piece
    region: Box  # relative to that source piece
    full: bool  # the whole source piece: no slice needed


@dataclass(frozen=True)
class Target:
    """How one destination piece is made: its fragments and how they combine."""

    fragments: tuple[Fragment, ...]
    combine: str  # "none" | "concat" | "add"
    axis: int = 0


def _intersect(a: Box, b: Box) -> Box | None:
    out = tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b))
    return None if any(e <= s for s, e in out) else out


def _relative(region: Box, origin: Box) -> Box:
    return tuple((s - o, e - o) for (s, e), (o, _) in zip(region, origin))


def _pick_copy(src: tuple[Device, ...], dst: Device, j: int) -> int:
    if dst in src:
        return src.index(dst)
    for i, d in enumerate(src):
        if d[0] == dst[0]:
            return i
    return j % len(src)


@lru_cache(maxsize=65536)
def plan_boxing(shape: tuple[int, ...], src_code: str, src: tuple[Device, ...], dst_code: str,
                dst: tuple[Device, ...]) -> tuple[Target, ...] | None:
    """One ``Target`` per destination piece, or None when no boxing can make ``dst_code``."""
    p, q = len(src), len(dst)
    if dst_code == "P":
        if src_code == "P" and src == dst:
            return tuple(Target((Fragment(j, piece_box(shape, "B", p, j), True),), "none")
                         for j in range(q))
        return None  # nothing is ever boxed into a partial sum
    src_boxes = [piece_box(shape, src_code, p, i) for i in range(p)]
    targets = []
    for j in range(q):
        want = piece_box(shape, dst_code, q, j)
        if src_code == "B":
            i = _pick_copy(src, dst[j], j)
            targets.append(Target((Fragment(i, want, want == src_boxes[i]),), "none"))
        elif src_code == "P":
            added = tuple(Fragment(i, want, want == src_boxes[i]) for i in range(p))
            targets.append(Target(added, "add" if p > 1 else "none"))
        else:
            parts = []
            for i, have in enumerate(src_boxes):
                common = _intersect(want, have)
                if common is not None:
                    parts.append(Fragment(i, _relative(common, have), common == have))
            axis = split_axis(src_code)
            targets.append(Target(tuple(parts), "concat" if len(parts) > 1 else "none",
                                  axis or 0))
    return tuple(targets)


def box_size(box: Box) -> int:
    n = 1
    for s, e in box:
        n *= e - s
    return n


@lru_cache(maxsize=65536)
def boxing_cost(shape: tuple[int, ...], itemsize: int, src_code: str, src: tuple[Device, ...],
                dst_code: str, dst: tuple[Device, ...]) -> tuple[int, int] | None:
    """(bytes crossing devices, tasks needed) to box ``src`` into ``dst``; None: impossible."""
    if src_code == dst_code and src == dst:
        return (0, 0)
    targets = plan_boxing(shape, src_code, src, dst_code, dst)
    if targets is None:
        return None
    moved = tasks = 0
    for j, t in enumerate(targets):
        for f in t.fragments:
            if src[f.src] != dst[j]:
                moved += box_size(f.region) * itemsize
            tasks += not f.full
        tasks += t.combine != "none"
    return (moved, tasks)
