"""SBP split geometry: which part of a logical tensor each of ``p`` pieces holds.

One rule for the compiler (``plan/compiler/boxing.py`` plans the moves between layouts as
tasks) and for run-time collectives (``collective/boxing.py`` moves the data of global
tensors): piece ``i`` of ``p`` along an axis of ``n`` elements holds
``[n*i//p, n*(i+1)//p)``, so sizes differ by at most one and every element has exactly one
owner.  ``B`` (broadcast) and ``P`` (partial sum) pieces cover the whole tensor.  A leaf
module with no actorflow imports, so both sides of the package arrows share it.
"""

from __future__ import annotations

Box = tuple[tuple[int, int], ...]  # (begin, end) per axis


def split_axis(code: str) -> int | None:
    """The axis of an ``S<axis>`` code; None for ``B`` and ``P``."""
    return int(code[1:]) if code[:1] == "S" else None


def split_bounds(n: int, p: int) -> tuple[int, ...]:
    """The ``p + 1`` boundaries of ``n`` elements split over ``p`` pieces."""
    return tuple(n * i // p for i in range(p + 1))


def piece_box(shape: tuple[int, ...], code: str, p: int, i: int) -> Box:
    """The region of the logical tensor that piece ``i`` of ``p`` holds (all of it for B/P)."""
    box = [(0, n) for n in shape]
    axis = split_axis(code)
    if axis is not None:
        n = shape[axis]
        box[axis] = (n * i // p, n * (i + 1) // p)
    return tuple(box)
