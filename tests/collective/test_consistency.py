"""The data-consistency check names the ranks that disagree, and how, on every rank."""

from __future__ import annotations

import numpy as np
import pytest

from actorflow.collective.consistency import check_consistent
from actorflow.errors import CollectiveError, ConsistencyError
from tests.collective.ranks import run_ranks

META = {"shape": (4, 3), "dtype": "float32", "placement": ["cpu", [0, 1, 2]], "sbp": ["S0"]}


def _verdicts(n, meta_of, data_of=lambda r: None):
    def body(g):
        try:
            check_consistent(g, meta_of(g.rank), data_of(g.rank), what="x")
        except ConsistencyError as e:
            return str(e)
        return None

    return run_ranks(n, body)


def test_equal_meta_and_data_pass_on_every_rank():
    data = np.arange(12.0).reshape(4, 3)
    assert _verdicts(3, lambda r: META, lambda r: data) == [None, None, None]


@pytest.mark.parametrize("field,other", [("shape", (4, 2)), ("dtype", "float64"),
                                         ("placement", ["cpu", [0, 1]]), ("sbp", ["B"])])
def test_a_rank_with_other_meta_is_named_on_every_rank(field, other):
    msgs = _verdicts(3, lambda r: {**META, field: other} if r == 1 else META)
    assert all(m is not None for m in msgs), msgs
    assert len(set(msgs)) == 1  # every rank raises the same error
    msg = msgs[0]
    assert f"{field}: " in msg and "rank 1" in msg and repr(_plain(other)) in msg
    assert "rank 0" in msg and "rank 2" in msg  # both neighbours of rank 1 saw it


def test_broadcast_data_that_differs_is_located():
    def data(r):
        d = np.zeros((4, 3), np.float32)
        if r == 2:
            d[3, 1] = 0.5
        return d

    msgs = _verdicts(4, lambda r: META, data)
    assert len(set(msgs)) == 1 and msgs[0] is not None
    assert ("1 of 12 elements differ (bitwise) between rank 1 and rank 2, first at index "
            "(3, 1)") in msgs[0]
    assert "max |difference| 0.5" in msgs[0]


def _plain(v):
    return [_plain(x) for x in v] if isinstance(v, (list, tuple)) else v


def _one_pair(left, right, meta=None):
    """Rank 0 passes ``left``, rank 1 ``right`` (same meta): the verdict of each rank."""
    meta = meta or {"what": "x"}
    return _verdicts(2, lambda r: meta, lambda r: left if r == 0 else right)


def _differing(shape, index, dtype="float32"):
    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    b = a.copy()
    b[index] = b[index] + 3
    return a, b


@pytest.mark.parametrize("shape, index", [
    ((7,), (0,)), ((7,), (3,)), ((7,), (6,)),             # first, middle, last
    ((3, 4), (0, 0)), ((3, 4), (1, 2)), ((3, 4), (2, 3)),
    ((2, 3, 5), (1, 2, 4)), ((), ()),                    # last of 3-d, a 0-d tensor
])
def test_a_difference_at_any_index_is_found_and_located(shape, index):
    a, b = _differing(shape, index)
    msgs = _one_pair(a, b)
    assert msgs[0] is not None and msgs[0] == msgs[1], msgs
    size = max(1, int(np.prod(shape)))
    assert f"1 of {size} elements differ (bitwise) between rank 0 and rank 1" in msgs[0] \
        or f"1 of {size} elements differ (bitwise) between rank 1 and rank 0" in msgs[0]
    assert f"first at index {tuple(index)}" in msgs[0] and "max |difference| 3" in msgs[0]


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "float64",
                                   "complex64", "bool"])
def test_every_numeric_dtype_is_compared_element_by_element(dtype):
    a = np.zeros(5, dtype)
    b = a.copy()
    b[-1] = 1
    assert _one_pair(a, a.copy()) == [None, None]
    msgs = _one_pair(a, b)
    assert msgs[0] is not None and "first at index (4,)" in msgs[0], msgs


def test_nan_equals_nan_with_the_same_bits_and_differs_from_another_nan():
    a = np.array([np.nan, 1.0, np.inf, -np.inf], np.float64)
    assert _one_pair(a, a.copy()) == [None, None]
    other = a.copy()
    other.view(np.uint64)[0] += 1  # another NaN payload: not the same data
    assert np.isnan(other[0])
    msgs = _one_pair(a, other)
    assert msgs[0] is not None and "first at index (0,)" in msgs[0]
    assert "nan (0x7ff8000000000000) vs nan (0x7ff8000000000001)" in msgs[0] or \
        "nan (0x7ff8000000000001) vs nan (0x7ff8000000000000)" in msgs[0], msgs[0]


