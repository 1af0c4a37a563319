"""Reduction operators by name (``"sum"``, ``"prod"``, ``"max"``, ``"min"``).

Each is a numpy ufunc applied in place (``op(acc, incoming, out=acc)``), so a ring step
reduces a received chunk straight into the result without a temporary.
"""

from __future__ import annotations

import numpy as np

from actorflow.registry import Registry

REDUCE_OPS: Registry[np.ufunc] = Registry("reduce op")
for _name, _fn in (("sum", np.add), ("prod", np.multiply), ("max", np.maximum),
                   ("min", np.minimum)):
    REDUCE_OPS.register(_name, _fn)


def reduce_op(name: str) -> np.ufunc:
    """The in-place ufunc of ``name``; an unknown name lists the known ones."""
    return REDUCE_OPS.get(name)
