"""Boxing geometry against brute force: the sweep, the direct plan, its closed-form cost and
fan, and the trees.

The references here are the quadratic algorithms the compiler used to run: intersect every
source piece with every destination piece.  Hypothesis draws uneven splits (sizes that do
not divide, arbitrary sorted boundaries with empty pieces), devices shared between pieces
and across machines, and every SBP pair.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actorflow.plan.compiler.boxing import (
    box_size,
    boxing_cost,
    fan,
    piece_box,
    plan_boxing,
    split_axis,
    sweep,
)
from actorflow.plan.compiler.trees import leaves_of, relay_parent, tree_levels


def brute_overlaps(a: list[int], b: list[int]) -> list[tuple[int, int, int, int]]:
    out = []
    for i in range(len(a) - 1):
        for j in range(len(b) - 1):
            lo, hi = max(a[i], b[j]), min(a[i + 1], b[j + 1])
            if lo < hi:
                out.append((i, j, lo, hi))
    return out


bounds = st.lists(st.integers(0, 40), min_size=1, max_size=12).map(sorted)


@settings(max_examples=300, deadline=None)
@given(bounds, bounds)
def test_sweep_finds_exactly_the_overlaps_brute_force_finds(a, b):
    got = sweep(a, b)
    assert sorted(got, key=lambda x: (x[0], x[1])) == brute_overlaps(a, b)
    assert len(got) <= len(a) + len(b)  # linear: never the product


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 50), st.integers(1, 12), st.integers(1, 12))
def test_sweep_of_uneven_splits_tiles_the_axis(n, p, q):
    a = [n * i // p for i in range(p + 1)]
    b = [n * j // q for j in range(q + 1)]
    got = sweep(a, b)
    assert got == brute_overlaps(a, b)
    assert sum(hi - lo for _, _, lo, hi in got) == n  # every element exactly once


# -- the direct plan and its cost ---------------------------------------------------------

def _intersect(a, b):
    out = tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b))
    return None if any(e <= s for s, e in out) else out


def _pick(src, dst, j):
    if dst in src:
        return src.index(dst)
    for i, d in enumerate(src):
        if d[0] == dst[0]:
            return i
    return j % len(src)


def brute_plan(shape, src_code, src, dst_code, dst):
    """The old all-pairs plan: per destination, (source, relative region, full), combine."""
    p, q = len(src), len(dst)
    if dst_code == "P":
        return None if not (src_code == "P" and src == dst) else "identity"
    src_boxes = [piece_box(shape, src_code, p, i) for i in range(p)]
    out = []
    for j in range(q):
        want = piece_box(shape, dst_code, q, j)
        if src_code == "B":
            i = _pick(src, dst[j], j)
            out.append(([(i, want, want == src_boxes[i])], "none"))
        elif src_code == "P":
            out.append(([(i, want, want == src_boxes[i]) for i in range(p)],
                        "add" if p > 1 else "none"))
        else:
            frags = []
            for i, have in enumerate(src_boxes):
                c = _intersect(want, have)
                if c is not None:
                    rel = tuple((s - o, e - o) for (s, e), (o, _) in zip(c, have))
                    frags.append((i, rel, c == have))
            out.append((frags, "concat" if len(frags) > 1 else "none"))
    return out


def brute_cost(shape, itemsize, src_code, src, dst_code, dst):
    if src_code == dst_code and src == dst:
        return (0, 0)
    plan = brute_plan(shape, src_code, src, dst_code, dst)
    if plan is None or plan == "identity":
        return None if plan is None else (0, 0)
    moved = tasks = 0
    for j, (frags, combine) in enumerate(plan):
        for i, region, full in frags:
            if src[i] != dst[j]:
                moved += box_size(region) * itemsize
            tasks += not full
        tasks += combine != "none"
    return (moved, tasks)


@st.composite
def boxings(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(ndim))
    machines = draw(st.integers(1, 4))
    dpm = draw(st.integers(1, 3))
    devices = st.tuples(st.integers(0, machines - 1), st.integers(0, dpm - 1))

    def layout():
        devs = tuple(draw(st.lists(devices, min_size=1, max_size=8)))
        codes = ["B", "P"] + [f"S{a}" for a in range(ndim) if shape[a] >= len(devs)]
        return draw(st.sampled_from(codes)), devs

    (sc, src), (dc, dst) = layout(), layout()
    return shape, sc, src, dc, dst


@settings(max_examples=400, deadline=None)
@given(boxings())
def test_direct_plan_equals_the_all_pairs_plan(case):
    shape, sc, src, dc, dst = case
    want = brute_plan(shape, sc, src, dc, dst)
    got = plan_boxing(shape, sc, src, dc, dst)
    if want is None:
        assert got is None
        return
    if want == "identity":
        assert got is not None and all(t.combine == "none" and t.fragments[0].full for t in got)
        return
    assert got is not None
    assert [([(f.src, f.region, f.full) for f in t.fragments], t.combine) for t in got] == want
    for t in got:
        if t.combine == "concat":
            assert t.axis == split_axis(sc)


@settings(max_examples=400, deadline=None)
@given(boxings(), st.sampled_from([1, 4]))
def test_closed_form_cost_equals_the_cost_of_the_built_plan(case, itemsize):
    shape, sc, src, dc, dst = case
    got = boxing_cost.__wrapped__(shape, itemsize, sc, src, dc, dst, width=1000)
    assert got == brute_cost(shape, itemsize, sc, src, dc, dst)


@settings(max_examples=300, deadline=None)
@given(boxings())
def test_fan_counts_inputs_and_slices_of_the_built_plan(case):
    shape, sc, src, dc, dst = case
    plan = brute_plan(shape, sc, src, dc, dst)
    if plan is None or plan == "identity":
        return
    fin = max(len(frags) for frags, _ in plan)
    slices: dict[int, int] = {}
    for frags, _ in plan:
        for i, _region, full in frags:
            slices[i] = slices.get(i, 0) + (not full)
    assert fan(shape, sc, src, dc, dst) == (fin, max(slices.values(), default=0))


# -- trees --------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=200).map(sorted),
       st.integers(2, 9))
def test_tree_levels_group_consecutive_items_with_bounded_width(machines, width):
    levels = tree_levels(machines, width)
    n = len(machines)
    assert len(levels[-1]) == 1  # one root
    items = n
    for level in levels:
        flat = [k for g in level for k in g]
        assert flat == list(range(items))  # consecutive, each item exactly once
        assert all(1 <= len(g) <= width for g in level)
        items = len(level)
    spans = leaves_of(levels)
    assert spans[-1] == [(0, n)]
    # devices of a machine first: when a machine holds several items, the first level
    # combines items of one machine only
    if len(set(machines)) < n and len(levels) > 1:
        assert all(len({machines[k] for k in g}) == 1 for g in levels[0])
    # depth is logarithmic in the number of items
    assert len(levels) <= 2 + max(1, n).bit_length()


def test_tree_of_8000_pieces_on_1000_machines():
    machines = [r // 8 for r in range(8000)]
    levels = tree_levels(machines, 16)
    assert [len(lv) for lv in levels] == [1000, 63, 4, 1]
    assert max(len(g) for lv in levels for g in lv) == 16


@given(st.integers(1, 5000), st.integers(2, 32))
def test_relay_tree_has_bounded_fan_out(n, width):
    children: dict[int, int] = {}
    for k in range(n):
        p = relay_parent(k, width)
        assert p < k
        children[p] = children.get(p, 0) + 1
    assert max(children.values()) <= width
