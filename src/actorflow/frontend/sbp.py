"""SBP: how a logical tensor maps onto the devices of its placement.

``split(axis)`` cuts it along ``axis`` (device i holds a contiguous part), ``broadcast``
gives every device the whole tensor, ``partial_sum`` gives every device a full-shaped
part and the value is their sum.  Objects are cached: equal configurations are the same
hashable object, so they can key dicts and be compared with ``is``.  The compiler only
sees their ``code`` (``"S0"``, ``"B"``, ``"P"``): plain strings that fit in a plan file.
"""

from __future__ import annotations

from typing import ClassVar, NoReturn

from actorflow.errors import ArgumentTypeError, UsageError

MAX_SPLIT_AXIS = 6  # as OneFlow: split axes are 0..5


class SbpParallel:
    """Base of the three SBP kinds; immutable and interned."""

    __slots__ = ()
    code: str

    def __repr__(self) -> str:
        return f"actorflow.sbp.{self._pretty()}"

    def __call__(self) -> SbpParallel:
        """OneFlow's SBP objects are callable too: ``sbp.broadcast()`` is ``sbp.broadcast``."""
        return self

    def _pretty(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{self!r} is immutable")

    def __reduce__(self) -> NoReturn:  # never pickle actorflow objects (no pickle anywhere)
        raise ArgumentTypeError("SBP objects are not picklable; use their .code string")


class Split(SbpParallel):
    __slots__ = ("axis", "code")
    axis: int
    _cache: ClassVar[dict[int, Split]] = {}

    def __new__(cls, axis: int) -> Split:
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ArgumentTypeError("sbp.split(axis): axis must be an int, not "
                                    f"{type(axis).__name__}")
        if axis < 0:
            raise UsageError(f"sbp.split(axis): axis must be >= 0, got {axis} (SBP axes are "
                             "absolute because the same SBP may describe tensors of any rank)")
        if axis >= MAX_SPLIT_AXIS:
            raise UsageError(f"sbp.split(axis): expected the split axis to be less than the "
                             f"supported maximum axis ({MAX_SPLIT_AXIS}), but got {axis}")
        obj = cls._cache.get(axis)
        if obj is None:
            obj = object.__new__(cls)
            object.__setattr__(obj, "axis", axis)
            object.__setattr__(obj, "code", f"S{axis}")
            cls._cache[axis] = obj
        return obj

    def _pretty(self) -> str:
        return f"split(dim={self.axis})"


class _Broadcast(SbpParallel):
    __slots__ = ()
    code = "B"

    def _pretty(self) -> str:
        return "broadcast"


class _PartialSum(SbpParallel):
    __slots__ = ()
    code = "P"

    def _pretty(self) -> str:
        return "partial_sum"


broadcast = object.__new__(_Broadcast)
partial_sum = object.__new__(_PartialSum)


class NdSbp(tuple):
    """A global tensor's ``.sbp``: one SBP per axis of its placement (OneFlow's tuple; a
    1-tuple on actorflow's 1-D placements).  ``.code`` is the one SBP's code."""

    __slots__ = ()

    @property
    def code(self) -> str:
        return "".join(s.code for s in self)


def split(axis: int) -> Split:
    """The SBP that splits a tensor along ``axis`` (cached: ``split(0) is split(0)``)."""
    return Split(axis)


def from_code(code: str) -> SbpParallel:
    """``"S1"`` -> ``split(1)``, ``"B"`` -> ``broadcast``, ``"P"`` -> ``partial_sum``."""
    if code == "B":
        return broadcast
    if code == "P":
        return partial_sum
    if code.startswith("S") and code[1:].isdigit():
        return split(int(code[1:]))
    raise UsageError(f"unknown SBP code {code!r}; expected 'B', 'P' or 'S<axis>'")


def as_sbp(value: object, what: str = "sbp") -> SbpParallel:
    """Accept an SBP object (or a 1-tuple/list holding one) and return it."""
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, SbpParallel):
        return value
    raise ArgumentTypeError(f"{what} must be af.sbp.split(axis), af.sbp.broadcast or "
                            f"af.sbp.partial_sum, not {type(value).__name__}")


__all__ = ["MAX_SPLIT_AXIS", "NdSbp", "SbpParallel", "Split", "as_sbp", "broadcast", "from_code",
           "partial_sum", "split"]
