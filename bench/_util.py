"""Shared helpers of the benchmarks: medians of repeats, tables, and result rows as JSON lines.

Benchmarks print ratios against a baseline measured in the same run, so the numbers mean
something on any machine; nothing here asserts a timing.  Every bench takes the options of
``bench_args``: ``--quick`` (smallest sizes, one repeat: seconds, to show the bench works;
its numbers mean little) and ``--json OUT.jsonl``, which appends one JSON object per table
row (the fields are listed in ``Report.table``), so a before/after is a diff of two files:

    python bench/pipeline.py --json before.jsonl        # on the old commit
    python bench/pipeline.py --json after.jsonl         # on the new one
    python bench/_util.py compare before.jsonl after.jsonl
    python bench/_util.py show bench/results/baseline-m2.jsonl   # a Markdown table
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


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
        if math.isnan(v):
            return "-"
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


# -- result rows --------------------------------------------------------------------------
def bench_args(ap: argparse.ArgumentParser, quick: str = "") -> argparse.ArgumentParser:
    """Add ``--quick`` and ``--json OUT.jsonl`` (every bench has both)."""
    ap.add_argument("--quick", action="store_true",
                    help="smallest sizes, one repeat: seconds, shows the bench works "
                         "(numbers mean little)" + (f"; {quick}" if quick else ""))
    ap.add_argument("--json", metavar="OUT.jsonl", type=Path,
                    help="also append one JSON line per table row to this file")
    return ap


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if isinstance(v, float) and not math.isfinite(v) else float(v)


def _plain(v: Any) -> Any:
    """A cell as JSON: numbers as numbers (NaN as null), anything else as its text."""
    if isinstance(v, (bool, str)) or v is None:
        return v
    if isinstance(v, (int, float)):
        return _number(v) if isinstance(v, float) else int(v)
    try:
        return _plain(v.item())  # numpy scalars
    except AttributeError:
        return str(v)


def commit() -> str:
    """The checkout's short commit, ``+dirty`` when src/ or bench/ have changes."""
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(HERE), *a], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    try:
        head = git("rev-parse", "--short=10", "HEAD")
        dirty = git("status", "--porcelain", "--", str(HERE.parent / "src"), str(HERE))
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty else "")


