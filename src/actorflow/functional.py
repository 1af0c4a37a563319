"""``import actorflow.functional as F``: the functional ops of ``actorflow.frontend``.

Ops declared in any ``frontend/functional_*.py`` module are attributes too (looked up in
the functional op registry on first use).
"""

from typing import Any

from actorflow.frontend.functional import lookup as _lookup
from actorflow.frontend.functional_nn import *  # noqa: F403
from actorflow.frontend.functional_nn import __all__  # noqa: F401


def __getattr__(name: str) -> Any:
    op = _lookup(name) if not name.startswith("_") else None
    if op is None:
        raise AttributeError(f"module 'actorflow.functional' has no attribute {name!r}")
    return op
