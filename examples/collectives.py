"""SPMD collectives: run with ``flowlaunch --nproc-per-node 4 examples/collectives.py``
(or ``flowlaunch sim examples/collectives.py --machines 4``, or ``python`` alone: 1 rank).

Every rank runs this same script.  ``af.env`` says which rank it is; the process group is
set up on first use through the launcher's rendezvous.  Each step is checked against the
numpy answer computed locally, so the script fails loudly if a collective is wrong.
"""

import numpy as np

import actorflow as af
from actorflow.collective import check_consistent
from actorflow.collective.boxing import rebox
from actorflow.sbp_geometry import split_bounds

g = af.env.process_group
r, n = af.env.rank, af.env.world_size
everyone = tuple(range(n))

# data parallel: every rank has a gradient; all-reduce gives their sum everywhere
grad = np.full(1_000_000, float(r + 1), np.float32)
total = g.all_reduce(grad)
assert np.all(total == n * (n + 1) / 2)

# a global tensor's local parts: rows split over the ranks (uneven: 10 rows), then
# re-laid out as column splits (all-to-all) and made whole (all-gather)
x = np.arange(10 * 6, dtype=np.float64).reshape(10, 6)
rb, cb = split_bounds(10, n), split_bounds(6, n)  # n // p each, +1 on the first ranks
rows = x[rb[r]:rb[r + 1]]
cols = rebox(g, rows, x.shape, (everyone, "S0"), (everyone, "S1"))
assert np.array_equal(cols, x[:, cb[r]:cb[r + 1]])
whole = rebox(g, cols, x.shape, (everyone, "S1"), (everyone, "B"))
assert np.array_equal(whole, x)

# the data-consistency check: every rank must mean the same tensor
check_consistent(g, {"shape": x.shape, "dtype": x.dtype.str, "sbp": "B"}, data=whole)
try:
    check_consistent(g, {"shape": (10, 6 + (r == n - 1))}, what="y (the last rank differs)")
    assert n == 1
except af.errors.ConsistencyError as e:
    if r == 0:
        print(f"caught on purpose: {e}")

print(f"rank {r}/{n}: all-reduce, all-to-all, all-gather and the consistency check agree "
      "with numpy")