def test_minus_zero_is_not_zero():
    a = np.array([1.0, -0.0, 2.0], np.float32)
    b = np.array([1.0, 0.0, 2.0], np.float32)
    msgs = _one_pair(a, b)
    assert msgs[0] is not None and "1 of 3 elements differ (bitwise)" in msgs[0]
    assert "first at index (1,)" in msgs[0] and "max |difference| 0" in msgs[0]
    assert "(0x80000000)" in msgs[0] and "(0x00000000)" in msgs[0]


@pytest.mark.parametrize("left, right", [
    (np.zeros(4, np.float32), np.zeros(4, np.int32)),      # same bytes, another dtype
    (np.zeros(4, "<f8"), np.zeros(4, ">f8")),              # another byte order
    (np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32)),  # same bytes and size
    (np.zeros((0, 3), np.float32), np.zeros((0, 2), np.float32)),  # both empty
])
def test_dtype_or_shape_alone_is_a_difference(left, right):
    msgs = _one_pair(left, right)
    assert msgs[0] is not None and msgs[0] == msgs[1], msgs
    assert f"data: {left.shape} {left.dtype} on rank 0 but {right.shape} {right.dtype} on " \
           "rank 1" in msgs[0], msgs[0]


def test_empty_and_zero_d_tensors_that_agree_pass():
    assert _one_pair(np.zeros((0, 3)), np.zeros((0, 3))) == [None, None]
    assert _one_pair(np.array(2.5), np.array(2.5)) == [None, None]
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]  # not contiguous on one rank
    assert _one_pair(strided, strided.copy()) == [None, None]


def test_a_meta_key_only_one_rank_has_is_named():
    msgs = _verdicts(2, lambda r: {**META, "extra": 1} if r == 1 else META)
    assert msgs[0] is not None and "extra: " in msgs[0] and "None" in msgs[0], msgs


def test_one_rank_and_equal_tensors_on_many_ranks_pass():
    data = np.arange(6.0)
    assert _verdicts(1, lambda r: META, lambda r: data) == [None]
    assert _verdicts(4, lambda r: META, lambda r: data) == [None] * 4


def test_values_are_shown_plainly_unless_they_print_alike():
    a, b = np.array([1.5, 2.0]), np.array([1.5, -3.0])
    (msg, _) = _one_pair(a, b)
    assert "first at index (1,) (2.0 vs -3.0), max |difference| 5" in msg, msg
    (msg, _) = _one_pair(np.array([7], np.int16), np.array([-7], np.int16))
    assert "(7 vs -7), max |difference| 14" in msg, msg


def test_a_complex_difference_counts_its_imaginary_part():
    a = np.array([1 + 1j, 2 + 2j], np.complex64)
    b = np.array([1 + 1j, 2 - 1j], np.complex64)
    (msg, _) = _one_pair(a, b)
    assert "first at index (1,) ((2+2j) vs (2-1j)), max |difference| 3" in msg, msg


def _junk_at(part: str):
    """Rank 1 sends 'junk' where its meta, or its verdict, is due; rank 0 names it."""
    from actorflow.collective.consistency import META_PART, VERDICT_PART
    from actorflow.collective.direct import exchange

    def body(g):
        if g.rank == 0:
            with pytest.raises(CollectiveError) as e:
                check_consistent(g, META, what="x")
            return str(e.value)
        op = g._op("consistency check of x")
        if part == "meta":
            op.send(0, META_PART, (), "junk")
            return None
        op.send(0, META_PART, (), {k: _plain(v) for k, v in META.items()})
        op.recv(0, META_PART)
        exchange(op, "junk", part=VERDICT_PART)
        return None

    return run_ranks(2, body, timeout=20)[0]


def test_a_rank_that_sends_no_map_where_its_meta_is_due_is_named():
    assert "rank 1 sent 'junk' where its meta (a map) is due" in _junk_at("meta")


def test_a_rank_that_sends_no_list_where_its_verdict_is_due_is_named():
    assert "rank 1 sent 'junk' where its verdict (a list of problems) is due" in \
        _junk_at("verdict")


def test_a_verdict_list_of_other_things_than_problems_is_named():
    from actorflow.collective.consistency import META_PART, VERDICT_PART
    from actorflow.collective.direct import exchange

    def body(g):
        if g.rank == 0:
            with pytest.raises(CollectiveError, match=r"rank 1 sent \[1, 2\] where its "
                                                      r"verdict \(a list of problems\) is due"):
                check_consistent(g, META, what="x")
            return None
        op = g._op("consistency check of x")
        op.send(0, META_PART, (), {k: _plain(v) for k, v in META.items()})
        op.recv(0, META_PART)
        exchange(op, [1, 2], part=VERDICT_PART)
        return None

    run_ranks(2, body, timeout=20)
