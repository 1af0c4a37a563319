"""Run N ranks of a process group as threads of this process, over real sockets.

Each rank gets its own ``Mesh`` (a PULL inbox on loopback tcp, a PUSH per peer), so every
message crosses a real ZeroMQ connection; only the processes are shared.  Multi-process
behaviour (rendezvous, killed ranks) is tested through flowlaunch in test_spmd_collective.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from actorflow.collective.channel import Channel
from actorflow.collective.group import ProcessGroup
from actorflow.transport.mesh import Mesh


def run_ranks(n: int, fn: Callable[[ProcessGroup], Any], *, join_timeout: float = 20.0,
              **options: Any) -> list[Any]:
    """``fn(group)`` on every rank at once; returns results by rank, re-raises the first
    error (with its rank)."""
    meshes = [Mesh(r, n) for r in range(n)]
    groups: list[ProcessGroup] = []
    try:
        addrs = {r: m.address for r, m in enumerate(meshes)}
        for m in meshes:
            m.connect(addrs)
        groups = [ProcessGroup(Channel(m), range(n), **options) for m in meshes]
        results: list[Any] = [None] * n
        errors: list[BaseException | None] = [None] * n

        def body(r: int) -> None:
            try:
                results[r] = fn(groups[r])
            except BaseException as e:  # handed to the test below
                errors[r] = e

        threads = [threading.Thread(target=body, args=(r,), name=f"test-rank-{r}")
                   for r in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(join_timeout)
        assert not any(t.is_alive() for t in threads), "a rank hung"
        for r, e in enumerate(errors):
            if e is not None:
                raise AssertionError(f"rank {r} failed: {type(e).__name__}: {e}") from e
        return results
    finally:
        for g in groups:
            g.close()
        for m in meshes:
            m.close()
