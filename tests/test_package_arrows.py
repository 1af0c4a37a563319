"""Dependency arrows of DESIGN.md, checked on the import statements of every module.

Each package may import what its arrows reach (directly or through other arrows, always
downwards), the leaf modules ``actorflow.errors``, ``actorflow.registry`` and
``actorflow.sbp_geometry``, and itself; nothing else of actorflow.  There is no list of
exceptions: a module that needs an upward import is in the wrong package.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.source_imports import module_imports

import actorflow

ROOT = Path(actorflow.__file__).parent
SHARED = {"errors", "registry", "sbp_geometry"}  # leaf modules every package may import

# DESIGN.md, "Layout and dependency direction": package -> packages it may import directly
ARROWS: dict[str, set[str]] = {
    "launcher": {"actors", "eager", "plan", "trace"},
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
        assert p not in reachable(p), f"{p} reaches itself through DESIGN's arrows"


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
    assert not bad, f"{package}/ imports against DESIGN.md's arrows: {bad}"


def test_only_transport_imports_zmq():
    bad = sorted(str(f.relative_to(ROOT)) for f in ROOT.rglob("*.py")
                 if f.parent.name != "transport" and "transport" not in f.relative_to(ROOT).parts
                 and any(m == "zmq" or m.startswith("zmq.") for m in module_imports(f)))
    assert not bad, f"only actorflow/transport may import zmq; also: {bad}"
