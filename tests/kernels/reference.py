"""Numerically stable numpy references for every op, written apart from the kernels.

``REFS[op_type](ins, attrs, piece)`` gives the op's expected output.  Floating results are
computed in float64 (``longdouble`` where float64 itself would round badly) with formulas
chosen for stability (``logaddexp`` for softplus/sigmoid, ``erfc`` for gelu, the max
subtracted before ``exp``), then rounded once to the result dtype; integer results are
computed in int64 and wrap to the result dtype as a GPU's would.  Result dtypes follow
OneFlow's promotion (``kernels/dtype.py``), not numpy's.  A reference never calls a kernel.
"""

from __future__ import annotations

from tests.kernels import ref_elementwise, ref_layers  # noqa: F401  (they register REFS)
from tests.kernels.ref_core import REFS, Ref, as_result
from tests.kernels.ref_layers import dropout_keep, initial_value, lr_reference

__all__ = ["REFS", "Ref", "as_result", "dropout_keep", "initial_value", "lr_reference"]
