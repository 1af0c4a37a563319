"""A small GPT (2 layers, width 64, context 16) learns multi-digit addition from sums it
generates ("57+38=" -> "590", the answer's digits reversed, ones first), as jobs:

- on one device (the reference losses);
- pipeline parallel: embeddings and block 0 on machine 0, block 1 and the head on machine
  1, each request's batch cut into micro-batches that flow through the two stages;
- data parallel: the batch split over two machines, the weights broadcast;

and checks that both two-machine layouts give the one-device losses (step by step over the
first ``EXACT`` steps to float tolerance; after that, float rounding in a different
summation order is amplified by training and the gap is reported), that the loss falls,
and reports the accuracy on held-out sums (every answer digit right).

    python examples/train_gpt_addition.py [steps]
    flowlaunch sim examples/train_gpt_addition.py --machines 2     # the pipeline layout
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

import actorflow as af
import actorflow.functional as F
import actorflow.nn as nn
import actorflow.optim as optim

DIGITS, BATCH, STEPS, MICRO, SEED, EXACT = 2, 64, 300, 4, 0, 100
WIDTH, HEADS, LAYERS, CONTEXT = 64, 4, 2, 16
PLUS, EQ, VOCAB = 10, 11, 12
T = 3 * DIGITS + 2  # tokens fed: a + b = and the answer but its last digit
ANSWER = DIGITS + 1  # answer digits, the targets that count


def sums(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sums as (tokens fed, targets): targets are the next tokens, -100 (ignored)
    everywhere but the answer."""
    a = rng.integers(0, 10 ** DIGITS, n)
    b = rng.integers(0, 10 ** DIGITS, n)
    def digits(v: np.ndarray, k: int) -> np.ndarray:  # most significant first
        return np.stack([(v // 10 ** i) % 10 for i in range(k - 1, -1, -1)], 1)
    seq = np.concatenate([digits(a, DIGITS), np.full((n, 1), PLUS), digits(b, DIGITS),
                          np.full((n, 1), EQ), digits(a + b, ANSWER)[:, ::-1]], 1)
    x, y = seq[:, :-1].copy(), seq[:, 1:].copy()
    y[:, :-ANSWER] = -100
    return x.astype(np.int64), y.astype(np.int64)


def batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    return sums(BATCH, np.random.default_rng([SEED, step]))


HELD_OUT = sums(256, np.random.default_rng([SEED, 10 ** 6]))


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then a GELU MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.fc, self.out = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)
        self.act = nn.GELU("tanh")
        causal = np.triu(np.ones((CONTEXT, CONTEXT), bool), 1)
        self.register_buffer("mask", af.tensor(causal[:T, :T]))

    def forward(self, x: af.Tensor) -> af.Tensor:
        b, t, c = x.shape
        d = c // HEADS
        q, k, v = F.chunk(self.qkv(self.ln1(x)), 3, 2)
        q, k, v = (F.transpose(z.reshape(b, t, HEADS, d), [0, 2, 1, 3]) for z in (q, k, v))
        att = F.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(d))
        att = F.softmax(F.masked_fill(att, self.mask, -1e9), -1)
        y = F.transpose(att @ v, [0, 2, 1, 3]).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(self.act(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, WIDTH), nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f, self.head = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, VOCAB)
        self.register_buffer("pos_ids", af.arange(T))  # position ids: arange

    def stage0(self, idx: af.Tensor) -> af.Tensor:
        return self.blocks[0](self.tok(idx) + self.pos(self.pos_ids))

    def stage1(self, h: af.Tensor) -> af.Tensor:
        for blk in list(self.blocks)[1:]:
            h = blk(h)
        return self.head(self.ln_f(h))

    def forward(self, idx: af.Tensor) -> af.Tensor:
        return self.stage1(self.stage0(idx))


def make() -> tuple[GPT, optim.Optimizer]:
    af.manual_seed(SEED)
    model = GPT()
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    optim.lr_scheduler.WarmupLR(optim.lr_scheduler.CosineAnnealingLR(opt, STEPS - 10),
                                warmup_factor=0.1, warmup_iters=10)
    return model, opt


def loss_of(logits: af.Tensor, y: af.Tensor) -> af.Tensor:
    return F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))


