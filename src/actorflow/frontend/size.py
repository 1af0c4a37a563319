"""``af.Size``: a tensor's shape, a tuple that prints as OneFlow's ``oneflow.Size`` does."""

from __future__ import annotations

import math
from typing import Any


class Size(tuple):
    """A shape: a tuple of ints (``x.shape == (2, 3)`` holds) with ``numel()``."""

    __slots__ = ()

    def __new__(cls, sizes: Any = ()) -> Size:
        try:
            dims = tuple(sizes)
        except TypeError:
            raise TypeError(f"Size() takes an iterable of ints, not "
                            f"{type(sizes).__name__}") from None
        for d in dims:
            if isinstance(d, bool) or not hasattr(d, "__index__"):
                raise TypeError(f"Size() takes ints, got {type(d).__name__} {d!r}")
        return super().__new__(cls, (int(d) for d in dims))

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"actorflow.Size({list(self)})"

    def __str__(self) -> str:
        """As a tuple, so messages that name a shape read ``(2, 3)``; ``repr`` is OneFlow's."""
        return tuple.__repr__(self)

    def __getitem__(self, i: Any) -> Any:
        v = tuple.__getitem__(self, i)
        return Size(v) if isinstance(i, slice) else v


__all__ = ["Size"]
