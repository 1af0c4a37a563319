"""A CUDA placement: each rank's local part lives on cuda:<LOCAL_RANK>."""

import numpy as np

import actorflow as af

r, n = af.env.rank, af.env.world_size
p = af.placement("cuda", ranks=list(range(n)))
x = af.randn(4, 3, placement=p, sbp=af.sbp.split(0), seed=2)
y = (x * 2.0).to_global(sbp=af.sbp.broadcast)
ok = np.allclose(y.numpy(), x.numpy() * 2) and str(y.to_local().device) == f"cuda:{r}"
print(f"CUDA {r} {x.to_local().device} {'ok' if ok else 'wrong'}", flush=True)
