"""A long all-reduce for attack tests: the last rank joins only once the file
``JOIN_GATE`` exists (the rendezvous stays open meanwhile), then every rank all-reduces a
small tensor (direct path) and a large one (ring, or shared memory) ``ROUNDS`` times, and
prints one JSON line: whether every result was exactly numpy's, and their total.

With ``MID_GATE``, the run pauses in round ``ROUNDS // 2 - 1``: every rank prints
``MIDWAY``, and the last rank waits for that file before its collectives, so the others
sit inside the round's first all-reduce, reading their inboxes, while a test attacks (at
most 60 s: the test then opens the gate).  The rounds after the pause have not begun then.
"""

import json
import os
import sys
import time

import numpy as np

import actorflow as af

r, n = af.env.rank, af.env.world_size
rounds = int(os.environ.get("ROUNDS", "20"))


def wait_for(path: str) -> None:
    """Until the test creates ``path`` (a bounded poll: 60 s at most)."""
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)


join_gate, mid_gate = os.environ.get("JOIN_GATE", ""), os.environ.get("MID_GATE", "")
if r == n - 1 and join_gate:  # join once the test says so: the rendezvous waits
    wait_for(join_gate)
try:
    g = af.env.process_group
    print(f"MESH UP rank {r}", flush=True)
    ok, total = True, 0.0
    for i in range(rounds):
        if mid_gate and i == rounds // 2 - 1:
            print(f"MIDWAY rank {r}", flush=True)
            if r == n - 1:
                wait_for(mid_gate)
        for size in (5, 100_000):  # 40 bytes: direct; 800 KB: ring or shared memory
            got = g.all_reduce(np.arange(size, dtype=np.float64) * (r + 1) + i)
            ok = ok and bool(np.array_equal(got, np.arange(size) * (n * (n + 1) // 2) + i * n))
            total += float(got.sum())
    print("RESULT " + json.dumps({"rank": r, "ok": ok, "total": total,
                                  "dropped": g.channel.mesh.dropped}), flush=True)
except af.errors.ActorflowError as e:
    print(f"FAILED rank {r}: {type(e).__name__}: {e}", flush=True)
    sys.exit(3)
