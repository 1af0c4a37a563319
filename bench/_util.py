"""Shared timing helpers for benchmarks: medians of repeats and plain-text tables.

Benchmarks print ratios against a baseline measured in the same run, so the numbers mean
something on any machine; nothing here asserts a timing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def median_time(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time in seconds of ``fn()`` over ``repeats`` runs (after ``warmup``)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def median_of(fn: Callable[[], float], repeats: int = 5, warmup: int = 0) -> float:
    """Median of the numbers ``fn()`` returns (for benches that time themselves)."""
    for _ in range(warmup):
        fn()
    return statistics.median(fn() for _ in range(repeats))


def fmt(v: Any) -> str:
    if isinstance(v, float):
        if v == 0 or 0.01 <= abs(v) < 1e5:
            return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"
        return f"{v:,.0f}" if abs(v) >= 1e5 else f"{v:.3g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (pastes straight into bench/README.md)."""
    cells = [[fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.rjust(w) for c, w in zip(r, widths)) + " |" for r in cells]
    return "\n".join([line, sep, *body])


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    print(f"\n{title}\n")
    print(table(headers, rows))
