"""Runs one seed sample (``seeds/*.py``) as written, then prints one JSON line describing the
global tensor ``A0`` it made on this rank (for the multi-process seed tests)."""

import json
import runpy
import sys

ns = runpy.run_path(sys.argv[1])
import actorflow as flow  # noqa: E402  (after the sample, which imports it itself)

A0 = ns["A0"]
local = A0.to_local()
print("SEED " + json.dumps({
    "rank": flow.env.get_rank(), "shape": list(A0.shape), "dtype": str(A0.dtype),
    "sbp": [repr(s) for s in A0.sbp], "placement": repr(A0.placement),
    "local_shape": list(local.shape), "local": local.numpy().tolist(),
    "logical": A0.numpy().tolist()}), flush=True)
