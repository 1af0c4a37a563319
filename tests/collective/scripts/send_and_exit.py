"""Rank 0 broadcasts a large tensor and exits at once; rank 1 checks what it received.

Rank 0 waits for the file ``argv[1]`` before its broadcast (the test pauses rank 1 first,
so most of the tensor is still queued in rank 0's ZeroMQ when it exits), prints ``SENT``
and returns: the world group's exit hook must get the queued chunks out.  Rank 1 prints
``RESULT`` with whether every byte matched, or ``FAILED`` with the error.
"""

import json
import os
import sys
import time

import numpy as np

import actorflow as af

gate = sys.argv[1]
r = af.env.rank
g = af.env.process_group
ELEMS = 8 << 20  # 64 MiB of int64: far more than the kernel's socket buffers hold
print(f"MESH UP rank {r}", flush=True)
want = np.random.default_rng(7).integers(0, 1 << 62, size=ELEMS, dtype=np.int64)
if r == 0:
    deadline = time.monotonic() + 60  # bounded: the test creates the gate within seconds
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)
    g.broadcast(want, root=0)
    print("SENT", flush=True)
    sys.exit(0)  # at once: the chunks still queued must leave at exit
try:
    got = g.broadcast(None, root=0)
    print("RESULT " + json.dumps({"ok": bool(np.array_equal(got, want)),
                                  "rows_ok": int(np.count_nonzero(got == want))}), flush=True)
except af.errors.ActorflowError as e:
    print(f"FAILED rank {r}: {type(e).__name__}: {e}", flush=True)
    sys.exit(3)
