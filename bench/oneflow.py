"""actorflow beside OneFlow 0.9.0 on this box: the same eager ops, global tensors made from
data (with the ring data-consistency check) and small graph calls, in one run.

Both frameworks run ``_oneflow_worker.py`` (one source; ``flow`` is one or the other) as
subprocesses: actorflow with this interpreter, OneFlow with the Python of a venv that has
``oneflow==0.9.0`` (``--oneflow-python``, default ``/work/oneflow-venv/bin/python``; its
CUDA build runs on the CPU with ``nvidia/cublas`` and ``nvidia/cudnn`` on the library
path).  Global-tensor rows run two ranks of each (``flowlaunch --nproc-per-node 2`` /
``python -m oneflow.distributed.launch``).  Rows give microseconds per op or call (median of
repeats, wall and process CPU) and the ratio actorflow / OneFlow (below 1: actorflow is
faster).  Without OneFlow the actorflow rows are measured and the OneFlow ones left blank.

    python bench/oneflow.py [--ops 4000] [--repeats 5] [--quick] [--json OUT.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _util import Report, bench_args

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_oneflow_worker.py"
ROWS = {  # worker key -> what the row measures
    "tiny_op": "eager y = y + 1.0 (4 floats), per op",
    "mixed_op": "eager matmul/add/relu/sum/mul on 16x16, per op",
    "round_trip": "eager op + .numpy(), per call",
    "graph_call": "graph of relu + add (8x16), per synced call",
    "from_data": "tensor(64x64, placement, split(0)) + check, per call (2 ranks)",
    "s0_to_b": "to_global S0 -> B of 64x64, per call (2 ranks)",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _oneflow_env(python: str) -> dict[str, str]:
    site = Path(python).resolve().parent.parent / "lib"
    libs = [str(p) for p in site.glob("python3*/site-packages/nvidia/*/lib")]
    env = dict(os.environ, BENCH_FRAMEWORK="oneflow", ONEFLOW_DEBUG_MODE="0")
    env["LD_LIBRARY_PATH"] = ":".join([*libs, env.get("LD_LIBRARY_PATH", "")])
    return env


def run_worker(framework: str, part: str, ops: int, repeats: int, python: str) -> dict | None:
    """The worker's RESULT line as a dict (None when the framework cannot run here)."""
    args = [part, str(ops), str(repeats)]
    if framework == "oneflow":
        if not Path(python).exists():
            return None
        env = _oneflow_env(python)
        cmd = [python, str(WORKER), *args]
        if part == "global":
            cmd = [python, "-m", "oneflow.distributed.launch", "--nproc_per_node", "2",
                   "--master_port", str(_free_port()), str(WORKER), *args]
    else:
        env = dict(os.environ, BENCH_FRAMEWORK="actorflow")
        cmd = [sys.executable, str(WORKER), *args]
        if part == "global":
            cmd = [sys.executable, "-m", "actorflow.launcher.cli", "--nproc-per-node", "2",
                   "--master-port", "0", str(WORKER), *args]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if "RESULT " in ln]
    if r.returncode != 0 or not lines:
        if framework == "oneflow":  # its CUDA build on a CPU box crashes now and then
            print(f"warning: OneFlow's {part} part failed ({r.returncode}); its rows are "
                  f"left blank:\n{r.stderr[-800:]}", file=sys.stderr)
            return None
        raise SystemExit(f"{framework} {part} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(lines[-1].split("RESULT ", 1)[1])


def main() -> None:
    ap = bench_args(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    ap.add_argument("--ops", type=int, default=4000, help="eager ops per timed loop")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--oneflow-python", default="/work/oneflow-venv/bin/python")
    args = ap.parse_args()
    ops, repeats = (400, 1) if args.quick else (args.ops, args.repeats)
    got: dict[str, dict] = {"actorflow": {}, "oneflow": {}}
    for part in ("eager", "graph", "global"):
        for fw in got:
            got[fw].update(run_worker(fw, part, ops, repeats, args.oneflow_python) or {})
    rows = []
    for key, what in ROWS.items():
        a = got["actorflow"].get(key)
        o = got["oneflow"].get(key)
        nan = float("nan")
        if a is None:
            continue
        rows.append([what, a[0], a[1], o[0] if o else nan, o[1] if o else nan,
                     a[0] / o[0] if o else nan, a[1] / o[1] if o else nan])
    loaded = os.getloadavg()[0]
    Report(__file__, args).table(
        "side_by_side",
        f"actorflow vs OneFlow 0.9.0, microseconds (load average {loaded:.1f} on "
        f"{os.cpu_count()} cores)",
        ["what", "actorflow wall us", "actorflow cpu us", "oneflow wall us", "oneflow cpu us",
         "wall ratio", "cpu ratio"], rows,
        figure="actorflow wall us", unit="us", baseline="oneflow wall us", ratio="wall ratio",
        keys=["what"])


if __name__ == "__main__":
    main()
