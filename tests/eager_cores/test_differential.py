"""Both eager cores against each other and numpy: thousands of random op sequences.

Each hypothesis example is a batch of random programs (``tests/eager/test_oracle.py``'s:
element-wise ops, scalars, broadcasting, matmul, reductions, transpose, reshape,
softmax), written as a user would: a value the program does not keep dies right after
its last use (so fused chains write into dead intermediates' buffers).  Each runs on four
VMs: the compiled core with its worker held while the program is issued (so element-wise
chains fuse), the compiled core with fusion off, the Python core (fusing, worker held)
and the Python core's thread scheduler.  All four must give the same values bit for bit
(same kernels), the same dtypes and shapes, and the same counters (live blobs and bytes,
bytes allocated and freed, ops issued) once the program's tensors died; the fusing runs
issue fewer instructions than ops and reuse buffers; numpy must agree exactly on
element-wise programs and to float32 rounding where a program reduces.  80 examples of
25 programs: 2,000 programs, 8,000 runs (~20 s on the shared 2-core box).
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorflow as af
from actorflow import eager
from actorflow.eager.core import NATIVE
from tests.eager.test_oracle import REDUCING, programs, run

RUNS = [("native", "inline", True), ("native", "inline", False), ("python", "inline", True),
        ("python", "thread", False)]
if NATIVE is None:
    RUNS = [r for r in RUNS if r[0] != "native"]
COUNTERS = ("live_blobs", "live_bytes", "allocated_bytes", "freed_bytes", "ops_issued")
ISSUED = ("ops_issued", "instructions_issued", "buffers_reused")


@pytest.fixture(autouse=True)
def fresh_env():
    yield
    assert not eager.shutdown()


def _held(vm):
    if not vm.fuse:
        return nullcontext()
    lock = vm.stream("cpu.compute", 0).run_lock

    class Held:
        def __enter__(self):
            lock.acquire()

        def __exit__(self, *exc):
            lock.release()
    return Held()


def _kept(n_inputs, steps):
    """Values the caller keeps (and compares): every third one and the last; the others
    die right after their last use, as temporaries do (so fused chains reuse buffers)."""
    n = n_inputs + len(steps)
    return {i for i in range(n_inputs, n) if i % 3 == 0} | {n - 1}


def _program(steps, inputs, api):
    """``run`` step by step, dropping each value not kept after its last use."""
    last = {}
    for j, (_kind, _name, ix, _p) in enumerate(steps):
        for i in ix:
            last[i] = j
    keep = _kept(len(inputs), steps)
    vals = list(inputs)
    for j, step in enumerate(steps):
        vals = run([step], vals, api)
        for i, lj in last.items():
            if lj == j and i not in keep:
                vals[i] = None  # a temporary dies here
    return [vals[i] for i in sorted(keep)]


def _run_batch(batch, core, sched, fuse):
    """Values and counter deltas of every program of ``batch`` on one fresh VM."""
    eager.shutdown(scheduler=sched, fuse=fuse, core=core)
    vm = eager.get_vm()
    results = []
    issued = [0, 0, 0]  # ops, instructions (fewer when chains fused), buffers reused
    for shapes, steps, seed in batch:
        rng = np.random.default_rng(seed)
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        af.sync()
        before = af.counters()
        xs = [af.tensor(a) for a in inputs]
        with _held(vm):
            vals = _program(steps, xs, api=True)
            del xs
        got = [v.numpy().copy() for v in vals]
        del vals
        af.sync()
        after = af.counters()
        results.append((got, {k: after[k] - before[k] for k in COUNTERS}))
        issued = [a + after[k] - before[k] for a, k in zip(issued, ISSUED)]
    return results, issued


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(programs(), st.integers(0, 2**31 - 1)), min_size=25, max_size=25))
def test_cores_schedulers_fusion_and_numpy_agree(batch):
    batch = [(shapes, steps, seed) for (shapes, steps), seed in batch]
    runs, issued = {}, {}
    for r in RUNS:
        runs[r], issued[r] = _run_batch(batch, *r)
    if sum(len(steps) for _, steps, _ in batch) > 200:  # chains are then all but certain
        for r in RUNS:
            ops, instrs, reused = issued[r]
            assert (instrs < ops and reused > 0) if r[2] else (instrs == ops and not reused), \
                (r, ops, instrs, reused)
    ref_key = RUNS[0]
    for i, (shapes, steps, seed) in enumerate(batch):
        ref_vals, ref_counts = runs[ref_key][i]
        assert ref_counts["live_blobs"] == 0 and ref_counts["live_bytes"] == 0
        for key in RUNS[1:]:
            vals, counts = runs[key][i]
            assert counts == ref_counts, (key, steps)
            for a, b in zip(ref_vals, vals):
                assert a.dtype == b.dtype and a.shape == b.shape, (key, steps)
                np.testing.assert_array_equal(a, b, err_msg=f"{key} {steps}")
        rng = np.random.default_rng(seed)
        want = _program(steps, [rng.standard_normal(s).astype(np.float32) for s in shapes],
                        api=False)
        exact = not any(kind in REDUCING for kind, *_ in steps)
        for e, w in zip(ref_vals, want):
            assert e.shape == w.shape and e.dtype == w.dtype
            if exact:
                np.testing.assert_array_equal(e, w)
            else:
                np.testing.assert_allclose(e, w, rtol=2e-5, atol=1e-5)
