"""trace/ imports nothing of the runtime; replay alone imports the pure state machine."""

from __future__ import annotations

import ast
from pathlib import Path

import actorflow.trace as trace_pkg

PURE = {"actorflow.actors.state", "actorflow.actors.kinds", "actorflow.actors.messages"}
RUNTIME = ("actorflow.actors", "actorflow.transport", "actorflow.launcher", "actorflow.session")


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_trace_imports_nothing_of_the_runtime():
    pkg = Path(trace_pkg.__file__).parent
    files = sorted(pkg.glob("*.py"))
    assert len(files) >= 10
    for f in files:
        runtime = {m for m in _imports(f) if m.startswith(RUNTIME)}
        if f.name == "replay.py":
            assert runtime and runtime <= PURE, runtime
        else:
            assert not runtime, f"{f.name} imports {runtime}"
