"""Records ``modules.json`` beside this file with OneFlow 0.9.0: runs the very expressions of
``tests/oneflow/test_of_modules.py`` (its ``_inputs`` and ``CASES``, taken from the source)
with ``flow`` bound to OneFlow.  Run it in a venv that has OneFlow (CPU is enough); the tests
read the JSON and never need OneFlow."""

import ast
import json
import re
from pathlib import Path

import oneflow as flow

HERE = Path(__file__).parent
SOURCE = (HERE.parent / "test_of_modules.py").read_text()
tree = ast.parse(SOURCE)
wanted = [n for n in tree.body
          if (isinstance(n, ast.FunctionDef) and n.name == "_inputs")
          or (isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CASES")]
ns: dict = {"flow": flow}
exec(compile(ast.Module(body=wanted, type_ignores=[]), "cases", "exec"), ns)

out = {}
for name, fn in ns["CASES"].items():
    try:
        t = fn(**ns["_inputs"]())
        out[name] = {"dtype": str(t.dtype).split(".")[1], "shape": list(t.shape),
                     "v": t.numpy().tolist()}
    except Exception as e:
        lines = str(e).strip().splitlines()
        out[name] = {"err": type(e).__name__,
                     "msg": re.sub(r"\x1b\[[0-9;]*m", "", lines[-1] if lines else "")[:200]}
(HERE / "modules.json").write_text(json.dumps(out, indent=0, sort_keys=True))
print(f"{len(out)} cases recorded with OneFlow {flow.__version__}")
