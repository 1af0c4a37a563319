"""Two jobs, one plan: "update" changes a weight every piece, "eval" reads it.

    python examples/update_and_eval.py                       # 2 simulated machines, here
    flowlaunch sim examples/update_and_eval.py --machines 2  # the same through flowlaunch
    flowlaunch plan show examples/update_and_eval.py --machines 2

"update" is one step of least-squares gradient descent on a batch split over the machines
(``w <- w - lr * x^T (x w - y) / n``; the weight is broadcast, the gradient is a partial sum
that boxing adds up before ``assign``).  "eval" computes the loss of the current weight on a
fixed batch.  The main job's lock runs an update alone (it writes ``w``) and lets evals
overlap each other; ``drive`` interleaves them and ``check`` replays the same order in numpy.
"""

from __future__ import annotations

import sys

import numpy as np

import actorflow as af
import actorflow.functional as F

N, D = 16, 4
LR = 0.1
STEPS = 6


def build_jobs(machines: int = 2) -> list[af.Job]:
    P = af.placement("cpu", ranks=list(range(machines)))
    with af.Job("update") as update:
        x = af.input("x", (N, D), placement=P, sbp=af.sbp.split(0))
        y = af.input("y", (N, 1), placement=P, sbp=af.sbp.split(0))
        w = af.variable("w", (D, 1), placement=P, sbp=af.sbp.broadcast)
        grad = F.matmul(x, x @ w - y, transpose_a=True) * (1.0 / N)
        af.output("w", w.sub_(grad * LR))
    with af.Job("eval") as evaluate:
        xe = af.input("x", (N, D), placement=P, sbp=af.sbp.split(0))
        ye = af.input("y", (N, 1), placement=P, sbp=af.sbp.split(0))
        w = af.variable("w", (D, 1), placement=P, sbp=af.sbp.broadcast)
        r = xe @ w - ye
        af.output("loss", (r * r).mean())
    return [update, evaluate]


def batches(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, D)).astype(np.float32)
    true_w = np.arange(1, D + 1, dtype=np.float32).reshape(D, 1)
    return x, (x @ true_w + 0.01 * rng.standard_normal((N, 1))).astype(np.float32)


def drive(session: af.Session) -> dict[str, list[np.ndarray]]:
    """Interleave: eval, then (update, eval) x STEPS; returns what each job gave."""
    xe, ye = batches(0)
    out: dict[str, list[np.ndarray]] = {"w": [], "loss": []}
    out["loss"].append(session.run("eval", {"x": xe, "y": ye}))
    for step in range(STEPS):
        x, y = batches(step + 1)
        out["w"].append(session.run("update", {"x": x, "y": y}))
        out["loss"].append(session.run("eval", {"x": xe, "y": ye}))
    return out


def numpy_model() -> dict[str, list[np.ndarray]]:
    xe, ye = batches(0)
    w = np.zeros((D, 1), np.float32)
    out: dict[str, list[np.ndarray]] = {"w": [], "loss": [np.mean((xe @ w - ye) ** 2)]}
    for step in range(STEPS):
        x, y = batches(step + 1)
        w = w - LR * (x.T @ (x @ w - y) / N)
        out["w"].append(w)
        out["loss"].append(np.mean((xe @ w - ye) ** 2))
    return out


def check(result: dict[str, list[np.ndarray]]) -> float:
    """Largest |actorflow - numpy| over every weight and loss."""
    want = numpy_model()
    return max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
               for key in want for a, b in zip(result[key], want[key], strict=True))


def main(machines: int = 2) -> int:
    plan = af.compile(build_jobs(machines), machines=machines)
    with af.Session(plan) as s:
        result = drive(s)
    err = check(result)
    losses = ", ".join(f"{float(v):.3f}" for v in result["loss"])
    ok = err < 1e-4
    print(f"update_and_eval on {machines} machines: loss {losses}; "
          f"max |actorflow - numpy| = {err:.2e} {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2))
