"""Dependency arrows of docs/architecture.md, checked on the import statements of every module.

Each package may import what its arrows reach (directly or through other arrows, always
downwards), the leaf modules ``actorflow.errors``, ``actorflow.registry`` and
``actorflow.sbp_geometry``, and itself; nothing else of actorflow.  There is no list of
exceptions: a module that needs an upward import is in the wrong package.  Inside a package,
no two modules may import each other at import time (directly or round a longer loop): such
a cycle works only as long as the modules happen to be imported in one order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import actorflow
from tests.source_imports import import_cycles, import_time_graph, module_imports

ROOT = Path(actorflow.__file__).parent
SHARED = {"errors", "registry", "sbp_geometry"}  # leaf modules every package may import

# docs/architecture.md, "Packages and arrows": package -> packages it may import directly
ARROWS: dict[str, set[str]] = {
    "launcher": {"actors", "eager", "plan", "trace"},
    "optim": {"nn", "frontend"},  # optimizers update modules' parameters
    "nn": {"frontend"},  # modules trace through the functional ops and jobs
    "frontend": {"eager", "plan", "kernels"},
    "eager": {"collective", "streams", "kernels", "trace", "_core"},
    "collective": {"transport"},
    "actors": {"plan", "protocol", "streams", "kernels", "transport", "trace", "_core"},
    "plan": {"protocol", "kernels"},
    "trace": {"plan", "protocol"},  # reads plan files; replays through the state machines
    "protocol": set(),
    "streams": set(),
    "kernels": set(),
    "transport": set(),
    "_core": set(),  # the compiled core: a floor beside protocol
}


def reachable(package: str) -> set[str]:
    seen: set[str] = set()
    todo = [package]
    while todo:
        for nxt in ARROWS[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_arrows_have_no_cycle():
    for p in ARROWS:
        assert p not in reachable(p), f"{p} reaches itself through the arrows"


def test_every_package_is_covered():
    packages = {d.name for d in ROOT.iterdir() if d.is_dir() and (d / "__init__.py").exists()}
    assert packages <= set(ARROWS), f"packages with no arrows declared: {packages - set(ARROWS)}"


@pytest.mark.parametrize("package", sorted(ARROWS))
def test_package_imports_follow_the_design_arrows(package):
    if not (ROOT / package).is_dir():
        pytest.skip(f"{package}/ does not exist yet")
    allowed = reachable(package) | {package}
    bad = {}
    for f in sorted((ROOT / package).rglob("*.py")):
        wrong = set()
        for m in module_imports(f):
            parts = m.split(".")
            if parts[0] != "actorflow" or len(parts) == 1 or parts[1] in SHARED:
                continue
            if parts[1] not in allowed:
                wrong.add(m)
        if wrong:
            bad[str(f.relative_to(ROOT))] = sorted(wrong)
    assert not bad, f"{package}/ imports against the arrows of docs/architecture.md: {bad}"


def test_only_transport_imports_zmq():
    bad = sorted(str(f.relative_to(ROOT)) for f in ROOT.rglob("*.py")
                 if f.parent.name != "transport" and "transport" not in f.relative_to(ROOT).parts
                 and any(m == "zmq" or m.startswith("zmq.") for m in module_imports(f)))
    assert not bad, f"only actorflow/transport may import zmq; also: {bad}"


def test_no_module_imports_itself_back_at_import_time():
    cycles = import_cycles(import_time_graph(ROOT))
    assert not cycles, ("modules that import each other at import time (works only in one "
                        f"import order; move the shared part into a module both import): {cycles}")


def test_the_cycle_check_sees_a_cycle(tmp_path):
    """The check above can fail: a package whose modules import each other (one of them
    late, at the bottom, as the cycles this test was written for did) is reported, and an
    import under ``if TYPE_CHECKING`` or inside a function is not an import-time edge."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub.b import B\n")
    (pkg / "a.py").write_text("from pkg.sub import b\nA = 1\n")
    (pkg / "sub" / "b.py").write_text("B = 2\n\nfrom pkg import a  # noqa: E402\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from pkg import d\n")
    (pkg / "d.py").write_text("def f():\n    from pkg import c\n\nfrom pkg import c\n")
    graph = import_time_graph(pkg)
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.sub"] == {"pkg.sub.b"}
    assert graph["pkg.c"] == set() and graph["pkg.d"] == {"pkg.c"}
    assert import_cycles(graph) == [["pkg.a", "pkg.sub.b"]]
