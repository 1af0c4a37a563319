"""Dependency arrows of DESIGN.md, checked on the import statements of every module.

``frontend -> plan -> kernels``; ``launcher -> actors -> transport``; a Plan never needs a
live runtime (plan/ may only use the pure state machines, for the progress dry run), and
transport knows messages and bytes, not actors.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.source_imports import module_imports

import actorflow

ROOT = Path(actorflow.__file__).parent
PURE_ACTORS = {"actorflow.actors.state", "actorflow.actors.kinds", "actorflow.actors.messages",
               "actorflow.actors.simulate"}
RUNTIME = ("actorflow.actors", "actorflow.transport", "actorflow.launcher", "actorflow.session")

# package -> (forbidden prefixes, allowed exceptions)
RULES = {
    "kernels": ((*RUNTIME, "actorflow.frontend", "actorflow.plan"), set()),
    "plan": ((*RUNTIME, "actorflow.frontend"), PURE_ACTORS),
    "frontend": (RUNTIME, set()),
    "transport": (("actorflow.actors", "actorflow.launcher", "actorflow.session",
                   "actorflow.frontend"), {"actorflow.actors.messages"}),
}


@pytest.mark.parametrize("package", sorted(RULES))
def test_package_imports_follow_the_design_arrows(package):
    forbidden, allowed = RULES[package]
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no modules found in {package}"
    bad = {}
    for f in files:
        wrong = {m for m in module_imports(f) if m.startswith(forbidden) and m not in allowed}
        if wrong:
            bad[str(f.relative_to(ROOT))] = sorted(wrong)
    assert not bad, f"{package}/ imports against DESIGN.md's arrows: {bad}"
