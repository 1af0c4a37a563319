"""A slow all-reduce for attack tests: the last rank joins only once the file
``JOIN_GATE`` exists (the rendezvous stays open meanwhile), then every rank all-reduces a
small tensor (direct path) and a large one (ring, or shared memory) ``ROUNDS`` times,
``PACE`` seconds apart, and prints one JSON line: whether every result was exactly
numpy's, and their total."""

import json
import os
import sys
import time

import numpy as np

import actorflow as af

r, n = af.env.rank, af.env.world_size
rounds = int(os.environ.get("ROUNDS", "20"))
pace = float(os.environ.get("PACE", "0.1"))
gate = os.environ.get("JOIN_GATE", "")
if r == n - 1 and gate:  # join once the test says so (at most 15 s): the rendezvous waits
    deadline = time.monotonic() + 15
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)
try:
    g = af.env.process_group
    print(f"MESH UP rank {r}", flush=True)
    ok, total = True, 0.0
    for i in range(rounds):
        for size in (5, 100_000):  # 40 bytes: direct; 800 KB: ring or shared memory
            got = g.all_reduce(np.arange(size, dtype=np.float64) * (r + 1) + i)
            ok = ok and bool(np.array_equal(got, np.arange(size) * (n * (n + 1) // 2) + i * n))
            total += float(got.sum())
        time.sleep(pace)
    print("RESULT " + json.dumps({"rank": r, "ok": ok, "total": total,
                                  "dropped": g.channel.mesh.dropped}), flush=True)
except af.errors.ActorflowError as e:
    print(f"FAILED rank {r}: {type(e).__name__}: {e}", flush=True)
    sys.exit(3)