def build_jobs(machines: int = 2, layout: str = "pipeline") -> list[af.Job]:
    model, opt = make()
    r0, r1 = af.placement("cpu", ranks=[0]), af.placement("cpu", ranks=[min(1, machines - 1)])
    both = af.placement("cpu", ranks=list(range(machines)))
    split = af.sbp.split(0) if layout == "data" else None
    if layout == "pipeline":
        for m in (model.tok, model.pos, model.blocks[0]):
            m.to_global(r0)
        for m in (*list(model.blocks)[1:], model.ln_f, model.head):
            m.to_global(r1)
    elif layout == "data":
        model.to_global(both, af.sbp.broadcast)
    micro = MICRO if layout == "pipeline" else 1
    with af.Job("train", micro_batches=micro) as train:
        x = af.input("x", (BATCH, T), "int64", placement=both if split else None, sbp=split)
        y = af.input("y", (BATCH, T), "int64", placement=both if split else None, sbp=split)
        if layout == "pipeline":
            logits = model.stage1(model.stage0(x).to_global(r1))
            y = y.to_global(r1)
        else:
            logits = model(x)
        loss = loss_of(logits, y)
        loss.backward()
        opt.step()
        af.output("loss", loss)
    with af.Job("eval") as evaluate:
        x = af.input("x", HELD_OUT[0].shape, "int64", placement=both if split else None,
                     sbp=split)
        h = model.stage0(x)
        af.output("pred", F.argmax(model.stage1(h.to_global(r1) if layout == "pipeline"
                                                else h), -1))
    return [train, evaluate]


def drive(session: af.Session, steps: int = STEPS) -> dict[str, list[np.ndarray]]:
    losses = [np.mean(session.run("train", dict(zip(("x", "y"), batch(s)))))
              for s in range(steps)]
    return {"loss": losses, "pred": [session.run("eval", {"x": HELD_OUT[0]})]}


def accuracy(pred: np.ndarray) -> float:
    """Held-out sums with every answer digit right (teacher forcing: the same as greedy
    decoding when all are right)."""
    want = HELD_OUT[1][:, -ANSWER:]
    return float((np.asarray(pred)[:, -ANSWER:] == want).all(1).mean())


def run(layout: str, machines: int, steps: int) -> tuple[list[float], float, float]:
    t0 = time.perf_counter()
    plan = af.compile(build_jobs(machines, layout), machines=machines)
    with af.Session(plan) as s:
        result = drive(s, steps)
    return ([float(v) for v in result["loss"]], accuracy(result["pred"][-1]),
            steps / (time.perf_counter() - t0))


def gap(got: list[float], want: list[float]) -> float:
    """Largest relative gap over the first EXACT steps."""
    return max(abs(g - w) / abs(w) for g, w in zip(got[:EXACT], want[:EXACT], strict=True))


def check(result: dict[str, list[np.ndarray]]) -> float:
    """Largest relative gap to the one-device losses (a loss that did not fall: 1)."""
    got = [float(v) for v in result["loss"]]
    want, _, _ = run("one", 1, len(got))
    return gap(got, want) if got[-1] < 0.7 * got[0] else 1.0


def main(steps: int = STEPS) -> int:
    ref, acc, rate = run("one", 1, steps)
    print(f"one device: loss {ref[0]:.3f} -> {ref[-1]:.3f} in {steps} steps, held-out "
          f"accuracy {acc:.1%} ({rate:.1f} steps/s)")
    worst = 0.0
    for layout in ("pipeline", "data"):
        got, acc2, rate = run(layout, 2, steps)
        exact = gap(got, ref)
        drift = max(abs(g - w) / abs(w) for g, w in zip(got, ref, strict=True))
        worst = max(worst, exact)
        what = (f"pipeline parallel, {MICRO} micro-batches" if layout == "pipeline"
                else "data parallel")
        print(f"2 machines, {what}: loss {got[-1]:.3f}, held-out accuracy {acc2:.1%}; "
              f"relative gap to one device {exact:.1e} over the first {min(EXACT, steps)} "
              f"steps, {drift:.1e} over all ({rate:.1f} steps/s)")
    ok = worst < 1e-3 and ref[-1] < 0.7 * ref[0]
    print(f"train_gpt_addition: {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS))
