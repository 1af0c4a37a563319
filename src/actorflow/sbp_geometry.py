"""SBP split geometry: which part of a logical tensor each of ``p`` pieces holds.

One rule for the compiler (``plan/compiler/boxing.py`` plans the moves between layouts as
tasks), for run-time collectives (``collective/boxing.py`` moves the data of global
tensors, ``collective/group.py``'s reduce-scatter), for global tensors made from data and
for checkpoints: OneFlow's.  ``n`` elements over ``p`` pieces give every piece ``n // p``
and the FIRST ``n % p`` pieces one more (25 rows on 2 ranks: 13 + 12; 13 on 4: 4, 3, 3, 3),
so sizes differ by at most one and every element has exactly one owner.  ``B`` (broadcast)
and ``P`` (partial sum) pieces cover the whole tensor.  A leaf module with no actorflow
imports, so both sides of the package arrows share it.

Checkpoints written before this rule (manifests with no ``split_geometry``) used ``floor``
(piece ``i`` holds ``[n*i//p, n*(i+1)//p)``, the extra elements on the LAST pieces); their
parts name their regions, so they load under either rule (``kernels/checkpoint.py``).
"""

from __future__ import annotations

from collections.abc import Callable

Box = tuple[tuple[int, int], ...]  # (begin, end) per axis

GEOMETRY = "first"  # the rule in force, written into checkpoint manifests


def split_axis(code: str) -> int | None:
    """The axis of an ``S<axis>`` code; None for ``B`` and ``P``."""
    return int(code[1:]) if code[:1] == "S" else None


def split_bounds(n: int, p: int) -> tuple[int, ...]:
    """The ``p + 1`` boundaries of ``n`` elements split over ``p`` pieces (extra elements
    to the first pieces, as OneFlow)."""
    q, r = divmod(n, p)
    return tuple(i * q + min(i, r) for i in range(p + 1))


def floor_bounds(n: int, p: int) -> tuple[int, ...]:
    """The rule of checkpoints written before OneFlow's (extra elements to the last)."""
    return tuple(n * i // p for i in range(p + 1))


GEOMETRIES: dict[str, Callable[[int, int], tuple[int, ...]]] = {
    "first": split_bounds, "floor": floor_bounds}


def piece_box(shape: tuple[int, ...], code: str, p: int, i: int,
              geometry: str = GEOMETRY) -> Box:
    """The region of the logical tensor that piece ``i`` of ``p`` holds (all of it for B/P)."""
    box = [(0, n) for n in shape]
    axis = split_axis(code)
    if axis is not None:
        b = GEOMETRIES[geometry](shape[axis], p)
        box[axis] = (b[i], b[i + 1])
    return tuple(box)
