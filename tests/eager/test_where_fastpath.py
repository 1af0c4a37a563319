"""The issuing site of an eager op is found through a cached frame depth and formatted
only on error (``caller_where``/``Where``): these tests alternate call paths of different
depths (``x ** y`` operator, ``F.pow`` direct, a user helper one frame deeper) so that the
cache is hit, missed and refilled, and check that every error still names its own line."""

from __future__ import annotations

import sys

import pytest

import actorflow as af
import actorflow.frontend.functional as F
from actorflow.eager.tensor import Where, caller_where
from actorflow.errors import EagerKernelError


def _failing_line(issue) -> int:
    """Issue a failing op with ``issue``, return the line the error names."""
    with pytest.raises(EagerKernelError) as e:
        issue()
        af.sync()
    file, line = e.value.where.rsplit(":", 1)
    assert file == __file__
    return int(line)


def _helper(x):
    return x ** -1  # the helper's own line must be named, not its caller's


HELPER_LINE = _helper.__code__.co_firstlineno + 1


def test_error_lines_stay_right_when_call_paths_alternate():
    x = af.tensor([1, 2, 3])  # integers to a negative power: numpy's kernel raises
    for _ in range(3):
        op_line = sys._getframe().f_lineno + 1
        assert _failing_line(lambda: x ** -1) == op_line
        fn_line = sys._getframe().f_lineno + 1
        assert _failing_line(lambda: F.pow(x, -1)) == fn_line
        assert _failing_line(lambda: _helper(x)) == HELPER_LINE
        # a good op between failures keeps working and in order
        assert (x * 2).numpy().tolist() == [2, 4, 6]


def test_where_formats_file_and_line_lazily():
    def here():
        return caller_where(1), sys._getframe().f_lineno

    w, line = here()
    assert isinstance(w, Where)
    assert tuple(w) == (__file__, line) and w[0] == __file__ and w[1] == line
    assert repr(w) == f"{__file__}:{line}"
