"""Train an MLP on scikit-learn's handwritten digits: eagerly, then as a job data-parallel
over simulated machines, and check that the job's losses equal the eager ones step by step
and that the test accuracy passes 95%.

    python examples/train_mlp_digits.py                     # eager, then 2 machines in-process
    flowlaunch sim examples/train_mlp_digits.py --machines 2   # the job on 2 worker processes

The same model object and optimizer definition serve both modes: eagerly each step runs
on the VM; inside ``with af.Job`` the forward, ``loss.backward()`` and ``opt.step()`` are
traced into a train job (gradients, the all-reduce of the broadcast weights' partial-sum
gradients, Adam's update as assigns on variables) and an eval job that shares the weights.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import actorflow as af
import actorflow.functional as F
import actorflow.nn as nn
import actorflow.optim as optim

STEPS, BATCH, LR, SEED = 150, 128, 0.01, 0


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 1,797 8x8 digits that ship inside scikit-learn, 1,437 to train and 360 to test."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    order = np.random.default_rng(SEED).permutation(len(x))
    x, y = x[order], y[order]
    return x[:1437], y[:1437], x[1437:], y[1437:]


def batch(step: int, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minibatch ``step``: a fixed shuffle per epoch, so every mode sees the same batches."""
    per_epoch = len(x) // BATCH
    epoch, i = divmod(step, per_epoch)
    order = np.random.default_rng([SEED, epoch]).permutation(len(x))
    idx = order[i * BATCH:(i + 1) * BATCH]
    return x[idx], y[idx]


def make_model() -> tuple[nn.Module, optim.Optimizer]:
    af.manual_seed(SEED)  # the same initial weights in every mode and process
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    return model, optim.Adam(model.parameters(), lr=LR)


def train_eager(steps: int = STEPS) -> tuple[list[float], float]:
    xtr, ytr, xte, yte = load_data()
    model, opt = make_model()
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        x, y = batch(step, xtr, ytr)
        loss = loss_fn(model(af.tensor(x)), af.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    with af.no_grad():
        pred = F.argmax(model(af.tensor(xte)), 1).numpy()
    return losses, float((pred == yte).mean())


def build_jobs(machines: int = 2) -> list[af.Job]:
    """A train job (data parallel: batch split, weights broadcast) and an eval job."""
    model, opt = make_model()
    P = af.placement("cpu", ranks=list(range(machines)))
    model.to_global(P, af.sbp.broadcast)
    split = af.sbp.split(0)
    with af.Job("train") as train:
        x = af.input("x", (BATCH, 64), placement=P, sbp=split)
        y = af.input("y", (BATCH,), "int64", placement=P, sbp=split)
        loss = nn.CrossEntropyLoss()(model(x), y)
        loss.backward()
        opt.step()
        af.output("loss", loss)
    with af.Job("eval") as evaluate:
        x = af.input("x", (360, 64), placement=P, sbp=split)
        af.output("pred", F.argmax(model(x), 1))
    return [train, evaluate]


def drive(session: af.Session, steps: int = STEPS) -> dict[str, list[np.ndarray]]:
    xtr, ytr, xte, _ = load_data()
    losses = [session.run("train", dict(zip(("x", "y"), batch(s, xtr, ytr))))
              for s in range(steps)]
    return {"loss": losses, "pred": [session.run("eval", {"x": xte})]}


# The job's losses match eager training's to ~1e-7 for ~90 steps; later, where Adam sits at a
# sensitive point, the last bits of a matrix product (BLAS threads, the split batch's shapes)
# can send both onto neighbouring paths up to ~3e-4 apart (OPENBLAS_NUM_THREADS=1 does it
# every time).  A wrong ordering or a lost update moves the losses by far more.
CHECK_TOLERANCE = 1e-3  # flowlaunch reads it: the largest gap check() may return and pass


def check(result: dict[str, list[np.ndarray]], eager: list[float] | None = None) -> float:
    """Largest relative gap between the job's and eager training's losses (and the test
    accuracy must reach 95%: a smaller one counts as a gap of 1)."""
    graph = [float(v) for v in result["loss"]]
    eager = train_eager(len(graph))[0] if eager is None else eager
    gap = max(abs(g - e) / max(abs(e), 1e-6) for g, e in zip(graph, eager, strict=True))
    accuracy = float((np.asarray(result["pred"][-1]) == load_data()[3]).mean())
    return gap if accuracy >= 0.95 else 1.0


def main(machines: int = 2, steps: int = STEPS) -> int:
    t0 = time.perf_counter()
    eager, eager_acc = train_eager(steps)
    t1 = time.perf_counter()
    plan = af.compile(build_jobs(machines), machines=machines)
    with af.Session(plan) as s:
        result = drive(s, steps)
    t2 = time.perf_counter()
    gap = check(result, eager)
    graph_acc = float((np.asarray(result["pred"][-1]) == load_data()[3]).mean())
    ok = gap <= CHECK_TOLERANCE and eager_acc >= 0.95 and graph_acc >= 0.95
    print(f"eager: loss {eager[0]:.3f} -> {eager[-1]:.4f} in {steps} steps "
          f"({steps / (t1 - t0):.0f} steps/s), test accuracy {eager_acc:.1%}")
    print(f"job on {machines} machines (data parallel): loss {float(result['loss'][-1]):.4f}, "
          f"test accuracy {graph_acc:.1%} ({steps / (t2 - t1):.0f} steps/s with compile)")
    print(f"train_mlp_digits: max relative |job loss - eager loss| over {steps} steps = "
          f"{gap:.1e} {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2))
