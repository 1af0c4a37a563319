"""Plans and helpers shared by the trace tests (run through the public API)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

import actorflow as af
from actorflow.protocol.messages import ACK

ROOT = Path(__file__).resolve().parents[2]


def chain(pieces: int = 12, register_num: int = 2, machines: int = 1, slow_ms: float = 0.0,
          name: str = "chain") -> af.Plan:
    """source -> relu -> [sleep] -> scale -> output, spread round-robin over machines."""
    b = af.PlanBuilder(machines=machines, register_num=register_num, name=name)
    x = b.source("random_normal", {"shape": [4, 8], "dtype": "float32", "seed": 3},
                 piece_num=pieces, name="src")
    h = b.op("relu", x, name="up_relu")
    if slow_ms:
        h = b.op("sleep", h, ms=slow_ms, machine=1 % machines, name="slow")
    h = b.op("scalar_mul", h, scalar=2.0, machine=(machines - 1), name="down_scale")
    b.output("y", h)
    b.num_pieces = pieces
    return b.build()


def expected(piece: int) -> np.ndarray:
    rng = np.random.default_rng([3, piece])
    x = rng.standard_normal((4, 8)).astype(np.float32)
    return np.maximum(x, 0) * np.float32(2.0)


def fed_chain(register_num: int = 1) -> af.Plan:
    """input x -> relu -> output: pieces move only when the test feeds them."""
    b = af.PlanBuilder(register_num=register_num, name="fed")
    x = b.input("x", (4,), "float32")
    b.output("y", b.op("relu", x, name="stage"))
    return b.build()


def drop_one(session: af.Session, type_: int = ACK, piece: int = 1,
             dst: int | None = None) -> list:
    """Test hook: the runtime loses the first message of ``type_`` for ``piece`` (to task
    ``dst``) between two units (``MachineRuntime.lose_first``: the Python and the native
    loop alike; units run in parallel, so name ``dst`` when it matters which one)."""
    return session.runtime.lose_first(type_, piece, dst)


def flowlaunch(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def flowlaunch_json(*args: str) -> dict:
    r = flowlaunch(*args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)
