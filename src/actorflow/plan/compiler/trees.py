"""Fan-in and fan-out trees of bounded width: the shape of gathers, reductions, scatters and
broadcasts over many pieces, so that no task has more than ``width`` inputs and no piece
of data is sent to more than ``width`` places by one task.

Pure grouping of indices; the lowering (``boxer``) turns a tree into nodes and the
emitter routes broadcasts to many machines through ``relay_parent``.  Groups are runs of
*consecutive* pieces, so concatenating a group of split pieces gives one contiguous range.
Level 0 groups the pieces of one machine (its devices first), the next levels group
``width`` consecutive groups, and the last level is one group: the root.
"""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_WIDTH = 16

Level = list[list[int]]  # groups of indices into the items of the level below


def tree_levels(machines: Sequence[int], width: int) -> list[Level]:
    """Levels of groups over items on ``machines`` (one machine id per item), bottom up.

    Every group has at most ``width`` members; the last level has a single group.  A
    level that would group nothing (every group of one member) is left out.  O(n).
    """
    if width < 2:
        raise ValueError(f"tree width must be >= 2, got {width}")
    n = len(machines)
    levels: list[Level] = []
    groups: Level = []
    start = 0
    for k in range(1, n + 1):
        if k == n or machines[k] != machines[start] or k - start == width:
            groups.append(list(range(start, k)))
            start = k
    items = n
    if len(groups) < n:  # some machine holds several items: combine them there first
        levels.append(groups)
        items = len(groups)
        if items == 1:
            return levels
    while items > width:
        levels.append([list(range(s, min(s + width, items))) for s in range(0, items, width)])
        items = len(levels[-1])
    levels.append([list(range(items))])
    return levels


def leaves_of(levels: list[Level]) -> list[list[tuple[int, int]]]:
    """Per level, per group: the (first, last + 1) range of leaf indices it covers."""
    out: list[list[tuple[int, int]]] = []
    below: list[tuple[int, int]] | None = None
    for level in levels:
        spans = []
        for g in level:
            if below is None:
                spans.append((g[0], g[-1] + 1))
            else:
                spans.append((below[g[0]][0], below[g[-1]][1]))
        out.append(spans)
        below = spans
    return out


def relay_parent(k: int, width: int) -> int:
    """Broadcast to n readers in a ``width``-ary tree: the reader that forwards to reader
    ``k`` (readers ``0 .. width-1`` read from the producer itself: -1)."""
    return k // width - 1


__all__ = ["DEFAULT_WIDTH", "Level", "leaves_of", "relay_parent", "tree_levels"]
