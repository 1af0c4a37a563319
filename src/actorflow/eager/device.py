"""Devices of eager tensors: ``cpu`` or ``cuda:i``, one interned object per device.

Interning lets the interpreter compare devices with ``is`` on the hot path.
"""

from __future__ import annotations

from typing import Any

from actorflow.errors import UsageError

DEVICE_TYPES = ("cpu", "cuda")


class Device:
    """Where a tensor's blob lives: a device type and an index (``cuda:1``)."""

    __slots__ = ("index", "type")

    def __init__(self, type: str, index: int) -> None:
        self.type = type
        self.index = index

    def __str__(self) -> str:
        return "cpu" if self.type == "cpu" else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device('{self}')"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = as_device(other)
            except UsageError:
                return False
        return self is other

    __hash__ = object.__hash__  # devices are interned: identity is equality (fast dict keys)


_DEVICES: dict[Any, Device] = {}


def as_device(spec: Any) -> Device:
    """``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a Device -> the interned Device."""
    if isinstance(spec, Device):
        return spec
    d = _DEVICES.get(spec)
    if d is not None:
        return d
    if not isinstance(spec, str):
        raise UsageError(f"device must be a string like 'cpu' or 'cuda:0', not "
                         f"{type(spec).__name__}")
    kind, sep, idx = spec.strip().partition(":")
    if kind not in DEVICE_TYPES:
        raise UsageError(f"Expected one of cpu, cuda device type at start of device string: "
                         f"{kind} (unknown device type '{kind}' in device {spec!r}); known: "
                         f"{', '.join(DEVICE_TYPES)}")
    try:
        index = int(idx) if sep else 0
    except ValueError:
        raise UsageError(f"device {spec!r}: the index after ':' must be an integer") from None
    if index < 0 or (kind == "cpu" and index != 0):
        raise UsageError(f"device {spec!r}: index must be >= 0 (and 0 for cpu)")
    key = (kind, index)
    d = _DEVICES.get(key)
    if d is None:
        d = _DEVICES[key] = Device(kind, index)
    _DEVICES[spec] = d
    return d


CPU = as_device("cpu")
