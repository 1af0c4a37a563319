"""The CUDA stream needs a GPU and CuPy; without them only the clear error is checked.

A GPU run of a plan needs copy_h2d/copy_d2h tasks from the compiler, which does not emit
them yet; that test will come with them.
"""

from __future__ import annotations

import importlib.util

import pytest

from actorflow.errors import ActorflowError
from actorflow.streams.stream import make_stream

HAVE_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.skipif(HAVE_CUPY, reason="CuPy is installed: the missing-CuPy error cannot occur")
def test_cuda_stream_without_cupy_names_the_fix():
    with pytest.raises(ActorflowError, match=r"needs CuPy.*actorflow\[cuda\]"):
        make_stream("cuda:0")
