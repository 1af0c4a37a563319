"""Rank VICTIM kills itself (SIGKILL) while every rank is inside large all-reduces.

The victim writes when it died; every other rank writes when and how its collective failed.
"""

import json
import os
import signal
import sys
import threading
import time

import numpy as np

import actorflow as af

out_dir, victim = sys.argv[1], int(sys.argv[2])
g = af.env.process_group
r = af.env.rank


def die() -> None:
    with open(os.path.join(out_dir, "killed.json"), "w") as f:
        json.dump({"rank": r, "t": time.time()}, f)
    os.kill(os.getpid(), signal.SIGKILL)


x = np.ones(2 << 20)  # 16 MiB: each all-reduce takes many chunks
if r == victim:
    threading.Timer(0.5, die).start()
try:
    for _ in range(100_000):
        g.all_reduce(x)
except af.errors.CollectiveError as e:
    with open(os.path.join(out_dir, f"rank{r}.json"), "w") as f:
        json.dump({"t": time.time(), "type": type(e).__name__, "msg": str(e),
                   "lost": getattr(e, "rank", None)}, f)
    sys.exit(3)
