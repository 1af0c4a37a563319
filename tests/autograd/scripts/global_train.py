"""Run by ``flowlaunch --nproc-per-node 2``: eager autograd on global tensors.  Each rank
prints ``GRAD {json}`` with what it saw: the gradient's SBP (a broadcast weight read by
split activations gets a partial-sum gradient), its value against numpy, and the weight
after a few SGD steps on both ranks."""

from __future__ import annotations

import json

import numpy as np

import actorflow as af
import actorflow.optim as optim

rank = af.env.get_rank() if hasattr(af.env, "get_rank") else af.env.rank
P = af.placement("cpu", ranks=[0, 1])
rng = np.random.default_rng(0)
X = rng.standard_normal((8, 3)).astype(np.float32)
W = rng.standard_normal((3, 2)).astype(np.float32)
x = af.tensor(X).to_global(P, af.sbp.broadcast).to_global(sbp=af.sbp.split(0))
w = af.tensor(W).to_global(P, af.sbp.broadcast).requires_grad_()
loss = ((x @ w) ** 2.0).sum()
loss.backward()
g = w.grad
want = 2 * X.T @ (X @ W)
out = {"rank": rank, "grad_sbp": repr(g.sbp), "grad_err": float(np.abs(g.numpy() - want).max()),
       "loss_err": float(abs(loss.numpy() - ((X @ W) ** 2).sum()))}
opt = optim.SGD([w], lr=0.01, momentum=0.9)
wn, buf = W.astype(np.float64), np.zeros_like(W, dtype=np.float64)
for _ in range(3):
    opt.zero_grad()
    ((x @ w) ** 2.0).sum().backward()
    opt.step()
    gn = 2 * X.T @ (X @ wn)
    buf = 0.9 * buf + gn
    wn = wn - 0.01 * buf
out["w_err"] = float(np.abs(w.numpy() - wn).max() / np.abs(wn).max())
out["w_sbp"] = repr(w.sbp)
print("GRAD " + json.dumps(out), flush=True)
