"""Training steps per second: the examples' MLP (scikit-learn digits, batch 128) and GPT
(2 layers, width 64, batch 64) in actorflow's eager mode, as an actorflow job (one machine,
in-process), and in torch 2.13 CPU eager mode (the same model, initial weights and
batches) when torch is installed; ratios against torch, measured in the same run.

"Where the time goes" columns: ops issued per eager step and eager microseconds per op
(the VM's cost per op dominates at these sizes), kernels per job step and microseconds per
kernel (actor hops, one per task per piece).

    python bench/train.py [--steps 30] [--repeats 3] [--quick] [--json OUT.jsonl]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
from _util import Report, bench_args

import actorflow as af
import actorflow.nn as nn

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MLP = _load("train_mlp_digits")
GPT = _load("train_gpt_addition")


def _batches(model: str, steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    if model == "mlp":
        xtr, ytr, _, _ = MLP.load_data()
        return [MLP.batch(s, xtr, ytr) for s in range(steps)]
    return [GPT.batch(s) for s in range(steps)]


def _ops() -> int:
    c = af.counters()
    return int(c.get("ops_issued", c.get("instructions_issued", 0)))


def eager_steps(model: str, steps: int) -> tuple[float, float]:
    """(steps/s, ops issued per step) of eager training."""
    if model == "mlp":
        net, opt = MLP.make_model()

        def loss_of(x: Any, y: Any) -> Any:
            return nn.CrossEntropyLoss()(net(x), y)
    else:
        net, opt = GPT.make()

        def loss_of(x: Any, y: Any) -> Any:
            return GPT.loss_of(net(x), y)
    data = _batches(model, steps + 1)

    def step(x: np.ndarray, y: np.ndarray) -> float:
        loss = loss_of(af.tensor(x), af.tensor(y))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss)

    step(*data[0])  # warm the caches
    ops0, t0 = _ops(), time.perf_counter()
    for x, y in data[1:]:
        step(x, y)
    dt = time.perf_counter() - t0
    return steps / dt, (_ops() - ops0) / steps


def job_steps(model: str, steps: int) -> tuple[float, float]:
    """(steps/s, kernels per step) of the train job on one machine."""
    jobs = MLP.build_jobs(1) if model == "mlp" else GPT.build_jobs(1, "one")
    plan = af.compile(jobs[:1], machines=1)
    kernels = sum(len(t.exec_sequence) for t in plan.tasks if t.job_id == 0)
    data = _batches(model, steps + 1)
    with af.Session(plan) as s:
        s.run("train", dict(zip(("x", "y"), data[0])))
        t0 = time.perf_counter()
        for x, y in data[1:]:
            s.run("train", {"x": x, "y": y})
        dt = time.perf_counter() - t0
    return steps / dt, kernels


def torch_steps(model: str, steps: int) -> float | None:
    """Steps/s of the same model in torch CPU eager, from the same initial weights."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    if model == "mlp":
        net_af, _ = MLP.make_model()
        net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                  torch.nn.Linear(128, 10))
        opt = torch.optim.Adam(net.parameters(), lr=MLP.LR)
    else:
        net_af, _ = GPT.make()
        net = _torch_gpt(torch)
        opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=0.01)
    sd = {k: torch.tensor(np.asarray(v.numpy())) for k, v in net_af.state_dict().items()}
    net.load_state_dict(sd, strict=False)
    data = _batches(model, steps + 1)
    vocab = 10 if model == "mlp" else GPT.VOCAB

    def step(x: np.ndarray, y: np.ndarray) -> float:
        out = net(torch.tensor(x))
        loss = torch.nn.functional.cross_entropy(out.reshape(-1, vocab),
                                                 torch.tensor(y).reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss.detach())

    step(*data[0])
    t0 = time.perf_counter()
    for x, y in data[1:]:
        step(x, y)
    return steps / (time.perf_counter() - t0)


def _torch_gpt(torch: Any) -> Any:
    """The example's GPT written in torch, with the same parameter names."""
    import math

    F = torch.nn.functional
    W, H, T = GPT.WIDTH, GPT.HEADS, GPT.T

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(W), torch.nn.LayerNorm(W)
            self.qkv, self.proj = torch.nn.Linear(W, 3 * W), torch.nn.Linear(W, W)
            self.fc, self.out = torch.nn.Linear(W, 4 * W), torch.nn.Linear(4 * W, W)
            self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

        def forward(self, x: Any) -> Any:
            b, t, c = x.shape
            d = c // H
            q, k, v = self.qkv(self.ln1(x)).chunk(3, 2)
            q, k, v = (z.reshape(b, t, H, d).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-1, -2)) / math.sqrt(d)
            att = att.masked_fill(self.mask, -1e9).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = torch.nn.Embedding(GPT.VOCAB, W)
            self.pos = torch.nn.Embedding(GPT.CONTEXT, W)
            self.blocks = torch.nn.ModuleList([Block() for _ in range(GPT.LAYERS)])
            self.ln_f, self.head = torch.nn.LayerNorm(W), torch.nn.Linear(W, GPT.VOCAB)
            self.register_buffer("pos_ids", torch.arange(T))

        def forward(self, idx: Any) -> Any:
            x = self.tok(idx) + self.pos(self.pos_ids)
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln_f(x))

    return Net()


def main(argv: list[str] | None = None) -> int:
    ap = bench_args(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    steps, repeats = (3, 1) if args.quick else (args.steps, args.repeats)
    report = Report(__file__, args)
    rows = []
    for model in ("mlp", "gpt"):
        eager = [eager_steps(model, steps) for _ in range(repeats)]
        job = [job_steps(model, steps) for _ in range(repeats)]
        ref = [torch_steps(model, steps) for _ in range(repeats)]
        e = statistics.median(r[0] for r in eager)
        j = statistics.median(r[0] for r in job)
        t = statistics.median(ref) if ref[0] is not None else float("nan")  # type: ignore
        ops, kernels = eager[0][1], job[0][1]
        rows.append([model, "eager", e, t, e / t if t == t else float("nan"), ops,
                     1e6 / (e * ops) if ops else float("nan")])
        rows.append([model, "job (1 machine)", j, t, j / t if t == t else float("nan"),
                     kernels, 1e6 / (j * kernels) if kernels else float("nan")])
    report.table("steps", f"training steps/s ({steps} steps, median of {repeats}; torch "
                 "2.13 CPU eager, 1 thread, as the baseline)",
                 ["model", "actorflow mode", "steps/s", "torch steps/s", "ratio",
                  "ops or kernels per step", "us per op/kernel"], rows,
                 figure="steps/s", unit="steps/s", baseline="torch steps/s", ratio="ratio",
                 keys=["model", "actorflow mode"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
