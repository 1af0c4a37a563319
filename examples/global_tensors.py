"""Eager global tensors: one logical tensor over several ranks, laid out by SBP.

    flowlaunch --nproc-per-node 4 examples/global_tensors.py

Every rank runs this script; each holds its local part, and ``.numpy()`` gives every rank
the whole logical tensor (a collective: all ranks call it).
"""

import numpy as np

import actorflow as af

r, n = af.env.rank, af.env.world_size
everyone = af.placement("cpu", ranks=list(range(n)))

x = af.randn(8, 4, placement=everyone, sbp=af.sbp.split(0), seed=1)  # each rank: its rows
w = af.ones(4, 3, placement=everyone, sbp=af.sbp.broadcast)
y = (x @ w).relu()                         # matmul(S0, B) -> S0: no communication
print(f"rank {r}: local x {tuple(x.to_local().shape)}, y sbp {y.sbp}")
b = y.to_global(sbp=af.sbp.broadcast)      # S0 -> B: an all-gather on the VM's comm stream
first = y.to_global(placement=af.placement("cpu", ranks=[0]), sbp=af.sbp.broadcast)
full = x.numpy()
ok = np.allclose(b.numpy(), np.maximum(full @ np.ones((4, 3), np.float32), 0), atol=1e-5)
ok = ok and np.allclose(first.numpy(), b.numpy())
mine = af.tensor(np.full((2, 2), float(r), np.float32)).to_global(everyone, af.sbp.split(0))
ok = ok and mine.shape == (2 * n, 2) and mine.numpy()[-1, 0] == n - 1
print(f"rank {r}: global tensors {'match numpy' if ok else 'DIFFER from numpy'}")
