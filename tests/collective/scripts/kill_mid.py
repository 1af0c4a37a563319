"""Rank VICTIM kills itself (SIGKILL) while every rank is inside large all-reduces.

The victim writes that it dies; every other rank writes how its collective failed.
"""

import json
import os
import signal
import sys
import threading

import numpy as np

import actorflow as af

out_dir, victim = sys.argv[1], int(sys.argv[2])
g = af.env.process_group
r = af.env.rank


def die() -> None:
    with open(os.path.join(out_dir, "killed.json"), "w") as f:
        json.dump({"rank": r}, f)
    os.kill(os.getpid(), signal.SIGKILL)


x = np.ones(2 << 20)  # 16 MiB: each all-reduce takes many chunks
if r == victim:
    threading.Timer(0.5, die).start()  # a moment inside the loop, not an ordering
try:
    for _ in range(100_000):
        g.all_reduce(x)
except af.errors.CollectiveError as e:
    with open(os.path.join(out_dir, f"rank{r}.json"), "w") as f:
        json.dump({"type": type(e).__name__, "msg": str(e),
                   "lost": getattr(e, "rank", None)}, f)
    sys.exit(3)
