"""Global tensors under a real launcher: every rank runs the same hypothesis examples
(derandomized, so all ranks draw the same ones) and prints one JSON line of mismatches.
Nothing asserts inside: a rank that stopped early would leave the others in a collective."""

import json
import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorflow as af
from actorflow.frontend.global_tensor import normal_region
from actorflow.sbp_geometry import split_bounds

r, n = af.env.rank, af.env.world_size
CODES = ["S0", "S1", "B", "P"]
SBP = {"S0": af.sbp.split(0), "S1": af.sbp.split(1), "B": af.sbp.broadcast,
       "P": af.sbp.partial_sum}
problems: list[str] = []
counts = {"examples": 0, "boxings": set(), "ops": 0}

placements = st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True).map(sorted)


def close(name: str, got: np.ndarray, want: np.ndarray) -> None:
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-4):
        problems.append(f"{name}: got {got.tolist()} want {want.tolist()}")


def make(a: np.ndarray, ranks: list[int], code: str):
    """Boxed from broadcast: B -> code on ``ranks``."""
    t = af.tensor(a).to_global(af.placement("cpu", ranks=ranks), af.sbp.broadcast)
    return t.to_global(sbp=SBP[code])


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          phases=["generate"], suppress_health_check=list(HealthCheck))
@given(m=st.integers(1, 6), k=st.integers(1, 6), p1=placements, p2=placements,
       c=st.lists(st.sampled_from(CODES), min_size=4, max_size=4),
       ops=st.lists(st.sampled_from(["add", "relu", "matmul", "scale", "rebox"]), max_size=4),
       seed=st.integers(0, 2**16))
def oracle(m, k, p1, p2, c, ops, seed):
    counts["examples"] += 1
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    ga = make(a, p1, c[0])
    close(f"B->{c[0]} on {p1}", ga.numpy(), a)
    counts["boxings"].add(f"B->{c[0]}")
    gb = ga.to_global(sbp=SBP[c[1]])  # every pair on one placement
    close(f"{c[0]}->{c[1]} on {p1} shape {a.shape}", gb.numpy(), a)
    counts["boxings"].add(f"{c[0]}->{c[1]}")
    gc = gb.to_global(placement=af.placement("cpu", ranks=p2), sbp=SBP[c[2]])
    close(f"{c[1]}{p1}->{c[2]}{p2}", gc.numpy(), a)
    loc = gc.to_local().numpy()
    want_local = (0,) * 2 if r not in p2 else None
    if want_local is not None and loc.shape != want_local:
        problems.append(f"rank {r} outside {p2} holds {loc.shape}")
    t, want = gc, a
    for op in ops:
        counts["ops"] += 1
        if op == "add":
            o = rng.standard_normal(want.shape).astype(np.float32)
            t, want = t + make(o, p2, c[3]), want + o
        elif op == "relu":
            t, want = t.relu(), np.maximum(want, 0)
        elif op == "scale":
            t, want = t * 2.5, want * np.float32(2.5)
        elif op == "rebox":
            t = t.to_global(sbp=SBP[c[3]])
        else:
            w = rng.standard_normal((want.shape[1], 3)).astype(np.float32)
            t, want = t @ make(w, p2, c[3]), want @ w
        if t.shape != want.shape:
            problems.append(f"{op}: logical shape {t.shape} want {want.shape}")
            return
    close(f"ops {ops} from {c[2]} on {p2}", t.numpy(), want)


oracle()

# every boxing pair on one placement, uneven splits (5 rows, 3 columns over n ranks)
a = np.arange(15, dtype=np.float32).reshape(5, 3)
for ranks in (list(range(n)), [n - 1]):
    for src in CODES:
        for dst in CODES:
            x = make(a, ranks, src)
            close(f"{src}->{dst} on {ranks}", x.to_global(sbp=SBP[dst]).numpy(), a)
            counts["boxings"].add(f"{src}->{dst}")

# creation by region: the same numbers as drawing the whole tensor and slicing it
whole = normal_region([5, 7], (slice(0, 5), slice(0, 7)), 11).astype(np.float32)
for code in CODES:
    g = af.randn(5, 7, placement=af.placement("cpu", ranks=list(range(n))), sbp=SBP[code],
                 seed=11)
    close(f"randn {code}", g.numpy(), whole)
    if code == "S1":
        lo, hi = split_bounds(7, n)[r:r + 2]  # extra columns to the first ranks
        close("randn S1 local", g.to_local().numpy(), whole[:, lo:hi])
    o = af.ones(3, 4, placement=af.placement("cpu", ranks=[n - 1]), sbp=SBP[code]).numpy()
    close(f"ones {code}", o, np.ones((3, 4), np.float32))

# the consistency check names the disagreeing ranks
caught = ""
try:
    af.tensor(np.ones((2, 2), np.float32 if r != n - 1 else np.float64)).to_global(
        af.placement("cpu", ranks=list(range(n))), af.sbp.broadcast)
except af.errors.ConsistencyError as e:
    caught = str(e)
# with ACTORFLOW_CHECK_GLOBAL_DATA=1 the values of a broadcast tensor are compared too
os.environ["ACTORFLOW_CHECK_GLOBAL_DATA"] = "1"
caught_data = ""
try:
    af.tensor(np.full((2, 3), 1.0 + (r == 1), np.float32)).to_global(
        af.placement("cpu", ranks=list(range(n))), af.sbp.broadcast)
except af.errors.ConsistencyError as e:
    caught_data = str(e)
same = af.tensor(np.ones((2, 3), np.float32)).to_global(
    af.placement("cpu", ranks=list(range(n))), af.sbp.broadcast)  # equal values pass
close("checked broadcast", same.numpy(), np.ones((2, 3), np.float32))
os.environ.pop("ACTORFLOW_CHECK_GLOBAL_DATA")
print("GLOBAL " + json.dumps({"rank": r, "world": n, "problems": problems[:20],
                              "examples": counts["examples"], "ops": counts["ops"],
                              "boxings": sorted(counts["boxings"]), "caught": caught,
                              "caught_data": caught_data}),
      flush=True)
