"""trace/ imports nothing of the runtime; replay alone imports the pure state machine."""

from __future__ import annotations

from pathlib import Path

import actorflow.trace as trace_pkg
from tests.source_imports import module_imports

PURE = {"actorflow.protocol.state", "actorflow.protocol.kinds", "actorflow.protocol.messages"}
RUNTIME = ("actorflow.actors", "actorflow.transport", "actorflow.launcher", "actorflow.session")


def test_trace_imports_nothing_of_the_runtime():
    pkg = Path(trace_pkg.__file__).parent
    files = sorted(pkg.glob("*.py"))
    assert len(files) >= 10
    for f in files:
        imports = set(module_imports(f))
        runtime = {m for m in imports if m.startswith(RUNTIME)}
        assert not runtime, f"{f.name} imports {runtime}"
        if f.name == "replay.py":  # replays through the pure state machines (protocol/)
            assert imports & PURE, imports
