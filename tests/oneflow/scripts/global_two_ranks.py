"""OneFlow's global-tensor cases on two ranks (``flowlaunch --nproc-per-node 2``), each with
the values OneFlow 0.9.0 gives (run on two CPU processes).  Every rank prints one JSON line
of results; nothing asserts here (a rank that stopped early would strand the other in a
collective), the test compares."""

import json

import numpy as np

import actorflow as flow

r = flow.env.get_rank()
P = flow.placement("cpu", ranks=[0, 1])
out: dict = {"rank": r}


def caught(fn):
    try:
        fn()
    except Exception as e:
        return [type(e).__name__, [c.__name__ for c in type(e).__mro__], str(e)]
    return None


# broadcast from local data: every rank holds the first rank's data (test_eager_boxing's)
x = flow.tensor([[4, 6, 5, 20, 8, 9]] if r == 0 else [[2, 10, 10, 7, 10, 3]],
                dtype=flow.float32)
b = x.to_global(P, flow.sbp.broadcast)
out["b_local"] = b.to_local().tolist()
out["b_to_s1_local"] = b.to_global(sbp=flow.sbp.split(1)).to_local().tolist()

# uneven splits: the extra rows on the first rank
out["s0_25_local_shape"] = list(flow.tensor(np.arange(50).reshape(25, 2), placement=P,
                                            sbp=flow.sbp.split(0)).to_local().shape)
out["s0_13_local"] = flow.tensor(np.arange(13), placement=P,
                                 sbp=flow.sbp.split(0)).to_local().tolist()
parts = flow.tensor(np.ones((3 if r == 0 else 2, 2))).to_global(P, flow.sbp.split(0))
out["from_parts_shape"] = list(parts.shape)

# S0 -> S1 of rank-dependent 4x4 parts (test_global_cast's S2S case, 2 ranks)
arr = (np.array([[4, 6, 5, 20], [6, 2, 5, 7], [3, 7, 5, 4], [6, 8, 9, 4]]) if r == 0 else
       np.array([[2, 10, 10, 7], [3, 9, 10, 5], [4, 6, 6, 9], [6, 8, 6, 4]]))
s0 = flow.tensor(arr, dtype=flow.float32).to_global(P, flow.sbp.split(0))
out["s0_to_s1_local"] = s0.to_global(P, flow.sbp.split(1)).to_local().tolist()
out["s1_to_s0_local"] = s0.to_global(P, flow.sbp.split(1)).to_global(
    P, flow.sbp.split(0)).to_local().tolist()

# partial_sum from data: the first rank holds the data, the others zeros
p = flow.tensor([[1.0, 2.0], [3.0, 4.0]], placement=P, sbp=flow.sbp.partial_sum)
out["p_local"] = p.to_local().tolist()
out["p_logical"] = p.to_global(sbp=flow.sbp.broadcast).to_local().tolist()

# the data-consistency check: identical data with NaN and inf is accepted...
nan: list = []
out["nan_error"] = caught(lambda: nan.append(flow.tensor(
    [float("nan"), 1.0, float("inf")], placement=P, sbp=flow.sbp.broadcast)))
out["nan_local"] = [repr(v) for v in nan[0].to_local().tolist()] if nan else None
# ... a rank lying about broadcast or split data is refused on every rank, naming it
out["lie_b"] = caught(lambda: flow.tensor([1.0, 2.0 + r], placement=P, sbp=flow.sbp.broadcast))
out["lie_s"] = caught(lambda: flow.Tensor([[1, 2], [3, 4 + r]], placement=P,
                                          sbp=flow.sbp.split(0)))
# ... unless switched off: then each rank cuts its own data
off = flow.tensor([[1.0, 2.0], [3.0, 4.0 + r]], placement=P, sbp=flow.sbp.split(0),
                  check_data=False)
out["unchecked_local"] = off.to_local().tolist()

# errors of OneFlow's kinds
out["bad_parts"] = caught(lambda: flow.tensor(np.ones((2 if r == 0 else 4, 4))).to_global(
    P, flow.sbp.split(0)))  # OneFlow: RuntimeError (unbalanced local parts)
out["two_placements"] = caught(lambda: flow.add(
    flow.tensor([1, 2], placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast),
    flow.tensor([2, 4], placement=flow.placement("cpu", [1]), sbp=flow.sbp.broadcast)))
out["placement_differs"] = caught(lambda: flow.randn(2, 3).to_global(
    placement=flow.placement("cpu", [0, 1] if r == 0 else [0]), sbp=flow.sbp.split(1)))
out["all"] = repr(flow.placement.all("cpu"))

# af.comm on two ranks
t = flow.tensor([1.0 + r, 2.0])
flow.comm.all_reduce(t)
out["all_reduce"] = t.tolist()
g: list = []
flow.comm.all_gather(g, flow.tensor([r, r]))
out["all_gather"] = [x.tolist() for x in g]
v = flow.tensor([10.0 * (r + 1)])
flow.comm.broadcast(v, 1)
out["broadcast"] = v.tolist()
print("TWO " + json.dumps(out), flush=True)
