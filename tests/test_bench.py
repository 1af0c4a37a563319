"""Every bench runs in its quick mode and writes its rows as JSON lines (``--json``).

``bench/*.py`` without a leading underscore is a bench; ``bench/_util.py`` holds the shared
writer (``Report``) and reads the files back (``show``, ``compare``).  The numbers of a
quick run mean little; what is checked is that each bench runs end to end and that every
row carries what a before/after comparison needs.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
BENCHES = sorted(p.stem for p in BENCH.glob("*.py") if not p.name.startswith("_"))
# these start flowlaunch runs or process units several times: seconds each, but many
SLOW = {"collective", "e2e", "faults", "launcher", "transport"}
FIELDS = {"bench", "table", "title", "params", "figure", "value", "unit", "baseline",
          "baseline_value", "ratio", "ratio_of", "columns", "quick", "commit", "loadavg",
          "machine", "timestamp", "argv"}

sys.path.insert(0, str(BENCH))
import _util  # noqa: E402


def run_quick(name: str, out: Path) -> list[dict]:
    r = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), "--quick", "--json",
                        str(out)], capture_output=True, text=True, timeout=110,
                       cwd=BENCH.parent)
    assert r.returncode == 0, f"bench/{name}.py --quick failed:\n{r.stdout[-3000:]}\n" \
                              f"{r.stderr[-3000:]}"
    return _util.read_rows(out)


def test_every_bench_is_covered():
    assert len(BENCHES) >= 12, BENCHES
    assert "e2e_job" not in BENCHES  # a job file of e2e.py, not a bench (now _e2e_job.py)


@pytest.mark.parametrize("name", [pytest.param(b, marks=[pytest.mark.slow] if b in SLOW
                                               else []) for b in BENCHES])
@pytest.mark.timeout(150)
def test_quick_mode_writes_one_json_line_per_row(name, tmp_path):
    out = tmp_path / "rows.jsonl"
    rows = run_quick(name, out)
    assert rows, f"bench/{name}.py --json wrote no rows"
    for r in rows:
        assert set(r) == FIELDS, set(r) ^ FIELDS
        assert r["bench"] == name and r["quick"] is True
        assert r["figure"] in r["columns"] and r["unit"]
        assert set(r["params"]) <= set(r["columns"])
        assert not {r["figure"], r["ratio_of"]} & set(r["params"])
        assert r["baseline"] is None or r["baseline"] in r["columns"]
        assert len(r["loadavg"]) == 3 and all(x >= 0 for x in r["loadavg"])
        assert r["machine"]["cpus"] >= 1 and r["machine"]["host"]
        assert r["commit"] and r["argv"][:1] == ["--quick"]
        assert datetime.datetime.fromisoformat(r["timestamp"]).tzinfo is not None
    assert any(isinstance(r["value"], float) for r in rows), "no row measured a number"
    # rows of one file are told apart by (bench, table, params, figure)
    keys = [_util.row_key(r) for r in rows]
    assert len(set(keys)) == len(keys), "two rows with the same key"


def test_show_and_compare_read_the_rows(tmp_path):
    """A before/after is a diff of two files: ``compare`` pairs the rows by key."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    rows = run_quick("pipeline", a)
    for r in rows:
        r["value"] *= 2
    b.write_text("".join(json.dumps(r) + "\n" for r in rows))
    shown = _util.show(str(a))
    assert shown.count("\n") == len(rows) + 1 and "pipeline" in shown
    cmp = _util.compare(str(a), str(b)).splitlines()[2:]
    assert len(cmp) == len(rows)
    assert all(line.split("|")[8].strip() == "2.000" for line in cmp), cmp
    (tmp_path / "bad.jsonl").write_text('{"bench": 1}\nnot json\n')
    with pytest.raises(SystemExit, match=r"bad.jsonl:2: not a JSON line"):
        _util.read_rows(tmp_path / "bad.jsonl")


def test_the_bench_readme_names_every_bench_and_how_to_run_it():
    readme = (BENCH / "README.md").read_text()
    missing = [b for b in BENCHES if f"`{b}.py" not in readme]
    assert not missing, f"bench/README.md does not name: {missing}"
    history = BENCH.parent / "bench/HISTORY.md"
    assert "--json" in readme and "--quick" in readme and f"]({history.name})" in readme
    assert history.is_file()
