"""``tools/mutate.py``'s maps name real files: a module it mutates and the tests it runs for it.

A renamed test file once left the kernel modules mapped to a file that no longer existed, so
every kernel mutant was "killed" by pytest's usage error.  This keeps the map from rotting.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "actorflow"


def _mutate():
    saved = list(sys.path)
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        spec = importlib.util.spec_from_file_location("_mutate_tool", ROOT / "tools" / "mutate.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # its dataclasses look their module up there
        try:
            spec.loader.exec_module(mod)
        finally:
            del sys.modules[spec.name]
        return mod
    finally:
        sys.path[:] = saved


def test_every_module_and_test_path_in_the_map_exists() -> None:
    tool = _mutate()
    missing = [f"{mod}: module" for mod in tool.TESTS if not (PKG / mod).is_file()]
    missing += [f"_core/{h}: header" for h in tool.C_TESTS if not (PKG / "_core" / h).is_file()]
    for table in (tool.TESTS, tool.C_TESTS):
        for mod, tests in table.items():
            assert tests, f"{mod}: no tests mapped"
            missing += [f"{mod}: test {t}" for t in tests if not (ROOT / t).exists()]
    for bug in tool.SEEDED:
        missing += [f"seeded {bug.name}: test {t}" for t in bug.tests if not (ROOT / t).exists()]
    assert not missing, f"tools/mutate.py names paths that do not exist: {missing}"


def test_the_map_covers_every_module_that_decides_correctness() -> None:
    """Issue 20's list: every module of protocol/ and kernels/ops/ is mapped."""
    tool = _mutate()
    want = {str(p.relative_to(PKG)) for d in ("protocol", "kernels/ops")
            for p in (PKG / d).glob("*.py") if p.name != "__init__.py"}
    want -= {"kernels/ops/testing.py"}  # the test-only ops (sleep, fail), not a kernel's math
    want |= {"sbp_geometry.py", "collective/consistency.py", "actors/inbound.py",
             "transport/codec.py", "plan/compiler/boxing.py", "collective/boxing.py",
             "eager/deps.py"}
    unmapped = sorted(want - set(tool.TESTS))
    assert not unmapped, f"tools/mutate.py's TESTS map lacks {unmapped}"


def test_every_equivalent_mutant_names_a_line_that_is_still_there() -> None:
    """An entry whose line moved on would silently stop matching: say so instead."""
    tool = _mutate()
    stale = []
    for module, _scope, line, _what in tool.load_equivalent():
        path = PKG / module
        lines = {ln.strip() for ln in path.read_text().splitlines()} if path.is_file() else set()
        if line not in lines:
            stale.append(f"{module}: {line}")
    assert not stale, f"tools/equivalent_mutants.txt names lines no longer in the source: {stale}"
