"""``nn.functional``: the functional ops (``actorflow.functional``) plus the losses.

Ops declared later in any ``frontend/functional_*.py`` module are attributes too (looked up
in the functional op registry on first use), as in ``actorflow.functional``.
"""

from typing import Any

from actorflow.frontend.functional import lookup as _lookup
from actorflow.frontend.functional_nn import *  # noqa: F403
from actorflow.frontend.functional_nn import __all__ as _ALL
from actorflow.nn.loss import mse_loss

__all__ = [*_ALL, "mse_loss"]


def __getattr__(name: str) -> Any:
    op = _lookup(name) if not name.startswith("_") else None
    if op is None:
        raise AttributeError(f"module 'actorflow.nn.functional' has no attribute {name!r}")
    return op
