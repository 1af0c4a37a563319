"""Boxing geometry: which parts of which source pieces each destination piece needs.

Pure arithmetic on shapes, SBP codes and device lists; no tasks.  A destination piece
covers a region of the logical tensor (its split range, or everything).  From an ``S``
source it takes the overlap with every source piece and concatenates; from a ``B``
source it slices one copy (preferring its own device, then its machine); from a ``P``
source it slices its region out of every partial and adds them.  That one rule covers
B->S (slice), S->B (concat), P->B (add), P->S (add of slices) and S(i)->S(j) (all-to-all).

Everything here is linear in the number of pieces (plus the fragments a direct boxing
really has): overlaps of two splits of one axis come from a sweep over their sorted
boundaries, and the cost the SBP chooser needs is computed in closed form, without
building a plan.  A boxing whose direct form would give one task more than ``width``
inputs, or slice one source piece more than ``width`` times, goes through a tree instead
(``trees``); its cost is priced for that tree.  Where each piece lies is the rule of
``actorflow.sbp_geometry``, which run-time collectives follow too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from actorflow.plan.compiler.trees import tree_levels
from actorflow.sbp_geometry import Box, piece_box, split_axis, split_bounds

Device = tuple[int, int]  # (machine_id, device index)
Overlap = tuple[int, int, int, int]  # (source piece, destination piece, begin, end)


def valid_code(shape: tuple[int, ...], code: str, p: int) -> bool:
    """A split needs the axis to exist and to have at least one element per device."""
    axis = split_axis(code)
    return axis is None or (axis < len(shape) and shape[axis] >= p)


def sweep(a: Sequence[int], b: Sequence[int]) -> list[Overlap]:
    """Every non-empty overlap of ``[a[i], a[i+1])`` with ``[b[j], b[j+1])``, in order.

    ``a`` and ``b`` are sorted boundaries (pieces may be empty).  One pass over both
    lists: O(len(a) + len(b)), and the output has fewer than len(a) + len(b) entries.
    """
    out: list[Overlap] = []
    i = j = 0
    na, nb = len(a) - 1, len(b) - 1
    while i < na and j < nb:
        lo = a[i] if a[i] > b[j] else b[j]
        hi = a[i + 1] if a[i + 1] < b[j + 1] else b[j + 1]
        if lo < hi:
            out.append((i, j, lo, hi))
        if a[i + 1] < b[j + 1]:
            i += 1
        elif a[i + 1] > b[j + 1]:
            j += 1
        else:
            i += 1
            j += 1
    return out


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


def pick_copies(src: Sequence[Device], dst: Sequence[Device]) -> list[int]:
    """For each destination device, the B copy to read: its own device, its machine, any."""
    on_device: dict[Device, int] = {}
    on_machine: dict[int, int] = {}
    for i, d in enumerate(src):
        on_device.setdefault(d, i)
        on_machine.setdefault(d[0], i)
    p = len(src)
    return [on_device.get(d, on_machine.get(d[0], j % p)) for j, d in enumerate(dst)]


def _with_axis(whole: Box, axis: int, lo: int, hi: int) -> Box:
    box = list(whole)
    box[axis] = (lo, hi)
    return tuple(box)


def _intersect(a: Box, b: Box) -> Box | None:
    out = tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b))
    return None if any(e <= s for s, e in out) else out


def _relative(region: Box, origin: Box) -> Box:
    return tuple((s - o, e - o) for (s, e), (o, _) in zip(region, origin))


@lru_cache(maxsize=4096)
def plan_boxing(shape: tuple[int, ...], src_code: str, src: tuple[Device, ...], dst_code: str,
                dst: tuple[Device, ...]) -> tuple[Target, ...] | None:
    """One ``Target`` per destination piece (the direct boxing), or None when impossible.

    Costs O(p + q + fragments); only an all-to-all between two axes has p x q fragments,
    and the lowering builds it directly only when ``fan`` is within the tree width.
    """
    p, q = len(src), len(dst)
    whole = tuple((0, n) for n in shape)
    if dst_code == "P":
        if src_code == "P" and src == dst:
            return tuple(Target((Fragment(j, whole, True),), "none") for j in range(q))
        return None  # nothing is ever boxed into a partial sum
    wants = [piece_box(shape, dst_code, q, j) for j in range(q)]
    if src_code == "B":
        return tuple(Target((Fragment(i, want, want == whole),), "none")
                     for i, want in zip(pick_copies(src, dst), wants))
    if src_code == "P":
        combine = "add" if p > 1 else "none"
        return tuple(Target(tuple(Fragment(i, want, want == whole) for i in range(p)), combine)
                     for want in wants)
    axis = split_axis(src_code)
    assert axis is not None
    bounds = split_bounds(shape[axis], p)
    per_dst: list[list[Fragment]] = [[] for _ in range(q)]
    if split_axis(dst_code) == axis:  # same axis: a sweep over both boundary lists
        for i, j, lo, hi in sweep(bounds, split_bounds(shape[axis], q)):
            region = _with_axis(whole, axis, lo - bounds[i], hi - bounds[i])
            per_dst[j].append(Fragment(i, region, lo == bounds[i] and hi == bounds[i + 1]))
    else:  # B or another axis: every destination piece meets every source piece
        haves = [_with_axis(whole, axis, bounds[i], bounds[i + 1]) for i in range(p)
                 if bounds[i] < bounds[i + 1]]
        src_ids = [i for i in range(p) if bounds[i] < bounds[i + 1]]
        for j, want in enumerate(wants):
            for i, have in zip(src_ids, haves):
                common = _intersect(want, have)
                if common is not None:
                    per_dst[j].append(Fragment(i, _relative(common, have), common == have))
    return tuple(Target(tuple(f), "concat" if len(f) > 1 else "none", axis) for f in per_dst)


def _lens(n: int, p: int) -> list[int]:
    b = split_bounds(n, p)
    return [b[i + 1] - b[i] for i in range(p)]


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def fan(shape: tuple[int, ...], src_code: str, src: tuple[Device, ...], dst_code: str,
        dst: tuple[Device, ...]) -> tuple[int, int]:
    """(most fragments one destination piece combines, most slices cut from one source piece)
    of the direct boxing, in O(p + q)."""
    p, q = len(src), len(dst)
    if dst_code == "P":
        return (1, 0)
    b = split_axis(dst_code)
    dst_lens = [1] * q if b is None else _lens(shape[b], q)
    n_b = 1 if b is None else shape[b]
    cut = [x != n_b for x in dst_lens]  # destination pieces that are not the whole tensor
    sliced = any(cut)
    if src_code == "B":
        counts = [0] * p
        for i, c in zip(pick_copies(src, dst), cut):
            counts[i] += c
        return (1, max(counts))
    if src_code == "P":
        return (p, q if sliced else 0)
    a = split_axis(src_code)
    assert a is not None
    if b == a:
        fin, fout = [0] * q, [0] * p
        bounds = split_bounds(shape[a], p)
        for i, j, lo, hi in sweep(bounds, split_bounds(shape[a], q)):
            fin[j] += 1
            fout[i] += not (lo == bounds[i] and hi == bounds[i + 1])
        return (max(fin), max(fout))
    src_ne = sum(1 for x in _lens(shape[a], p) if x)
    dst_ne = sum(1 for x in dst_lens if x)
    return (src_ne if dst_ne else 0, dst_ne if sliced and src_ne else 0)


def box_size(box: Box) -> int:
    n = 1
    for s, e in box:
        n *= e - s
    return n


@lru_cache(maxsize=65536)
def boxing_cost(shape: tuple[int, ...], itemsize: int, src_code: str, src: tuple[Device, ...],
                dst_code: str, dst: tuple[Device, ...],
                width: int = 16) -> tuple[int, int] | None:
    """(bytes crossing devices, tasks needed) to box ``src`` into ``dst``; None: impossible.

    Closed forms in O(p + q), no plan built.  A boxing that goes through a tree (``fan``
    above ``width``) is priced as the tree: bytes every piece not already on the tree's
    root must move at least once (towards it, then out of it), and the tree's tasks.
    """
    if src_code == dst_code and src == dst:
        return (0, 0)
    if dst_code == "P":
        return None  # only P -> P on the same devices, caught above
    if max(fan(shape, src_code, src, dst_code, dst)) > width:
        return _tree_cost(shape, itemsize, src_code, src, dst_code, dst, width)
    elems = _direct_elems_tasks(shape, src_code, src, dst_code, dst)
    return (elems[0] * itemsize, elems[1])


def _dst_elems(shape: tuple[int, ...], code: str, q: int) -> list[int]:
    """Elements of each destination piece."""
    axis = split_axis(code)
    total = _prod(shape)
    if axis is None:
        return [total] * q
    rest = _prod(shape[:axis] + shape[axis + 1:])
    return [x * rest for x in _lens(shape[axis], q)]


def _direct_elems_tasks(shape: tuple[int, ...], src_code: str, src: tuple[Device, ...],
                        dst_code: str, dst: tuple[Device, ...]) -> tuple[int, int]:
    p = len(src)
    total = _prod(shape)
    want = _dst_elems(shape, dst_code, len(dst))
    if src_code == "B":
        moved = tasks = 0
        for i, d, w in zip(pick_copies(src, dst), dst, want):
            moved += w if src[i] != d else 0
            tasks += w != total
        return (moved, tasks)
    if src_code == "P":
        count: dict[Device, int] = {}
        for d in src:
            count[d] = count.get(d, 0) + 1
        moved = sum(w * (p - count.get(d, 0)) for d, w in zip(dst, want))
        tasks = sum(p for w in want if w != total) + (len(dst) if p > 1 else 0)
        return (moved, tasks)
    a = split_axis(src_code)
    assert a is not None
    b = split_axis(dst_code)
    bounds = split_bounds(shape[a], p)
    rest_a = _prod(shape[:a] + shape[a + 1:])
    if b == a:
        moved = tasks = 0
        frags = [0] * len(dst)
        for i, j, lo, hi in sweep(bounds, split_bounds(shape[a], len(dst))):
            moved += (hi - lo) * rest_a if src[i] != dst[j] else 0
            tasks += not (lo == bounds[i] and hi == bounds[i + 1])
            frags[j] += 1
        return (moved, tasks + sum(1 for f in frags if f > 1))
    # dst B, or another axis: piece j takes the part of every non-empty source piece
    # that falls in its region; the bytes already on j's device stay there
    local: dict[Device, int] = {}  # elements along axis a that live on each device
    src_ne = 0
    for i, d in enumerate(src):
        x = bounds[i + 1] - bounds[i]
        if x:
            local[d] = local.get(d, 0) + x
            src_ne += 1
    n_a = shape[a]
    moved = tasks = 0
    for d, w in zip(dst, want):
        if not w:
            continue
        moved += w * (n_a - local.get(d, 0)) // n_a
        tasks += (src_ne if w != total else 0) + (src_ne > 1)
    return (moved, tasks)


def tree_root(src_code: str, src: Sequence[Device], dst: Sequence[Device]) -> Device:
    """Where a tree boxing holds the whole tensor: the B copy nearest the first destination
    piece, else the first destination device."""
    if src_code == "B":
        return src[pick_copies(src, dst[:1])[0]]
    return dst[0]


def _tree_cost(shape: tuple[int, ...], itemsize: int, src_code: str, src: tuple[Device, ...],
               dst_code: str, dst: tuple[Device, ...], width: int) -> tuple[int, int]:
    root = tree_root(src_code, src, dst)
    moved = tasks = 0
    if src_code != "B":  # gather (S: concat) or reduce (P: add) every piece into the root
        sizes = _dst_elems(shape, src_code, len(src))  # a P piece is the whole tensor
        moved += sum(x for x, d in zip(sizes, src) if d != root)
        tasks += sum(1 for level in tree_levels([m for m, _ in src], width)
                     for g in level if len(g) > 1)
    want = _dst_elems(shape, dst_code, len(dst))  # then out of the root, by B or by slices
    moved += sum(x for x, d in zip(want, dst) if d != root)
    if split_axis(dst_code) is not None:
        tasks += sum(len(g) for level in tree_levels([m for m, _ in dst], width)
                     for g in level if len(g) > 1)
    return (moved * itemsize, tasks)