def machine() -> dict[str, Any]:
    """Where a row was measured: host, CPU count and model, Python."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f
                        if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {"host": socket.gethostname(), "cpus": os.cpu_count(), "cpu": cpu,
            "python": platform.python_version(), "system": platform.platform(terse=True)}


class Report:
    """Prints each table and, with ``--json``, appends one JSON line per row to that file."""

    def __init__(self, bench: str, args: argparse.Namespace) -> None:
        self.bench = Path(bench).stem
        self.path: Path | None = getattr(args, "json", None)
        self.quick = bool(getattr(args, "quick", False))
        self._context: dict[str, Any] | None = None

    def table(self, name: str, title: str, headers: Sequence[str],
              rows: Sequence[Sequence[Any]], *, figure: str, unit: str,
              baseline: str | None = None, ratio: str | None = None,
              keys: Sequence[str] | None = None, unit_column: str | None = None) -> None:
        """Print ``rows`` under ``title``; write each as one JSON line with these fields:

        ``bench``, ``table`` (``name``, stable across runs; the title may carry numbers),
        ``title``; ``params`` (the ``keys`` columns: what the row is about, by default every
        column before ``figure`` but the baseline's and the ratio's; a baseline that is
        a setting, such as a timeout, may be named as a key); ``figure`` (the column
        measured), ``value``, ``unit``
        (or the row's ``unit_column``); ``baseline`` (the column measured in the same run
        to compare with) and ``baseline_value``; ``ratio`` (the ``ratio`` column, else
        value / baseline_value) and ``ratio_of`` (which); ``columns`` (every cell);
        ``quick``, ``commit``, ``loadavg`` (1, 5, 15 min, at the table), ``machine``,
        ``timestamp`` (UTC, ISO 8601) and ``argv``.
        """
        print_table(title, headers, rows)
        if self.path is None:
            return
        col = {h: i for i, h in enumerate(headers)}
        for c in (figure, baseline, ratio, unit_column, *(keys or ())):
            if c is not None and c not in col:
                raise KeyError(f"{self.bench} table {name!r}: no column {c!r} in {headers}")
        measured = {figure, baseline, ratio}
        keys = list(keys) if keys is not None else [h for h in headers[:col[figure]]
                                                     if h not in measured]
        if {figure, ratio} & set(keys):
            raise KeyError(f"{self.bench} table {name!r}: a measured column is among the "
                           f"keys {keys}")
        ids = [tuple(str(r[col[k]]) for k in keys) for r in rows]
        if len(set(ids)) != len(ids):
            raise KeyError(f"{self.bench} table {name!r}: rows share the keys {keys}; add "
                           "the column that tells them apart")
        context = self._context_now()
        with open(self.path, "a") as f:
            for r in rows:
                value = _number(_plain(r[col[figure]]))
                base = _number(_plain(r[col[baseline]])) if baseline else None
                if ratio is not None:
                    rat = _number(_plain(r[col[ratio]]))
                else:
                    rat = value / base if value is not None and base else None
                line = {
                    "bench": self.bench, "table": name, "title": title,
                    "params": {k: _plain(r[col[k]]) for k in keys},
                    "figure": figure, "value": value,
                    "unit": str(r[col[unit_column]]) if unit_column else unit,
                    "baseline": baseline, "baseline_value": base,
                    "ratio": rat, "ratio_of": ratio or (f"{figure} / {baseline}"
                                                        if baseline else None),
                    "columns": {h: _plain(c) for h, c in zip(headers, r)},
                    "quick": self.quick, **context,
                }
                f.write(json.dumps(line) + "\n")

    def _context_now(self) -> dict[str, Any]:
        if self._context is None:
            self._context = {"commit": commit(), "machine": machine(), "argv": sys.argv[1:]}
        return {**self._context, "loadavg": [round(x, 2) for x in os.getloadavg()],
                "timestamp": datetime.datetime.now(datetime.timezone.utc)
                .isoformat(timespec="seconds")}


# -- reading result files -----------------------------------------------------------------
def read_rows(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of a ``--json`` file (blank lines skipped; a bad line names its number)."""
    rows = []
    with open(path) as f:
        for i, ln in enumerate(f, 1):
            if ln.strip():
                try:
                    rows.append(json.loads(ln))
                except json.JSONDecodeError as e:
                    raise SystemExit(f"{path}:{i}: not a JSON line ({e})") from e
    return rows


def row_key(r: dict[str, Any]) -> tuple:
    """What a row is about, so a row of one file finds its row in another."""
    return (r["bench"], r["table"], json.dumps(r["params"], sort_keys=True), r["figure"])


def _params(r: dict[str, Any]) -> str:
    return ", ".join(f"{k}={fmt(v)}" for k, v in r["params"].items())


def show(path: str) -> str:
    """The rows of a file as one Markdown table (figure, baseline, ratio, load, commit)."""
    rows = [[r["bench"], r["table"], _params(r), r["figure"],
             r["value"] if r["value"] is not None else "-", r["unit"],
             r["baseline_value"] if r["baseline_value"] is not None else "-",
             r["ratio"] if r["ratio"] is not None else "-", r["loadavg"][0], r["commit"]]
            for r in read_rows(path)]
    return table(["bench", "table", "row", "figure", "value", "unit", "baseline", "ratio",
                  "load", "commit"], rows)


def compare(before: str, after: str) -> str:
    """Rows found in both files: each figure before and after, and after / before."""
    old = {row_key(r): r for r in read_rows(before)}
    rows = []
    for r in read_rows(after):
        o = old.get(row_key(r))
        if o is None:
            continue
        a, b = r["value"], o["value"]
        rows.append([r["bench"], r["table"], _params(r), r["figure"], r["unit"],
                     b if b is not None else "-", a if a is not None else "-",
                     a / b if a is not None and b else "-",
                     o["ratio"] if o["ratio"] is not None else "-",
                     r["ratio"] if r["ratio"] is not None else "-"])
    return table(["bench", "table", "row", "figure", "unit", "before", "after",
                  "after / before", "ratio before", "ratio after"], rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Read bench result files (--json output).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("show", help="one file as a Markdown table").add_argument("file")
    c = sub.add_parser("compare", help="two files: every figure before and after")
    c.add_argument("before")
    c.add_argument("after")
    args = ap.parse_args(argv)
    print(show(args.file) if args.cmd == "show" else compare(args.before, args.after))
    return 0


if __name__ == "__main__":
    sys.exit(main())
