"""Placement: the device type and ranks a tensor lives on.

Rank ``r`` maps to ``machine r // devices_per_machine``, ``device r % devices_per_machine``
when a job is compiled, so the same job compiles for any cluster shape that has the ranks.
Placements are interned: ``placement("cpu", ranks=[0, 1]) is placement("cpu", ranks=[0, 1])``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, NoReturn

from actorflow.errors import ArgumentTypeError, UsageError

DEVICE_TYPES = ("cpu", "cuda")


class Placement:
    """Immutable, hashable, cached: ``device_type`` plus a tuple of distinct ranks.

    ``af.placement`` is this class, as OneFlow's ``flow.placement``:
    ``af.placement("cpu", ranks=[0, 1])`` (or ``type=``/``device_type=``) parses and checks
    its arguments and returns the cached object; ``af.placement.all("cpu")`` is every rank
    of the run."""

    __slots__ = ("device_type", "ranks")
    device_type: str
    ranks: tuple[int, ...]
    _cache: ClassVar[dict[tuple[str, tuple[int, ...]], Placement]] = {}

    def __new__(cls, type: str | None = None, ranks: Iterable[int | str] | int | None = None,
                *, device_type: str | None = None) -> Placement:
        if type is not None and device_type is not None:
            raise ArgumentTypeError("placement(): give the device type once (type= or "
                                    "device_type=)")
        dev, idx = _parse(device_type or type or "cpu", ranks)
        return cls._interned(dev, idx)

    @classmethod
    def _interned(cls, device_type: str, ranks: tuple[int, ...]) -> Placement:
        key = (device_type, ranks)
        obj = cls._cache.get(key)
        if obj is None:
            obj = object.__new__(cls)
            object.__setattr__(obj, "device_type", device_type)
            object.__setattr__(obj, "ranks", ranks)
            cls._cache[key] = obj
        return obj

    @classmethod
    def all(cls, type: str = "cpu") -> Placement:
        """Every rank of the run (``WORLD_SIZE`` ranks; rank 0 alone outside a launcher)."""
        from actorflow.collective import world

        return cls(type, list(range(world().size)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{self!r} is immutable")

    def __reduce__(self) -> NoReturn:
        raise ArgumentTypeError("placements are not picklable; use .to_dict()")

    @property
    def type(self) -> str:
        """The device type (OneFlow's name for ``device_type``)."""
        return self.device_type

    @property
    def parallel_num(self) -> int:
        return len(self.ranks)

    def devices(self, devices_per_machine: int) -> list[tuple[int, int]]:
        """``(machine_id, device_index)`` of every rank, in rank order."""
        return [divmod(r, devices_per_machine) for r in self.ranks]

    def to_dict(self) -> dict:
        return {"device_type": self.device_type, "ranks": list(self.ranks)}

    def __repr__(self) -> str:
        return f'actorflow.placement(type="{self.device_type}", ranks={list(self.ranks)})'


def _parse_rank(r: object, device_type: str | None) -> tuple[str | None, int]:
    """A rank is an int, or a ``"cpu:3"``-style string naming its device type too."""
    if isinstance(r, str):
        dev, sep, idx = r.partition(":")
        if not sep or not idx.isdigit():
            raise UsageError(f"placement: rank {r!r} must be an int or 'device:index'")
        return dev, int(idx)
    if isinstance(r, bool) or not isinstance(r, int):
        if hasattr(r, "__index__") and not isinstance(r, bool):  # numpy integers
            return device_type, int(r)
        raise ArgumentTypeError(f"placement: ranks must be ints, got {type(r).__name__} {r!r}")
    return device_type, r


def _parse(device_type: str, ranks: Iterable[int | str] | int | None) -> tuple[str,
                                                                                tuple[int, ...]]:
    if isinstance(ranks, int) and not isinstance(ranks, bool):
        ranks = [ranks]
    if ranks is None:
        ranks = [0]
    if not isinstance(ranks, Iterable):
        raise ArgumentTypeError(f"placement: ranks must be a list of ints, got "
                                f"{type(ranks).__name__} {ranks!r}")
    ranks = list(ranks)
    if not ranks:
        raise UsageError("placement: ranks must not be empty (give at least one rank, e.g. [0])")
    if device_type not in DEVICE_TYPES:
        raise UsageError(f"placement: unknown device type {device_type!r}; known: "
                         f"{', '.join(DEVICE_TYPES)}")
    parsed = [_parse_rank(r, device_type) for r in ranks]
    types = sorted({device_type} | {d for d, _ in parsed if d is not None})
    if len(types) > 1:
        raise UsageError(f"placement: mixed device types {types} in ranks {ranks}; one placement "
                         "holds one device type")
    for d, _ in parsed:
        if d not in DEVICE_TYPES:
            raise UsageError(f"placement: unknown device type {d!r}; known: "
                             f"{', '.join(DEVICE_TYPES)}")
    idx = [i for _, i in parsed]
    if any(i < 0 for i in idx):
        raise UsageError(f"placement: ranks must be >= 0, got {idx}")
    if len(set(idx)) != len(idx):
        raise UsageError(f"placement: ranks {idx} repeat a rank")
    return device_type, tuple(idx)


placement = Placement


__all__ = ["DEVICE_TYPES", "Placement", "placement"]
