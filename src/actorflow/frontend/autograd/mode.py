"""Grad mode: whether ops issued now are recorded for ``backward()`` (per thread).

``af.no_grad()`` turns recording off inside its block (an optimizer's update, an
evaluation loop); ``af.enable_grad()`` turns it back on; ``af.set_grad_enabled(flag)`` sets
it.  Each works as a context manager and as a decorator, as in PyTorch and OneFlow.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    enabled = True


STATE = _State()


def is_grad_enabled() -> bool:
    return STATE.enabled


class _Mode:
    """Sets grad mode to ``flag`` inside a ``with`` block or a decorated function."""

    flag = True

    def __enter__(self) -> None:
        self._prev = STATE.enabled
        STATE.enabled = self.flag

    def __exit__(self, *exc: Any) -> None:
        STATE.enabled = self._prev

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]


class no_grad(_Mode):
    """Ops inside do not record: their outputs have no ``grad_fn``."""

    flag = False


class enable_grad(_Mode):
    """Ops inside record again (inside a ``no_grad`` block)."""

    flag = True


class set_grad_enabled(_Mode):
    """``with af.set_grad_enabled(False):``; called alone it sets the mode at once."""

    def __init__(self, mode: bool) -> None:
        self.flag = bool(mode)
        self._prev = STATE.enabled
        STATE.enabled = self.flag

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: F) -> F:
        flag = self.flag
        STATE.enabled = self._prev

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = STATE.enabled
            STATE.enabled = flag
            try:
                return fn(*args, **kwargs)
            finally:
                STATE.enabled = prev
        return wrapper  # type: ignore[return-value]


__all__ = ["STATE", "enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]
