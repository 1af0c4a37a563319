"""A CUDA placement: each rank's local part lives on its own device (LOCAL_RANK picks it)."""

import numpy as np

import actorflow as af
from actorflow.streams.device import physical_index

r, n = af.env.rank, af.env.world_size
p = af.placement("cuda", ranks=list(range(n)))
x = af.randn(4, 3, placement=p, sbp=af.sbp.split(0), seed=2)
y = (x * 2.0).to_global(sbp=af.sbp.broadcast)
dev = str(y.to_local().device)
ok = np.allclose(y.numpy(), x.numpy() * 2) and dev == "cuda:0"
phys = physical_index(int(dev.split(":")[1]))  # the machine's device this rank runs on
print(f"CUDA {r} cuda:{phys} {'ok' if ok else 'wrong'}", flush=True)
