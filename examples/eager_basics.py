"""Eager mode: tensor ops outside a job run at once, asynchronously, on the eager VM.

    python examples/eager_basics.py

The same functional ops that jobs trace (``actorflow.functional``) run eagerly when no
job is being traced: each call issues an instruction to a stream worker and returns
before the kernel ran; ``.numpy()``, printing and ``af.sync()`` wait.  The script checks
every result against numpy, then shows a kernel error surfacing at the next wait.
"""

from __future__ import annotations

import numpy as np

import actorflow as af
import actorflow.functional as F


def main() -> int:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((16, 4)).astype(np.float32)

    x, w = af.tensor(a), af.tensor(b)                  # copies of host data, on "cpu"
    h = F.relu(x @ w) + 0.5                            # issued; the kernels run behind us
    y = F.softmax(h, dim=1).sum(dim=0)
    print("y =", y)                                    # printing waits for the values
    want = np.exp(np.maximum(a @ b, 0) + 0.5)
    want = (want / want.sum(1, keepdims=True)).sum(0)
    err = float(np.abs(y.numpy() - want).max())
    print(f"shape {y.shape}, dtype {y.dtype}, device {y.device}; "
          f"max |eager - numpy| = {err:.2e}")

    z = af.zeros(2, 3) + af.arange(3, dtype="float32")  # creation ops run as kernels too
    assert z.numpy().tolist() == [[0.0, 1.0, 2.0]] * 2

    bad = af.tensor([1, 2, 3]) ** -1                   # integer power: the kernel raises
    try:
        af.sync()                                      # ...and the error surfaces here
    except af.errors.EagerKernelError as e:
        print("caught at the wait:", str(e).splitlines()[0])
    del bad
    ok = (x * 2).sum()                                 # the VM carries on
    assert np.isclose(ok.item(), (a * 2).sum(), rtol=1e-5)
    c = af.counters()
    print(f"VM: {c['instructions_done']} instructions done, {c['live_blobs']} blobs live")
    return 0 if err < 1e-5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
