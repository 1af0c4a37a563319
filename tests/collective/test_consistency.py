"""The data-consistency check names the ranks that disagree, and how, on every rank."""

from __future__ import annotations

import numpy as np
import pytest

from actorflow.collective.consistency import check_consistent
from actorflow.errors import ConsistencyError
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
    assert "1 of 12 elements differ between rank 1 and rank 2, first at index (3, 1)" in msgs[0]
    assert "max |difference| 0.5" in msgs[0]


def _plain(v):
    return [_plain(x) for x in v] if isinstance(v, (list, tuple)) else v
