"""The split geometry's contract (``actorflow.sbp_geometry``), for every rule it knows
(whichever pieces get the extra elements of an uneven split): ``p`` pieces tile ``[0, n)``
in order, their sizes differ by at most one, ``piece_box`` and the rule's bounds agree,
the other axes and the ``B``/``P`` pieces are whole.  (Which pieces get the extra
elements is pinned where the rule is used: ``tests/oneflow`` against OneFlow, the
compiler's and the collectives' boxing tests against numpy.)"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actorflow.sbp_geometry import GEOMETRIES, piece_box, split_axis, split_bounds

sizes = st.integers(0, 50)
pieces = st.integers(1, 12)


@settings(max_examples=150, deadline=None)
@given(sizes, pieces, st.sampled_from(sorted(GEOMETRIES)))
def test_bounds_tile_the_axis_in_order_with_balanced_sizes(n, p, geometry):
    b = GEOMETRIES[geometry](n, p)
    assert len(b) == p + 1 and b[0] == 0 and b[-1] == n
    widths = [b[i + 1] - b[i] for i in range(p)]
    assert min(widths) >= 0 and sum(widths) == n
    assert max(widths) - min(widths) <= 1, widths


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=4), pieces, st.data())
def test_piece_box_is_split_bounds_on_its_axis_and_whole_elsewhere(shape, p, data):
    shape = tuple(shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    geometry = data.draw(st.sampled_from([None, *sorted(GEOMETRIES)]))
    b = (split_bounds if geometry is None else GEOMETRIES[geometry])(shape[axis], p)
    owners = [0] * shape[axis]
    for i in range(p):
        box = piece_box(shape, f"S{axis}", p, i, *([geometry] if geometry else []))
        assert len(box) == len(shape)
        assert box[axis] == (b[i], b[i + 1])
        for a, n in enumerate(shape):
            if a != axis:
                assert box[a] == (0, n)
        for k in range(*box[axis]):
            owners[k] += 1
    assert owners == [1] * shape[axis]  # every element has exactly one owner


@pytest.mark.parametrize("code", ["B", "P"])
@pytest.mark.parametrize("p", [1, 3])
def test_broadcast_and_partial_pieces_cover_the_whole_tensor(code, p):
    for i in range(p):
        assert piece_box((5, 0, 2), code, p, i) == ((0, 5), (0, 0), (0, 2))


@pytest.mark.parametrize("code, axis", [("S0", 0), ("S1", 1), ("S12", 12), ("B", None),
                                        ("P", None)])
def test_split_axis_reads_the_code(code, axis):
    assert split_axis(code) == axis


def test_one_piece_holds_everything_and_more_pieces_than_rows_leave_some_empty():
    assert split_bounds(7, 1) == (0, 7)
    assert piece_box((7, 3), "S1", 1, 0) == ((0, 7), (0, 3))
    widths = [piece_box((2, 3), "S0", 5, i)[0] for i in range(5)]
    assert sorted(hi - lo for lo, hi in widths) == [0, 0, 0, 1, 1]
