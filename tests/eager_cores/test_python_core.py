"""``ACTORFLOW_CORE=python``: the whole eager path on the Python reference (no compiled
class at all: functional fast path, tensors, records, workers), with the same values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

CODE = textwrap.dedent("""
    import json, numpy as np, actorflow as af, actorflow.functional as F
    from actorflow import eager
    from actorflow.eager import core
    from actorflow.frontend.eager_tensor import EagerTensor
    x = af.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = x
    for _ in range(50):
        y = F.relu(y * 1.5 - 1.0)
    z = (y @ x.T).softmax(-1)
    vm = eager.get_vm()
    print(json.dumps({"core": core.PROCESS, "vm": vm.core.NAME,
                      "fastcall": type(F.add).__mro__[1].__module__,
                      "tensor": [c.__module__ for c in EagerTensor.__mro__],
                      "blob": type(y._blob).__module__, "z": z.numpy().tolist(),
                      "counters": af.counters()}))
""")


def _run(core: str) -> dict:
    env = {**os.environ, "ACTORFLOW_CORE": core}
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def test_the_python_core_runs_everything_in_python_with_the_same_values():
    py = _run("python")
    assert py["core"] == py["vm"] == "python"
    assert py["fastcall"] == "actorflow.eager.fastcall"
    assert not any(m.startswith("actorflow._core") for m in py["tensor"])
    assert py["blob"] == "actorflow.eager.blob"
    default = _run("")
    if default["core"] == "native":  # the compiled core is built here: compare with it
        assert default["blob"] == default["fastcall"] == "actorflow._core._eager"
    assert py["z"] == default["z"]
    for k in ("live_blobs", "live_bytes", "ops_issued"):
        assert py["counters"][k] == default["counters"][k], k
