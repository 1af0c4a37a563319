"""``af.nn.functional`` (OneFlow's ``oneflow.nn.functional``): every functional op whose
name OneFlow 0.9.0 has in ``oneflow.nn.functional`` (``frontend/namespace.py``), looked up
in the functional op registry on first use, so ops declared later appear with no edit."""

from __future__ import annotations

from typing import Any

from actorflow.frontend.functional import OPS, lookup
from actorflow.frontend.namespace import ONEFLOW_NN_FUNCTIONAL


def __getattr__(name: str) -> Any:
    op = lookup(name) if name in ONEFLOW_NN_FUNCTIONAL else None
    if op is None:
        raise AttributeError(f"module 'actorflow.nn.functional' has no attribute {name!r} "
                             "(it holds OneFlow's nn.functional ops that actorflow has; "
                             "every op is in actorflow.functional)")
    return op


def __dir__() -> list[str]:
    return sorted(n for n in OPS.names() if n in ONEFLOW_NN_FUNCTIONAL)
