"""Records OneFlow 0.9.0's results for a test file's ``case_*`` functions into
``<stem>.json`` beside this file (``tests/autograd/test_of_autograd.py`` ->
``of_autograd.json``).  Only the source between the markers ``# --- cases`` and
``# --- end cases`` runs, with ``flow`` bound to OneFlow and ``np`` to numpy, so the very
expression text the test runs under ``import actorflow as flow`` is what OneFlow ran.

    /work/oneflow-run.sh tests/oneflow/oracle/record_cases.py tests/autograd/test_of_autograd.py

Each case returns a dict of named results: tensors become ``{"dtype", "shape", "v"}``,
Python values ``{"py": value}``; a case that raises is recorded as ``{"err", "msg"}``.
The tests read the JSON (``tests/oneflow/oracle_cases.py``) and never need OneFlow."""

import json
import re
import sys
from pathlib import Path

import numpy as np

import oneflow as flow

HERE = Path(__file__).parent


def cases_source(path: Path) -> str:
    text = path.read_text()
    start, end = text.index("# --- cases"), text.index("# --- end cases")
    return text[start:end]


def encode(value):
    if isinstance(value, flow.Tensor):
        return {"dtype": str(value.dtype).split(".")[1], "shape": list(value.shape),
                "v": value.numpy().tolist()}
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], flow.Tensor):
        return {"list": [encode(v) for v in value]}
    if isinstance(value, flow.Size):
        value = list(value)
    if isinstance(value, tuple):
        value = list(value)
    return {"py": value}


def record(test_file: Path) -> dict:
    ns: dict = {"flow": flow, "np": np}
    exec(compile(cases_source(test_file), str(test_file), "exec"), ns)
    out = {}
    for name, fn in ns.items():
        if not name.startswith("case_"):
            continue
        flow.manual_seed(0)
        try:
            out[name[5:]] = {"out": {k: encode(v) for k, v in fn().items()}}
        except Exception as e:  # the case's error is the oracle's answer
            lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
            first = re.sub(r"\x1b\[[0-9;]*m", "", lines[0] if lines else "")
            out[name[5:]] = {"err": type(e).__name__, "msg": first[:300]}
    return out


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        path = Path(arg)
        result = record(path)
        target = HERE / (path.stem.removeprefix("test_") + ".json")
        target.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        print(f"{target.name}: {len(result)} cases recorded with OneFlow {flow.__version__}")
