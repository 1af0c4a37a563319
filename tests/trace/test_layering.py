"""trace/ imports nothing of the runtime; replay alone imports the pure state machine."""

from __future__ import annotations

from pathlib import Path

from tests.source_imports import module_imports

import actorflow.trace as trace_pkg

PURE = {"actorflow.protocol.state", "actorflow.protocol.kinds", "actorflow.protocol.messages"}
RUNTIME = ("actorflow.actors", "actorflow.transport", "actorflow.launcher", "actorflow.session")


def test_trace_imports_nothing_of_the_runtime():
    pkg = Path(trace_pkg.__file__).parent
    files = sorted(pkg.glob("*.py"))
    assert len(files) >= 10
    for f in files:
        runtime = {m for m in module_imports(f) if m.startswith(RUNTIME)}
        if f.name == "replay.py":
            assert runtime and runtime <= PURE, runtime
        else:
            assert not runtime, f"{f.name} imports {runtime}"
