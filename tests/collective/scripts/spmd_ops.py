"""Every collective under a real launcher: each rank prints one JSON line of checks."""

import json

import numpy as np

import actorflow as af
from actorflow.sbp_geometry import split_bounds

g = af.env.process_group
r, n = af.env.rank, af.env.world_size
tri = n * (n + 1) // 2
checks = {}
for size in (7, 50_000, 1_000_003):  # direct, ring, ring with many chunks
    x = np.arange(size, dtype=np.float64) * (r + 1)
    checks[f"all_reduce {size}"] = bool(np.array_equal(g.all_reduce(x), np.arange(size) * tri))
    rs = g.reduce_scatter(np.ones((size, 2)) * (r + 1))
    a, b = split_bounds(size, n)[r:r + 2]  # extra rows to the first ranks
    checks[f"reduce_scatter {size}"] = rs.shape == (b - a, 2) and bool(np.all(rs == tri))
    bc = g.broadcast(x if r == n - 1 else None, root=n - 1)
    checks[f"broadcast {size}"] = bool(np.array_equal(bc, np.arange(size) * n))
z = g.all_gather(np.full((r + 1, 3), r, np.int32), axis=0)
checks["all_gather uneven"] = bool(np.array_equal(
    z, np.concatenate([np.full((p + 1, 3), p, np.int32) for p in range(n)])))
got = g.all_to_all([np.full(j + 1, r * 10 + j) for j in range(n)])
checks["all_to_all"] = all(np.array_equal(got[j], np.full(r + 1, j * 10 + r)) for j in range(n))
g.barrier()
print("CHECKS " + json.dumps({"rank": r, "world": n, "local_rank": af.env.local_rank,
                              "checks": checks}), flush=True)
