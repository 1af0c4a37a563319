"""Run-time boxing of local parts equals the logical tensor, for every SBP pair, within and
across placements, with uneven splits; and its geometry is the compiler's."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actorflow.collective.boxing import local_shape, rebox, region
from actorflow.sbp_geometry import piece_box
from tests.collective.ranks import run_ranks


def _parts(x: np.ndarray, layout, n: int, seed: int) -> list:
    """Every rank's local part of ``x`` in ``layout`` (partial sums: random integers that
    add up to ``x``)."""
    ranks, code = layout
    rng = np.random.default_rng(seed)
    out = [None] * n
    if code == "P":
        rest = x.copy()
        for r in ranks[1:]:
            out[r] = rng.integers(-9, 10, size=x.shape).astype(x.dtype)
            rest -= out[r]
        out[ranks[0]] = rest
        return out
    for r in ranks:
        out[r] = x[region(x.shape, layout, r)].copy()
    return out


def _assemble(parts: list, layout, shape) -> np.ndarray:
    ranks, code = layout
    if code == "P":
        return sum(parts[r] for r in ranks)
    if code == "B":
        for r in ranks[1:]:
            assert np.array_equal(parts[r], parts[ranks[0]])
        return parts[ranks[0]]
    out = np.full(shape, -999, parts[ranks[0]].dtype)
    for r in ranks:
        assert parts[r].shape == local_shape(shape, layout, r)
        out[region(shape, layout, r)] = parts[r]
    return out


def layouts(n: int, ndim: int):
    codes = st.sampled_from(["B", "P", *[f"S{a}" for a in range(ndim)]])
    ranks = st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True).map(tuple)
    return st.tuples(ranks, codes)


@st.composite
def cases(draw):
    n = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=1, max_size=3)))
    src = draw(layouts(n, len(shape)))
    same = draw(st.booleans())
    dst = (src[0], draw(layouts(n, len(shape)))[1]) if same else draw(layouts(n, len(shape)))
    return n, shape, src, dst, draw(st.integers(0, 99))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_rebox_gives_the_logical_tensor_for_every_pair(case):
    n, shape, src, dst, seed = case
    x = np.random.default_rng(seed).integers(-50, 50, size=shape).astype(np.int64)
    parts = _parts(x, src, n, seed)
    got = run_ranks(n, lambda g: rebox(g, parts[g.global_rank], shape, src, dst),
                    small_bytes=64, shared_memory=seed % 2 == 0)
    for r in range(n):
        assert (got[r] is None) == (r not in dst[0])
    assert np.array_equal(_assemble(got, dst, shape), x)


def test_every_same_placement_pair_on_three_ranks_with_uneven_splits():
    shape = (7, 5)
    x = np.arange(35, dtype=np.float64).reshape(shape)
    codes = ["B", "P", "S0", "S1"]
    ranks = (0, 1, 2)
    for s in codes:
        for d in codes:
            parts = _parts(x, (ranks, s), 3, 0)
            got = run_ranks(3, lambda g, s=s, d=d, parts=parts: rebox(
                g, parts[g.rank], shape, (ranks, s), (ranks, d)))
            np.testing.assert_array_equal(_assemble(got, (ranks, d), shape), x, f"{s}->{d}")


@given(n=st.integers(1, 40), p=st.integers(1, 8), code=st.sampled_from(["S0", "S1", "B"]))
def test_regions_are_the_shared_split_geometry(n, p, code):
    shape = (n, n + 3)
    ranks = tuple(range(p))
    for i in ranks:
        box = region(shape, (ranks, code), i)
        assert tuple((s.start, s.stop) for s in box) == piece_box(shape, code, p, i)


def test_rebox_refuses_layouts_that_do_not_fit_naming_them():
    """Checked on every rank before anything is sent: an SBP past the tensor's axes or
    unknown, a placement with a rank twice or none, a source rank with no local part."""
    import pytest

    from actorflow.errors import UsageError

    x = np.zeros((2, 3))
    cases = [
        (((0, 1), "S2"), ((0, 1), "B"), x, r"SBP 'S2' does not fit a tensor of shape \(2, 3\) "
                                           r"\(expected 'B', 'P' or 'S<axis>' with axis < 2\)"),
        (((0, 1), "B"), ((0, 1), "X"), x, r"SBP 'X' does not fit"),
        (((0, 0), "B"), ((0, 1), "B"), x, r"placement ranks \[0, 0\] must be distinct"),
        (((0, 1), "B"), ((), "B"), x, r"placement ranks \[\] must be distinct and not empty"),
        (((0, 1), "B"), ((0, 1), "S0"), None, r"rank \d is in the source placement \[0, 1\] but "
                                              "has no local part"),
    ]

    def body(g):
        for src, dst, local, problem in cases:
            with pytest.raises(UsageError, match=problem):
                rebox(g, local, (2, 3), src, dst)
        return True

    assert run_ranks(2, body) == [True, True]
